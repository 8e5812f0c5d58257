"""One helper started once per run, which starts every command of the run, instead of one per command.

Every command a `Runner` starts goes behind helper.py: as root, to id-map the repository and become an
unprivileged uid before bubblewrap; without bubblewrap, to enter Landlock. Started per command, that
helper is an interpreter loading ctypes, making a mount namespace and tearing it down again: on git/git,
more than a whole `git status`. The launcher is helper.py in mode "serve": it does that setup once and
forks for each command the very steps a helper started for it would take (helper.py `serve`), so what
a command runs under is the same.

It also lives in its own pids cgroup, which its commands inherit from their first instruction: moving
each command into a fresh cgroup waits for the kernel (10-20 ms each). Commands of one launcher run one
at a time (a Runner's commands do), so that cgroup is the command's for as long as it runs; the
launcher itself is the one process in it that `pids()` leaves out.

It is a child subreaper: whatever a command leaves running (a `setsid` child, a double fork, a process
that moved itself out of the cgroup) is still its descendant, and it kills them all before it reports
the command's end, so gitbot's after-command checks see a work tree nothing of the command still changes.

Only gitbot holds the launcher's socket: no command inherits it (helper.py `_place_fds`). When gitbot
exits the socket closes, and the launcher kills what still runs and exits.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time

from gitbot.sandbox import confine, processes

READY_TIMEOUT_SECONDS = 20.0
# How long gitbot waits for an answer that is due at once ("pid" after a request, "exit" after the end):
# a command can stop the launcher (SIGSTOP where nothing scopes signals), and gitbot must not hang.
ANSWER_TIMEOUT_SECONDS = 20.0


class LauncherUnavailable(OSError):
    """The launcher could not be started or stopped answering: commands start the per-command way."""


class LaunchedProcess:
    """A command the launcher started, with what run_command uses of a subprocess.Popen: `pid` (it leads
    its own session and process group), `stdout`, `poll()`, `wait()`, and `exit_fd()`, readable once it
    has ended and every process it left is gone (`stopped_leftovers`: how many the launcher killed)."""

    def __init__(self, pid: int, answer: socket.socket, stdout):
        self.pid = pid
        self.stdout = stdout
        self.returncode: int | None = None
        self.stopped_leftovers = 0
        self._answer = answer
        self._pending = b""

    def exit_fd(self) -> int:
        return self._answer.fileno()

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read(block=False)
        return self.returncode

    def wait(self) -> int:
        """The exit status; called once the command has ended (or been killed whole), so the answer is
        due at once: a launcher that gives none (stopped by a command) counts the command as killed."""
        deadline = time.monotonic() + ANSWER_TIMEOUT_SECONDS
        while self.returncode is None:
            if time.monotonic() >= deadline:
                self._finish(-9)
                break
            self._read(block=True, timeout=max(0.0, deadline - time.monotonic()))
        return self.returncode

    def _read(self, *, block: bool, timeout: float | None = None) -> None:
        if b"\n" not in self._pending:
            self._answer.settimeout(timeout if block else 0.0)
            try:
                chunk = self._answer.recv(64)
            except (BlockingIOError, TimeoutError):
                return
            except OSError:
                chunk = b""
            if not chunk:  # the launcher died with the command running: it was killed with it
                self._finish(-9)
                return
            self._pending += chunk
        if b"\n" in self._pending:
            line, _, self._pending = self._pending.partition(b"\n")
            word, _, value = line.strip().partition(b" ")
            if word == b"exit":  # "exit N K": K processes it left running, which the launcher killed
                code, _, stopped = value.partition(b" ")
                self.stopped_leftovers = int(stopped or 0)
                self._finish(int(code))

    def _finish(self, code: int) -> None:
        self.returncode = code
        self._answer.close()


class Launcher:
    """The long-lived helper for one Runner's commands (start it with `start`, end it with `close`)."""

    def __init__(self):
        self._process: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._lock = threading.Lock()
        self.cgroup: str | None = None
        self.stage: str | None = None  # where it stages sources (confine.stage_directory() when started)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def alive(self) -> bool:
        """Running, and staging where this process's commands expect it (a cleaner may remove /tmp's)."""
        return self._process is not None and self._process.poll() is None and \
            self.stage == confine.stage_directory()

    def start(self) -> None:
        """Start the helper in its cgroup and wait until it is ready. Raises LauncherUnavailable."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.stage = confine.stage_directory()
            command = confine.helper_command("serve", {}) + [str(theirs.fileno()), self.stage]
            self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.PIPE, pass_fds=(theirs.fileno(),),
                                             start_new_session=True, env={"PATH": "/usr/bin:/bin"})
        except OSError as exc:
            ours.close()
            raise LauncherUnavailable(str(exc)) from None
        finally:
            theirs.close()
        self._control = ours
        # Its own commands join the cgroup by being forked in it; the launcher joins it once, now,
        # while its interpreter starts.
        processes.remove_stale_cgroups()
        made = processes.make_cgroup(f"launcher-{self._process.pid}", processes.MAX_PROCESSES + 1)
        if made is not None:
            self.cgroup = made[1]
            if not processes.join_cgroup(self.cgroup, self._process.pid):
                processes.remove_cgroup(self.cgroup)
                self.cgroup = None
        ours.settimeout(READY_TIMEOUT_SECONDS)
        try:
            ready = ours.recv(64)
        except OSError:
            ready = b""
        ours.settimeout(None)
        if ready != b"ready\n":
            why = self._end(read_stderr=True) or ready.decode("utf-8", "replace").strip()
            self.close()
            raise LauncherUnavailable(why or "the launcher did not start")

    def spawn(self, argv: list[str], cwd: str | os.PathLike, env: dict[str, str], limit, *,
              stdin: int | None = None) -> LaunchedProcess:
        """Start `argv` (a helper command line from confine/contain/bwrap, or a plain one) in `cwd` with
        exactly `env`, its output (stdout and stderr) on a pipe, the fds `limit` passes under their
        numbers, and `stdin` (default /dev/null; a warm sandbox's command pipe, warm.py) as its fd 0.
        Raises LauncherUnavailable when the launcher is gone (the command did not start)."""
        request = json.dumps({"args": request_args(argv, limit), "cwd": os.fspath(cwd), "env": env,
                              "fds": list(limit.pass_fds)}).encode("utf-8", "surrogateescape")
        memfd = os.memfd_create("gitbot-request", os.MFD_CLOEXEC)
        os.write(memfd, request)
        os.lseek(memfd, 0, os.SEEK_SET)
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        answer, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        stdin = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC) if stdin is None else os.dup(stdin)
        try:
            with self._lock:
                if self._control is None:
                    raise LauncherUnavailable("the launcher is closed")
                socket.send_fds(self._control, [b"x"],
                                [memfd, theirs.fileno(), stdin, write_end, *limit.pass_fds])
            # "pid N", and, for a command that ended at once, maybe "exit N" in the same read.
            started = b""
            answer.settimeout(ANSWER_TIMEOUT_SECONDS)
            while b"\n" not in started:
                chunk = answer.recv(64)
                if not chunk:
                    raise LauncherUnavailable("the launcher stopped")
                started += chunk
        except OSError as exc:
            os.close(read_end)
            answer.close()
            raise LauncherUnavailable(str(exc)) from None
        finally:
            for fd in (memfd, stdin, write_end):
                os.close(fd)
            theirs.close()
        line, _, rest = started.partition(b"\n")
        word, _, value = line.strip().partition(b" ")
        if word != b"pid":
            os.close(read_end)
            answer.close()
            raise LauncherUnavailable(f"the launcher answered {line!r}")
        launched = LaunchedProcess(int(value), answer, os.fdopen(read_end, "rb", buffering=0))
        launched._pending = rest
        return launched

    def _end(self, *, read_stderr: bool = False) -> str:
        """Wait for the launcher to go (its socket closed: it exits), killing it after a while; what it
        wrote on stderr, when asked (read only once it is gone, so the read ends)."""
        if self._process is None:
            return ""
        if self._control is not None:
            self._control.close()
            self._control = None
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        said = ""
        if self._process.stderr is not None and not self._process.stderr.closed:
            if read_stderr:
                said = self._process.stderr.read().decode("utf-8", "replace").strip()
            self._process.stderr.close()
        return said

    def close(self) -> None:
        """End the launcher (commands still running are killed) and remove its cgroup."""
        with self._lock:
            control, self._control = self._control, None
        if control is not None:
            control.close()
        self._end()
        if self.cgroup is not None:
            processes.remove_cgroup(self.cgroup)
            self.cgroup = None


def request_args(argv: list[str], limit) -> list[str]:
    """The helper arguments (MODE SPEC... -- ARGV...) the launcher is asked to start `argv` with."""
    args = confine.helper_arguments(argv)
    return args if args is not None else ["exec", *limit.helper_fields(), "--", *argv]
