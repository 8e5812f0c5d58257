"""The trigger phrase (`@gitbot` by default): where it is live, what it asks, and text that never has it.

A phrase is live when a reader of the rendered comment sees it as written by the commenter: in the
text the page shows (markdown_text.trigger_text: the same parse the model's text comes from), outside
code (spans, fenced and indented blocks, `<code>`), quotes (`>` and `<q>`: an earlier comment quoted)
and links, and a whole word there (not `x@gitbot`, not `@gitbotter`, not part of a path or address
such as `docs/@gitbot/x`). Matching is case-insensitive, as GitHub's mentions are.

The word the reader sees right after the first live phrase can force the mode: `@gitbot answer …`
(reply, change nothing) or `@gitbot fix …` (make a change); `@gitbot <!-- --> answer` shows "answer".
Otherwise the agent decides.

`defuse` is the other direction: every text gitbot posts goes through it, so gitbot's own comments
never hold a live phrase and can never start gitbot again, whatever the model wrote into them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitbot.markdown_text import drop_invisible, trigger_text

DEFAULT_PHRASE = "@gitbot"
ZWSP = "\u200b"
# What a phrase may look like: no whitespace, no markup that the matcher itself looks for.
PHRASE = re.compile(r"^[^\s`>\[\]()<]{2,40}$")
MODES = ("answer", "fix")


@dataclass(frozen=True)
class Request:
    mode: str  # "auto" (the agent decides), "answer" or "fix"


def valid_phrase(phrase: str) -> bool:
    return bool(PHRASE.match(phrase))


def _phrases(phrase: str, live: str) -> list[re.Match[str]]:
    """The whole-word occurrences of the phrase in `live`. The phrase itself is matched on the raw text
    (a zero-width space inside it, as defuse() puts there, breaks it), but its edges are judged by the
    characters a reader sees next to it, past invisible ones: `@gitbot\u200bter` reads `@gitbotter`."""
    return [m for m in re.finditer(re.escape(phrase), live, re.IGNORECASE)
            if _whole(_visible(live, m.start(), -1, 1), _visible(live, m.end(), +1, 2))]


def _whole(before: str, after: str) -> bool:
    # Not preceded by a word character or by characters that make it part of a path, an address or a
    # longer mention; not followed by a word character or a hyphen, nor by `/` or `.` that continue a
    # path or a domain.
    return not re.fullmatch(r"[\w@/.\-]", before) and not re.match(r"[\w\-]|[/.]\w", after)


def _visible(text: str, pos: int, step: int, count: int) -> str:
    """Up to `count` visible characters of `text` from `pos` in direction `step`, in reading order."""
    found: list[str] = []
    i = pos if step > 0 else pos - 1
    while 0 <= i < len(text) and len(found) < count:
        if drop_invisible(text[i]):
            found.append(text[i])
        i += step
    return "".join(found if step > 0 else reversed(found))


def live_mentions(text: str, phrase: str = DEFAULT_PHRASE) -> list[int]:
    """Where the live phrases start in the text the page shows (trigger_text)."""
    return [m.start() for m in _phrases(phrase, trigger_text(text))]


def find_request(text: str, phrase: str = DEFAULT_PHRASE) -> Request | None:
    """The request a comment makes of gitbot, or None when it holds no live phrase."""
    live = trigger_text(text)
    matches = _phrases(phrase, live)
    if not matches:
        return None
    return Request(mode=_mode(live[matches[0].end():matches[0].end() + 200]))


# Bidi controls (markdown_text.trigger_text puts one where `<bdo>` or a `dir` attribute starts).
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _mode(after: str) -> str:
    """The mode the first word after the phrase asks for. A word whose letters may show as something
    else (reordered by a bidi control, or with a letter outside ASCII: Cyrillic `а` reads as `a`) asks
    for "answer": the read-only mode is the safe reading of a word we cannot read as the page shows it."""
    reordered = False
    for i, ch in enumerate(after):
        if ch in " \t\n:,":
            continue
        if ch in _BIDI:
            reordered = True
        elif drop_invisible(ch):
            break
    else:
        return "auto"
    word = re.match(r"\w+", drop_invisible(after[i:]))
    if word is None:
        return "auto"
    if reordered or not word.group(0).isascii():
        return "answer"
    return word.group(0).lower() if word.group(0).lower() in MODES else "auto"


def defuse(text: str, phrase: str = DEFAULT_PHRASE) -> str:
    """`text` with a zero-width space inside every occurrence of the phrase, live or not (code and
    quotes included: cheaper than deciding, and a copy is as harmless): it reads the same and starts
    nothing."""
    return re.sub(re.escape(phrase), lambda m: m.group(0)[0] + ZWSP + m.group(0)[1:], text, flags=re.IGNORECASE)
