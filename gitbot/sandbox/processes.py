"""The processes of one command: a process budget, and stopping all of them.

A command runs in its own session and process group, and, where this machine allows it, in its
own pids cgroup: a fork bomb hits the cgroup's limit, and everything it started (even what left
the process group with setsid) can be found and killed when it times out or exits leaving
background processes behind.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import signal
import time

TYPE_CHECKING = False  # on the hook's fast path (through command.py): no typing, pathlib or resource
if TYPE_CHECKING:
    from typing import Self

# Per-file size cap for commands (RLIMIT_FSIZE), so a runaway writer cannot fill the disk.
MAX_FILE_BYTES = 4 << 30
# Processes one command may have at once (fork bombs).
MAX_PROCESSES = 512
KILL_GRACE_SECONDS = 2.0


def _processes_of_uid(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def _own_cgroup_dirs() -> list[tuple[str, str]]:
    """(kind, directory) of this process's cgroups that can hold a pids limit: ("v1", pids dir) or
    ("v2", unified dir)."""
    try:
        with open("/proc/self/cgroup") as handle:
            membership = handle.read().splitlines()
        with open("/proc/self/mountinfo") as handle:
            mounts = handle.read().splitlines()
    except OSError:
        return []
    v1_root = v2_root = None
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields = left.split()
        fstype, *rest = right.split()
        if fstype == "cgroup2" and v2_root is None:
            v2_root = fields[4]
        elif fstype == "cgroup" and rest and "pids" in rest[-1].split(","):
            v1_root = fields[4]
    found = []
    for line in membership:
        number, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(",") and v1_root:
            found.append(("v1", os.path.join(v1_root, path.lstrip("/"))))
        elif number == "0" and controllers == "" and v2_root:
            found.append(("v2", os.path.join(v2_root, path.lstrip("/"))))
    return found


class ProcessLimit:
    """At most `max_processes` processes for one command, by the strongest means available here:
    a pids cgroup (exact, also for root), and RLIMIT_NPROC (works for non-root users; root ignores it).
    Also caps file size. Use as a context manager; `launcher(argv)` prefixes the command."""

    _numbers = itertools.count(1)  # next() on a count is atomic in CPython: no lock needed

    def __init__(self, max_processes: int = MAX_PROCESSES, max_file_bytes: int = MAX_FILE_BYTES, *,
                 launcher=None):
        self.max_processes = max_processes
        # Started by the launcher (a launcher.Launcher; not imported: launcher.py builds on this module):
        # no shell in front, and the launcher's cgroup.
        self.launched_by = launcher
        self.max_file_bytes = max_file_bytes
        self.cgroup: str | None = None
        self.cgroup_kind = ""
        self.nproc: int | None = None
        self._go: tuple[int, int] | None = None  # (read, write) ends: see helper_fields
        self._through_helper = False
        self._passed: list[int] = []  # other fds the command's first process is given (pass_fd)

    def __enter__(self) -> Self:
        self.cgroup = self._make_cgroup()
        if os.geteuid() != 0:
            _soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
            wanted = _processes_of_uid(os.getuid()) + self.max_processes
            self.nproc = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        return self

    def _make_cgroup(self) -> str | None:
        if self.launched_by is not None:
            # The launcher's: its commands are born in it. Its limit is this command's, and one more for it.
            cgroup = self.launched_by.cgroup
            if cgroup is None or not _write(os.path.join(cgroup, "pids.max"), str(self.max_processes + 1)):
                return None
            self.cgroup_kind = "launcher"
            return cgroup
        made = make_cgroup(f"{os.getpid()}-{next(ProcessLimit._numbers)}", self.max_processes)
        if made is None:
            return None
        self.cgroup_kind, directory = made
        return directory

    @property
    def description(self) -> str:
        if self.cgroup:
            return f"at most {self.max_processes} processes (pids cgroup)"
        if self.nproc:
            return f"at most {self.nproc} processes for the user (RLIMIT_NPROC)"
        return "no process limit available (running as root without a writable pids cgroup)"

    def launcher(self, argv: list[str]) -> list[str]:
        """argv prefixed by a tiny shell that joins the cgroup and sets the limits, then execs it
        (a preexec_fn would be unsafe in a threaded process). A command started through the sandbox
        helper (`helper_fields`) needs none: it is returned as it is."""
        if self._through_helper or self.launched_by is not None:
            return argv
        script = ('if [ -n "$1" ]; then echo $$ > "$1" || exit 126; fi; '
                  'if [ -n "$2" ]; then ulimit -u "$2" || exit 126; fi; '
                  'ulimit -f "$3" || exit 126; shift 3; exec "$@"')
        procs = os.path.join(self.cgroup, "cgroup.procs") if self.cgroup else ""
        blocks = str(self.max_file_bytes // 1024)  # bash counts -f in 1024-byte blocks
        bash = next((path for path in ("/usr/bin/bash", "/bin/bash") if os.access(path, os.X_OK)), "/bin/bash")
        return [bash, "-c", script, "gitbot-launch", procs, str(self.nproc or ""), blocks, *argv]

    def helper_fields(self) -> list[str]:
        """The limits for the sandbox helper (helper.py) to set itself instead of the launcher, when
        there is a cgroup to join: file size, processes (for a non-root user), and the fd on which it
        waits until this process has put it into the cgroup (`started`). A process that moves itself
        into a v1 pids cgroup waits for the kernel (10-20 ms); moved from here, that happens while the
        helper's interpreter starts. Without a cgroup the launcher does it all, as for any command."""
        if self.launched_by is not None:
            return [str(self.max_file_bytes), str(self.nproc) if self.nproc else "-", "-"]
        if not self.cgroup:
            return ["-", "-", "-"]
        self._through_helper = True
        if self._go is None:
            self._go = os.pipe()
        return [str(self.max_file_bytes), str(self.nproc) if self.nproc else "-", str(self._go[0])]

    def pass_fd(self, fd: int) -> int:
        """Give `fd` to the command's first process, under its number; closed here once it started."""
        self._passed.append(fd)
        return fd

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return ((self._go[0],) if self._go is not None else ()) + tuple(self._passed)

    def _close_passed(self) -> None:
        for fd in self._passed:
            os.close(fd)
        self._passed = []

    def started(self, pid: int) -> None:
        """The command's first process is running: put it in the cgroup, then let it go on (a helper
        told nothing, because joining failed, stops before running anything)."""
        self._close_passed()
        if self._go is None:
            return
        read_end, write_end = self._go
        self._go = None
        os.close(read_end)
        try:
            with open(os.path.join(self.cgroup, "cgroup.procs"), "w") as handle:
                handle.write(str(pid))
            os.write(write_end, b"ok\n")
        except OSError:
            pass
        finally:
            os.close(write_end)

    def pids(self) -> list[int]:
        """The command's processes that are still running."""
        if not self.cgroup:
            return []
        try:
            with open(os.path.join(self.cgroup, "cgroup.procs")) as handle:
                found = live_processes(int(line) for line in handle if line.strip())
        except OSError:
            return []
        if self.launched_by is not None:
            found = [pid for pid in found if pid != self.launched_by.pid]
        return found

    def signal_all(self, signum: int) -> None:
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signum)

    def __exit__(self, *exc_info) -> None:
        self._close_passed()
        if self._go is not None:  # never started
            for fd in self._go:
                os.close(fd)
            self._go = None
        if not self.cgroup:
            return
        deadline = time.monotonic() + 5
        while self.pids() and time.monotonic() < deadline:
            self.signal_all(signal.SIGKILL)
            time.sleep(0.02)
        if self.launched_by is None:
            remove_cgroup(self.cgroup)
        self.cgroup = None


def live_processes(pids) -> list[int]:
    """The pids that are still running (not zombies waiting for their reaper)."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The state follows the parenthesised command name, which may itself contain ") ".
        if stat[stat.rindex(b")") + 2:][:1] != b"Z":
            alive.append(pid)
    return alive


def make_cgroup(name: str, max_processes: int) -> tuple[str, str] | None:
    """(kind, directory) of a new pids cgroup `gitbot-NAME` beside this process's own, limited to
    `max_processes`, or None where this machine gives none."""
    name = f"gitbot-{name}"
    for kind, parent in _own_cgroup_dirs():
        directory = os.path.join(parent, name)
        try:
            os.mkdir(directory)
        except OSError:
            continue
        if kind == "v2" and not os.path.exists(os.path.join(directory, "pids.max")):
            _write(os.path.join(parent, "cgroup.subtree_control"), "+pids")
        if not _write(os.path.join(directory, "pids.max"), str(max_processes)):
            remove_cgroup(directory)
            continue
        return kind, directory
    return None


def remove_stale_cgroups() -> None:
    """Remove the empty cgroups gitbot processes that were killed left behind (`gitbot-PID-N` of a
    command, `gitbot-launcher-PID` of a launcher) whose process is gone; one that still holds a process
    cannot be removed (rmdir refuses)."""
    for _kind, parent in _own_cgroup_dirs():
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            parts = name.split("-")
            if len(parts) == 3 and parts[0] == "gitbot" and parts[1] == "launcher":
                pid = parts[2]
            elif len(parts) == 3 and parts[0] == "gitbot" and parts[2].isdigit():
                pid = parts[1]
            else:
                continue
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(parent, name))


def join_cgroup(directory: str, pid: int) -> bool:
    return _write(os.path.join(directory, "cgroup.procs"), str(pid))


def _write(path: str, text: str) -> bool:
    try:
        with open(path, "w") as handle:
            handle.write(text)
        return True
    except OSError:
        return False


def remove_cgroup(directory: str) -> None:
    for _ in range(50):
        try:
            os.rmdir(directory)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


# ---------------------------------------------------------------------------------------------
# A command's process group


def group_exists(pgid: int) -> bool:
    """Is any process (a zombie too) left in the group? One syscall."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_alive(pgid: int) -> bool:
    if not group_exists(pgid):
        return False
    # Something in the group exists; it only counts if it is not a zombie.
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()
        if len(fields) > 2 and fields[2] == str(pgid).encode():
            members.append(int(entry))
    return bool(live_processes(members))


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def leftovers(pgid: int, limit: ProcessLimit | None, wait: float = 0.2) -> bool:
    """Are processes of the command still running after it exited? (A sandbox's PID namespace takes
    a moment to empty, so give them a short while to go by themselves.)"""
    deadline = time.monotonic() + wait
    while True:
        if not group_alive(pgid) and not (limit and limit.pids()):
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.01)


def kill_all(pgid: int, limit: ProcessLimit | None) -> None:
    signal_group(pgid, signal.SIGKILL)
    if limit is not None:
        limit.signal_all(signal.SIGKILL)


def stop(process, pgid: int, limit: ProcessLimit | None) -> None:
    """SIGTERM to everything the command started, a grace period, then SIGKILL until nothing is left."""
    signal_group(pgid, signal.SIGTERM)
    if limit is not None:
        limit.signal_all(signal.SIGTERM)

    def gone() -> bool:
        process.poll()
        return not group_alive(pgid) and not (limit and limit.pids())

    deadline = time.monotonic() + KILL_GRACE_SECONDS
    while time.monotonic() < deadline:
        if gone():
            return
        time.sleep(0.05)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        kill_all(pgid, limit)
        if gone():
            return
        time.sleep(0.02)
