"""A sandbox started before its command is known, while the model thinks.

bubblewrap's setup (namespaces, some 35 mounts, each re-reading the mount table) does not depend on the
command, and is most of a step's cost. So after a command in the repository's root, the Runner starts
the next sandbox at once, exactly as it would start a command, with a waiter inside instead: bash
reading the command, NUL-terminated, from its stdin pipe, then running it as `bash -c` would have (the
same `$0`, stdin /dev/null). It writes nothing anywhere: it waits.

When the command comes, the Runner builds the whole request afresh, as for a cold start, and hands the
command over only when
(a) that request is the warm one's but for the command (`request`), and
(b) every path its mounts name in the repository and its git directories is still the file it was
    (`identities`): a bind mount pins the inode it was made on, so a read_deny file renamed over since
    would not be masked, nor a protected directory replaced since be read-only;
(c) every mount it was to make there is still in its mount table (`mounted`): a mount belongs to the
    directory entry it was made on, and when the host unlinks that entry or renames something over it,
    the kernel detaches the mount in every other namespace. The path may then hold the very same inode
    again (`ln .env ../keep; rm .env; mv ../keep .env`, or a file deleted and made again that gets the
    freed inode number back), which (b) cannot tell: only the sandbox's own /proc/<pid>/mountinfo can.
Otherwise the warm sandbox is killed and the command starts cold. Nothing else differs: the command's
timeout starts at the hand-over, and run_command follows it as one it started (command.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
import weakref

from gitbot.sandbox import processes
from gitbot.sandbox.confine import BIND_OPTIONS, OPTION_ARITY
from gitbot.sandbox.env import under
from gitbot.sandbox.launcher import LaunchedProcess, Launcher, request_args

# No interpreter: its start-up is what a warm start saves. `exec "$0"` runs the command in a bash started
# as the cold start's is (same argv[0]); a read that meets the end of the pipe first means gitbot went.
WAITER = 'IFS= read -r -d "" c || exit 125; exec </dev/null; exec "$0" -c "$c"'
# Options whose values name paths in the sandbox's view of the host.
# How long the hand-over waits for bubblewrap to finish its mounts before it starts the command cold.
WAITER_TIMEOUT = 1.0
_PATH_OPTIONS = BIND_OPTIONS | {"--tmpfs", "--remount-ro", "--dir", "--chdir", "--symlink"}


def waiting(argv: list[str]) -> list[str]:
    """The inner command line of a warm sandbox for a run_shell's `[bash, "-c", command]`."""
    return [*argv[:-1], WAITER]


def request(argv: list[str], cwd, env: dict[str, str], limit: processes.ProcessLimit) -> tuple:
    """What the launcher is asked for `argv` (a run_shell's, wrapped), without its command: the rest
    must match for the warm sandbox to run it. Two things differ between any two requests and are
    left out: the numbers of the fds passed (a fresh memfd each, holding the same seccomp program), and
    RLIMIT_NPROC, the user's process count when it was made plus the limit (approximate by nature; the
    pids cgroup, which is exact, is the limit's `max_processes`, compared)."""
    args = request_args(argv, limit)
    separator = args.index("--")
    fields = list(args[1:separator])
    if len(fields) > 1:
        fields[1] = "*"
    passed = {str(fd) for fd in limit.pass_fds}
    inner = [("*" if arg in passed and args[index - 1] == "--seccomp" else arg)
             for index, arg in enumerate(args[separator:-1], start=separator)]
    return (args[0], tuple(fields), tuple(inner), os.fspath(cwd), tuple(sorted(env.items())),
            limit.max_processes, len(limit.pass_fds))


def identities(argv: list[str], roots: list[str]) -> dict[str, tuple[int, int, int] | None]:
    """(st_dev, st_ino, file type) of every path the sandbox's options name under `roots` (the
    repository and its git directories), None where missing. One lstat each: some 70 on git/git."""
    found: dict[str, tuple[int, int, int] | None] = {}
    index = argv.index("--") + 2 if argv[1:2] == ["-I"] else 1  # past bwrap (and the helper before it, as root)
    while index < len(argv) and argv[index] != "--":
        option = argv[index]
        arity = OPTION_ARITY.get(option, 0)
        if option in _PATH_OPTIONS:
            for path in argv[index + 1:index + 1 + arity]:
                if path not in found and any(under(path, root) for root in roots):
                    found[path] = _identity(path)
        index += 1 + arity
    return found


def mount_targets(argv: list[str], roots: list[str]) -> frozenset[str]:
    """The mount points bubblewrap is asked to make under `roots` (binds and tmpfs; not the `-try` binds,
    which make none when their source is missing)."""
    found = set()
    index = argv.index("--") + 2 if argv[1:2] == ["-I"] else 1
    while index < len(argv) and argv[index] != "--":
        option = argv[index]
        arity = OPTION_ARITY.get(option, 0)
        target = None
        if option in BIND_OPTIONS and not option.endswith("-try"):
            target = argv[index + 2]
        elif option == "--tmpfs":
            target = argv[index + 1]
        if target is not None and any(under(target, root) for root in roots):
            found.add(target)
        index += 1 + arity
    return frozenset(found)


_ESCAPED = re.compile(rb"\\([0-7]{3})")


def mount_points(mountinfo: bytes) -> set[str]:
    """The mount points of a /proc/<pid>/mountinfo (the fifth field, its space, tab, newline and
    backslash written as octal escapes, `\\040`)."""
    points = set()
    for line in mountinfo.splitlines():
        fields = line.split(b" ")
        if len(fields) > 4:
            points.add(os.fsdecode(_ESCAPED.sub(lambda match: bytes([int(match[1], 8)]), fields[4])))
    return points


def _identity(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode)


class WarmSandbox:
    """A sandbox waiting for its command (start it with `start`; then `go` or `discard`)."""

    def __init__(self, launcher: Launcher, process: LaunchedProcess, pipe: int, wanted: tuple,
                 pinned: dict, targets: frozenset[str], inner: list[str], limit: processes.ProcessLimit,
                 masks: dict):
        self.launcher = launcher
        self.process = process
        self._pipe = pipe  # the write end of its stdin
        # A runner collected without close() (nor discard) must not leak the pipe: the waiter then reads
        # its end and exits.
        self._closing = weakref.finalize(self, _close_quietly, pipe)
        self._request = wanted
        self._pinned = pinned
        self._targets = targets
        self._waiter = b"\0".join(os.fsencode(arg) for arg in inner) + b"\0"  # its /proc/<pid>/cmdline
        self._limit = limit
        self.masks = masks  # the hidden paths' states when its mounts were made (unmasked.py)
        self._over = False  # handed its command, or discarded

    @classmethod
    def start(cls, launcher: Launcher, argv: list[str], cwd, env: dict[str, str],
              limit: processes.ProcessLimit, roots: list[str], masks: dict) -> WarmSandbox:
        """Start `argv` (wrapped `waiting(...)`) through `launcher`, under `limit` (entered; its fds are
        given now); `masks`: the hidden paths' states before it starts (unmasked.py). Raises OSError when it
        cannot start."""
        wanted = request(argv, cwd, env, limit)
        pinned = identities(argv, roots)
        targets = mount_targets(argv, roots)
        inner = argv[len(argv) - argv[::-1].index("--"):]  # the waiter's argv, after bubblewrap's last "--"
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        try:
            process = launcher.spawn(argv, cwd, env, limit, stdin=read_end)
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        limit.started(process.pid)
        return cls(launcher, process, write_end, wanted, pinned, targets, inner, limit, masks)

    def fits(self, argv: list[str], cwd, env: dict[str, str], limit: processes.ProcessLimit) -> bool:
        """Whether a cold start of `argv` would get exactly this sandbox: the same request, and every
        path its mounts were made on still the same file."""
        if request(argv, cwd, env, limit) != self._request:
            return False
        return all(_identity(path) == identity for path, identity in self._pinned.items())

    def mounted(self, timeout: float = WAITER_TIMEOUT) -> bool:
        """Whether every mount bubblewrap was asked to make in the repository is in the waiter's mount
        table now: False when one was detached since (its path unlinked or renamed over on the host), or
        the waiter is not up within `timeout` (bubblewrap still mounting, or gone)."""
        deadline = time.monotonic() + timeout
        while True:
            waiter = self._find_waiter()
            if waiter is not None:
                try:
                    with open(f"/proc/{waiter}/mountinfo", "rb") as handle:
                        return self._targets <= mount_points(handle.read())
                except OSError:
                    return False
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)

    def _find_waiter(self) -> int | None:
        """The pid of the waiting bash: a descendant of the launched process (bubblewrap, then its pid 1)
        with the waiter's command line, which it has only once bubblewrap has made every mount and
        exec'd it."""
        pids = [self.process.pid]
        while pids:
            pid = pids.pop()
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    if handle.read() == self._waiter:
                        return pid
                with open(f"/proc/{pid}/task/{pid}/children", "rb") as handle:
                    pids += [int(child) for child in handle.read().split()]
            except (OSError, ValueError):
                continue
        return None

    def go(self, command: str) -> LaunchedProcess | None:
        """Hand over `command`; the process now running it, or None when the waiter is gone (the sandbox
        failed to start, or was killed): then discard it and start cold."""
        pipe, self._pipe = self._pipe, None
        try:
            data = memoryview(os.fsencode(command) + b"\0")
            while data:  # a long command fills the pipe: the waiter reads it as it comes
                data = data[os.write(pipe, data):]
        except OSError:
            return None
        finally:
            self._closing.detach()
            os.close(pipe)
        self._over = True
        return self.process

    def discard(self) -> None:
        """Kill it whole (its process group, and whatever is in the launcher's cgroup but the launcher)
        and reap it; nothing once it ran its command or was discarded."""
        if self._over:
            return
        self._over = True
        if self._pipe is not None:
            self._closing.detach()
            os.close(self._pipe)
            self._pipe = None
        processes.kill_all(self.process.pid, self._limit)
        self._limit.__exit__(None, None, None)  # until nothing of it is left in the cgroup
        with contextlib.suppress(OSError):
            self.process.wait()
        with contextlib.suppress(OSError):
            self.process.stdout.close()



def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
