"""What every stage of one job shares: the CI job's I/O, its settings, where it runs, the forge, the
trigger, the secrets, the work tree and the credential for git.

The job runs in three stages (an adapter's entry point, e.g. github/action.py, sequences them):
plan.py turns the trigger into a Plan, work.py runs the agent and commits and pushes, report.py tells
people (comments, the pull request, summary, outputs). Everything forge-specific comes through the
interface.py protocols, so the same stages serve every forge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gitbot.forge.interface import Forge, JobIO, RunPlace, Settings
from gitbot.forge.triggers import CommentTrigger, IssueTrigger, WorkflowTrigger
from gitbot.secrets import Secrets


@dataclass
class Job:
    io: JobIO
    inputs: Settings
    ctx: RunPlace
    forge: Forge
    trigger: IssueTrigger | WorkflowTrigger | CommentTrigger
    secrets: Secrets
    # git configuration carrying the token, for fetch and push (pull_request.auth_env, from the adapter)
    auth: dict[str, str]
    repo: Path = field(init=False)
    # What preparing the uploaded artifact stopped or left out (forge/artifact.py); None until prepared.
    artifact_notes: list[str] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.repo = self.ctx.workspace.resolve()
