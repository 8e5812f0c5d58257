"""What every adapter's entry point (`gitbot action`, `gitbot gitlab`) does before the flow: the
secrets out of the process environment, and the three ways a job ends before any work, said the
same way on every forge (a line in the log, the summary, the outputs).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from gitbot.agent.result import ExitCode
from gitbot.forge.interface import JobIO
from gitbot.forge.mdsafe import md_cell
from gitbot.forge.report import outputs
from gitbot.secrets import SECRET_ENV_NAMES, SECRET_NAME_HINTS, Secrets


def secret_name(name: str) -> bool:
    upper = name.upper()
    return upper in SECRET_ENV_NAMES or any(hint in upper for hint in SECRET_NAME_HINTS)


@contextmanager
def secrets_out_of_environment(secrets: Secrets, *, also: Callable[[str], bool]) -> Iterator[None]:
    """No secret stays in this process's environment while inside, whatever a child process inherits:
    neither a variable whose name says it holds one, nor one holding a known value, nor one `also` names
    (the adapter's own: the Action's inputs, GitLab's job credentials)."""
    removed = {}
    for name, value in list(os.environ.items()):
        if secret_name(name) or value in secrets.values or also(name):
            removed[name] = os.environ.pop(name)
    try:
        yield
    finally:
        os.environ.update(removed)


def configuration_error(io: JobIO, problems: list[str]) -> int:
    for problem in problems:
        io.error(problem, title="gitbot: configuration")
    io.set_outputs(outputs("error"))
    return ExitCode.CONFIG


def nothing_to_do(io: JobIO, reason: str) -> int:
    io.notice(f"gitbot has nothing to do: {reason}", title="gitbot")
    io.write_summary(f"## gitbot: nothing to do\n\n{md_cell(reason)}\n")
    io.set_outputs(outputs("skipped"))
    return ExitCode.OK


def trigger_refused(io: JobIO, reason: str) -> int:
    io.notice(f"gitbot will not run: {reason}", title="gitbot: trigger refused")
    io.write_summary(f"## gitbot: trigger refused\n\n{md_cell(reason)}. No model was called.\n")
    io.set_outputs(outputs("refused"))
    return ExitCode.OK
