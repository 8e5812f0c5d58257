"""Turn a failing check into a Task: what failed, where, the evidence (capped), and how to reproduce.

The check's output is produced by running code in the repository, so whoever can change that code
(a pull request, a dependency) controls it: it goes into the task only between <check_output>
markers, labelled as untrusted evidence, with any closing marker inside it defused. The words are
templates in prompts/check_task/ (output.md holds the markers; OUTPUT_OPEN and OUTPUT_CLOSE name them
for the defusing).
"""

from __future__ import annotations

from pathlib import Path

from gitbot.checks.parsers import Failure, ParsedOutput, cut, parse_output
from gitbot.prompting import defuse_delimiters, render_prompt
from gitbot.sandbox.command import CommandRun
from gitbot.task import Task

# Budgets in characters. The whole task stays well under MAX_TASK_CHARS however large the output.
MAX_LISTED_FAILURES = 25
FAILURE_LIST_CHARS = 2_500
EXCERPTS_CHARS = 8_000
MAX_TASK_CHARS = 12_000
OUTPUT_OPEN = "<check_output>"
OUTPUT_CLOSE = "</check_output>"


def build_task(cmd: str, run: CommandRun, *, root: Path | None = None, parsed: ParsedOutput | None = None,
               source: str = "check") -> Task:
    parsed = parsed or parse_output(run.output, root)
    if run.timed_out:
        outcome = render_prompt("check_task/timed_out", command=cmd, seconds=f"{run.timeout:g}")
    else:
        outcome = render_prompt("check_task/failed", command=cmd, exit_code=str(run.exit_code))
    parts = [f"{outcome}\n{render_prompt('check_task/instructions')}"]
    if parsed.failures:
        parts.append(_failure_list(parsed))
    parts.append(render_prompt("check_task/reproduce", command=cmd))
    parts.append(render_prompt("check_task/output", description=_describe_output(run, parsed),
                               evidence=_defuse(_evidence(parsed, run))))
    text = "\n\n".join(parts)
    if len(text) > MAX_TASK_CHARS:  # a safety net: the budgets above should already hold
        text = cut(text, MAX_TASK_CHARS)
    return Task(text=text, source=source, title=task_title(cmd, parsed, run), check_command=cmd)


def task_title(cmd: str, parsed: ParsedOutput, run: CommandRun) -> str:
    if run.timed_out:
        detail = "timed out"
    elif parsed.failures:
        count = len(parsed.failures)
        detail = f"{count} failure{'s' if count != 1 else ''}"
    else:
        detail = f"exit {run.exit_code}"
    short = cmd if len(cmd) <= 50 else cmd[:47] + "…"
    return f"Fix failing check `{short}` ({detail})"


def _failure_list(parsed: ParsedOutput) -> str:
    if parsed.summary:
        head = render_prompt("check_task/failures_with_summary", format=parsed.format, summary=parsed.summary)
    else:
        head = render_prompt("check_task/failures", format=parsed.format)
    items = []
    used = len(head)
    for index, failure in enumerate(parsed.failures[:MAX_LISTED_FAILURES], 1):
        item = f"{index}. {_describe_failure(failure)}"
        if used + len(item) > FAILURE_LIST_CHARS:
            break
        items.append(item)
        used += len(item) + 1
    left = len(parsed.failures) - len(items)
    if left > 0:
        items.append(render_prompt("check_task/more_failures", count=str(left)))
    return "\n".join([head, *items])


def _describe_failure(failure: Failure) -> str:
    parts = [f"[{failure.kind}]", failure.name]
    if failure.location and failure.location != failure.name:
        parts.append(f"at {failure.location}")
    text = " ".join(parts)
    if failure.message and failure.message != failure.name:
        message = failure.message.splitlines()[0]
        text += f" — {message[:200]}"
    return text


def _describe_output(run: CommandRun, parsed: ParsedOutput) -> str:
    size = f"{run.output_bytes:,}"
    if parsed.failures:
        return render_prompt("check_task/output_per_failure", size=size)
    return render_prompt("check_task/output_tail", size=size)


def _evidence(parsed: ParsedOutput, run: CommandRun) -> str:
    """Excerpts about the failures in order, within EXCERPTS_CHARS; else the output's tail."""
    blocks = []
    used = 0
    for failure in parsed.failures:
        if not failure.excerpt:
            continue
        block = f"--- {failure.name}" + (f" ({failure.location})" if failure.location else "") \
            + f" ---\n{failure.excerpt}"
        if used + len(block) > EXCERPTS_CHARS:
            room = EXCERPTS_CHARS - used
            if room > 400:  # a cut excerpt still helps; a sliver does not
                blocks.append(cut(block, room))
                used += room
            break
        blocks.append(block)
        used += len(block) + 1
    if parsed.summary:
        blocks.append(f"--- summary ---\n{parsed.summary}")
    if blocks and len(blocks) > (1 if parsed.summary else 0):
        return "\n".join(blocks)
    tail = parsed.tail or run.output
    if not tail.strip():
        return render_prompt("check_task/no_output")
    return cut(tail[-EXCERPTS_CHARS * 2:], EXCERPTS_CHARS)


def _defuse(text: str) -> str:
    """Output cannot end the untrusted block early by printing the closing marker itself."""
    return defuse_delimiters(text).replace(OUTPUT_OPEN, "<check_output\u200b>")
