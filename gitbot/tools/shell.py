"""execute_command: run a shell command in the repository, judged by the policy, inside the sandbox.

The policy decides first (a refusal is a ToolDenied with the reason); interactive programs are
refused with an explanation; the command runs through `bash -c` in the repository root with stdin
closed, in its own session and process group, with an allow-listed environment, inside bubblewrap
when the policy's sandbox mode allows (see gitbot/sandbox.py). On timeout the whole group is
stopped: SIGTERM, a short grace, then SIGKILL. Output (stdout and stderr interleaved through one
pipe) is read incrementally and capped, so an output bomb costs neither memory nor context.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gitbot.tools.base import Tool, ToolContext, ToolDenied, ToolError

MAX_OUTPUT_CHARS = 10_000
HEAD_CHARS = 5_000
TAIL_CHARS = 5_000
# Bytes kept for each end: UTF-8 needs at most 4 bytes per character.
HEAD_BYTES = HEAD_CHARS * 4
TAIL_BYTES = TAIL_CHARS * 4
READ_CHUNK_BYTES = 64 * 1024
KILL_GRACE_SECONDS = 2.0
# After the command itself exits, background children may keep the pipe open; read this much longer.
DRAIN_SECONDS = 0.3
# A UTF-8 continuation byte never starts a character: counting the other bytes counts characters.
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


# ---------------------------------------------------------------------------------------------
# Output capture


class CappedOutput:
    """Keeps the first and last few thousand characters of a stream and counts the rest."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.dropped_bytes = 0
        self.total_bytes = 0
        self.total_chars = 0

    def feed(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        self.total_chars += len(chunk.translate(None, _CONTINUATION_BYTES))
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size - len(self.tail[0]) >= TAIL_BYTES:
            dropped = self.tail.popleft()
            self.tail_size -= len(dropped)
            self.dropped_bytes += len(dropped)

    def render(self) -> tuple[str, int]:
        """(text, number of characters elided)."""
        tail = b"".join(self.tail)
        if self.dropped_bytes == 0:
            text = (bytes(self.head) + tail).decode("utf-8", errors="replace")
            if len(text) <= MAX_OUTPUT_CHARS:
                return text, 0
            elided = len(text) - HEAD_CHARS - TAIL_CHARS
            return _join(text[:HEAD_CHARS], text[-TAIL_CHARS:], elided), elided
        head_text = bytes(self.head).decode("utf-8", errors="replace")[:HEAD_CHARS]
        tail_text = tail.decode("utf-8", errors="replace")[-TAIL_CHARS:]
        elided = max(0, self.total_chars - len(head_text) - len(tail_text))
        return _join(head_text, tail_text, elided), elided


def _join(head: str, tail: str, elided: int) -> str:
    return f"{head}\n[... {elided:,} characters elided; the first {len(head):,} and last {len(tail):,} shown ...]\n{tail}"


# ---------------------------------------------------------------------------------------------
# Running


@dataclass
class CommandOutcome:
    exit_code: int | None  # None when the command was killed on timeout
    output: str
    elided_chars: int
    timed_out: bool
    duration_seconds: float
    sandboxed: bool
    notes: list[str] = field(default_factory=list)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
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
    from gitbot.sandbox import live_processes

    return bool(live_processes(members))


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def run_command(command: str, repo: Path, *, sandboxed: bool, network: bool, timeout: float,
                read_only: tuple[Path, ...] | list[Path] = (), max_processes: int | None = None,
                hidden_files: tuple[str, ...] | list[str] = ()) -> CommandOutcome:
    """Run `bash -c command` in `repo` (in bubblewrap when `sandboxed`) and capture its output.
    `hidden_files`: repository files the sandbox replaces by /dev/null (read_deny matches).
    A non-zero exit is a normal outcome; only failing to start raises (OSError)."""
    from gitbot import sandbox

    bash = shutil.which("bash", path="/usr/bin:/bin") or "/bin/bash"
    notes: list[str] = []
    home_dir: str | None = None
    # build_env also makes gitbot's own /proc/<pid>/environ unreadable (in every mode).
    if sandboxed:
        env = sandbox.build_env(repo=repo)
        argv = sandbox.wrap([bash, "-c", command], repo, network=network, read_only=tuple(read_only), env=env,
                            hidden_files=tuple(hidden_files))
    else:
        home_dir = tempfile.mkdtemp(prefix="gitbot-home-")
        env = sandbox.build_env(home=home_dir, repo=repo)
        argv = [bash, "-c", command]
    output = CappedOutput()
    started = time.monotonic()
    timed_out = False
    try:
        with sandbox.ProcessLimit(max_processes or sandbox.MAX_PROCESSES) as limit:
            process = subprocess.Popen(limit.launcher(argv), cwd=repo, env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                       close_fds=True)
            pgid = process.pid  # start_new_session: the process leads its own group
            try:
                timed_out = _pump(process, output, started + timeout)
            except BaseException:
                # Ctrl-C or SIGTERM reached gitbot mid-command: the command must not outlive the run
                # (it is in its own session, so the terminal's signal never reached it).
                _stop(process, pgid, limit)
                raise
            if timed_out:
                _stop(process, pgid, limit)
                notes.append(f"The command timed out after {timeout:g} s and was stopped: its whole process group "
                             f"was sent SIGTERM, then SIGKILL after {KILL_GRACE_SECONDS:g} s.")
            elif _leftovers(pgid, limit):
                # The command is done but left background processes behind: stop them too.
                _signal_group(pgid, signal.SIGKILL)
                limit.signal_all(signal.SIGKILL)
                notes.append("Background processes the command started were stopped when it finished.")
            _drain(process, output)
            process.stdout.close()
            exit_code = process.wait()
    finally:
        if home_dir:
            shutil.rmtree(home_dir, ignore_errors=True)
    text, elided = output.render()
    return CommandOutcome(exit_code=None if timed_out else exit_code, output=text, elided_chars=elided,
                          timed_out=timed_out, duration_seconds=time.monotonic() - started, sandboxed=sandboxed,
                          notes=notes)


def _leftovers(pgid: int, limit, wait: float = 0.2) -> bool:
    """Are processes of the command still running after it exited? (A sandbox's PID namespace takes
    a moment to empty, so give them a short while to go by themselves.)"""
    deadline = time.monotonic() + wait
    while True:
        if not _group_alive(pgid) and not limit.pids():
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.01)


def _pump(process: subprocess.Popen, output: CappedOutput, deadline: float) -> bool:
    """Read the command's output until it exits and the pipe is drained; True on timeout."""
    fd = process.stdout.fileno()
    os.set_blocking(fd, False)
    exited_at: float | None = None
    eof = False
    while True:
        now = time.monotonic()
        if exited_at is None and process.poll() is not None:
            exited_at = now
        if exited_at is not None and (eof or now - exited_at >= DRAIN_SECONDS):
            return False
        if exited_at is None and now >= deadline:
            return True
        wait = max(0.0, min(0.1, deadline - now))
        if eof:
            time.sleep(min(wait, 0.02) or 0.01)
            continue
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            continue
        try:
            chunk = os.read(fd, READ_CHUNK_BYTES)
        except BlockingIOError:
            continue
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            raise
        if chunk:
            output.feed(chunk)
        else:
            eof = True


def _drain(process: subprocess.Popen, output: CappedOutput) -> None:
    fd = process.stdout.fileno()
    while True:
        try:
            chunk = os.read(fd, READ_CHUNK_BYTES)
        except OSError:
            return
        if not chunk:
            return
        output.feed(chunk)


def _stop(process: subprocess.Popen, pgid: int, limit) -> None:
    """SIGTERM to everything the command started, a grace period, then SIGKILL until nothing is left."""
    _signal_group(pgid, signal.SIGTERM)
    limit.signal_all(signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    while time.monotonic() < deadline:
        process.poll()
        if not _group_alive(pgid) and not limit.pids():
            return
        time.sleep(0.05)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        _signal_group(pgid, signal.SIGKILL)
        limit.signal_all(signal.SIGKILL)
        process.poll()
        if not _group_alive(pgid) and not limit.pids():
            return
        time.sleep(0.02)


# ---------------------------------------------------------------------------------------------
# Interactive programs

EDITORS = {"vi", "vim", "nvim", "view", "vimdiff", "nano", "pico", "emacs", "emacsclient", "joe", "micro",
           "mcedit", "ed", "ex"}
PAGERS = {"less", "more", "most", "pg"}
FULL_SCREEN = {"top", "htop", "btop", "watch", "tmux", "screen", "mc", "nmtui"}
REPLS = {"python", "python2", "python3", "ipython", "bpython", "node", "deno", "irb", "pry", "bash", "sh", "zsh",
         "fish", "dash", "ksh", "psql", "mysql", "sqlite3", "redis-cli", "mongosh", "ghci", "lua", "R", "julia",
         "iex", "erl", "scala", "gdb", "ssh"}
_PYTHON_VERSIONED = re.compile(r"python\d(\.\d+)?")
GIT_NON_EDITOR_COMMIT_OPTIONS = ("-m", "--message", "-F", "--file", "-C", "--reuse-message", "--no-edit",
                                 "--fixup")


def interactive_refusal(commands: tuple[tuple[str | None, ...], ...]) -> str | None:
    """Why a command would wait for a person (there is none), or None."""
    for words in commands:
        if not words or words[0] is None:
            continue
        name = posixpath.basename(words[0])
        args = [word or "" for word in words[1:]]
        if name in EDITORS:
            return (f"`{name}` is an interactive editor and there is no terminal here; change files with "
                    f"write_to_file or replace_in_file instead")
        if name in PAGERS:
            return f"`{name}` is an interactive pager; print the file with `cat`, `head` or `tail` instead"
        if name in FULL_SCREEN:
            return f"`{name}` is a full-screen program that never finishes on its own; run a one-shot command instead"
        if (name in REPLS or _PYTHON_VERSIONED.fullmatch(name)) and (
                not args or "-i" in args or "--interactive" in args):
            return (f"`{' '.join(w or '?' for w in words)}` starts an interactive session that would wait for input; "
                    f"pass a script or a command (e.g. `python -c '...'` or `python script.py`)")
        if name == "tail" and any(a in ("-f", "-F", "--follow") or a.startswith("--follow=") for a in args):
            return "`tail -f` follows a file forever; read it once with `tail -n 100 FILE`"
        if name == "git" and args:
            refusal = _git_interactive(args)
            if refusal:
                return refusal
    return None


def _git_interactive(args: list[str]) -> str | None:
    subcommand = next((a for a in args if not a.startswith("-")), "")
    rest = args[args.index(subcommand) + 1:] if subcommand else []
    if subcommand == "commit" and not any(a.startswith(GIT_NON_EDITOR_COMMIT_OPTIONS) for a in rest):
        return "`git commit` without -m would open an editor; pass the message with -m \"...\""
    if subcommand == "tag" and any(a in ("-a", "--annotate", "-s", "--sign") for a in rest) and \
            not any(a.startswith(("-m", "--message", "-F", "--file")) for a in rest):
        return "an annotated `git tag` without -m would open an editor; pass the message with -m \"...\""
    if subcommand == "rebase" and any(a in ("-i", "--interactive") for a in rest):
        return "`git rebase -i` is interactive; it cannot be used here"
    if subcommand in ("add", "checkout", "reset", "restore", "stash", "commit") and any(
            a in ("-p", "--patch", "-i", "--interactive") for a in rest):
        return f"`git {subcommand} {' '.join(rest)}` asks questions interactively; name the files instead"
    return None


# ---------------------------------------------------------------------------------------------
# The tool


def _timeout_for(ctx: ToolContext, requested: Any) -> tuple[float, str]:
    maximum = float(ctx.policy.limits.command_timeout_seconds)
    if requested is None:
        return maximum, ""
    if isinstance(requested, bool) or not isinstance(requested, (int, float)) or requested <= 0:
        raise ToolError(f"'timeout_seconds' must be a number of seconds greater than 0, got {requested!r}")
    if requested > maximum:
        return maximum, (f"Note: timeout_seconds {requested:g} is above the policy maximum of {maximum:g} s; "
                         f"{maximum:g} s was used.")
    return float(requested), ""


def _policy_for(ctx: ToolContext):
    policy = ctx.policy
    if getattr(policy, "repo", "unset") is None:
        # A policy built without a repository (Policy()): give it this one, so absolute paths resolve.
        with contextlib.suppress(TypeError):
            policy = replace(policy, repo=ctx.repo)
    return policy


def execute_command(ctx: ToolContext, args: dict[str, Any]) -> str:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError(f"'command' must be a non-empty string (a shell command line), got {command!r}")
    timeout, timeout_note = _timeout_for(ctx, args.get("timeout_seconds"))
    policy = _policy_for(ctx)
    decision = policy.check_command(command, tuple(ctx.extra_allowed_commands))
    if not decision.allowed:
        raise ToolDenied(f"the policy does not allow this command: {decision.reason}")
    refusal = interactive_refusal(getattr(decision, "commands", ()))
    if refusal:
        raise ToolError(f"command refused: {refusal}")

    mode = getattr(policy, "sandbox_mode", "auto")
    sandboxed = False
    if mode != "off":
        from gitbot import sandbox

        status = sandbox.probe()
        if status.available:
            sandboxed = True
        elif mode == "required":
            raise ToolDenied(f"commands must run in the sandbox ([sandbox] mode = \"required\"), but "
                             f"{status.description}. {sandbox.FIX_HINT}")
    read_only = policy.protected_directories(ctx.repo) if hasattr(policy, "protected_directories") else []
    hidden: list[str] = []
    if sandboxed:
        from gitbot import sandbox

        # Files the policy does not let the agent read are replaced by /dev/null in the sandbox.
        # (Unsandboxed, they stay readable: only the command judge stands in the way.)
        try:
            hidden = sandbox.read_denied_files(ctx.repo, policy)
        except sandbox.SandboxRefusal as exc:
            raise ToolDenied(f"command refused: {exc}") from exc
    try:
        outcome = run_command(command, ctx.repo, sandboxed=sandboxed, network=bool(getattr(policy, "network", False)),
                              timeout=timeout, read_only=read_only, hidden_files=hidden)
    except OSError as exc:
        raise ToolError(f"the command could not be started: {exc}") from exc
    # No redaction here: the loop scrubs every tool's output before the model or the record sees it,
    # and says where it replaced something (agent/loop.py).
    return format_outcome(outcome, timeout_note)


def format_outcome(outcome: CommandOutcome, note: str = "") -> str:
    lines: list[str] = []
    if note:
        lines.append(note)
    lines += outcome.notes
    if outcome.timed_out:
        lines.append("Exit code: none (killed after the timeout)")
    else:
        code = outcome.exit_code
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            lines.append(f"Exit code: {code} (killed by {name})")
        elif not outcome.output:
            if code == 0:
                lines.append("Exit code: 0. The command ran successfully and produced no output.")
            else:
                lines.append(f"Exit code: {code}. The command exited {code} and produced no output.")
            return "\n".join(lines)
        else:
            lines.append(f"Exit code: {code}")
    if outcome.output:
        lines.append("Output:" if not outcome.timed_out else "Output before it was stopped:")
        lines.append(outcome.output.rstrip("\n"))
    elif outcome.timed_out:
        lines.append("It produced no output before it was stopped.")
    return "\n".join(lines)


EXECUTE_COMMAND = Tool(
    name="execute_command",
    input_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The shell command line to run in the repository root."},
            "timeout_seconds": {"type": "number",
                                "description": "Stop the command after this many seconds (default and maximum: "
                                               "the policy's command_timeout_seconds)."},
        },
        "required": ["command"],
    },
    function=execute_command,
    changes_files=True,
)
