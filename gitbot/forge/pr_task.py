"""The task of a follow-up request on a pull request: the words are in prompts/conversation/.

Four sources, all untrusted text from GitHub, each reduced to what the page shows (markdown_text.visible_text)
and capped, inside one pair of delimiters with a random suffix:
- the request itself, as it was when the event fired, and for a line comment the file, the lines
  and the diff hunk it points at (and the earlier comments of its thread);
- the other review threads that are not resolved, with comments written before the request only;
- the checks of the head commit, with what a failed GitHub Actions job logged;
- what the pull request was made for and what earlier iterations did — unless the run continues the
  earlier conversation, which holds all of that already.
Commits pushed since gitbot's last change are listed either way, so the model reads before it edits.
"""

from __future__ import annotations

import datetime as dt
import secrets as _secrets
from dataclasses import dataclass, field

from gitbot.forge.interface import CheckRun, PullInfo, ReviewThread, Terms
from gitbot.forge.issue_task import clean_title
from gitbot.forge.ledger import Ledger
from gitbot.forge.triggers import CommentTrigger
from gitbot.markdown_text import visible_text
from gitbot.prompting import defuse_delimiters, render_prompt
from gitbot.task import Task

REQUEST_CHARS = 6_000
THREAD_COMMENT_CHARS = 2_000
THREADS_CHARS = 12_000
HUNK_CHARS = 4_000
CHECK_EXCERPT_CHARS = 4_000
CHECKS_CHARS = 10_000
ORIGIN_CHARS = 8_000
ITERATION_SUMMARY_CHARS = 800
MAX_COMMITS = 20
FAILED = ("failure", "timed_out", "cancelled", "action_required", "startup_failure")


@dataclass
class PullContext:
    """Everything read from the forge and git for one request on a pull request."""

    trigger: CommentTrigger
    pull: PullInfo
    repository: str
    threads: list[ReviewThread] = field(default_factory=list)
    checks: list[CheckRun] = field(default_factory=list)
    check_logs: dict[str, str] = field(default_factory=dict)  # failed job name -> log excerpt
    ledger: Ledger | None = None
    origin: str = ""  # the issue the pull request was made for: title and body
    commits: list[str] = field(
        default_factory=list
    )  # "sha subject (author)", pushed since gitbot's last change
    terms: Terms = field(default_factory=Terms)  # the forge's words


def cap(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    more = render_prompt("conversation/more_characters", count=f"{len(text) - limit:,}")
    return f"{text[:limit].rstrip()}\n{more}"


def mode_text(mode: str) -> str:
    if mode == "answer":
        return render_prompt("conversation/mode_answer")
    if mode == "fix":
        return render_prompt("conversation/mode_fix")
    return render_prompt("conversation/mode_auto")


def request_time(trigger: CommentTrigger) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(trigger.created_at)
    except ValueError:
        return None


def _where(trigger: CommentTrigger) -> str:
    if trigger.line is not None:
        lines = _lines(trigger.line.start_line, trigger.line.line)
        return render_prompt("conversation/where_line", lines=lines, path=trigger.line.path)
    if trigger.kind == "pull_request_review":
        return render_prompt("conversation/where_review")
    return render_prompt("conversation/where_comment")


def _lines(start: int | None, end: int | None) -> str:
    if start and end and start != end:
        return f"{start}-{end}"
    return str(end or start or "?")


def _written_before(comment, asked_at: dt.datetime | None) -> bool:
    if asked_at is None or comment.created_at is None:
        return True
    edited = comment.edited_at or comment.created_at
    return comment.created_at <= asked_at and edited <= asked_at


def _thread_text(thread: ReviewThread, asked_at: dt.datetime | None, skip_id: int | None) -> str:
    comments = [
        render_prompt(
            "conversation/thread_comment",
            author=c.author,
            association=c.association,
            body=cap(visible_text(c.body), THREAD_COMMENT_CHARS),
        )
        for c in thread.comments
        if c.id != skip_id and _written_before(c, asked_at)
    ]
    if not comments:
        return ""
    lines = _lines(thread.start_line, thread.line)
    if thread.outdated:
        place = render_prompt("conversation/place_outdated", path=thread.path, lines=lines)
    else:
        place = render_prompt("conversation/place", path=thread.path, lines=lines)
    return render_prompt("conversation/thread", place=place, comments="\n".join(comments))


def content(ctx: PullContext, *, continued: bool) -> str:
    t = ctx.trigger
    asked_at = request_time(t)
    blocks = [
        render_prompt(
            "conversation/request",
            author=t.author.login,
            where=_where(t),
            body=cap(visible_text(t.body), REQUEST_CHARS),
        )
    ]
    own_thread = None
    if t.line is not None:
        blocks.append(
            render_prompt(
                "conversation/line",
                path=t.line.path,
                lines=_lines(t.line.start_line, t.line.line),
                hunk=cap(t.line.diff_hunk, HUNK_CHARS),
            )
        )
        own_thread = next((th for th in ctx.threads if any(c.id == t.thread_id for c in th.comments)), None)
        if own_thread is not None:
            earlier = _thread_text(own_thread, asked_at, skip_id=t.comment_id)
            if earlier:
                blocks.append(earlier)
    others, used = [], 0
    for thread in ctx.threads:
        if thread.resolved or thread is own_thread:
            continue
        text = _thread_text(thread, asked_at, skip_id=t.comment_id)
        if not text or used + len(text) > THREADS_CHARS:
            continue
        others.append(text)
        used += len(text)
    if others:
        blocks.append(render_prompt("conversation/threads", threads="\n\n".join(others)))
    if ctx.checks:
        lines = [f"- {c.name}: {c.conclusion or c.status}" for c in ctx.checks]
        blocks.append(
            render_prompt("conversation/checks", sha=ctx.pull.head_sha[:12], checks="\n".join(lines))
        )
        used = 0
        for name, excerpt in ctx.check_logs.items():
            block = render_prompt(
                "conversation/check_log", name=name, excerpt=cap(excerpt, CHECK_EXCERPT_CHARS)
            )
            if used + len(block) > CHECKS_CHARS:
                break
            blocks.append(block)
            used += len(block)
    if ctx.commits:
        blocks.append(render_prompt("conversation/commits", commits="\n".join(ctx.commits[:MAX_COMMITS])))
    if not continued:
        if ctx.origin:
            blocks.append(render_prompt("conversation/origin", origin=cap(ctx.origin, ORIGIN_CHARS)))
        if ctx.ledger and ctx.ledger.iterations:
            items = [
                render_prompt(
                    "conversation/iteration",
                    n=str(it.n),
                    request=it.request,
                    by=it.by,
                    outcome=it.outcome,
                    summary=cap(it.summary or "(none)", ITERATION_SUMMARY_CHARS),
                )
                for it in ctx.ledger.iterations
            ]
            blocks.append(render_prompt("conversation/iterations", iterations="\n".join(items)))
    return "\n\n".join(blocks)


def build_pull_task(ctx: PullContext, *, continued: bool, check_command: str | None) -> Task:
    tag = f"pr_request_{_secrets.token_hex(4)}"
    body = defuse_delimiters(content(ctx, continued=continued))
    number, title = str(ctx.pull.number), clean_title(ctx.pull.title, 100)
    if continued:
        opening = render_prompt("conversation/opening_continued", number=number, title=title,
                                repository=ctx.repository, branch=ctx.pull.head_ref, change=ctx.terms.change,
                                change_prefix=ctx.terms.change_prefix)
    else:
        opening = render_prompt("conversation/opening", number=number, title=title, repository=ctx.repository,
                                branch=ctx.pull.head_ref, change=ctx.terms.change,
                                change_prefix=ctx.terms.change_prefix, forge=ctx.terms.forge)
    text = render_prompt("conversation/pull_request", opening=opening, mode=mode_text(ctx.trigger.mode), tag=tag,
                         content=body, forge=ctx.terms.forge)
    title = clean_title(f"{request_label(ctx.trigger)} on {ctx.terms.change_prefix}{ctx.pull.number}", 100)
    return Task(text=text, source="pull_request_comment", title=title, check_command=check_command)


def issue_request_note(trigger: CommentTrigger) -> str:
    """What an issue mention adds to the issue's task: who asked, and in which mode."""
    return render_prompt(
        "conversation/issue_request",
        author=trigger.author.login,
        comment_id=str(trigger.comment_id),
        mode=mode_text(trigger.mode),
    )


def request_label(trigger: CommentTrigger) -> str:
    """A request in a few words, for the ledger and the commit subject."""
    if trigger.line is not None:
        return f"line comment on {trigger.line.path}:{trigger.line.line or '?'}"
    return "review" if trigger.kind == "pull_request_review" else "comment"


def failed(check: CheckRun) -> bool:
    return check.conclusion in FAILED
