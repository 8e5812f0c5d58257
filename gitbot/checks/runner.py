"""Run one check command with a timeout, keeping a bounded copy of its output.

A check is a command line: a list of arguments, or a string split like a shell would split it
(no shell runs it; for pipes or `&&` write `sh -c '…'`). It runs in its own process group so a
timeout can stop everything it started. Its stdout and stderr are merged, in the order written.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

TYPE_CHECKING = False  # importing typing for TYPE_CHECKING costs milliseconds on every commit
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TextIO

# This module is on the git hook's fast path: no dataclasses, pathlib, shutil or shlex at import time.

# Set by git for hooks (`git rev-parse --local-env-vars` of git 2.39): they point git at the repository
# and the index of the commit in progress. A check that runs git must see neither (under `git commit -a`
# a git-using test suite would write into the commit being made), nor must gitbot's own git commands.
GIT_LOCAL_ENV = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
                 "GIT_CONFIG_COUNT", "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE",
                 "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS",
                 "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE",
                 "GIT_COMMON_DIR")
# Credentials gitbot itself uses: a check run in the user's own environment (the hook's first run)
# does not get them. (Checks that gitbot runs around a fix get the sandbox's allow-listed environment.)
CHECK_SECRET_PREFIXES = ("ANTHROPIC_",)
CHECK_SECRET_NAMES = frozenset({"GITHUB_TOKEN", "GH_TOKEN", "GITBOT_GITHUB_TOKEN"})

DEFAULT_TIMEOUT_SECONDS = 600.0
# What stays in memory: the first HEAD_BYTES and the last TAIL_BYTES. Test runners print the
# summary (and most tracebacks) at the end, and the first error of a linter at the start.
HEAD_BYTES = 128 * 1024
TAIL_BYTES = 768 * 1024
# After a timeout: SIGTERM the group, then SIGKILL if it is still alive after this long.
KILL_GRACE_SECONDS = 2.0


class CheckCommandError(Exception):
    """The check cannot be started at all (not found, not executable, unparsable): a configuration error."""


class CheckRun:
    """How one run of a check ended, and a bounded copy of what it printed."""

    __slots__ = ("command", "duration", "exit_code", "output", "output_bytes", "timed_out", "timeout")

    def __init__(self, command: str, exit_code: int | None, output: str, duration: float, *,
                 timed_out: bool = False, output_bytes: int = 0, timeout: float | None = None):
        self.command = command  # as the user would type it (shell-quoted)
        self.exit_code = exit_code  # None when it timed out
        self.output = output  # merged stdout+stderr; the middle elided when longer than HEAD_BYTES+TAIL_BYTES
        self.duration = duration
        self.timed_out = timed_out
        self.output_bytes = output_bytes  # everything it printed, including what was not kept
        self.timeout = timeout

    def __repr__(self) -> str:
        return (f"CheckRun({self.command!r}, exit_code={self.exit_code}, timed_out={self.timed_out}, "
                f"duration={self.duration:.3f}, output_bytes={self.output_bytes})")

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def truncated(self) -> bool:
        return self.output_bytes > HEAD_BYTES + TAIL_BYTES

    def describe(self) -> str:
        """One line: how it ended."""
        if self.timed_out:
            return f"timed out after {self.timeout:g} s"
        if self.exit_code is None:
            return "was killed"
        if self.exit_code < 0:
            return f"was killed by signal {-self.exit_code}"
        return f"exited {self.exit_code} after {self.duration:.1f} s"


def split_command(cmd: list[str] | str) -> list[str]:
    if isinstance(cmd, str):
        import shlex

        try:
            argv = shlex.split(cmd)
        except ValueError as exc:
            raise CheckCommandError(f"cannot parse the check command {cmd!r}: {exc}") from None
    else:
        argv = list(cmd)
    if not argv:
        raise CheckCommandError("the check command is empty")
    return argv


def display_command(cmd: list[str] | str) -> str:
    if isinstance(cmd, str):
        return cmd
    import shlex

    return shlex.join(cmd)


def user_check_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a check the user configured, run in the user's own environment (a hook's
    checks before any fix): everything the hook got, minus gitbot's credentials, git's
    repository-locating variables, and the pre-commit framework's private virtual environment."""
    source = os.environ if environ is None else environ
    env = {name: value for name, value in source.items()
           if name not in CHECK_SECRET_NAMES and name not in GIT_LOCAL_ENV
           and not name.startswith(CHECK_SECRET_PREFIXES)}
    return without_framework_venv(env)


def framework_venv(environ: dict[str, str] | None = None) -> str | None:
    """The pre-commit framework's private virtual environment gitbot runs in, or None.

    Under the framework (`language: python`), `python` on PATH is that environment's interpreter, which
    has gitbot but not the project's tools: `python -m pytest` would fail with "No module named pytest".
    Detected by PRE_COMMIT=1 (set by the framework for every hook) or by the interpreter living in one
    of its environments (`py_env-*`)."""
    source = os.environ if environ is None else environ
    if sys.prefix == sys.base_prefix:
        return None  # not in a virtual environment at all
    if source.get("PRE_COMMIT") == "1" or os.path.basename(sys.prefix).startswith("py_env-"):
        return sys.prefix
    return None


def without_framework_venv(env: dict[str, str]) -> dict[str, str]:
    """`env` with the pre-commit framework's environment (see framework_venv) taken off PATH and
    VIRTUAL_ENV, so that a check's `python` is the project's, as when the user runs it by hand."""
    venv = framework_venv(env)
    if venv is None:
        return env
    real = os.path.realpath(venv)
    bin_dir = os.path.join(real, "bin")
    entries = env.get("PATH", "").split(os.pathsep)
    kept = [entry for entry in entries if not (entry and os.path.realpath(entry) == bin_dir)]
    env = dict(env)
    if len(kept) != len(entries):
        env["PATH"] = os.pathsep.join(kept)
    if env.get("VIRTUAL_ENV") and os.path.realpath(env["VIRTUAL_ENV"]) == real:
        del env["VIRTUAL_ENV"]
    return env


NOT_ON_PATH_HINT = " (is it installed, and is its virtual environment active?)"


def startability_problem(program: str, cwd: str | os.PathLike, path: str,
                         not_on_path_hint: str = NOT_ON_PATH_HINT) -> CheckCommandError | None:
    """Why `program` cannot start from `cwd` with this PATH, or None when it looks startable."""
    import shutil

    if os.sep in program:
        where = program if os.path.isabs(program) else os.path.join(cwd, program)
        if not os.path.exists(where):
            return CheckCommandError(f"the check command {program!r} does not exist (looked for {where})")
        if os.path.isdir(where) or not os.access(where, os.X_OK):
            return CheckCommandError(f"the check command {program!r} is not an executable file")
    elif shutil.which(program, path=path) is None:
        return CheckCommandError(f"the check command {program!r} was not found on PATH{not_on_path_hint}")
    return None


def _not_startable(program: str, cwd: str, env: dict[str, str] | None, exc: OSError) -> CheckCommandError:
    """Why the program could not start, said plainly (looked up only after the start failed: the fast path
    does not pay for it)."""
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    return startability_problem(program, cwd, path) or \
        CheckCommandError(f"cannot start the check command {program!r}: {exc}")


class _BoundedOutput:
    """Keeps the head and a rolling tail of a byte stream; counts everything."""

    def __init__(self, head_limit: int, tail_limit: int):
        self.head = bytearray()
        self.tail = bytearray()
        self.head_limit = head_limit
        self.tail_limit = tail_limit
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> str:
        omitted = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if omitted <= 0:
            return head + tail
        return f"{head}\n[… {omitted:,} bytes of output omitted …]\n{tail}"


def run_check(cmd: list[str] | str, repo: Path | str, timeout: float | None = DEFAULT_TIMEOUT_SECONDS, *,
              env: dict[str, str] | None = None, echo: TextIO | None = None, display: str | None = None,
              head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES) -> CheckRun:
    """Run the check in `repo`; output is also copied to `echo` as it arrives, when given.
    `display` is how the command is shown (default: `cmd` itself, shell-quoted if a list)."""
    cwd = os.fspath(repo)
    argv = split_command(cmd)
    output = _BoundedOutput(head_bytes, tail_bytes)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:  # not found, not executable, or a script whose #! line names a missing program
        raise _not_startable(argv[0], cwd, env, exc) from None

    def pump() -> None:
        fd = proc.stdout.fileno()
        while chunk := os.read(fd, 65536):
            output.add(chunk)
            if echo is not None:
                echo.write(chunk.decode("utf-8", "replace"))
                echo.flush()

    reader = threading.Thread(target=pump, name="check-output", daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _stop_group(proc)
    except BaseException:  # Ctrl-C: leave nothing of the check running
        _stop_group(proc)
        raise
    finally:
        # A grandchild that left the group may still hold the pipe open; do not wait for it forever.
        reader.join(timeout=1.0)
        if not reader.is_alive():
            proc.stdout.close()
    duration = time.monotonic() - started
    exit_code = None if timed_out else proc.returncode
    return CheckRun(display or display_command(cmd), exit_code, output.text(), duration, timed_out=timed_out,
                    output_bytes=output.total, timeout=timeout)


def _stop_group(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait)
            # The leader exited; anything else left in its group gets the same signal.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return
        except subprocess.TimeoutExpired:
            continue
