"""A Task from a GitHub issue: its title, body and the comments that existed when the label was added.

Anyone who can open an issue or comment writes this text, so:
- the model reads only what a maintainer sees on the rendered issue when approving it
  (markdown_text.visible_text: the body and comments rendered and sanitized as github.com does, then
  only the text that shows; a collapsed `<details>` section is kept but marked as collapsed); the
  title is plain text, without its invisible characters (markdown_text.plain_title);
- comments created or edited after the label was added are left out, so nobody can change the task
  after a maintainer approved it;
- the whole is wrapped in delimiters with a random suffix, labelled as untrusted data, so a text
  that writes a closing tag cannot step outside it.

The words around the issue are templates in prompts/issue_task/.
"""

from __future__ import annotations

import datetime as dt
import secrets as _secrets
import unicodedata
from dataclasses import dataclass

from gitbot.forge.interface import GITHUB_TERMS, CommentData, Terms
from gitbot.forge.mdsafe import neutralise
from gitbot.markdown_text import plain_title, visible_text
from gitbot.prompting import defuse_delimiters, render_prompt
from gitbot.task import Task

MAX_TITLE_CHARS = 200
MAX_BODY_CHARS = 20_000
MAX_COMMENT_CHARS = 6_000
MAX_COMMENTS_CHARS = 30_000
STATUS_MARKER = "<!-- gitbot:status -->"


def clean_title(title: str, limit: int = 100) -> str:
    """One visible line for a PR title or a commit subject: no mention pings, no closing keyword closes
    an issue (a squash merge makes the PR title the commit's subject)."""
    text = plain_title(title)
    text = neutralise("".join(ch for ch in text if unicodedata.category(ch)[0] != "C"))
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    note = render_prompt("issue_task/more_characters", count=f"{len(text) - limit:,}")
    return f"{text[:limit].rstrip()}\n{note}"


@dataclass(frozen=True)
class IssueText:
    number: int
    title: str
    body: str
    author: str
    url: str = ""


@dataclass(frozen=True)
class CommentSelection:
    kept: list[CommentData]
    late: int  # created or edited after the trigger
    own: int  # gitbot's own status comments


def select_comments(comments: list[CommentData], approved_at: dt.datetime | None) -> CommentSelection:
    """The comments as they stood when the task was approved (the label was added)."""
    kept, late, own = [], 0, 0
    for comment in comments:
        if STATUS_MARKER in comment.body and comment.author_type == "Bot":
            own += 1
        elif approved_at is not None and (
            comment.created_at > approved_at or comment.updated_at > approved_at
        ):
            late += 1
        else:
            kept.append(comment)
    return CommentSelection(kept, late, own)


def build_issue_task(
    issue: IssueText,
    selection: CommentSelection,
    *,
    repository: str,
    check_command: str | None = None,
    terms: Terms = GITHUB_TERMS,
) -> Task:
    tag = f"issue_{_secrets.token_hex(4)}"
    body = _cap(visible_text(issue.body) or render_prompt("issue_task/no_description"), MAX_BODY_CHARS)
    title = plain_title(issue.title)[:MAX_TITLE_CHARS]
    parts = [render_prompt("issue_task/issue", title=title, author=issue.author, body=body)]
    used = 0
    shown = 0
    for comment in selection.kept:
        body = _cap(visible_text(comment.body), MAX_COMMENT_CHARS)
        if not body:
            continue
        created = f"{comment.created_at:%Y-%m-%d %H:%M}"
        block = "\n" + render_prompt("issue_task/comment", author=comment.author, created=created, body=body)
        if used + len(block) > MAX_COMMENTS_CHARS:
            break
        parts.append(block)
        used += len(block)
        shown += 1
    left_out = len(selection.kept) - shown
    if left_out:
        parts.append("\n" + render_prompt("issue_task/comments_left_out", count=str(left_out)))
    content = defuse_delimiters("\n".join(parts))
    intro = render_prompt(
        "issue_task/instructions", number=str(issue.number), repository=repository, tag=tag, forge=terms.forge
    )
    notes = []
    if selection.late:
        notes.append(render_prompt("issue_task/late_comments", count=str(selection.late)))
    text = "\n\n".join([intro, f"<{tag}>\n{content}\n</{tag}>", *notes])
    return Task(text=text, source="issue", title=clean_title(issue.title), check_command=check_command)
