"""Stage one of an action job: the event becomes a Plan — the task, the branches and the title.

Nothing here calls the model or touches the work tree; it reads the forge (the issue, its comments and
label events, or the failed run's jobs and logs) and refuses what gitbot will not act on.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from gitbot.forge import pull_request as prmod
from gitbot.forge.interface import CommentData
from gitbot.forge.issue_task import IssueText, build_issue_task, clean_title, select_comments
from gitbot.forge.job import Job
from gitbot.forge.mdsafe import md_cell
from gitbot.forge.triggers import Actor, CommentTrigger, IssueSnapshot, IssueTrigger, is_own_comment
from gitbot.task import Task


class Refused(Exception):
    """Not an error: gitbot will not act on this trigger (a notice, exit 0)."""


@dataclass
class Plan:
    task: Task
    base: str  # the branch the PR targets
    branch: str  # gitbot's branch
    title: str  # the PR title and commit subject
    start_sha: str | None = None  # the commit to start from (a failed run's head); None: the base's tip
    fetch_also: str | None = None  # the branch holding start_sha, when it is not the base
    issue: int | None = None
    context_line: str = ""
    # The issue's comments as read for the task: the status comment is found among them without a
    # second read (None: not read, so the report reads them).
    issue_comments: list[Any] | None = None
    # "fix" (a label, a failed run, `@gitbot fix`), "answer" (`@gitbot answer`: nothing may change) or
    # "auto" (a mention: the agent decides between answering and changing).
    mode: str = "fix"
    # Where the policy is read from: the PR's base branch for an issue, the default branch (or the
    # configured base-branch) for a failed run, never the commit under test, which could loosen it.
    policy_branch: str | None = None


def make_plan(job: Job) -> Plan:
    t = job.trigger
    if isinstance(t, IssueTrigger):
        return _issue_plan(job, t)
    if isinstance(t, CommentTrigger):
        return _mention_plan(job, t)
    return _workflow_plan(job, t)


def _issue_plan(job: Job, t: IssueTrigger) -> Plan:
    forge = job.forge
    issue_ref = f"{forge.terms.issue_prefix}{t.number}"
    if t.snapshot is not None:
        issue = IssueText(t.number, t.snapshot.title, t.snapshot.body, t.snapshot.author)
        # The event's issue snapshot was taken when this run's label was added: no label event
        # after it is this run's (a queued run must not take a later labelling's time).
        snapshot_time = t.snapshot.updated_at
        approved_at = (
            forge.label_added_at(t.number, t.label or "", t.sender.login, not_after=snapshot_time)
            or snapshot_time
        )
    else:
        data = forge.issue(t.number)
        if data.is_pull_request:
            raise Refused(f"{issue_ref} is a {forge.terms.change}; gitbot fixes issues")
        if data.state != "open":
            raise Refused(f"issue {issue_ref} is closed")
        issue = IssueText(data.number, data.title, data.body, data.author)
        approved_at = dt.datetime.now(dt.UTC)
    comments = forge.comments(t.number)
    task = build_issue_task(
        issue,
        select_comments(comments, approved_at),
        repository=job.ctx.repository,
        check_command=job.inputs.check_command,
        terms=forge.terms,
    )
    how = (
        f"after `{md_cell(t.sender.login)}` added the `{md_cell(t.label)}` label"
        if t.label
        else f"started by `{md_cell(t.sender.login)}`"
    )
    return Plan(
        task=redacted(job, task),
        base=job.inputs.base_branch or forge.default_branch,
        branch=t.branch,
        title=f"Fix {issue_ref}: {clean_title(issue.title, 80)}",
        issue=t.number,
        context_line=f"gitbot worked on {issue_ref} {how}.",
        issue_comments=comments,
    )


def _mention_plan(job: Job, t: CommentTrigger) -> Plan:
    """A mention on an issue works like the label: the issue as it was when the comment was made, its
    comments up to that one, and what the comment asks (to answer, to fix, or either)."""
    from gitbot.forge.pr_task import issue_request_note, request_time

    snapshot = t.issue_snapshot or IssueSnapshot("", "", "", None)
    issue_ref = f"{job.forge.terms.issue_prefix}{t.number}"
    issue = IssueText(t.number, snapshot.title, snapshot.body, snapshot.author)
    comments = job.forge.comments(t.number)
    asked_at = request_time(t)
    # gitbot's own replies are its words, not the issue's: they stay out of the task. The request itself
    # is the payload's copy, as it was when the event fired (an edit since then does not count).
    theirs = [
        c
        for c in comments
        if c.id != t.comment_id and not is_own_comment(Actor(c.author, c.author_type), c.body)
    ]
    selection = select_comments(theirs, asked_at)
    when = asked_at or dt.datetime.now(dt.UTC)
    selection.kept.append(CommentData(t.comment_id, t.author.login, t.author.type, t.body, when, when))
    task = build_issue_task(
        issue, selection, repository=job.ctx.repository, check_command=job.inputs.check_command,
        terms=job.forge.terms,
    )
    task = Task(
        text=f"{task.text}\n\n{issue_request_note(t)}",
        source="issue_comment",
        title=task.title,
        check_command=task.check_command,
    )
    return Plan(
        task=redacted(job, task),
        base=job.inputs.base_branch or job.forge.default_branch,
        branch=t.branch,
        title=f"Fix {issue_ref}: {clean_title(issue.title, 80)}",
        issue=t.number,
        context_line=f"gitbot worked on {issue_ref} when `{md_cell(t.author.login)}` asked in "
        f"[a comment]({t.html_url}).",
        issue_comments=comments,
        mode=t.mode,
    )


def _workflow_plan(job: Job, t) -> Plan:
    from gitbot.forge.workflow import build_workflow_task, collect_failures

    try:
        prmod.validate_branch(t.head_branch)
    except prmod.GitError as exc:
        raise Refused(str(exc)) from None
    jobs, notes = collect_failures(job.forge, t.run_id)
    task = build_workflow_task(
        workflow=t.name,
        branch=t.head_branch,
        sha=t.head_sha,
        run_url=t.html_url,
        jobs=jobs,
        notes=notes,
        check_command=job.inputs.check_command,
        terms=job.forge.terms,
    )
    base = job.inputs.base_branch or t.head_branch
    return Plan(
        policy_branch=job.inputs.base_branch or job.forge.default_branch,
        task=redacted(job, task),
        base=base,
        branch=t.branch,
        title=clean_title(f"Fix failing {t.name} on {t.head_branch}", 80),
        start_sha=t.head_sha,
        fetch_also=t.head_branch if t.head_branch != base else None,
        context_line=f"gitbot worked on the failure of the {job.forge.terms.run} [{md_cell(t.name)}]"
        f"({t.html_url}) on `{md_cell(t.head_branch)}`.",
    )


def redacted(job: Job, task: Task) -> Task:
    return Task(
        text=job.secrets.redact(task.text),
        source=task.source,
        title=job.secrets.redact(task.title),
        check_command=task.check_command,
    )
