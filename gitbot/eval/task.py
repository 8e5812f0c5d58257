"""The task an instance gives the agent: its problem statement, as untrusted data (an issue's text is), or
with --check-from-tests the failing check built as fix-check builds it."""

from __future__ import annotations

import secrets

from gitbot.eval.instances import Instance
from gitbot.prompting import render_prompt
from gitbot.secrets import Secrets
from gitbot.task import Task

MAX_PROBLEM_CHARS = 20_000


def problem_task(instance: Instance) -> Task:
    # A tag nobody could guess when writing the text, and the text cannot close it early.
    tag = f"problem_{secrets.token_hex(4)}"
    problem = instance.problem_statement.strip()[:MAX_PROBLEM_CHARS].replace(f"</{tag}>", f"</{tag}\u200b>")
    text = render_prompt("eval_task/problem", tag=tag, problem=problem)
    title = (instance.problem_statement.strip().splitlines() or [instance.instance_id])[0][:80]
    return Task(text=text, source="eval", title=title)


def check_task(before, command: str, root) -> Task:
    """`before`: the run of the failing tests on the base commit (resolve.check_before)."""
    from gitbot.checks import build_task, parse_output

    task = build_task(command, before, root=root, parsed=parse_output(before.output, root), source="eval")
    # Test output can echo the environment: secret values gitbot knows never reach the model.
    return Task(text=Secrets.from_environment().redact(task.text), source="eval", title=task.title,
                check_command=command)
