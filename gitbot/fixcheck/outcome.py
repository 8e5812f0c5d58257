"""What a fix-check asks (FixRequest) and how it ended (FixOutcome, with the JSON keys it adds)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from gitbot.sandbox.command import CommandRun


@dataclass
class FixRequest:
    repo: Path
    command: list[str] | str  # what runs: argv, or a string split like a shell would
    display: str  # how it is shown and given to the agent (shell-quoted)
    timeout: float
    model: str | None = None
    provider: str | None = None  # None: the policy's [model] provider, else anthropic
    base_url: str | None = None
    max_cost_usd: float | None = None
    max_steps: int | None = None
    policy_file: Path | None = None
    replay: Path | None = None
    confirm_failure: bool = True
    source: str = "check"
    echo: TextIO | None = None  # where the check's output is copied live
    progress: Callable[[str], None] | None = None  # one-line notes on what happens next
    # The first run was in the user's own environment (a hook), not in the agent's: a confirmation
    # re-run that passes then says "the environments differ", not "flaky".
    first_run_in_user_environment: bool = False


@dataclass
class FixOutcome:
    outcome: str
    exit_code: int
    message: str
    before: CommandRun
    confirm: CommandRun | None = None
    after: CommandRun | None = None
    result: Any = None  # RunResult, when the agent ran
    changed: list[str] = field(default_factory=list)
    tests_modified: list[str] = field(default_factory=list)
    suppressions_added: list[str] = field(default_factory=list)
    task_title: str = ""
    first_failure: str = ""
    first_failure_path: str = ""
    patch: bytes = b""  # the agent's change (binary patch, from the run's checkpoints), for --commit
    check_environment: str = ""  # how the re-runs ran (sandbox, environment)

    @property
    def verified(self) -> bool:
        """The check passes now, proven by running it: after a fix, or because it never failed."""
        return self.outcome in ("fixed", "check_passed")

    @property
    def flaky(self) -> bool:
        return self.outcome in ("flaky", "passed_without_changes")

    def fields(self) -> dict[str, Any]:
        """The fix-check keys of the JSON result (also put into RunResult.extra)."""
        return {
            "outcome": self.outcome,
            "verified": self.verified,
            "check_command": self.before.command,
            "check_exit_before": _exit_value(self.before),
            "check_exit_confirm": _exit_value(self.confirm) if self.confirm else None,
            "check_exit_after": _exit_value(self.after) if self.after else None,
            "check_timed_out": any(run is not None and run.timed_out
                                   for run in (self.before, self.confirm, self.after)),
            "check_environment": self.check_environment,
            "tests_modified": list(self.tests_modified),
            "suppressions_added": list(self.suppressions_added),
            "flaky": self.flaky,
            "message": self.message,
        }

    def to_dict(self) -> dict[str, Any]:
        if self.result is not None:
            return self.result.to_dict()
        return {"run_id": None, "steps": 0, "cost_usd": 0.0, "files_changed": [], **self.fields()}


def _exit_value(run: CommandRun) -> int | str | None:
    return "timeout" if run.timed_out else run.exit_code
