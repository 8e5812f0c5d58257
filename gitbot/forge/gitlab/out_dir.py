"""The job's output directory (GITBOT_OUTPUT_DIR, by default `.gitbot-out` in the work tree): gitbot's alone.

By default it sits in the work tree, where the agent's commands may write. So:
  - before the flow, it is claimed: a directory holding anything but gitbot's own files is refused (the
    end of the job empties it, and must not take a user's files with it), and, when it is inside the work
    tree, it is listed in the clone's `.git/info/exclude` (read-only in the sandbox) for the run, so no
    commit takes what the agent writes there;
  - every file gitbot writes there is written through a descriptor of the directory opened without
    following a symlink, after unlinking whatever has the name, and created exclusively without following
    one: a symlink the agent planted is replaced, never written through;
  - at the end, everything gitbot did not write is removed from it, and the run's record, prepared in a
    private directory outside the work tree (the sandbox sees a fresh /tmp), is moved in. What the
    component uploads as the artifact and the dotenv report is then only gitbot's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from gitbot.forge.pull_request import git

SUMMARY_FILE = "summary.md"
OUTPUTS_FILE = "gitbot.env"
IGNORE_FILE = ".gitignore"
RECORD_DIR = "gitbot-artifact"  # forge/artifact.py's ARTIFACT_DIR_NAME
GITBOTS = frozenset({SUMMARY_FILE, OUTPUTS_FILE, IGNORE_FILE, RECORD_DIR})


def problem(out_dir: Path) -> str | None:
    """Why gitbot may not use `out_dir` (it holds files that are not gitbot's), or None."""
    try:
        info = os.lstat(out_dir)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return f"GITBOT_OUTPUT_DIR ({out_dir}) is not a directory"
    others = sorted(name for name in os.listdir(out_dir) if name not in GITBOTS)
    if others:
        return (
            f"GITBOT_OUTPUT_DIR ({out_dir}) holds files gitbot did not write ({', '.join(others[:5])}); it empties "
            "that directory at the end, so point it at a new or empty one"
        )
    return None


@contextlib.contextmanager
def opened(out_dir: Path) -> Iterator[int]:
    """A descriptor of `out_dir`, made if missing; a symlink or a file in its place is removed first."""
    for _ in range(3):
        try:
            fd = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            break
        except FileNotFoundError:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError:  # ELOOP: a symlink; ENOTDIR: a file
            if not out_dir.is_symlink() and not out_dir.is_file():
                raise
            out_dir.unlink()
    else:
        raise OSError(f"cannot open the output directory {out_dir}")
    try:
        yield fd
    finally:
        os.close(fd)


def write(out_dir: Path, name: str, text: str) -> None:
    """`name` in `out_dir` holds `text`, whatever was there before (a planted symlink included): written
    beside it exclusively, without following a symlink, then renamed over it, so a reader never sees half."""
    partial = name + ".partial"
    with opened(out_dir) as fd:
        _remove(fd, partial)
        handle = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(partial, name, src_dir_fd=fd, dst_dir_fd=fd)


def tidy(out_dir: Path, written: set[str], record: Path | None) -> None:
    """Leave in `out_dir` only the files gitbot `written`, plus the run's record moved in from `record`."""
    with opened(out_dir) as fd:
        for name in os.listdir(fd):
            if name not in written:
                _remove(fd, name)
    if record is not None and (record / RECORD_DIR).is_dir():
        shutil.copytree(record / RECORD_DIR, out_dir / RECORD_DIR, symlinks=True)
    if record is not None:
        shutil.rmtree(record, ignore_errors=True)


def _remove(fd: int, name: str) -> None:
    try:
        info = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=fd)  # never follows a symlink inside
    else:
        os.unlink(name, dir_fd=fd)


@contextlib.contextmanager
def excluded(repo: Path, out_dir: Path) -> Iterator[None]:
    """While inside, git in `repo` ignores `out_dir` when it lies in the work tree (a line of the clone's
    info/exclude, taken out again afterwards: the checkout is left as it was)."""
    try:
        relative = out_dir.resolve().relative_to(repo.resolve())
    except ValueError:
        yield  # outside the work tree: nothing there is committed
        return
    exclude = Path(git(repo, "rev-parse", "--git-path", "info/exclude").strip())
    exclude = exclude if exclude.is_absolute() else repo / exclude
    before = exclude.read_bytes() if exclude.exists() else None
    exclude.parent.mkdir(parents=True, exist_ok=True)
    line = f"/{relative.as_posix()}/\n".encode()
    exclude.write_bytes((before or b"").rstrip(b"\n") + (b"\n" if before and before.strip() else b"") + line)
    try:
        yield
    finally:
        if before is None:
            exclude.unlink(missing_ok=True)
        else:
            exclude.write_bytes(before)
