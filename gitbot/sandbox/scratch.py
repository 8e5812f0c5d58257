"""Directories gitbot needs for as long as one process lives (the empty file bound over hidden files,
sanitized git configs, the helper's staging mount point), and nothing left of them afterwards.

Each is `gitbot-<kind>-<pid namespace>-<pid>-<random>` in the temp directory: removed when the process
exits, and one left by a process that could not clean up (SIGKILL, a power cut) is removed by the next
gitbot of the same user that sees that process gone. A git hook that runs gitbot on every commit so
leaves /tmp as it found it instead of adding a directory per commit.

Only directories this user owns, whose name says they are this kind and whose process is gone in this
pid namespace, are removed; never through a symlink (the name could be planted by anyone who can write
the temp directory).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import stat
import tempfile
import threading

KINDS = ("empty", "gitconfig", "stage")
_OWN: dict[tuple[str, str, int], str] = {}
_SWEPT: set[tuple[str, int]] = set()  # (base, pid): one scan of a temp directory per process
_LOCK = threading.Lock()


def process_directory(kind: str, *, base: str | None = None) -> str:
    """This process's directory of `kind` in `base` (default: the temp directory), mode 0755 (the
    sandbox's user binds from it): made on first use, and again if something removed it since."""
    assert kind in KINDS
    base = base or tempfile.gettempdir()
    pid = os.getpid()
    with _LOCK:
        path = _OWN.get((kind, base, pid))
        if path is not None and os.path.isdir(path) and not os.path.islink(path):
            return path
        if (base, pid) not in _SWEPT:
            remove_leftovers(base)
            _SWEPT.add((base, pid))
        path = tempfile.mkdtemp(prefix=f"gitbot-{kind}-{_pid_namespace()}-{pid}-", dir=base)
        os.chmod(path, 0o755)
        atexit.register(_remove, path, pid)
        _OWN[(kind, base, pid)] = path
        return path


def remove_leftovers(base: str) -> None:
    """Remove this user's scratch directories in `base` whose process (in this pid namespace) is gone."""
    pattern = re.compile(f"gitbot-(?:{'|'.join(KINDS)})-{_pid_namespace()}-" + r"(\d+)-")
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None or int(match.group(1)) == os.getpid() or _alive(int(match.group(1))):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
            # rmtree never follows a symlink found inside.
            shutil.rmtree(entry.path, ignore_errors=True)


def _pid_namespace() -> str:
    # A pid names a process only within its pid namespace: a gitbot in a container sharing this temp
    # directory has its own pids, and its directories are not judged by ours.
    try:
        return re.sub(r"\D", "", os.readlink("/proc/self/ns/pid")) or "0"
    except OSError:
        return "0"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: alive
    return True


def _remove(path: str, pid: int) -> None:
    # A forked child inherits the exit handlers; only the process that made the directory removes it.
    if os.getpid() == pid:
        shutil.rmtree(path, ignore_errors=True)
