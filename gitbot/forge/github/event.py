"""The Actions environment and the event that started the job: what, if anything, gitbot should do.

The runner describes the job in `GITHUB_*` variables and writes the webhook payload to the file
at `GITHUB_EVENT_PATH`. gitbot reads the payload itself (never through `${{ github.event.* }}` in a
script), and everything in it that a user typed — titles, bodies, branch names — is data.

`decide` maps an event to one of:
  IssueTrigger     `issues`/`labeled` with the configured label, or `workflow_dispatch` naming an issue
  WorkflowTrigger  `workflow_run`/`completed` with conclusion `failure`, from this repository, on a
                   branch gitbot did not create
  CommentTrigger   a new comment holding the live trigger phrase: `issue_comment`/`created` (on an
                   issue or a pull request), `pull_request_review_comment`/`created` (a line of the
                   diff), `pull_request_review`/`submitted` with a body; never one of gitbot's own
  Ignore           anything else, with the reason (a notice, exit 0)

Everything here is decided from the payload alone, before any API call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitbot.forge.interface import parse_time
from gitbot.forge.mention import DEFAULT_PHRASE, find_request
from gitbot.forge.triggers import (
    BRANCH_PREFIX,
    Actor,
    CommentTrigger,
    Decision,
    Ignore,
    IssueSnapshot,
    IssueTrigger,
    LineRef,
    WorkflowTrigger,
    is_own_comment,
)

COMMENT_EVENTS = {
    "issue_comment": ("created", "comment"),
    "pull_request_review_comment": ("created", "comment"),
    "pull_request_review": ("submitted", "review"),
}
# The names a workflow_dispatch input carrying the issue number may have.
DISPATCH_ISSUE_INPUTS = ("issue-number", "issue_number", "issue")


class ContextError(ValueError):
    """The Actions environment is incomplete or the event file is unreadable."""


def actor(data: Any) -> Actor | None:
    """The user a payload names (its `login` and `type`), or None when it names nobody."""
    if not isinstance(data, dict) or not isinstance(data.get("login"), str) or not data["login"]:
        return None
    return Actor(login=data["login"], type=str(data.get("type") or "User"))


@dataclass(frozen=True)
class ActionsContext:
    event_name: str
    event: dict[str, Any]
    repository: str  # owner/name
    api_url: str
    server_url: str
    run_id: str
    run_attempt: str
    workspace: Path
    actor: str = ""
    triggering_actor: str = ""
    runner_temp: Path | None = None  # where the artifact action.yml uploads is prepared

    @property
    def owner(self) -> str:
        return self.repository.split("/", 1)[0]

    @property
    def run_url(self) -> str:
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"


def read_context(environ: dict[str, str]) -> ActionsContext:
    missing = [
        name
        for name in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY")
        if not environ.get(name)
    ]
    if missing:
        raise ContextError(f"not running in GitHub Actions: {', '.join(missing)} not set")
    path = Path(environ["GITHUB_EVENT_PATH"])
    try:
        event = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ContextError(f"cannot read the event file {path}: {exc}") from None
    if not isinstance(event, dict):
        raise ContextError(f"the event file {path} does not hold a JSON object")
    repository = environ["GITHUB_REPOSITORY"]
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
        raise ContextError(f"GITHUB_REPOSITORY is not owner/name: {repository!r}")
    return ActionsContext(
        event_name=environ["GITHUB_EVENT_NAME"],
        event=event,
        repository=repository,
        api_url=environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/"),
        server_url=environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/"),
        run_id=environ.get("GITHUB_RUN_ID", "0"),
        run_attempt=environ.get("GITHUB_RUN_ATTEMPT", "1"),
        workspace=Path(environ.get("GITHUB_WORKSPACE") or "."),
        actor=environ.get("GITHUB_ACTOR", ""),
        triggering_actor=environ.get("GITHUB_TRIGGERING_ACTOR", ""),
        runner_temp=Path(environ["RUNNER_TEMP"]) if environ.get("RUNNER_TEMP") else None,
    )




def decide(
    ctx: ActionsContext,
    *,
    label: str,
    dispatch_issue: str | None = None,
    trigger_phrase: str = DEFAULT_PHRASE,
) -> Decision:
    event, name = ctx.event, ctx.event_name
    action = event.get("action")
    sender = actor(event.get("sender"))
    if name == "issues":
        if action != "labeled":
            return Ignore(f"issues event with action {action!r}: gitbot acts only when a label is added")
        added = (event.get("label") or {}).get("name")
        if added != label:
            return Ignore(f"the label added is {added!r}, not {label!r}")
        issue = event.get("issue") or {}
        if issue.get("pull_request"):
            return Ignore("the label was added to a pull request; gitbot fixes issues")
        if issue.get("state") not in (None, "open"):
            return Ignore("the issue is closed")
        number = issue.get("number")
        if not isinstance(number, int) or sender is None:
            return Ignore("the issues event has no issue number or no sender")
        return IssueTrigger(number=number, sender=sender, label=label, snapshot=_snapshot(issue))
    if name == "workflow_dispatch":
        inputs = event.get("inputs") or {}
        raw = dispatch_issue or next((str(inputs[k]) for k in DISPATCH_ISSUE_INPUTS if inputs.get(k)), "")
        raw = raw.strip().lstrip("#")
        if not raw.isdigit() or int(raw) <= 0:
            return Ignore("workflow_dispatch without an issue number (an input named issue-number)")
        if sender is None:
            return Ignore("the workflow_dispatch event has no sender")
        return IssueTrigger(number=int(raw), sender=sender, label=None)
    if name == "workflow_run":
        return _decide_workflow_run(ctx, event, sender)
    if name in COMMENT_EVENTS:
        return _decide_comment(name, event, sender, trigger_phrase)
    return Ignore(f"gitbot does not act on {name!r} events")


def _decide_comment(name: str, event: dict[str, Any], sender: Actor | None, phrase: str) -> Decision:
    action, key = COMMENT_EVENTS[name]
    if event.get("action") != action:
        return Ignore(f"{name} event with action {event.get('action')!r}: gitbot acts only on {action} ones")
    item = event.get(key) or {}
    body = item.get("body")
    if not isinstance(body, str) or not body.strip():
        return Ignore(f"the {key} has no text")
    author = actor(item.get("user"))
    if author is None or sender is None:
        return Ignore(f"the {name} event names no author or sender")
    if is_own_comment(author, body):
        return Ignore(f"the {key} is gitbot's own (by {author.login}): gitbot never answers itself")
    request = find_request(body, phrase)
    if request is None:
        return Ignore(f"the {key} does not mention {phrase} (outside code and quotes)")
    comment_id, node_id = item.get("id"), item.get("node_id")
    if not isinstance(comment_id, int) or not isinstance(node_id, str):
        return Ignore(f"the {key} has no id")
    common = {
        "kind": name,
        "comment_id": comment_id,
        "node_id": node_id,
        "body": body,
        "author": author,
        "sender": sender,
        "created_at": str(item.get("created_at") or item.get("submitted_at") or ""),
        "html_url": str(item.get("html_url") or ""),
        "mode": request.mode,
    }
    if name == "issue_comment":
        issue = event.get("issue") or {}
        number = issue.get("number")
        if not isinstance(number, int):
            return Ignore("the issue_comment event has no issue number")
        if issue.get("state") not in (None, "open"):
            return Ignore(f"#{number} is closed")
        on_pull = bool(issue.get("pull_request"))
        return CommentTrigger(
            number=number, on_pull=on_pull, issue_snapshot=None if on_pull else _snapshot(issue), **common
        )
    pull = event.get("pull_request") or {}
    number = pull.get("number")
    if not isinstance(number, int):
        return Ignore(f"the {name} event has no pull request number")
    if pull.get("state") not in (None, "open"):
        return Ignore(f"pull request #{number} is closed")
    head_repo = ((pull.get("head") or {}).get("repo") or {}).get("full_name")
    line = None
    thread_id = None
    review_id = item.get("pull_request_review_id") if name == "pull_request_review_comment" else comment_id
    if name == "pull_request_review_comment":
        line = LineRef(
            path=str(item.get("path") or ""),
            line=_int(item.get("line")) or _int(item.get("original_line")),
            start_line=_int(item.get("start_line")) or _int(item.get("original_start_line")),
            side=str(item.get("side") or "RIGHT"),
            diff_hunk=str(item.get("diff_hunk") or ""),
            commit_id=str(item.get("commit_id") or ""),
        )
        thread_id = _int(item.get("in_reply_to_id")) or comment_id
    return CommentTrigger(
        number=number,
        on_pull=True,
        line=line,
        thread_id=thread_id,
        review_id=_int(review_id),
        head_repository=head_repo if isinstance(head_repo, str) else None,
        **common,
    )


def _snapshot(issue: dict[str, Any]) -> IssueSnapshot:
    return IssueSnapshot(
        title=str(issue.get("title") or ""),
        body=str(issue.get("body") or ""),
        author=str((issue.get("user") or {}).get("login") or ""),
        updated_at=parse_time(issue.get("updated_at")),
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _decide_workflow_run(ctx: ActionsContext, event: dict[str, Any], sender: Actor | None) -> Decision:
    run = event.get("workflow_run") or {}
    if event.get("action") != "completed":
        return Ignore(
            f"workflow_run event with action {event.get('action')!r}: gitbot acts on completed runs"
        )
    if run.get("conclusion") != "failure":
        return Ignore(f"the workflow run's conclusion is {run.get('conclusion')!r}, not 'failure'")
    head_repo = (run.get("head_repository") or {}).get("full_name")
    if head_repo != ctx.repository:
        return Ignore(
            f"the failed run's code comes from another repository ({head_repo!r}, a fork?): gitbot "
            "never runs on code from outside this repository"
        )
    branch = run.get("head_branch")
    if not isinstance(branch, str) or not branch:
        return Ignore("the failed run has no head branch (a tag?)")
    if branch.startswith(BRANCH_PREFIX):
        return Ignore(
            f"the failed run is on {branch!r}, a branch gitbot created: not fixing its own work (loop guard)"
        )
    sha = run.get("head_sha")
    run_id = run.get("id")
    if not isinstance(run_id, int) or not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}", sha):
        return Ignore("the workflow_run event has no run id or head commit")
    candidates = (
        sender,
        actor(run.get("actor")),
        actor(run.get("triggering_actor")),
    )
    unique = list(dict.fromkeys(a for a in candidates if a is not None))
    if not unique:
        return Ignore("the workflow_run event names nobody who started it")
    return WorkflowTrigger(
        run_id=run_id,
        name=str(run.get("name") or "workflow"),
        head_branch=branch,
        head_sha=sha,
        html_url=str(run.get("html_url") or ""),
        actors=unique,
    )
