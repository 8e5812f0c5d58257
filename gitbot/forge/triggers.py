"""What started a job, as every forge's adapter hands it to the flow: an issue, a failed run, or a
request in a comment; or nothing to do (Ignore).

An adapter decides from its CI's event (GitHub: github/event.py; GitLab: the pipeline's payload) and
builds these; the flow reads nothing else of the event. Everything in them that a user typed —
titles, bodies, branch names — is data.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

BRANCH_PREFIX = "gitbot/"
# Every comment gitbot writes carries a marker starting with this (an HTML comment, invisible).
GITBOT_MARKER = "<!-- gitbot:"
# The identity GitHub's workflow token writes as (GitLab usernames cannot hold brackets).
WORKFLOW_BOT = "github-actions[bot]"
# gitbot's reply to a request carries the request's key and the CI run that wrote it: a re-run finds
# and edits its own reply, and another run sees that the request is taken.
REPLY_MARKER = "<!-- gitbot:reply {key} run {run} -->"
REPLY_PATTERN = re.compile(r"<!-- gitbot:reply ([\w-]+) run (\d+) -->")


@dataclass(frozen=True)
class Actor:
    login: str
    type: str = "User"  # "User", "Bot", "Organization" — as the event says

    @property
    def is_bot(self) -> bool:
        # Either signal marks a bot; neither makes one trusted (see github/permissions.py).
        return self.type == "Bot" or self.login.endswith("[bot]")


@dataclass(frozen=True)
class IssueSnapshot:
    """The issue as the event showed it: taken when the label was added (or the comment made), so an
    edit made after that moment cannot change the task."""

    title: str
    body: str
    author: str
    updated_at: dt.datetime | None  # an upper bound for the labelling that started this run


@dataclass(frozen=True)
class IssueTrigger:
    number: int
    sender: Actor
    label: str | None  # None for a run started by hand (workflow_dispatch)
    snapshot: IssueSnapshot | None = None  # None: started by hand (the issue is read from the API)

    @property
    def branch(self) -> str:
        return f"{BRANCH_PREFIX}issue-{self.number}"

    @property
    def actors(self) -> list[Actor]:
        return [self.sender]


@dataclass(frozen=True)
class WorkflowTrigger:
    """A failed workflow run (GitHub) or pipeline (GitLab) on a branch of this repository."""

    run_id: int
    name: str
    head_branch: str
    head_sha: str
    html_url: str
    actors: list[Actor] = field(default_factory=list)  # everyone who started it

    @property
    def branch(self) -> str:
        return f"{BRANCH_PREFIX}run-{self.run_id}"


@dataclass(frozen=True)
class LineRef:
    """What a line comment points at: the file, the lines and the diff hunk the reviewer saw."""

    path: str
    line: int | None
    start_line: int | None
    side: str
    diff_hunk: str
    commit_id: str


@dataclass(frozen=True)
class CommentTrigger:
    # GitHub: "issue_comment", "pull_request_review_comment" or "pull_request_review";
    # GitLab: "issue_note", "merge_request_note" or "diff_note".
    kind: str
    number: int  # the issue or pull request (GitLab: the iid)
    on_pull: bool
    comment_id: int  # the comment's id (for a review: the review's id)
    node_id: str  # GitHub's GraphQL id ("" where there is none)
    body: str  # as it was when the event fired
    author: Actor
    sender: Actor
    created_at: str
    html_url: str
    mode: str  # "auto", "answer" or "fix"
    line: LineRef | None = None  # a line comment's place in the diff
    # Where replies go: the first comment of a line comment's thread (GitHub), or the note's
    # discussion (GitLab: a hex id).
    thread_id: int | str | None = None
    review_id: int | None = None  # the review a line comment, or the review itself, belongs to
    # The pull request's source repository, when the event carries it.
    head_repository: str | None = None
    # The issue as the event showed it when the comment was made (an issue mention works like the label).
    issue_snapshot: IssueSnapshot | None = None

    @property
    def key(self) -> str:
        """What identifies this request: the same key is never worked on twice."""
        return f"{'review' if self.kind == 'pull_request_review' else 'comment'}-{self.comment_id}"

    @property
    def branch(self) -> str:  # an issue mention works like the label: the issue's branch
        return f"{BRANCH_PREFIX}issue-{self.number}"

    @property
    def actors(self) -> list[Actor]:
        return list(dict.fromkeys([self.sender, self.author]))


@dataclass(frozen=True)
class Ignore:
    reason: str


Decision = IssueTrigger | WorkflowTrigger | CommentTrigger | Ignore


def is_own_comment(author: Actor, body: str) -> bool:
    """A comment gitbot wrote: by the workflow token's identity, or by a bot and carrying gitbot's
    marker (a GitHub App token, or a GitLab bot user, writes under its own name)."""
    return author.login.lower() == WORKFLOW_BOT or (author.is_bot and GITBOT_MARKER in body)


def reply_marker(trigger: CommentTrigger, run: str) -> str:
    return REPLY_MARKER.format(key=trigger.key, run=run)
