"""One gitbot process at a time per work tree: `<git-dir>/gitbot/run.lock`.

The file names its owner (pid, run id, host, start time) so a refusal can say who holds it.
Ownership itself is an flock() on the open file: the kernel drops it when the owner dies, however
it dies, so a lock left behind by a killed process is recognised as stale (and cleared) even if
its pid has since been reused. Where flock is unavailable (some network file systems) the pid in
the file decides: a dead pid is stale.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Self

from gitbot import pids
from gitbot.checkpoints.errors import LockHeld
from gitbot.checkpoints.seeding import finish_writers
from gitbot.checkpoints.shadow import discover

LOCK_NAME = "run.lock"

# Locks this process holds, by path: restore() called while the caller already holds the lock
# (resume does that) must not refuse against itself.
_HELD: dict[str, RunLock] = {}


class RunLock:
    def __init__(self, repo: Path | str, *, run_id: str | None = None):
        paths = discover(repo)
        self.path = paths.gitbot_dir / LOCK_NAME
        self.run_id = run_id
        self.stale: dict[str, Any] | None = None  # the stale lock cleared by acquire(), if any
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    @staticmethod
    def held_by_this_process(repo: Path | str) -> bool:
        return str(discover(repo).gitbot_dir / LOCK_NAME) in _HELD

    def acquire(self) -> RunLock:
        """Take the lock or raise LockHeld naming the live holder; a stale lock is cleared (see .stale)."""
        if self._fd is not None:
            return self
        if str(self.path) in _HELD:
            raise LockHeld(str(self.path), {"pid": os.getpid(), "run_id": _HELD[str(self.path)].run_id})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(10):  # retried only when another process replaced the file under us
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                locked = self._flock(fd)
            except BaseException:
                os.close(fd)
                raise
            if not locked:
                holder = _read_holder(fd)
                os.close(fd)
                raise LockHeld(str(self.path), holder)
            try:
                same_file = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same_file = False
            if not same_file:  # the previous owner unlinked it between our open and flock
                os.close(fd)
                continue
            previous = _read_holder(fd)
            if previous:
                self.stale = previous
            info = {"pid": os.getpid(), "run_id": self.run_id, "host": socket.gethostname(),
                    "started": round(time.time(), 3)}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode() + b"\n", 0)
            self._fd = fd
            _HELD[str(self.path)] = self
            return self
        raise LockHeld(str(self.path), {"pid": "unknown (lock file keeps changing)"})

    def _flock(self, fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                raise
        # No flock here: fall back to the pid written in the file.
        holder = _read_holder(fd)
        pid = holder.get("pid")
        return not (isinstance(pid, int) and pid != os.getpid() and holder.get("host") == socket.gethostname()
                    and pids.alive(pid))

    def release(self) -> None:
        if self._fd is None:
            return
        finish_writers()  # a checkpoint's background refresh must not outlive the lock (see seeding.py)
        try:
            if os.path.samestat(os.fstat(self._fd), os.stat(self.path)):
                os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(self._fd)
            self._fd = None
            _HELD.pop(str(self.path), None)

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        data = os.pread(fd, 4096, 0)
        holder = json.loads(data.decode()) if data.strip() else {}
    except (OSError, ValueError):
        return {"pid": "unknown (unreadable lock file)"}
    return holder if isinstance(holder, dict) else {}
