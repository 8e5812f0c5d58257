"""`[sandbox] rebuildable`: which ignored paths lie in a directory a build makes again.

A run's start captures its ignored files within a budget (checkpoints/ignored.py); what it cannot
capture would be kept read-only, and then `cargo build`, `npm install` or `make` fail in the sandbox. A
path inside a rebuildable directory is left writable instead, and is not restored: its content is
rebuilt, not kept. The globs are matched as read_deny's are (files.py: `**/NAME` by name at any depth).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet

from gitbot.policy.files import path_matcher


def rebuildable_directory(patterns: Sequence[str]) -> Callable[[str, bool, AbstractSet[str]], str | None]:
    """A function of (repository-relative path, whether it is a directory, the ignored directories git
    listed whole) giving the rebuildable directory it is or lies in (the outermost; None: none). A file
    is never rebuildable by its own name, only by a directory above it: `[sandbox] rebuildable` names
    directories. A matching directory counts only when git ignores it whole (it, or a directory above
    it, is among those listed): a tracked `build/` holding one ignored file is the user's work."""
    matches = path_matcher(tuple(patterns))

    def directory(path: str, is_directory: bool, ignored_directories: AbstractSet[str]) -> str | None:
        if matches is None:
            return None
        parts = path.strip("/").split("/")
        ignored_above = False
        for depth in range(1, len(parts) + (1 if is_directory else 0)):
            prefix = "/".join(parts[:depth])
            ignored_above = ignored_above or prefix in ignored_directories
            if ignored_above and matches(prefix):
                return prefix
        return None

    return directory


def rebuildable_here(repo, patterns: Sequence[str]) -> list[str]:
    """The rebuildable directories in the work tree `repo` now (for `gitbot sandbox explain`): those
    holding what git ignores, listed as a run's start lists its ignored files (directories collapsed)."""
    import os

    from gitbot import git

    directory = rebuildable_directory(patterns)
    listed = git.run(("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory",
                      "--no-empty-directory"), cwd=repo, ok=range(256), timeout=60)
    if listed.returncode != 0:
        return []
    paths = [os.fsdecode(raw) for raw in listed.stdout.split(b"\0") if raw]
    ignored_directories = {path.rstrip("/") for path in paths if path.endswith("/")}
    found = set()
    for path in paths:
        where = directory(path.rstrip("/"), path.endswith("/"), ignored_directories)
        if where is not None:
            found.add(where)
    return sorted(found)


def program_directory_in(command: str, repo, rebuildable: Iterable[str]) -> str | None:
    """The repository-relative directory of the program `command` names by path (`node_modules/.bin/x`,
    `./target/debug/runtests`) when it lies in one of the `rebuildable` paths a run left writable:
    the run's check command must not be a program the agent can replace (the verification, the PR's
    "checks passed" and the user's next run of it would run the agent's). None otherwise."""
    import os
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or "/" not in words[0]:
        return None
    root = os.path.realpath(repo)
    program = os.path.realpath(os.path.join(root, words[0]))
    relative = os.path.relpath(os.path.dirname(program), root)
    if relative == "." or relative.startswith("../"):
        return None
    inside = any(relative == path or relative.startswith(path.rstrip("/") + "/") for path in rebuildable)
    return relative if inside else None
