"""The trigger phrase (`@gitbot` by default): where it is live, what it asks, and text that never has it.

A phrase is live when a reader of the rendered comment sees it as written by the commenter: a whole
word (not `x@gitbot`, not `@gitbotter`, not part of a path or URL such as `docs/@gitbot/x`), outside
code spans, fenced code blocks, `>` quotes (an earlier comment quoted) and HTML comments (hidden).
Matching is case-insensitive, as GitHub's mentions are.

The word right after the first live phrase can force the mode: `@gitbot answer …` (reply, change
nothing) or `@gitbot fix …` (make a change). Otherwise the agent decides.

`defuse` is the other direction: every text gitbot posts goes through it, so gitbot's own comments
never hold a live phrase and can never start gitbot again, whatever the model wrote into them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_PHRASE = "@gitbot"
ZWSP = "\u200b"
# What a phrase may look like: no whitespace, no markup that the matcher itself looks for.
PHRASE = re.compile(r"^[^\s`>\[\]()<]{2,40}$")
MODES = ("answer", "fix")
HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
QUOTE_LINE = re.compile(r"^ {0,3}>")


@dataclass(frozen=True)
class Request:
    mode: str  # "auto" (the agent decides), "answer" or "fix"
    start: int  # where the first live phrase starts, in the text as given


def valid_phrase(phrase: str) -> bool:
    return bool(PHRASE.match(phrase))


def _masked(text: str) -> str:
    """`text` with everything that cannot hold a live phrase replaced by spaces, same length: HTML
    comments, fenced code blocks, quote lines and code spans."""
    chars = list(text)

    def blank(start: int, end: int) -> None:
        for i in range(start, end):
            if chars[i] != "\n":
                chars[i] = " "

    for match in HTML_COMMENT.finditer(text):
        blank(match.start(), match.end())
    # Line by line: fences and quotes.
    fence: str | None = None
    offset = 0
    for line in "".join(chars).split("\n"):
        end = offset + len(line)
        if fence is not None:
            closing = FENCE_OPEN.match(line)
            if (
                closing
                and closing.group(1)[0] == fence[0]
                and len(closing.group(1)) >= len(fence)
                and (not line.strip().strip(fence[0]))
            ):
                fence = None
            blank(offset, end)
        else:
            opening = FENCE_OPEN.match(line)
            if opening and not (opening.group(1)[0] == "`" and "`" in line[opening.end() :]):
                fence = opening.group(1)
                blank(offset, end)
            elif QUOTE_LINE.match(line):
                blank(offset, end)
        offset = end + 1
    # Code spans: a run of N backticks up to the next run of exactly N (an unmatched run is literal).
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", "".join(chars))]
    i = 0
    while i < len(runs):
        length = runs[i][1] - runs[i][0]
        closing = next((j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] == length), None)
        if closing is None:
            i += 1
            continue
        blank(runs[i][0], runs[closing][1])
        i = closing + 1
    return "".join(chars)


def _pattern(phrase: str) -> re.Pattern[str]:
    # Not preceded by a word character or by characters that make it part of a path, an address or a
    # longer mention; not followed by a word character or a hyphen, nor by `/` or `.` that continue a
    # path or a domain.
    return re.compile(rf"(?<![\w@/.\-]){re.escape(phrase)}(?![\w\-]|[/.][\w])", re.IGNORECASE)


def live_mentions(text: str, phrase: str = DEFAULT_PHRASE) -> list[int]:
    """Where the live phrases start in `text`."""
    return [m.start() for m in _pattern(phrase).finditer(_masked(text))]


def find_request(text: str, phrase: str = DEFAULT_PHRASE) -> Request | None:
    """The request a comment makes of gitbot, or None when it holds no live phrase."""
    starts = live_mentions(text, phrase)
    if not starts:
        return None
    after = text[starts[0] + len(phrase) :]
    word = re.match(r"[\s:,]*([A-Za-z]+)\b", after)
    mode = word.group(1).lower() if word and word.group(1).lower() in MODES else "auto"
    return Request(mode=mode, start=starts[0])


def defuse(text: str, phrase: str = DEFAULT_PHRASE) -> str:
    """`text` with a zero-width space inside every live phrase: it reads the same and starts nothing."""
    starts = live_mentions(text, phrase)
    for start in reversed(starts):
        text = text[: start + 1] + ZWSP + text[start + 1 :]
    return text
