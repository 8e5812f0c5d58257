"""execute_command: run a shell command in the repository, judged by the policy, inside the sandbox.

The policy decides first (a refusal is a ToolDenied with the reason); interactive programs are
refused with an explanation; then the run's sandbox runner (gitbot/sandbox/runner.py, the same
one the check runs through) runs it through `bash -c` in the repository root: stdin closed, its own
session and process group, an allow-listed environment, inside bubblewrap when the policy's sandbox
mode allows, stopped whole on timeout, its output (stdout and stderr through one pipe) capped so an
output bomb costs neither memory nor context. Here the outcome is put into words for the model.
"""

from __future__ import annotations

import signal
from typing import Any

from gitbot.sandbox.command import CommandRun
from gitbot.sandbox.planted import CommandUndone
from gitbot.sandbox.runner import TOOL_HEAD_CHARS, TOOL_TAIL_CHARS, SandboxRefused
from gitbot.tools.base import Tool, ToolContext, ToolDenied, ToolError
from gitbot.tools.verdicts import command_verdict, raise_refusal

MAX_OUTPUT_CHARS = TOOL_HEAD_CHARS + TOOL_TAIL_CHARS


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


def execute_command(ctx: ToolContext, args: dict[str, Any]) -> str:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError(f"'command' must be a non-empty string (a shell command line), got {command!r}")
    timeout, timeout_note = _timeout_for(ctx, args.get("timeout_seconds"))
    verdict = command_verdict(ctx, command)
    if not verdict.allowed:
        raise_refusal(verdict, "the policy does not allow this command: ")

    try:
        outcome = ctx.runner.run_shell(command, timeout)
    except SandboxRefused as exc:
        raise ToolDenied(str(exc)) from exc
    except CommandUndone as exc:
        raise ToolError(f"the command failed: {exc}") from exc
    except OSError as exc:
        raise ToolError(f"the command could not be started: {exc}") from exc
    # No redaction here: the loop scrubs every tool's output before the model or the record sees it,
    # and says where it replaced something (agent/loop.py).
    return format_outcome(outcome, timeout_note)


def format_outcome(outcome: CommandRun, note: str = "") -> str:
    text = outcome.output
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
        elif not text:
            if code == 0:
                lines.append("Exit code: 0. The command ran successfully and produced no output.")
            else:
                lines.append(f"Exit code: {code}. The command exited {code} and produced no output.")
            return "\n".join(lines)
        else:
            lines.append(f"Exit code: {code}")
    if text:
        lines.append("Output:" if not outcome.timed_out else "Output before it was stopped:")
        lines.append(text.rstrip("\n"))
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
