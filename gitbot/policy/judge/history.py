"""What git can print that read_deny protects: the read-denied paths in the repository's index and in
its history (every commit reachable from a ref, a reflog entry or a stash), asked of git itself.

Only for commands that run unsandboxed: the sandbox shows an object store without those blobs
(sandbox/filtered_store.py), and its Runner's policy turns this check off (`history_hidden_by_sandbox`).

The sandbox can hide a file in the work tree, not its earlier versions in the object store, so a git
command that prints contents (`git show`, `log -p`, `diff REV`, `cat-file -p`, `archive`, `grep`,
`stash show -p`) is allowed only when no read-denied path is among what it could print. The paths
come from every commit's changes against each of its parents (`git log --all --reflog -m --root
--name-only`: every path any reachable commit has, under every name, where `rev-list --objects` names a
blob or tree shared by several paths only once) and `git ls-files`, and are cached until a ref or the
index changes.

Not covered: objects no ref, reflog or index reaches (left behind by `git rm --cached`, a dropped
stash after expiry). Objects named by id are resolved instead: a blob named by id is refused whatever
its path, so unreachable blobs stay out of reach.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass

from gitbot import git
from gitbot.errors import GitError

GIT_TIMEOUT_SECONDS = 30
# git must not run anything of the repository's while the judge asks it (hooks and fsmonitor).
_QUIET = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


@dataclass(frozen=True)
class GitPaths:
    tracked: tuple[str, ...] = ()  # read-denied paths in the index
    history: tuple[str, ...] = ()  # ... in any commit, stash or reflog entry, or the index
    unknown: str = ""  # why git could not tell (then everything counts as possibly denied)


_cache: dict[str, tuple[tuple, GitPaths]] = {}  # repository -> (fingerprint, every path git lists)
_lock = threading.Lock()


def _git(repo: str, *args: str, timeout: float = GIT_TIMEOUT_SECONDS, input: bytes | None = None,
         ) -> subprocess.CompletedProcess[bytes]:
    """git in the repository, with gitbot's clean environment (a hook's GIT_DIR and GIT_INDEX_FILE
    left out); any exit status is returned, a timeout raises GitError."""
    return git.run([*_QUIET, "-C", repo, *args], env=git.clean_env(), input=input, ok=range(256),
                   timeout=timeout)


def _fingerprint(repo: str) -> tuple | None:
    """What changes when the answer may: the refs (a reflog only grows when a ref moves) and the index."""
    try:
        refs = _git(repo, "rev-parse", "--absolute-git-dir", "HEAD", "--all", timeout=10)
    except (OSError, GitError):
        return None
    if refs.returncode not in (0, 128) or not refs.stdout:
        return None
    git_dir = refs.stdout.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
    try:
        index = os.stat(os.path.join(git_dir, "index"))
        index_state = (index.st_mtime_ns, index.st_size, index.st_ino)
    except OSError:
        index_state = None
    return refs.stdout, index_state


def denied_git_paths(repo: str, denied: Callable[[str], bool]) -> GitPaths:
    """The read-denied paths git knows of in `repo`; `denied(path)` says whether read_deny covers one.
    What git lists is cached per repository until a ref or the index changes; the rules are applied
    afresh each time (another policy may ask about the same repository)."""
    fingerprint = _fingerprint(repo)
    if fingerprint is None:
        try:
            inside = _git(repo, "rev-parse", "--is-inside-work-tree", timeout=10) if os.path.isdir(repo) else None
        except (OSError, GitError):
            inside = None
        if inside is not None and inside.returncode != 0:
            return GitPaths()  # not a git repository: git prints nothing from a history
        return GitPaths(unknown="git could not list the repository's refs")
    with _lock:
        cached = _cache.get(repo)
    if cached is None or cached[0] != fingerprint:
        cached = (fingerprint, _ask(repo))
        with _lock:
            _cache[repo] = cached
    listed = cached[1]
    if listed.unknown:
        return listed
    history = tuple(path for path in listed.history if denied(path))
    tracked = set(listed.tracked)
    return GitPaths(tracked=tuple(path for path in history if path in tracked), history=history)


def _ask(repo: str) -> GitPaths:
    """Every path in the index (`tracked`) and in the history, the index included (`history`)."""
    try:
        changed = _git(repo, "log", "--all", "--reflog", "--format=", "--name-only", "--no-renames", "-m", "--root",
                       "-z")
        index = _git(repo, "ls-files", "-z", "--cached")
    except (OSError, GitError) as exc:
        return GitPaths(unknown=f"git could not list the repository's history ({exc})")
    if changed.returncode != 0 or index.returncode != 0:
        return GitPaths(unknown="git could not list the repository's history")
    tracked = {name for name in index.stdout.decode("utf-8", "surrogateescape").split("\0") if name}
    history = {name for name in changed.stdout.decode("utf-8", "surrogateescape").split("\0") if name}
    return GitPaths(tracked=tuple(sorted(tracked)), history=tuple(sorted(tracked | history)))


def object_types(repo: str, names: list[str]) -> dict[str, str]:
    """What each object name resolves to once tags are peeled: blob, tree, commit, or missing."""
    if not names:
        return {}
    request = "".join(f"{name}^{{}}\n" for name in names).encode()
    try:
        completed = _git(repo, "cat-file", "--batch-check=%(objecttype)", input=request, timeout=10)
    except (OSError, GitError):
        return {name: "unknown" for name in names}
    lines = completed.stdout.decode("utf-8", "surrogateescape").splitlines()
    types = {}
    for name, line in zip(names, lines + ["unknown"] * (len(names) - len(lines)), strict=True):
        types[name] = line.split()[-1] if line.endswith("missing") else line.strip()
    return types
