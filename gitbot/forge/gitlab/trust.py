"""Who may start gitbot on GitLab, decided from the API before any model call, failing closed.

A pipeline's own variables (GITLAB_USER_ID: who started it) are GitLab's. A webhook's body is not:
whoever holds the trigger token can send any, so everything it claims is looked up again here —
  a note        it exists on that issue or merge request; its text, as GitLab shows it now, still
                holds the trigger phrase; its author is read from the note, not from the body; on a
                merge request, whether it is a line comment and where comes from the merge request's
                discussions
  a label       GitLab's label events show that user adding that label to that issue, the label is
                still there and the issue open; the task is the issue as the API shows it
Then the person: a project member (direct or inherited) with at least the Developer role (30). A bot
user (a project or group access token's, a service account) is refused unless GITBOT_ALLOWED_BOTS
names it, and then still needs the role; its username alone never grants anything. gitbot's own notes
(its bot user, with its marker) are never answered. A confidential issue is refused whoever asks: its
words would reach a branch, a merge request and notes that everyone who sees the project can read.

The result is the trigger rebuilt from what the API says, so nothing from the payload but the ids
reaches the flow, and the model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gitbot.forge.gitlab.api import GitLabForge, UserData
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
LEVEL_NAMES = {10: "Guest", 15: "Planner", 20: "Reporter", 30: "Developer", 40: "Maintainer", 50: "Owner"}


@dataclass(frozen=True)
class Refused:
    """Somebody asked who may not (or a payload claimed what GitLab does not show): nothing runs."""

    reason: str


@dataclass(frozen=True)
class Confirmed:
    trigger: IssueTrigger | WorkflowTrigger | CommentTrigger
    reason: str  # who asked, and with what role


def confirm(
    decision: Decision,
    forge: GitLabForge,
    *,
    settings: GitLabSettings,
    payload: dict[str, Any] | None,
    actor_id: int | None,
) -> Confirmed | Refused | Ignore:
    """`decision` (from ci.decide) checked against the API. `actor_id` is GITLAB_USER_ID, who started
    the pipeline: the person for a failed pipeline, a manual run or a schedule."""
    if isinstance(decision, Ignore):
        return decision
    if isinstance(decision, CommentTrigger):
        return _confirm_note(decision, forge, settings)
    if isinstance(decision, IssueTrigger) and decision.label is not None:
        return _confirm_label(decision, forge, settings, _payload_user_id(payload))
    if actor_id is None:
        return Refused("the pipeline does not say who started it (GITLAB_USER_ID)")
    verdict = _person(forge, actor_id, settings, claimed=decision.actors[0].login)
    if isinstance(verdict, Refused):
        return verdict
    user, reason = verdict
    if isinstance(decision, IssueTrigger):
        if forge.confidential(decision.number):
            return _confidential(decision.number)
        return Confirmed(replace(decision, sender=_actor(user)), reason)
    return Confirmed(replace(decision, actors=[_actor(user)]), reason)


def _confirm_note(
    t: CommentTrigger, forge: GitLabForge, settings: GitLabSettings
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
    user = forge.user(note.author_id)
    if user is None:
        return Refused(f"the author of note {note.id} is not a GitLab user")
    author = _actor(user)
    if is_own_comment(author, note.body):
        return Ignore(f"note {note.id} is gitbot's own (by {user.username}): gitbot never answers itself")
    request = find_request(note.body, settings.trigger_phrase)
    if request is None:
        return Ignore(f"note {note.id}, as GitLab shows it, does not mention {settings.trigger_phrase}")
    verdict = _person(forge, user.id, settings, claimed=user.username, user=user)
    if isinstance(verdict, Refused):
        return verdict
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
        changes |= {
            "kind": "issue_note",
            "line": None,
            "issue_snapshot": IssueSnapshot(issue.title, issue.body, issue.author, None),
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
    t: IssueTrigger, forge: GitLabForge, settings: GitLabSettings, claimed_id: int | None
) -> Confirmed | Refused | Ignore:
    if claimed_id is None:
        return Refused("the issue event names no user id")
    user = forge.user(claimed_id)
    if user is None or user.username != t.sender.login:
        return Refused(
            f"the payload's user {t.sender.login!r} is not GitLab user {claimed_id}: a forged payload"
        )
    if forge.label_added_at(t.number, t.label or "", user.username) is None:
        return Refused(
            f"GitLab shows no {t.label!r} label added to #{t.number} by {user.username}: a forged payload"
        )
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
    snapshot = IssueSnapshot(issue.title, issue.body, issue.author, None)
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
