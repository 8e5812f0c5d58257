"""What a directory holds as git sees it: the tracked files that still exist, plus the untracked
files .gitignore does not exclude; directories end with "/".

This runs on every list_files call, so its cost is held to what git itself pays, on trees of
80,000 files:
- tracked names come from the index (`git ls-files`, no work-tree walk);
- whether they still exist is read one directory at a time (`os.scandir`: one getdents per
  directory instead of an lstat per file), and the same read tells which tracked names are
  directories (submodules), which are listed with a slash. What a directory held is remembered
  with the directory's stat: while that is unchanged, the next listing stats the directory
  instead of reading it (an entry added, removed or renamed moves a directory's mtime; a
  directory changed less than a second before it was read is read again next time, as its
  mtime could move again within the same clock tick);
- a recursive listing needs git's walk for the untracked files (`--others`), which runs in a
  second process while this one checks the tracked side;
- a top-level listing does not walk at all: git is only asked about the top-level names that no
  existing tracked file already accounts for (with `--directory`, which stops at an untracked
  directory once it knows whether anything in it is not ignored).
"""

from __future__ import annotations

import bisect
import os
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path

from gitbot.host_programs import host_env, program

GIT_TIMEOUT_SECONDS = 60
# Past this many unexplained top-level names, one walk of the whole directory is cheaper than
# naming them all to git (and stays clear of the command-line length limit).
MAX_NAMED_CANDIDATES = 2000
RACY_NS = 1_000_000_000
REMEMBERED_LISTINGS = 4  # listed directories whose tracked side is remembered (a big tree's is ~15 MB)


class ListingStats:
    """Counts directory reads, so tests and benchmarks can tell a remembered directory from a read one."""

    directories_read = 0


STATS = ListingStats()


def git_entries(directory: Path, recursive: bool) -> list[str] | None:
    """Entries of `directory` relative to it, sorted ("sub/" for directories); None outside a git work tree."""
    if recursive:
        return _recursive(directory)
    tracked = _run_git(directory, ["--cached"])
    if tracked is None:
        return None
    found = _top_level(directory, tracked)
    return None if found is None else sorted(found)


# ---------------------------------------------------------------- git

def _run_git(directory: Path, args: list[str]) -> bytes | None:
    try:
        completed = subprocess.run(_command(args), cwd=directory, capture_output=True, timeout=GIT_TIMEOUT_SECONDS,
                                   env=_environment(), check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return completed.stdout if completed.returncode == 0 else None


def _command(args: list[str]) -> list[str]:
    # --literal-pathspecs: a file named `*.py` or `:(top)` is a name, not a pattern.
    return [program("git"), "--literal-pathspecs", "-c", "core.quotepath=off", "ls-files", "-z", *args]


def _environment() -> dict[str, str]:
    # A git hook runs with GIT_DIR/GIT_INDEX_FILE set for the outer repository; they must not leak in.
    return host_env({key: value for key, value in os.environ.items() if not key.startswith("GIT_")})


def _names(output: bytes) -> list[str]:
    # dict.fromkeys: an unmerged path is listed once per stage.
    return list(dict.fromkeys(name for name in output.decode("utf-8", "surrogateescape").split("\0") if name))


# ---------------------------------------------------------------- recursive

def _recursive(directory: Path) -> list[str] | None:
    # The untracked walk is most of git's cost and checking the tracked side is most of ours: they
    # run at the same time. The walk's output goes to a file so that a full pipe never stalls it.
    with tempfile.TemporaryFile() as output:
        try:
            walk = subprocess.Popen(_command(["--others", "--exclude-standard", "--", "."]), cwd=directory,
                                    stdout=output, stderr=subprocess.DEVNULL, env=_environment())
        except OSError:
            return None
        # A timer kills a walk that hangs: wait(timeout=...) would poll, sleeping up to 50 ms too long.
        deadline = threading.Timer(GIT_TIMEOUT_SECONDS, walk.kill)
        deadline.start()
        side = None
        try:
            tracked = _run_git(directory, ["--cached", "--", "."])
            if tracked is not None:
                side = _tracked_side(directory, tracked)
        finally:
            if side is None:  # no index to read, or interrupted: the walk is not needed
                walk.kill()
            returncode = walk.wait()
            deadline.cancel()
        if side is None or returncode != 0:
            return None
        output.seek(0)
        untracked = _names(output.read())
    entries, holding = side
    parents = set(holding)
    for name in untracked:
        parents.add(name.rstrip("/").rpartition("/")[0])
    directories: set[str] = set()
    for parent in parents:
        while parent and parent not in directories:
            directories.add(parent)
            parent = parent.rpartition("/")[0]
    extra = {parent + "/" for parent in directories}
    extra.update(untracked)  # a nested repository comes with its slash
    extra.difference_update(entries)
    # The tracked entries come in sorted runs, so this sort mostly merges.
    return sorted(entries + list(extra))


class _Directory:
    """One directory's tracked files as last read: which exist (name -> is a real directory)."""

    __slots__ = ("present", "signature")

    def __init__(self, signature: tuple[int, ...] | None, present: dict[str, bool]) -> None:
        self.signature = signature  # None: read too soon after a change to be trusted next time
        self.present = present


class _TrackedSide:
    """The tracked files of one listed directory, grouped by parent, and what was last seen of them."""

    def __init__(self, tracked: bytes) -> None:
        self.tracked = tracked
        self.by_parent: dict[str, list[str]] = {}
        for name in _names(tracked):
            parent, _, base = name.rpartition("/")
            self.by_parent.setdefault(parent, []).append(base)
        self.directories: dict[str, _Directory] = {}
        self.entries: list[str] | None = None  # assembled from `directories`, until one of them changes
        self.holding: set[str] = set()


_REMEMBERED: OrderedDict[str, _TrackedSide] = OrderedDict()
_LOCK = threading.Lock()


def forget() -> None:
    """Drop every remembered directory (the next listing reads them all, as a new process would)."""
    with _LOCK:
        _REMEMBERED.clear()


def _tracked_side(directory: Path, tracked: bytes) -> tuple[list[str], set[str]]:
    """The tracked names that exist ("sub/" for directories) and the directories that hold them."""
    key = os.fspath(directory)
    with _LOCK:
        side = _REMEMBERED.pop(key, None)
        if side is None or side.tracked != tracked:
            side = _TrackedSide(tracked)
        _REMEMBERED[key] = side
        while len(_REMEMBERED) > REMEMBERED_LISTINGS:
            _REMEMBERED.popitem(last=False)
        if _refresh(side, key) or side.entries is None:
            _assemble(side)
        return side.entries, side.holding  # type: ignore[return-value]


def _refresh(side: _TrackedSide, root: str) -> bool:
    """Re-read the directories whose stat changed; True when any did."""
    changed = False
    now = time.time_ns()
    for parent, bases in side.by_parent.items():
        path = os.path.join(root, parent) if parent else root
        known = side.directories.get(parent)
        try:
            # Follows a symlinked parent, as an lstat of the file's full path would.
            status = os.stat(path)
        except OSError:
            if known is None or known.present:
                side.directories[parent] = _Directory(None, {})
                changed = True
            continue
        signature = (status.st_dev, status.st_ino, status.st_mtime_ns, status.st_ctime_ns)
        if known is not None and known.signature == signature:
            continue
        STATS.directories_read += 1
        wanted = set(bases)
        seen: dict[str, bool] = {}
        try:
            with os.scandir(path) as found:
                for entry in found:
                    if entry.name in wanted:
                        seen[entry.name] = entry.is_dir(follow_symlinks=False)  # d_type: no extra syscall
        except OSError:
            pass
        present = {base: seen[base] for base in bases if base in seen}  # in git's order, which sorts cheaply
        racy = now - max(status.st_mtime_ns, status.st_ctime_ns) < RACY_NS
        side.directories[parent] = _Directory(None if racy else signature, present)
        changed = changed or known is None or known.present != present
    return changed


def _assemble(side: _TrackedSide) -> None:
    entries: list[str] = []
    holding: set[str] = set()
    for parent, state in side.directories.items():
        if not state.present:
            continue
        prefix = parent + "/" if parent else ""
        entries += [prefix + base + "/" if is_dir else prefix + base for base, is_dir in state.present.items()]
        if parent:
            holding.add(parent)
    side.entries, side.holding = entries, holding


# ---------------------------------------------------------------- top level

def _top_level(directory: Path, tracked: bytes) -> set[str] | None:
    try:
        with os.scandir(directory) as found:
            on_disk = {entry.name: entry.is_dir(follow_symlinks=False) for entry in found}
    except OSError:
        return None
    root = os.fsencode(directory)
    names = tracked.split(b"\0")  # in git's order: bytewise sorted, so one directory's names are adjacent
    files: set[str] = set()
    tops: set[str] = set()  # top-level directories with a tracked file below
    entries: set[str] = set()
    i, count = 0, len(names) - 1  # the output ends with a NUL
    while i < count:
        name = names[i]
        slash = name.find(b"/")
        if slash < 0:
            text = name.decode("utf-8", "surrogateescape")
            files.add(text)
            if text in on_disk:
                entries.add(text + "/" if on_disk[text] else text)
            i += 1
            continue
        # The directory's names end where the next byte after "dir/" would sort ("0" follows "/").
        end = bisect.bisect_left(names, name[:slash] + b"0", i, count)
        top = name[:slash].decode("utf-8", "surrogateescape")
        tops.add(top)
        # Usually the first file settles it; a directory whose tracked files were all deleted is
        # shown only for what is untracked in it (asked below).
        if top in on_disk and any(os.path.lexists(root + b"/" + names[j]) for j in range(i, end)):
            entries.add(top + "/")
        i = end
    # Names git's untracked walk could add nothing to: tracked files, and real directories already
    # listed. A symlink to a directory is a file to git: untracked unless tracked as a name itself.
    explained = files.union(top for top in tops if on_disk.get(top) and top + "/" in entries)
    candidates = [name for name in on_disk if name not in explained and name != ".git"]
    if not candidates:
        return entries
    if len(candidates) > MAX_NAMED_CANDIDATES:
        untracked = _run_git(directory, ["--others", "--exclude-standard", "--", "."])
    else:
        # --directory stops at an untracked directory; --no-empty-directory leaves it out when nothing
        # in it is both untracked and not ignored.
        untracked = _run_git(directory, ["--others", "--exclude-standard", "--directory", "--no-empty-directory",
                                         "--", *candidates])
    if untracked is None:
        return None
    for name in _names(untracked):
        top, slash, _ = name.partition("/")
        entries.add(top + "/" if slash else top)
    return entries
