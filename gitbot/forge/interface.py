"""What the forge-neutral flow (plan, work, report, converse, iterate) asks of a forge, and nothing more.

    gitbot/forge/            the flow: an event's Job → plan → work → report, and a request in a comment
    gitbot/forge/github/     the GitHub adapter: REST and GraphQL (PyGithub), the Action's inputs and outputs
    gitbot/forge/gitlab/     the GitLab adapter: REST (python-gitlab), the CI job's variables and payload

An adapter's entry point (`gitbot action`, `gitbot gitlab`) reads its CI's environment, decides from the
event whether there is anything to do, checks who asked (re-reading what the payload claims from the
API), and only then builds a Job whose `forge`, `io` and `place` satisfy the protocols below. The flow
never imports an adapter, and never reads a payload: everything it needs comes through these calls.

The words differ between forges (a pull request is a merge request on GitLab, #5 is !5, a workflow run
is a pipeline), so what the flow writes for people takes its nouns from `Forge.terms`.
"""

from __future__ import annotations

import datetime as dt
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


class ForgeError(Exception):
    """A call to the forge failed; `status` is the HTTP status when there was one."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


# ---------------------------------------------------------------- what the forge answers: plain data


def parse_time(value: object) -> dt.datetime | None:
    """An ISO 8601 time as both APIs write them, or None when it is missing or malformed."""
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        return None


@dataclass(frozen=True)
class IssueData:
    number: int  # GitHub: the issue number; GitLab: the issue's iid
    title: str
    body: str
    author: str
    state: str  # "open" or "closed" (GitLab's "opened" is reported as "open")
    labels: list[str]
    html_url: str
    is_pull_request: bool = False


@dataclass(frozen=True)
class CommentData:
    id: int
    author: str
    author_type: str  # "User" or "Bot" (GitLab: a user with `bot: true`)
    body: str
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclass(frozen=True)
class PullData:
    """A pull request or merge request, as the flow links to it."""

    number: int  # GitHub: the PR number; GitLab: the MR's iid
    html_url: str
    draft: bool
    head: str
    base: str


@dataclass(frozen=True)
class PullInfo:
    """A pull request or merge request read in full, for a conversation on it."""

    number: int
    node_id: str  # what mark_ready needs (GitHub: the GraphQL node id; GitLab: unused)
    title: str
    body: str
    state: str  # "open", "closed" or "merged"
    draft: bool
    author: str
    head_ref: str
    head_sha: str
    head_repository: str | None  # owner/name (GitLab: path_with_namespace) of the source; None: deleted
    base_ref: str
    html_url: str


@dataclass(frozen=True)
class JobData:
    """A failed job of a workflow run or pipeline."""

    id: int
    name: str
    conclusion: str | None
    html_url: str
    failed_steps: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ThreadComment:
    id: int | None
    author: str
    association: str  # GitHub's authorAssociation; GitLab: the author's access level's name
    body: str
    created_at: dt.datetime | None
    edited_at: dt.datetime | None
    review_id: int | None


@dataclass(frozen=True)
class ReviewThread:
    """A line comment and its replies (GitHub: a review thread; GitLab: a discussion with a position)."""

    path: str
    line: int | None
    start_line: int | None
    outdated: bool
    resolved: bool
    diff_hunk: str
    comments: list[ThreadComment] = field(default_factory=list)


@dataclass(frozen=True)
class CheckRun:
    """A check of a commit (GitHub: a check run; GitLab: a job of the commit's latest pipeline)."""

    name: str
    status: str
    conclusion: str | None  # "failure", "success", …
    html_url: str
    summary: str
    job_id: int | None  # a job whose log job_log can read; None when it has none


@dataclass(frozen=True)
class Reply:
    """gitbot's reply to a request, found again by its marker."""

    id: int
    run: str  # the CI run that wrote it
    in_thread: bool  # in a line comment's thread (GitHub) or the note's discussion (GitLab)


@dataclass(frozen=True)
class Terms:
    """The forge's words for what the flow writes about."""

    change: str = "pull request"  # "merge request"
    change_short: str = "PR"  # "MR"
    change_prefix: str = "#"  # "!" (how a change request is referred to: #5, !5)
    issue_prefix: str = "#"
    run: str = "workflow run"  # "pipeline"
    forge: str = "GitHub"  # "GitLab"
    max_total_cost_setting: str = "`max-total-cost-usd`"  # where a maintainer raises the budget
    max_iterations_setting: str = "`max-iterations`"
    ci: str = "workflow"  # "pipeline" (what fails and re-runs on a branch)
    ci_product: str = "GitHub Actions"  # "GitLab CI/CD" (the model reads "The GitHub Actions workflow …")
    settings_place: str = "the input in the workflow"  # where a maintainer changes one of these settings
    check_command_setting: str = "`check-command` input"
    change_ref: str = "pull/{number}/head"  # "merge-requests/{number}/head": a change request's head, to fetch
    # Where a run's record is kept and how it goes back into a clone (`{run}`: the CI run's id), for the
    # restore hint: the Action uploads the record as the artifact's root; GitLab keeps the job's output
    # directory, the record one level down.
    record_place: str = ("The run record is in this workflow run's `gitbot-run-{run}` artifact: unpack it into "
                         "`.git/gitbot/` of a clone of this branch")
    # What makes the sandbox work on this CI's runners, when the probe says it does not.
    sandbox_setup: str = (
        "Leave the action's `sandbox-setup` input at `true` (it installs bubblewrap and lifts Ubuntu "
        "24.04's AppArmor restriction on unprivileged user namespaces), install bubblewrap on the "
        "runner yourself"
    )


GITHUB_TERMS = Terms()  # the defaults are GitHub's words


# ---------------------------------------------------------------- the protocols


class Forge(Protocol):
    """One repository (GitHub) or project (GitLab). Every method is one or a few API calls, returns
    plain data and raises ForgeError on failure."""

    terms: Terms

    @property
    def default_branch(self) -> str: ...

    # issues
    def issue(self, number: int) -> IssueData: ...
    def comments(self, number: int) -> list[CommentData]: ...
    def label_added_at(
        self, number: int, label: str, actor: str, *, not_after: dt.datetime | None = None
    ) -> dt.datetime | None: ...
    def upsert_comment(
        self, number: int, body: str, *, marker: str, existing: list[CommentData] | None = None
    ) -> str: ...

    # a failed run (workflow run, pipeline)
    def failed_jobs(self, run_id: int) -> list[JobData]: ...
    def job_log(self, job_id: int) -> str: ...

    # change requests (pull requests, merge requests)
    def open_pull(self, branch: str) -> PullData | None: ...
    def create_pull(self, *, branch: str, base: str, title: str, body: str, draft: bool) -> PullData: ...
    def update_pull(self, number: int, *, title: str, body: str) -> PullData: ...
    def get_pull(self, number: int) -> PullInfo: ...
    def update_pull_body(self, number: int, body: str) -> None: ...
    def mark_ready(self, pull: PullInfo) -> None: ...
    def review_threads(self, number: int) -> list[ReviewThread]: ...
    def check_runs(self, sha: str) -> list[CheckRun]: ...

    # a request made in a comment (the trigger is the adapter's CommentTrigger)
    def react(self, trigger) -> None: ...  # 👀, once per comment
    def find_reply(self, trigger) -> Reply | None: ...
    def write_reply(self, trigger, body: str, existing: Reply | None) -> Reply: ...

    # what gitbot never pushes: a file the forge would run as CI configuration of the pushed branch
    def unpushable(self, path: str) -> str | None: ...  # the reason, or None

    # links people follow
    def branch_url(self, branch: str) -> str: ...
    def commit_url(self, sha: str) -> str: ...
    def blob_url(self, sha: str, path: str) -> str: ...
    def issue_url(self, number: int) -> str: ...


class JobIO(Protocol):
    """The CI job's log, summary and outputs. Everything printed is redacted of known secrets; text
    gitbot did not write goes through `untrusted`, inside `commands_stopped` where the CI has commands."""

    # The job's environment as gitbot found it (secrets are out of os.environ while it works): where a
    # provider's cloud credentials (Bedrock, Vertex) are read from.
    environ: dict[str, str]

    def info(self, text: str) -> None: ...
    def notice(self, message: str, *, title: str | None = None) -> None: ...
    def warning(self, message: str, *, title: str | None = None) -> None: ...
    def error(self, message: str, *, title: str | None = None) -> None: ...
    def untrusted(self, text: str, *, heading: str | None = None) -> None: ...
    def commands_stopped(self) -> AbstractContextManager[None]: ...
    def write_summary(self, markdown: str) -> None: ...
    def set_outputs(self, values: dict[str, str]) -> None: ...


class RunPlace(Protocol):
    """Where this CI run is: the repository, the server, the run and its link, the work tree."""

    repository: str  # owner/name; GitLab: the project's path_with_namespace
    server_url: str
    run_id: str  # the workflow run's id; GitLab: the pipeline's id
    workspace: Path
    actor: str
    runner_temp: Path | None

    @property
    def run_url(self) -> str: ...


class Settings(Protocol):
    """What the job was configured with (GitHub: the Action's inputs; GitLab: the component's inputs,
    as CI/CD variables). The flow reads these and nothing else of the configuration."""

    provider: str
    model: str | None
    base_url: str | None  # the model API's address, when not the provider's own
    model_api_key: str | None  # the chosen provider's key (None: from the job's environment)
    check_command: str | None
    base_branch: str | None
    draft: bool
    trigger_phrase: str
    label: str
    max_cost_usd: float | None
    max_steps: int | None
    max_total_cost_usd: float
    max_iterations: int
    policy: str | None
    # True when the token's pushes start no CI (GitHub's workflow GITHUB_TOKEN): the PR then says so.
    workflow_token: bool
