"""Running one command: a process in its own session, its output merged and capped, stopped whole.

Every command gitbot runs for the agent or as a check goes through `run_command`: the agent's commands
(`bash -c`, see runner.py), the check before and after a fix, and a hook's first run of the user's
own check in the user's environment. So the capping, the timeout and the killing of everything a
command started exist once.

The wait is event-driven: the output pipe and a pidfd of the process are watched with select, so a
command that exits at once costs no polling interval. On timeout (or Ctrl-C in gitbot) the whole
process group (and the command's pids cgroup, when there is one) gets SIGTERM, then SIGKILL.
Processes a command leaves running in the background are stopped when it exits.

This module is on the git hook's fast path: only the standard library's process pieces are
imported at module level (processes.py keeps to them too).
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections import deque

from gitbot.errors import ConfigError
from gitbot.sandbox import processes

TYPE_CHECKING = False  # importing typing for TYPE_CHECKING costs milliseconds on every commit
if TYPE_CHECKING:
    from typing import TextIO

    from gitbot.sandbox.processes import ProcessLimit

DEFAULT_TIMEOUT_SECONDS = 600.0
READ_CHUNK_BYTES = 64 * 1024
# After the command itself exits, background children may keep the pipe open; read this much longer.
DRAIN_SECONDS = 0.3
# What a check keeps: the first CHECK_HEAD_BYTES and the last CHECK_TAIL_BYTES. Test runners print the
# summary (and most tracebacks) at the end, and the first error of a linter at the start.
CHECK_HEAD_BYTES = 128 * 1024
CHECK_TAIL_BYTES = 768 * 1024
# A UTF-8 continuation byte never starts a character: counting the other bytes counts characters.
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


class CannotStart(ConfigError):
    """The command cannot be started at all (not found, not executable, unparsable): a configuration
    error, found before anything is spent on it."""


# ---------------------------------------------------------------------------------------------
# Output


class BoundedOutput:
    """Keeps the first `head_bytes` and (at least) the last `tail_bytes` of a stream, and counts all
    of it, in bytes and in characters.

    `text()` renders it for a check (`chars=None`): head and tail bytes, with how many bytes between
    them were not kept, since parsers want whole lines at both ends. With `chars=(head, tail)` it
    renders for the model: at most that many characters from each end, and exactly how many
    characters it did not see."""

    def __init__(self, head_bytes: int, tail_bytes: int, chars: tuple[int, int] | None = None):
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.chars = chars
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.dropped_bytes = 0
        self.total_bytes = 0
        self.total_chars = 0

    @classmethod
    def in_chars(cls, head_chars: int, tail_chars: int) -> BoundedOutput:
        # UTF-8 needs at most 4 bytes per character.
        return cls(head_chars * 4, tail_chars * 4, chars=(head_chars, tail_chars))

    def feed(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        self.total_chars += len(chunk.translate(None, _CONTINUATION_BYTES))
        room = self.head_bytes - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size - len(self.tail[0]) >= self.tail_bytes:
            dropped = self.tail.popleft()
            self.tail_size -= len(dropped)
            self.dropped_bytes += len(dropped)

    @property
    def truncated(self) -> bool:
        return self.total_bytes > self.head_bytes + self.tail_bytes

    def text(self) -> str:
        if self.chars is not None:
            return self._text_in_chars(*self.chars)
        tail = b"".join(self.tail)[-self.tail_bytes:] if self.tail_bytes else b""
        omitted = self.total_bytes - len(self.head) - len(tail)
        head_text = self.head.decode("utf-8", "replace")
        tail_text = tail.decode("utf-8", "replace")
        if omitted <= 0:
            return head_text + tail_text
        return f"{head_text}\n[… {omitted:,} bytes of output omitted …]\n{tail_text}"

    def _text_in_chars(self, head_chars: int, tail_chars: int) -> str:
        tail = b"".join(self.tail)
        if self.dropped_bytes == 0:
            text = (bytes(self.head) + tail).decode("utf-8", errors="replace")
            if len(text) <= head_chars + tail_chars:
                return text
            return _joined(text[:head_chars], text[-tail_chars:], len(text) - head_chars - tail_chars)
        head_text = bytes(self.head).decode("utf-8", errors="replace")[:head_chars]
        tail_text = tail.decode("utf-8", errors="replace")[-tail_chars:]
        return _joined(head_text, tail_text, max(0, self.total_chars - len(head_text) - len(tail_text)))


def _joined(head: str, tail: str, elided: int) -> str:
    return f"{head}\n[... {elided:,} characters elided; the first {len(head):,} and last {len(tail):,} shown ...]\n{tail}"


# ---------------------------------------------------------------------------------------------
# The outcome


class CommandRun:
    """How one run of a command ended, and a bounded copy of what it printed."""

    __slots__ = ("command", "duration", "exit_code", "notes", "output", "output_bytes", "sandboxed", "timed_out",
                 "timeout", "truncated")

    def __init__(self, command: str, exit_code: int | None, output: str, duration: float, *,
                 timed_out: bool = False, output_bytes: int = 0, timeout: float | None = None,
                 truncated: bool = False, notes: list[str] | None = None, sandboxed: bool = False):
        self.command = command  # as the user would type it (shell-quoted)
        self.exit_code = exit_code  # None when it timed out
        self.output = output  # merged stdout+stderr; the middle elided when longer than what was kept
        self.duration = duration
        self.timed_out = timed_out
        self.output_bytes = output_bytes  # everything it printed, including what was not kept
        self.timeout = timeout
        self.truncated = truncated
        self.notes = notes or []
        self.sandboxed = sandboxed

    def __repr__(self) -> str:
        return (f"CommandRun({self.command!r}, exit_code={self.exit_code}, timed_out={self.timed_out}, "
                f"duration={self.duration:.3f}, output_bytes={self.output_bytes})")

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def describe(self) -> str:
        """One line: how it ended."""
        if self.timed_out:
            return f"timed out after {self.timeout:g} s"
        if self.exit_code is None:
            return "was killed"
        if self.exit_code < 0:
            return f"was killed by signal {-self.exit_code}"
        return f"exited {self.exit_code} after {self.duration:.1f} s"


# ---------------------------------------------------------------------------------------------
# Command lines


def split_command(cmd: list[str] | str) -> list[str]:
    """A check's argv: a list as it is, or a string split like a shell would (no shell runs it)."""
    if isinstance(cmd, str):
        import shlex

        try:
            argv = shlex.split(cmd)
        except ValueError as exc:
            raise CannotStart(f"cannot parse the check command {cmd!r}: {exc}") from None
    else:
        argv = list(cmd)
    if not argv:
        raise CannotStart("the check command is empty")
    return argv


def display_command(cmd: list[str] | str) -> str:
    if isinstance(cmd, str):
        return cmd
    import shlex

    return shlex.join(cmd)


NOT_ON_PATH_HINT = " (is it installed, and is its virtual environment active?)"


def startability_problem(program: str, cwd: str | os.PathLike, path: str,
                         not_on_path_hint: str = NOT_ON_PATH_HINT) -> CannotStart | None:
    """Why `program` cannot start from `cwd` with this PATH, or None when it looks startable."""
    import shutil

    if os.sep in program:
        where = program if os.path.isabs(program) else os.path.join(cwd, program)
        if not os.path.exists(where):
            return CannotStart(f"the check command {program!r} does not exist (looked for {where})")
        if os.path.isdir(where) or not os.access(where, os.X_OK):
            return CannotStart(f"the check command {program!r} is not an executable file")
    elif shutil.which(program, path=path) is None:
        return CannotStart(f"the check command {program!r} was not found on PATH{not_on_path_hint}")
    return None


# ---------------------------------------------------------------------------------------------
# Running


def run_command(argv: list[str], cwd: str | os.PathLike, *, env: dict[str, str] | None, timeout: float | None,
        display: str, output: BoundedOutput | None = None, echo: TextIO | None = None,
        limit: ProcessLimit | None = None, sandboxed: bool = False, process=None) -> CommandRun:
    """Run `argv` in `cwd` until it exits or `timeout` seconds pass. Its output (stdout and stderr
    through one pipe, in the order written) goes into `output` and, as it arrives, to `echo`.
    `limit`: the command's process budget (its launcher prefixes argv; with `limit.launched_by`, that
    long-lived helper starts it: launcher.py). `process`: the command already started (a warm sandbox
    just handed it, warm.py), followed from now exactly as one started here. A non-zero exit is a
    normal outcome; failing to start raises OSError (LauncherUnavailable: the launcher is gone, and
    the command did not start)."""
    output = output if output is not None else BoundedOutput(CHECK_HEAD_BYTES, CHECK_TAIL_BYTES)
    started = time.monotonic()
    deadline = started + timeout if timeout is not None else None
    if process is None:
        process = _start(argv, cwd, env, limit)
    if limit is not None:
        limit.started(process.pid)  # for a warm sandbox's, this limit's own fds: its own were given then
    pgid = process.pid  # start_new_session: the process leads its own group
    notes: list[str] = []
    try:
        timed_out = _pump(process, output, deadline, echo)
    except BaseException:
        # Ctrl-C or SIGTERM reached gitbot mid-command: the command must not outlive it (it is in its own
        # session, so the terminal's signal never reached it).
        processes.stop(process, pgid, limit)
        raise
    if timed_out:
        processes.stop(process, pgid, limit)
        notes.append(f"The command timed out after {timeout:g} s and was stopped: its whole process group "
                     f"was sent SIGTERM, then SIGKILL after {processes.KILL_GRACE_SECONDS:g} s.")
    elif getattr(process, "stopped_leftovers", 0) or processes.leftovers(pgid, limit):
        # The command is done but left background processes behind: stop them too (the launcher has).
        processes.kill_all(pgid, limit)
        notes.append("Background processes the command started were stopped when it finished.")
    _drain(process, output, echo)
    process.stdout.close()
    exit_code = process.wait()
    return CommandRun(display, None if timed_out else exit_code, output.text(), time.monotonic() - started,
                      timed_out=timed_out, output_bytes=output.total_bytes, timeout=timeout,
                      truncated=output.truncated, notes=notes, sandboxed=sandboxed)


def _start(argv: list[str], cwd, env: dict[str, str] | None, limit: ProcessLimit | None):
    if limit is not None and limit.launched_by is not None:
        return limit.launched_by.spawn(argv, cwd, env if env is not None else dict(os.environ), limit)
    return subprocess.Popen(limit.launcher(argv) if limit is not None else argv, cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, close_fds=True,
                            pass_fds=limit.pass_fds if limit is not None else ())


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # an old kernel or platform: fall back to polling
        return None


def _pump(process: subprocess.Popen, output: BoundedOutput, deadline: float | None, echo) -> bool:
    """Read the command's output until it exits and the pipe is drained; True on timeout."""
    fd = process.stdout.fileno()
    os.set_blocking(fd, False)
    # Readable once the command has ended: its pidfd, or the launcher's answer for what it started.
    exit_fd = getattr(process, "exit_fd", None)
    pidfd = exit_fd() if exit_fd is not None else _pidfd(process.pid)
    decoder = None
    if echo is not None:
        import codecs

        decoder = codecs.getincrementaldecoder("utf-8")("replace")
    exited_at: float | None = None
    eof = False
    try:
        while True:
            now = time.monotonic()
            if exited_at is None and (pidfd is None or eof) and process.poll() is not None:
                exited_at = now
            if exited_at is not None and (eof or now - exited_at >= DRAIN_SECONDS):
                return False
            if exited_at is None and deadline is not None and now >= deadline:
                return True
            if exited_at is not None:
                wait = exited_at + DRAIN_SECONDS - now
            else:
                wait = deadline - now if deadline is not None else None
            watched = [] if eof else [fd]
            if exited_at is None and pidfd is not None:
                watched.append(pidfd)
            elif exited_at is None:  # no pidfd: poll for the exit every 20 ms (0.1 s while output flows)
                wait = min(wait, 0.02 if eof else 0.1) if wait is not None else (0.02 if eof else 0.1)
            if not watched:
                time.sleep(max(0.0, wait or 0.0))
                continue
            ready, _, _ = select.select(watched, [], [], max(0.0, wait) if wait is not None else None)
            if pidfd is not None and pidfd in ready:
                process.poll()
                exited_at = time.monotonic()
            if fd in ready:
                try:
                    chunk = os.read(fd, READ_CHUNK_BYTES)
                except (BlockingIOError, InterruptedError):
                    continue
                if chunk:
                    output.feed(chunk)
                    if decoder is not None:
                        echo.write(decoder.decode(chunk))
                        echo.flush()
                else:
                    eof = True
    finally:
        if pidfd is not None and exit_fd is None:
            os.close(pidfd)


def _drain(process: subprocess.Popen, output: BoundedOutput, echo) -> None:
    fd = process.stdout.fileno()
    while True:
        try:
            chunk = os.read(fd, READ_CHUNK_BYTES)
        except OSError:
            return
        if not chunk:
            return
        output.feed(chunk)
        if echo is not None:
            echo.write(chunk.decode("utf-8", "replace"))
            echo.flush()


def run_check(cmd: list[str] | str, cwd: str | os.PathLike, timeout: float | None = DEFAULT_TIMEOUT_SECONDS, *,
              env: dict[str, str] | None = None, echo: TextIO | None = None, display: str | None = None,
              limit: ProcessLimit | None = None) -> CommandRun:
    """Run a check command (argv, or a string split like a shell would) in `cwd`. Raises CannotStart
    when it cannot start, saying why plainly (looked up only after the start failed: the fast path
    does not pay for it)."""
    argv = split_command(cmd)
    try:
        return run_command(argv, cwd, env=env, timeout=timeout, display=display or display_command(cmd), echo=echo,
                   limit=limit)
    except OSError as exc:  # not found, not executable, or a script whose #! line names a missing program
        path = (env if env is not None else os.environ).get("PATH", os.defpath)
        raise startability_problem(argv[0], cwd, path) or \
            CannotStart(f"cannot start the check command {argv[0]!r}: {exc}") from None
