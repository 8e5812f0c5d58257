"""Who may start gitbot on GitLab, decided from the API before any model call, failing closed.

First the pipeline. Its predefined variables (CI_PIPELINE_SOURCE, GITLAB_USER_ID, the ref and the
commit) are not GitLab's word: variables passed when a pipeline is created (by whoever holds the trigger
token) take precedence over predefined ones. So the pipeline is read from the API and must say the same;
a trigger pipeline may carry TRIGGER_PAYLOAD and nothing else (no GITBOT_BASE_URL, GITBOT_POLICY,
CI_API_V4_URL, … set by the token's holder).

A webhook's body is not GitLab's word either: whoever holds the trigger token can send any, so everything
it claims is looked up again here —
  a note        it exists on that issue or merge request; its text, as GitLab shows it now, still
                holds the trigger phrase; its author is read from the note, not from the body; on a
                merge request, whether it is a line comment and where comes from the merge request's
                discussions
  a label       GitLab's label events show that user (by id) as the last to add that label to that
                issue, the label is still there and the issue open
and the request is fresh: the note, or the label's last add, at most MAX_EVENT_AGE older than the pipeline
(a body replayed later is refused), and the issue's title and description unchanged since (GitLab's
"changed the description"/"changed title" system notes): the API shows the issue only as it is now, so an
edit made after the approval would become the task; it is refused instead, to be approved again.
Then the person: a project member (direct or inherited) with at least the Developer role (30). A bot
user (a project or group access token's, a service account) is refused unless GITBOT_ALLOWED_BOTS
names it, and then still needs the role; its username alone never grants anything. gitbot's own notes
(its bot user, with its marker) are never answered. A confidential issue is refused whoever asks: its
words would reach a branch, a merge request and notes that everyone who sees the project can read. So
is a request in an internal note, for the same reason (and internal notes are never read into a task,
api.py `is_internal`).

The result is the trigger rebuilt from what the API says, so nothing from the payload but the ids
reaches the flow, and the model.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Any

from gitbot.forge.gitlab.api import GitLabForge, PipelineData, UserData
from gitbot.forge.gitlab.ci import GitLabContext
from gitbot.forge.gitlab.settings import GitLabSettings
from gitbot.forge.mention import find_request
from gitbot.forge.triggers import (
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

DEVELOPER = 30
# How much older than its pipeline the event that asked may be. GitLab fires the webhook as the note or the
# label is saved and the trigger API creates the pipeline at once, so a real request is seconds old; the
# margin covers a busy instance's Sidekiq queue. A body replayed later (an old note gitbot never answered,
# a Developer's old label event) is refused; a pipeline waiting for a runner does not matter, since the
# pipeline's created_at is when the trigger was called.
MAX_EVENT_AGE = dt.timedelta(minutes=15)
# The one variable a trigger pipeline may be created with: the webhook's body.
TRIGGER_VARIABLE = "TRIGGER_PAYLOAD"
LEVEL_NAMES = {10: "Guest", 15: "Planner", 20: "Reporter", 30: "Developer", 40: "Maintainer", 50: "Owner"}


INTERNAL_NOTE_REPLY = (
    "🔒 gitbot does not act on internal notes: its branch, merge request, commits, notes, job log and run "
    "record can be seen by everyone who can see the project, and it cannot promise that the words of this "
    "note stay out of them. Ask in a note that is not internal, leaving out what must stay internal."
)


@dataclass(frozen=True)
class Refused:
    """Somebody asked who may not (or a payload claimed what GitLab does not show): nothing runs."""

    reason: str
    reply: str | None = None  # what to tell the person who asked, where only they and their peers read it


@dataclass(frozen=True)
class Confirmed:
    trigger: IssueTrigger | WorkflowTrigger | CommentTrigger
    reason: str  # who asked, and with what role


def confirm(
    decision: Decision,
    forge: GitLabForge,
    *,
    settings: GitLabSettings,
    ctx: GitLabContext,
) -> Confirmed | Refused | Ignore:
    """`decision` (from ci.decide on `ctx`) checked against the API. The pipeline's user, as GitLab
    records it, is the person for a failed pipeline, a manual run or a schedule."""
    if isinstance(decision, Ignore):
        return decision
    pipeline = _pipeline(forge, ctx)
    if isinstance(pipeline, Refused):
        return pipeline
    if isinstance(decision, CommentTrigger):
        return _confirm_note(decision, forge, settings, pipeline)
    if isinstance(decision, IssueTrigger) and decision.label is not None:
        return _confirm_label(decision, forge, settings, _payload_user_id(ctx.payload), pipeline)
    verdict = _person(forge, pipeline.user_id, settings, claimed=decision.actors[0].login)
    if isinstance(verdict, Refused):
        return verdict
    user, reason = verdict
    if isinstance(decision, IssueTrigger):
        if forge.confidential(decision.number):
            return _confidential(decision.number)
        return Confirmed(replace(decision, sender=_actor(user)), reason)
    return Confirmed(replace(decision, actors=[_actor(user)]), reason)


def _pipeline(forge: GitLabForge, ctx: GitLabContext) -> PipelineData | Refused:
    """The pipeline as GitLab records it, when it is the one the job's variables describe."""
    if not ctx.run_id.isdigit():
        return Refused(f"CI_PIPELINE_ID is not a pipeline id: {ctx.run_id[:40]!r}")
    pipeline = forge.pipeline(int(ctx.run_id))
    if pipeline is None:
        return Refused(f"GitLab has no pipeline {ctx.run_id} in this project")
    claims = (
        ("CI_PIPELINE_SOURCE", ctx.source, pipeline.source),
        ("GITLAB_USER_ID", str(ctx.actor_id or ""), str(pipeline.user_id)),
        ("CI_COMMIT_REF_NAME", ctx.ref, pipeline.ref),
        ("CI_COMMIT_SHA", ctx.sha, pipeline.sha),
    )
    for name, claimed, recorded in claims:
        if claimed != recorded:
            return Refused(
                f"{name} is {claimed[:80]!r} but GitLab records {recorded!r} for pipeline {pipeline.id}: a "
                "variable passed to the pipeline overrides GitLab's own"
            )
    if pipeline.source == "trigger":
        extra = sorted(set(forge.pipeline_variable_keys(pipeline.id)) - {TRIGGER_VARIABLE})
        if extra:
            return Refused(
                f"the trigger passed variables besides {TRIGGER_VARIABLE} ({', '.join(k[:40] for k in extra[:5])}):"
                " whoever holds the trigger token must not change gitbot's settings or GitLab's own variables"
            )
    return pipeline


def _stale(what: str, when: dt.datetime, pipeline: PipelineData) -> Refused | None:
    if when < pipeline.created_at - MAX_EVENT_AGE:
        return Refused(
            f"{what} is from {when:%Y-%m-%d %H:%M} UTC, more than {MAX_EVENT_AGE} before this pipeline: a "
            "replayed event, not a request (ask again)"
        )
    return None


def _edited(forge: GitLabForge, number: int, since: dt.datetime, what: str) -> Refused | None:
    if forge.issue_edited_after(number, since):
        return Refused(
            f"issue #{number}'s title or description changed after {what}: gitbot works only on text a "
            "Developer approved (ask again)"
        )
    return None


def _confirm_note(
    t: CommentTrigger, forge: GitLabForge, settings: GitLabSettings, pipeline: PipelineData
) -> Confirmed | Refused | Ignore:
    noteable = "MergeRequest" if t.on_pull else "Issue"
    where = f"{'!' if t.on_pull else '#'}{t.number}"
    note = forge.note(noteable, t.number, t.comment_id)
    if note is None:
        return Refused(
            f"GitLab has no note {t.comment_id} on {where}: the payload names a note that does not exist"
        )
    if note.system:
        return Ignore(f"note {note.id} is a system note")
    stale = _stale(f"note {note.id}", note.created_at, pipeline)
    if stale is not None:
        return stale
    user = forge.user(note.author_id)
    if user is None:
        return Refused(f"the author of note {note.id} is not a GitLab user")
    author = _actor(user)
    if is_own_comment(author, note.body) or forge.is_token_user(user.id):
        return Ignore(f"note {note.id} is gitbot's own (by {user.username}): gitbot never answers itself")
    request = find_request(note.body, settings.trigger_phrase)
    if request is None:
        return Ignore(f"note {note.id}, as GitLab shows it, does not mention {settings.trigger_phrase}")
    verdict = _person(forge, user.id, settings, claimed=user.username, user=user)
    if isinstance(verdict, Refused):
        return verdict
    if note.internal:  # told why (in a reply that is internal too), since a Developer asked
        return Refused(f"note {note.id} on {where} is internal", reply=INTERNAL_NOTE_REPLY)
    _, reason = verdict
    changes: dict[str, Any] = {
        "body": note.body,
        "author": author,
        "sender": author,
        "mode": request.mode,
        "created_at": note.created_at.isoformat(),
    }
    if t.on_pull:
        # Where a line comment points is re-read only when the payload says it is one: a payload that hides
        # a position only loses the model that context, and reading the discussions (with their diff hunks)
        # would put those calls before the 👀 on every plain note.
        line = _line_of(forge, t.number, note.id) if t.line is not None else None
        changes |= {"line": line, "kind": "diff_note" if line is not None else "merge_request_note"}
    else:
        if forge.confidential(t.number):
            return _confidential(t.number)
        issue = forge.issue(t.number)
        if issue.state != "open":
            return Ignore(f"{where} is closed")
        edited = _edited(forge, t.number, note.created_at, f"note {note.id} asked")
        if edited is not None:
            return edited
        changes |= {
            "kind": "issue_note",
            "line": None,
            "issue_snapshot": IssueSnapshot(issue.title, issue.body, issue.author, note.created_at),
        }
    return Confirmed(replace(t, **changes), reason)


def _line_of(forge: GitLabForge, number: int, note_id: int) -> LineRef | None:
    """Where a diff note points, from the merge request's discussions (never from the payload's position)."""
    for thread in forge.review_threads(number):
        if any(c.id == note_id for c in thread.comments):
            return LineRef(
                path=thread.path,
                line=thread.line,
                start_line=thread.start_line,
                side="RIGHT",
                diff_hunk=thread.diff_hunk,
                commit_id="",
            )
    return None


def _confirm_label(
    t: IssueTrigger,
    forge: GitLabForge,
    settings: GitLabSettings,
    claimed_id: int | None,
    pipeline: PipelineData,
) -> Confirmed | Refused | Ignore:
    if claimed_id is None:
        return Refused("the issue event names no user id")
    user = forge.user(claimed_id)
    if user is None or user.username != t.sender.login:
        return Refused(
            f"the payload's user {t.sender.login!r} is not GitLab user {claimed_id}: a forged payload"
        )
    # The label's last event decides: an old add of this user's, removed since and added again by someone
    # else, is not this user's approval.
    events = forge.label_events(t.number, t.label or "")
    last = events[-1] if events else None
    if last is None or last.action != "add" or last.user_id != user.id:
        return Refused(
            f"GitLab does not show {user.username} as the last to add the {t.label!r} label to #{t.number}: "
            "a forged or replayed payload"
        )
    stale = _stale(f"the {t.label!r} label's last add", last.created_at, pipeline)
    if stale is not None:
        return stale
    issue = forge.issue(t.number)
    if issue.state != "open":
        return Ignore(f"issue #{t.number} is closed")
    if t.label not in issue.labels:
        return Ignore(f"issue #{t.number} no longer has the {t.label!r} label")
    verdict = _person(forge, user.id, settings, claimed=user.username, user=user)
    if isinstance(verdict, Refused):
        return verdict
    if forge.confidential(t.number):
        return _confidential(t.number)
    edited = _edited(forge, t.number, last.created_at, f"{user.username} added the label")
    if edited is not None:
        return edited
    snapshot = IssueSnapshot(issue.title, issue.body, issue.author, last.created_at)
    return Confirmed(replace(t, sender=_actor(user), snapshot=snapshot), verdict[1])


def _person(
    forge: GitLabForge, user_id: int, settings: GitLabSettings, *, claimed: str, user: UserData | None = None
) -> tuple[UserData, str] | Refused:
    user = user or forge.user(user_id)
    if user is None or user.username != claimed:
        return Refused(f"{claimed} is not GitLab user {user_id}")
    if user.state != "active":
        return Refused(f"{user.username} is {user.state or 'not active'}")
    if user.bot and user.username.lower() not in settings.allowed_bots:
        return Refused(f"{user.username} is a bot user and is not listed in GITBOT_ALLOWED_BOTS")
    level = forge.access_level(user.id)
    if level is None:
        return Refused(f"{user.username} is not a member of the project; gitbot needs the Developer role")
    if level < DEVELOPER:
        return Refused(
            f"{user.username} has only the {LEVEL_NAMES.get(level, str(level))} role; gitbot needs "
            "Developer or higher"
        )
    return user, f"{user.username} has the {LEVEL_NAMES.get(level, str(level))} role"


def _confidential(number: int) -> Refused:
    return Refused(
        f"issue #{number} is confidential: gitbot's branch, merge request and notes would show its words to "
        "everyone who can see the project"
    )


def _actor(user: UserData) -> Actor:
    return Actor(user.username, "Bot" if user.bot else "User")


def _payload_user_id(payload: dict[str, Any] | None) -> int | None:
    user = (payload or {}).get("user")
    value = user.get("id") if isinstance(user, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
