"""What every stage of one `gitbot action` job shares: the runner's I/O, the inputs, the event, GitHub,
the secrets, the work tree and the credential for git.

The job runs in three stages (action.py sequences them): plan.py turns the event into a Plan, work.py
runs the agent and commits and pushes, report.py tells people (comments, PR, summary, outputs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gitbot.forge import pull_request as prmod
from gitbot.forge.actions_io import ActionsIO
from gitbot.forge.event import ActionsContext, CommentTrigger, IssueTrigger, WorkflowTrigger
from gitbot.forge.github import GitHubRepo
from gitbot.forge.inputs import ActionInputs
from gitbot.secrets import Secrets


@dataclass
class Job:
    io: ActionsIO
    inputs: ActionInputs
    ctx: ActionsContext
    forge: GitHubRepo
    trigger: IssueTrigger | WorkflowTrigger | CommentTrigger
    secrets: Secrets
    repo: Path = field(init=False)
    # What preparing the uploaded artifact stopped or left out (forge/artifact.py); None until prepared.
    artifact_notes: list[str] | None = field(init=False, default=None)
    auth: dict[str, str] = field(init=False)  # git configuration carrying the token, for fetch and push

    def __post_init__(self) -> None:
        self.repo = self.ctx.workspace.resolve()
        self.auth = prmod.auth_env(self.inputs.github_token, self.ctx.server_url)
