"""What of the work tree a checkpoint captures, and why not: the per-path judgement and the reading
of `git status`, apart from how snapshot.py builds and records the tree.

A path is captured unless it is denied by the policy's read_deny, larger than the size cap, not a
regular file or symlink, unreadable, a nested repository (recorded by reference: a gitlink to its
HEAD), or git metadata (gitmeta.py: inside a `.git`, or inside a directory shaped like a git directory,
such as one a gitfile can point at: storing it would let a restore or a commit plant it again). Paths are never followed through symbolic links: a file under a directory that became a
symlink is gone.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from gitbot import git
from gitbot.checkpoints.shadow import GITLINK_MODE
from gitbot.gitmeta import has_git_component, is_git_dir

DEFAULT_SIZE_CAP = 10 * 1024 * 1024
SIZE_CAP_ENV = "GITBOT_CHECKPOINT_SIZE_CAP"
GITLINK_REASON = "git repository (nested repository or submodule) recorded by reference at "
READ_DENY_REASON = "matches the policy's files.read_deny; never stored in a checkpoint"
GIT_METADATA_REASON = "git metadata (inside a git directory below the root); never stored in a checkpoint"

STATUS_ARGS = ("status", "--porcelain=v2", "-z", "--untracked-files=all", "--no-renames",
               # A submodule counts as changed when its HEAD moves, not when its files do:
               # it is recorded by reference, and looking inside would cost a status per submodule.
               "--ignore-submodules=dirty")


def size_cap_from_env() -> int:
    """GITBOT_CHECKPOINT_SIZE_CAP in bytes (a number, optionally with a K, M or G suffix, powers of 1024)."""
    raw = os.environ.get(SIZE_CAP_ENV, "").strip()
    if not raw:
        return DEFAULT_SIZE_CAP
    match = re.fullmatch(r"(\d+)\s*([kmg]?)(?:i?b)?", raw, re.IGNORECASE)
    if not match:
        raise ValueError(f"{SIZE_CAP_ENV}={raw!r} is not a size: use a number of bytes, optionally with a K, M "
                         "or G suffix (e.g. 10M)")
    return int(match.group(1)) * 1024 ** " kmg".index(match.group(2).lower() or " ")


def gitlink_reason(sha: str) -> str:
    return GITLINK_REASON + sha


def is_nested_repo(directory: Path) -> bool:
    return os.path.lexists(directory / ".git")


def relative_path(repo: Path, path: str | os.PathLike[str]) -> str:
    """`path` (absolute, or relative to the work tree) as a work-tree path with / separators; ValueError
    when it is empty or outside the repository."""
    raw = os.fsdecode(path)
    if not raw:
        raise ValueError("an empty path cannot be a touched file")
    if os.path.isabs(raw):
        normal = os.path.normpath(raw)
        for root in (str(repo), os.path.realpath(repo)):
            if normal == root or normal.startswith(root.rstrip("/") + "/"):
                raw = os.path.relpath(normal, root)
                break
        else:
            # The caller may have a different spelling of the repo's path (a symlink).
            parent = os.path.realpath(os.path.dirname(normal))
            real_root = os.path.realpath(repo)
            if parent != real_root and not parent.startswith(real_root + "/"):
                raise ValueError(f"{raw} is outside the repository {repo}")
            raw = os.path.relpath(os.path.join(parent, os.path.basename(normal)), real_root)
    rel = os.path.normpath(raw).replace(os.sep, "/")
    if rel == ".." or rel.startswith("../"):
        raise ValueError(f"{raw} is outside the repository {repo}")
    return rel


class CaptureRules:
    """Judges paths of one work tree. `dirs` arguments memoise which parent directories are real
    directories, for the length of one scan (a scan's paths share most of their parents)."""

    def __init__(self, repo: Path, size_cap_bytes: int, denied: Callable[[str], bool] | None, shadow_dir: Path):
        self.repo = repo
        self.size_cap_bytes = size_cap_bytes
        self.denied = denied
        self.shadow_dir = shadow_dir

    def real_parents(self, rel: str, dirs: dict[str, bool]) -> bool:
        """Whether every parent directory of `rel` is a real directory (not a symlink, not a file)."""
        prefix = ""
        for part in rel.split("/")[:-1]:
            prefix = f"{prefix}/{part}" if prefix else part
            known = dirs.get(prefix)
            if known is None:
                try:
                    known = stat.S_ISDIR(os.lstat(self.repo / prefix).st_mode)
                except OSError:
                    known = False
                dirs[prefix] = known
            if not known:
                return False
        return True

    def lstat(self, rel: str, dirs: dict[str, bool]) -> os.stat_result | None:
        """lstat() of a path in the work tree, None if it is gone or lies beyond a symlink or a file."""
        if not self.real_parents(rel, dirs):
            return None
        try:
            return os.lstat(self.repo / rel)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def in_git_metadata(self, rel: str, git_dirs: dict[str, bool]) -> bool:
        """Whether `rel` lies inside git metadata below the root. `git_dirs` memoises, per parent, whether
        it is shaped like a git directory (three lstat()s per parent, once per scan)."""
        if has_git_component(rel):
            return True
        prefix = ""
        for part in rel.split("/")[:-1]:
            prefix = f"{prefix}/{part}" if prefix else part
            known = git_dirs.get(prefix)
            if known is None:
                known = git_dirs[prefix] = is_git_dir(self.repo / prefix)
            if known:
                return True
        return False

    def why_not_capturable(self, rel: str, st: os.stat_result) -> str | None:
        if self.denied is not None and self.denied(rel):
            return READ_DENY_REASON
        if stat.S_ISLNK(st.st_mode):
            return None
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file or symlink; not captured"
        if st.st_size > self.size_cap_bytes:
            return f"{st.st_size} bytes, over the {self.size_cap_bytes}-byte cap; not captured"
        if not os.access(self.repo / rel, os.R_OK):
            return "not readable; not captured"
        return None

    def nested_head(self, directory: Path) -> str | None:
        """HEAD of a nested repository or submodule, read without entering or changing it."""
        env = git.isolated_env(self.shadow_dir, {"GIT_DIR": str(directory / ".git")})
        proc = git.run(["rev-parse", "-q", "--verify", "HEAD^{commit}"], env=env, cwd=directory, ok=(0, 1, 128))
        if proc.returncode != 0:
            return None  # no commits yet, or not a repository git can read
        return proc.stdout.decode().strip() or None


def status_paths(out: bytes) -> tuple[list[str], set[str], list[tuple[str, str]]]:
    """Paths in `git status --porcelain=v2 -z` output, which of them are in the index, and the blob
    ids (with their paths) of index entries that differ from HEAD (staged content)."""
    records = out.split(b"\0")
    paths: list[str] = []
    tracked: set[str] = set()
    staged: list[tuple[str, str]] = []
    i = 0
    while i < len(records):
        record = records[i]
        i += 1
        kind = record[:1]
        if kind in (b"1", b"2"):
            # "1 XY sub mH mI mW hH hI path"; "2 XY sub mH mI mW hH hI Xscore path\0origPath"
            fields = record.split(b" ", 9 if kind == b"2" else 8)
            if fields[1][:1] != b"." and fields[4] not in (b"000000", GITLINK_MODE.encode()):
                staged.append((fields[7].decode(), os.fsdecode(fields[-1])))
            tracked.add(os.fsdecode(fields[-1]))
            if kind == b"2":  # renames are off, but be safe: the next record is the original path
                tracked.add(os.fsdecode(records[i]))
                i += 1
        elif kind == b"u":
            tracked.add(os.fsdecode(record.split(b" ", 10)[10]))
        elif kind == b"?":
            paths.append(os.fsdecode(record[2:]).rstrip("/"))
    return sorted(tracked) + paths, tracked, staged
