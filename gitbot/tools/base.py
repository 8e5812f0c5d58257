"""The one small interface every tool implements.

A tool is a name, a description (a file in prompts/tools/), a JSON input schema and a
function. The function returns text (or a ToolResult when it has more to say) or raises
ToolError; the loop turns a ToolError into a `tool_result` with `is_error: true`, so a
failing or refused tool never kills the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitbot.prompting import render_prompt

if TYPE_CHECKING:
    from gitbot.policy import Policy
    from gitbot.sandbox.runner import Runner
    from gitbot.secrets import Secrets


def count_of(number: int, noun: str, plural: str | None = None) -> str:
    """'1 line', '2 lines', '1,024 matches', '3 entries' (with plural='entries'): tool answers get their
    numbers right."""
    if number == 1:
        return f"1 {noun}"
    return f"{number:,} {plural or noun + ('es' if noun.endswith(('ch', 'sh', 's', 'x')) else 's')}"


class ToolError(Exception):
    """The tool failed or was misused; the message is shown to the model as an error result."""


class ToolDenied(ToolError):
    """The policy refused the call. Counts as a mistake only when the same refusal was met before in
    the run: a new one is the model learning the rules (agent/loop.py)."""


@dataclass
class ToolResult:
    text: str
    # Set by attempt_completion when the run should end with this summary.
    completed: str | None = None
    # Repository-relative paths a file tool wrote: lets checkpoints hash only what changed.
    touched: tuple[str, ...] = ()


@dataclass
class ToolContext:
    """What a tool may know about the run. Deliberately no secrets other than for redaction."""

    repo: Path
    policy: Policy
    secrets: Secrets
    # Per-run scratch space for tools that keep state between calls (e.g. the completion review).
    state: dict[str, Any] = field(default_factory=dict)
    # Extra command lines allowed for this run only (the check command of fix-check).
    extra_allowed_commands: tuple[str, ...] = ()

    @property
    def runner(self) -> Runner:
        """How this run's commands run: decided once per run from the policy (gitbot/sandbox/runner.py),
        the same way the check that verifies the run is run."""
        built_for, runner = self.state.get("runner", (None, None))
        # Another policy (not the one it was built for, nor the one it enforces): its rules, from the next command.
        if runner is None or (self.policy is not built_for and self.policy is not runner.policy):
            from dataclasses import replace

            from gitbot.sandbox.runner import Runner

            # A policy built without a repository (Policy()) gets this one, so absolute paths resolve.
            policy = self.policy if self.policy.repo is not None else replace(self.policy, repo=self.repo)
            if runner is not None:
                runner.discard_warm()  # made ready under the old policy
            runner = Runner(policy, self.repo)
            self.state["runner"] = (self.policy, runner)
        return runner

    def close_runner(self) -> None:
        """The run is over: its runner's launcher and warm sandbox go now, not when it is collected."""
        _built_for, runner = self.state.pop("runner", (None, None))
        if runner is not None:
            runner.close()

    def files_changing(self) -> None:
        """A file tool is about to change the tree: the sandbox made ready for the next command goes
        (sandbox/warm.py). No runner is made for it."""
        _built_for, runner = self.state.get("runner", (None, None))
        if runner is not None:
            runner.discard_warm()


@dataclass(frozen=True)
class Tool:
    name: str
    input_schema: dict[str, Any]
    function: Callable[[ToolContext, dict[str, Any]], str | ToolResult]
    # True when the tool can change files, so a checkpoint is taken after it.
    changes_files: bool = False

    @property
    def description(self) -> str:
        return render_prompt(f"tools/{self.name}")

    def definition(self) -> dict[str, Any]:
        """The tool as the Messages API expects it in `tools`."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}
