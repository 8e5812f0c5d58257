"""What git can print that read_deny protects: the read-denied paths in the repository's index and in
its history (every commit reachable from a ref, a reflog entry or a stash), asked of git itself.

The sandbox can hide a file in the work tree, not its earlier versions in the object store, so a git
command that prints contents (`git show`, `log -p`, `diff REV`, `cat-file -p`, `archive`, `grep`,
`stash show -p`) is allowed only when no read-denied path is among what it could print. The paths
come from `git rev-list --objects --all --reflog --indexed-objects` (each blob and tree once, under a
path it has somewhere) and `git ls-files`, and are cached until a ref or the index changes.

Not covered: objects no ref, reflog or index reaches (left behind by `git rm --cached`, a dropped
stash after expiry), and a read-denied file whose content is the same blob as a file under another,
readable path (its content is readable there anyway). Objects named by id are resolved instead: a
blob named by id is refused whatever its path, so unreachable blobs stay out of reach.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass

GIT_TIMEOUT_SECONDS = 30
# git must not run anything of the repository's while the judge asks it (hooks and fsmonitor).
_GIT = ("git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "--no-optional-locks")


@dataclass(frozen=True)
class GitPaths:
    tracked: tuple[str, ...] = ()  # read-denied paths in the index
    history: tuple[str, ...] = ()  # ... in any commit, stash or reflog entry, or the index
    unknown: str = ""  # why git could not tell (then everything counts as possibly denied)


_cache: dict[str, tuple[tuple, GitPaths]] = {}
_lock = threading.Lock()


def _environment() -> dict[str, str]:
    # A hook runs with GIT_DIR, GIT_INDEX_FILE ... set for another purpose: ask about the repository itself.
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["LC_ALL"] = "C"
    return env


def _git(repo: str, *args: str, timeout: float = GIT_TIMEOUT_SECONDS) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*_GIT, "-C", repo, *args], capture_output=True, timeout=timeout, env=_environment(),
                          stdin=subprocess.DEVNULL, check=False)


def _fingerprint(repo: str) -> tuple | None:
    """What changes when the answer may: the refs (a reflog only grows when a ref moves) and the index."""
    try:
        refs = _git(repo, "rev-parse", "--absolute-git-dir", "HEAD", "--all", timeout=10)
    except (OSError, subprocess.TimeoutExpired):
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
    """The read-denied paths git knows of in `repo`; `denied(path)` says whether read_deny covers one."""
    fingerprint = _fingerprint(repo)
    if fingerprint is None:
        inside = _git(repo, "rev-parse", "--is-inside-work-tree", timeout=10) if os.path.isdir(repo) else None
        if inside is not None and inside.returncode != 0:
            return GitPaths()  # not a git repository: git prints nothing from a history
        return GitPaths(unknown="git could not list the repository's refs")
    with _lock:
        cached = _cache.get(repo)
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
    result = _ask(repo, denied)
    with _lock:
        _cache[repo] = (fingerprint, result)
    return result


def _ask(repo: str, denied: Callable[[str], bool]) -> GitPaths:
    try:
        objects = _git(repo, "rev-list", "--objects", "--all", "--reflog", "--indexed-objects")
        index = _git(repo, "ls-files", "-z", "--cached")
    except subprocess.TimeoutExpired:
        return GitPaths(unknown=f"listing the repository's history took longer than {GIT_TIMEOUT_SECONDS} s")
    except OSError as exc:
        return GitPaths(unknown=f"git could not be run: {exc}")
    if objects.returncode != 0 or index.returncode != 0:
        return GitPaths(unknown="git could not list the repository's history")
    tracked = {name for name in index.stdout.decode("utf-8", "surrogateescape").split("\0") if name}
    paths = set(tracked)
    for line in objects.stdout.decode("utf-8", "surrogateescape").splitlines():
        _, space, path = line.partition(" ")
        if space and path:
            paths.add(path)
    history = tuple(sorted(path for path in paths if denied(path)))
    return GitPaths(tracked=tuple(path for path in history if path in tracked), history=history)


def object_types(repo: str, names: list[str]) -> dict[str, str]:
    """What each object name resolves to once tags are peeled: blob, tree, commit, or missing."""
    if not names:
        return {}
    request = "".join(f"{name}^{{}}\n" for name in names).encode()
    try:
        completed = subprocess.run([*_GIT, "-C", repo, "cat-file", "--batch-check=%(objecttype)"], input=request,
                                   capture_output=True, timeout=10, env=_environment(), check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {name: "unknown" for name in names}
    lines = completed.stdout.decode("utf-8", "surrogateescape").splitlines()
    types = {}
    for name, line in zip(names, lines + ["unknown"] * (len(names) - len(lines)), strict=True):
        types[name] = line.split()[-1] if line.endswith("missing") else line.strip()
    return types
