"""What a reader sees on the rendered page: the text of an issue, comment, review or PR body as github.com
shows it, from a real parse rather than a list of patterns.

Three steps, each one what GitHub itself does, so nothing depends on guessing where Markdown ends
(steps 1 and 2 are markdown_html.py, the math of step 3 markdown_math.py):
1. cmark-gfm with GitHub's extensions (table, strikethrough, autolink, tagfilter, tasklist) and
   footnotes renders the Markdown to HTML. Raw HTML passes through to step 2; tagfilter turns
   `<style>`, `<script>`, `<xmp>`, `<plaintext>`, `<iframe>`, `<title>`, `<textarea>`, `<noembed>` and
   `<noframes>` into literal text, as on github.com. Unreferenced footnotes, table cells beyond the
   header's width and link reference definitions never reach the HTML.
2. An HTML5 sanitizer (nh3, the ammonia binding) with html-pipeline's allow-list (`Allowlist`): an
   element it does not allow is unwrapped (its text shows), comments go, and every attribute outside
   the list goes — `hidden` and `style` among them, so text "hidden" that way stays, as on the page.
3. A walk of the sanitized tree keeps the text that renders:
   - attribute values never become text: no `alt`, `title`, `href` or `src` (an image is `[image]`);
   - `<details>` content is kept (a reader can open it), between markers that say it was collapsed;
   - math (`$…$`, `$$…$$`, ```` ```math ````) and diagram blocks (mermaid, geojson, topojson, stl)
     are replaced by a marker, never passed on as source: MathJax and the diagram renderers can hide
     text (`\\phantom`, TeX comments, `%%` comments), and what they draw is not words anyway;
   - `<svg>`, `<math>`, `<template>`, `<noscript>` are dropped with their contents, and so is `<rp>`
     (not shown where ruby is) and text three or more levels deep in `<sub>`/`<sup>`/`<small>` (too
     small to read). Where github.com may show more (an `<svg>`'s text, math's edge cases), the parse
     keeps the words from the model;
   - entities are decoded, then zero-width, bidi, tag, variation-selector and other format
     characters are removed (they are invisible, and tag characters can spell ASCII).

Code stays as code: fenced and indented blocks as fenced blocks, code spans in backticks.

`trigger_text` is the same walk for the trigger phrase: only text that is visible *and* outside code
(`<code>`, `<pre>`, `<kbd>`, `<samp>`, `<tt>`), quotes (`>`, `<q>`), links and struck-out text
(`~~`, `<del>`, `<s>`) counts; the rest is blanked (with SHOWN_NOT_LIVE where it shows).
Its invisible characters are kept, because they break a phrase for a reader too.

Time is linear: the input is capped first (MAX_INPUT_BYTES), and each step is a single pass.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from gitbot.markdown_html import GITHUB, Allowlist, sanitized_html
from gitbot.markdown_math import ESCAPED_DOLLAR, MATH_MARK, mark_escaped_dollars, mark_math, without_math
from gitbot.prompting import render_prompt

# GitHub refuses a body longer than 65,536 characters: at most four bytes each.
MAX_INPUT_BYTES = 4 * 65_536
# GitHub caps titles at 256 characters; a title is plain text, capped the same way.
MAX_TITLE_BYTES = 4 * 256
# Fenced blocks that github.com draws rather than shows.
MATH_LANGUAGES = frozenset({"math"})
DIAGRAM_LANGUAGES = frozenset({"mermaid", "geojson", "topojson", "stl"})


# Characters a reader does not see, beyond Unicode's "format" category (Cf: zero-width, bidi, tags, the
# soft hyphen): variation selectors (Mongolian ones too), which can carry bytes chained after a visible
# character, the combining grapheme joiner, the Khmer inherent vowels, the Hangul fillers and the blank
# Braille pattern.
_INVISIBLE_EXTRA = re.compile(
    "[\ufe00-\ufe0f\U000e0100-\U000e01ef\u180b-\u180d\u180f\u034f\u17b4\u17b5\u115f\u1160\u3164\uffa0"
    "\u2800]")

BLOCKS = frozenset([
    "p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "table", "thead", "tbody", "tfoot", "tr",
    "blockquote", "pre", "dl", "dt", "dd", "hr", "figure", "figcaption", "caption", "details", "summary",
])
# Blocks that sit on their own lines without a blank line around them.
TIGHT_BLOCKS = frozenset([
    "ul", "ol", "li", "thead", "tbody", "tfoot", "tr", "dt", "dd", "summary", "caption", "figcaption",
])
# Containers whose whitespace between children is layout, not text.
CONTAINERS = frozenset([
    "ul", "ol", "dl", "table", "thead", "tbody", "tfoot", "tr", "blockquote", "details", "figure", "picture",
    "ruby",
])
VOID = frozenset(["br", "hr", "img", "input", "source", "wbr"])
CODE_LIKE = frozenset(["code", "kbd", "samp", "tt"])
QUOTES = frozenset(["blockquote", "q"])
# Where a trigger phrase is not live: code, quotes, links, and struck-out text (a reader sees it withdrawn).
NOT_LIVE = CODE_LIKE | QUOTES | frozenset(["a", "del", "s", "strike"])
# What trigger_text puts for text that shows but is not live (code, a link, math, an image): a visible
# non-word, so the mode word after a phrase is read only up to the next thing a reader sees.
SHOWN_NOT_LIVE = "\ufffc"
BIDI_ISOLATE = "\u2068"
SHRINKING = frozenset(["sub", "sup", "small"])
MAX_SHRINK_DEPTH = 2


def cap_bytes(text: str, limit: int) -> tuple[str, int]:
    """`text` cut to at most `limit` UTF-8 bytes (whole characters), and how many bytes were cut."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text, 0
    return data[:limit].decode("utf-8", "ignore"), len(data) - limit


def drop_invisible(text: str) -> str:
    if text.isascii():
        return text  # every invisible character is outside ASCII
    return _INVISIBLE_EXTRA.sub("", "".join(ch for ch in text if unicodedata.category(ch) != "Cf"))


def plain_title(title: str) -> str:
    """An issue or PR title: plain text on github.com, so only the invisible characters go."""
    title, _ = cap_bytes(title, MAX_TITLE_BYTES)
    return " ".join(drop_invisible(title).split())


def visible_text(markdown: str, allowlist: Allowlist = GITHUB) -> str:
    """The text a reader of the rendered Markdown sees, and nothing else."""
    walk = _walk(markdown, allowlist)
    return _tidy(drop_invisible(walk.render(live_only=False)))


def trigger_text(markdown: str, allowlist: Allowlist = GITHUB) -> str:
    """The visible text where a trigger phrase counts (outside code, quotes and links); everything
    else is blanked. Invisible characters are kept: a phrase they break is broken for a reader too."""
    return _walk(markdown, allowlist).render(live_only=True)


def _walk(markdown: str, allowlist: Allowlist) -> _Walker:
    markdown, cut = cap_bytes(markdown.replace("\x00", "\ufffd"), MAX_INPUT_BYTES)
    markdown = mark_escaped_dollars(markdown)
    walker = _Walker()
    walker.feed(sanitized_html(markdown, allowlist))
    walker.finish()
    if cut:
        walker.raw("\n" + render_prompt("visible_text/not_read", count=f"{cut:,}") + "\n")
    return walker


@dataclass(slots=True)
class _Token:
    # "text"; "code" (a code span's content); "block" (a code block's); "raw" (layout: a block boundary);
    # "inline" (a marker inside a paragraph: an image, a checkbox, a line break)
    kind: str
    text: str
    live: bool  # may hold a trigger phrase
    prefix: str = ""  # what each new line inside it starts with (quote marks, list indent)
    math: list[tuple[int, int, bool]] | None = None  # math spans of `text`: start, end, marker


# The sanitizer's output is serialized HTML5: every tag well formed, every attribute `name="value"`,
# and text escapes only `&`, `<`, `>` and the no-break space. So a tokenizer this simple reads it
# exactly, in one pass (html.parser's entity decoding is many times slower on `&lt;`-heavy text).
_HTML_TOKEN = re.compile(r'<(/?)([a-z][a-z0-9-]*)((?:\s+[^\s=>/]+(?:="[^"]*")?)*)\s*/?>')
_ATTRIBUTE = re.compile(r'([^\s=>/]+)(?:="([^"]*)")?')
_TEXT_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&nbsp;", "\u00a0"), ("&quot;", '"'), ("&amp;", "&"))


def _unescape(text: str) -> str:
    if "&" in text:
        for entity, char in _TEXT_ENTITIES:
            text = text.replace(entity, char)
    return text


class _Walker:
    """Sanitized HTML → tokens of visible text; math is found across them afterwards."""

    def feed(self, html: str) -> None:
        pos = 0
        for tag in _HTML_TOKEN.finditer(html):
            if tag.start() > pos:
                self.handle_data(_unescape(html[pos:tag.start()]))
            pos = tag.end()
            if tag.group(1):
                self.handle_endtag(tag.group(2))
            else:
                attrs = [(k, _unescape(v)) for k, v in _ATTRIBUTE.findall(tag.group(3))] if tag.group(3) else []
                self.handle_starttag(tag.group(2), attrs)
        if pos < len(html):
            self.handle_data(_unescape(html[pos:]))

    def __init__(self) -> None:
        self.tokens: list[_Token] = []
        self.stack: list[str] = []
        self.open_count: dict[str, int] = {}  # how many of each element are open (a stray end tag is ignored)
        self.quotes = 0  # open <blockquote>
        self.lists: list[str] = []  # open <ul>/<ol>
        self.not_live = 0  # open NOT_LIVE elements
        self.skip = 0  # open elements whose text is not shown (<rp>)
        self.shrink = 0
        self.capture: list[str] | None = None  # the text of the open <pre> or code span
        self.capture_tag = ""
        self.pre_lang = ""
        self.after_bullet = False  # a list item's first block starts on the bullet's line
        self._prefix_key, self._prefix = (0, 0), ""
        self.trailing_newlines = 1  # the start counts as the start of a line

    # --- output -------------------------------------------------------------------------------
    def prefix(self) -> str:
        # Nesting is capped before the parse (MAX_NESTING), so this stays short; cached until a quote
        # or list opens or closes.
        key = (self.quotes, len(self.lists))
        if key != self._prefix_key:
            self._prefix_key = key
            self._prefix = "> " * self.quotes + "  " * max(0, len(self.lists) - 1)
        return self._prefix

    def raw(self, text: str, kind: str = "raw") -> None:
        self._count_newlines(text)
        self.tokens.append(_Token(kind, text, False, self.prefix()))

    def text(self, text: str, kind: str = "text") -> None:
        self._count_newlines(text)
        self.tokens.append(_Token(kind, text, self.not_live == 0 and kind == "text", self.prefix()))

    def break_line(self, count: int) -> None:
        """End the line, and leave `count - 1` blank lines (whatever is already there counts)."""
        if count > self.trailing_newlines:
            self.raw("\n" * (count - self.trailing_newlines))

    def _count_newlines(self, text: str) -> None:
        if text and text[-1] != "\n":
            self.trailing_newlines = 0
            return
        kept = text.rstrip("\n")
        self.trailing_newlines = len(text) - len(kept) + (self.trailing_newlines if not kept else 0)

    def hidden(self) -> bool:
        return self.skip > 0 or self.shrink > MAX_SHRINK_DEPTH

    # --- the parse ----------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.capture is not None:  # markup inside code (raw HTML): only what hides text counts
            if tag not in VOID:
                self._push(tag)
                self._hiding(tag, +1)
            return
        if tag in BLOCKS and not self.after_bullet:
            self.break_line(1 if tag in TIGHT_BLOCKS else 2)
        self.after_bullet = tag == "li"
        if tag not in VOID:
            self._push(tag)
        values = dict(attrs)
        if (tag == "bdo" or "dir" in values) and not self.hidden():
            # The text may show reordered: a bidi control says so to the mode reader (mention.py), and
            # is dropped from the visible text with the other invisible characters.
            self.text(BIDI_ISOLATE)
        if tag == "pre":
            self.capture, self.capture_tag, self.pre_lang = [], "pre", (values.get("lang") or "").lower()
        elif tag in NOT_LIVE:
            self.not_live += 1
            if tag == "code":
                self.capture, self.capture_tag = [], "code"
            if tag == "blockquote":
                self.quotes += 1
        elif tag in ("ul", "ol"):
            self.lists.append(tag)
        elif tag == "li":
            self.raw("- ")
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.raw("#" * int(tag[1]) + " ")
        elif tag in ("td", "th"):
            self.raw("| ")
        elif tag == "br":
            self.raw("\n", "inline")
        elif tag == "hr":
            self.raw("---\n")
        elif tag == "img" and not self.hidden():
            self.raw(render_prompt("visible_text/image"), "inline")
        elif tag == "input" and values.get("type") == "checkbox" and not self.hidden():
            self.raw("[x]" if "checked" in values else "[ ]", "inline")
        elif tag == "details":
            self.raw(render_prompt("issue_task/collapsed") + "\n")
        else:
            self._hiding(tag, +1)

    def _hiding(self, tag: str, step: int) -> None:
        if tag == "rp":
            self.skip += step
        elif tag in SHRINKING:
            self.shrink += step

    def handle_endtag(self, tag: str) -> None:
        if not self.open_count.get(tag):
            return  # sanitizer output is balanced; a stray end tag means nothing
        while self.stack:
            open_tag = self._pop()
            self._close(open_tag)
            if open_tag == tag:
                break

    def _push(self, tag: str) -> None:
        self.stack.append(tag)
        self.open_count[tag] = self.open_count.get(tag, 0) + 1

    def _pop(self) -> str:
        tag = self.stack.pop()
        self.open_count[tag] -= 1
        return tag

    def _close(self, tag: str) -> None:
        if self.capture is not None:
            if tag != self.capture_tag:
                self._hiding(tag, -1)
                return
            captured, self.capture = "".join(self.capture), None
            if tag == "pre":
                self._code_block(captured)
            else:
                self.not_live -= 1
                if not self.hidden():
                    self.text(captured, "code")
            return
        if tag in NOT_LIVE:
            self.not_live -= 1
            if tag == "blockquote":
                self.quotes -= 1
        elif tag in ("ul", "ol"):
            self.lists.pop()
        elif tag in ("td", "th"):
            self.raw(" ")
        elif tag == "tr":
            self.raw("|")
        elif tag == "details":
            self.raw("\n" + render_prompt("issue_task/collapsed_end"))
        else:
            self._hiding(tag, -1)
        if tag in BLOCKS:
            self.break_line(1 if tag in TIGHT_BLOCKS else 2)

    def _code_block(self, code: str) -> None:
        if self.hidden():
            return
        if self.pre_lang in MATH_LANGUAGES:
            self.raw(render_prompt("visible_text/math") + "\n")
        elif self.pre_lang in DIAGRAM_LANGUAGES:
            self.raw(render_prompt("visible_text/diagram", kind=self.pre_lang) + "\n")
        else:
            longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
            fence = "`" * max(3, longest + 1)
            self.raw(f"{fence}\n")
            self.tokens.append(_Token("block", code.rstrip("\n") + "\n", False, self.prefix()))
            self.raw(f"{fence}\n")

    def handle_data(self, data: str) -> None:
        if self.hidden():
            return
        if self.capture is not None:
            self.capture.append(data)
        elif data.isspace() and (self.after_bullet or self.trailing_newlines or not self.stack
                                 or self.stack[-1] in CONTAINERS):
            return  # layout: the newlines between list items, rows and cells, or at a line's start
        else:
            self.after_bullet = False
            self.text(data)

    def finish(self) -> None:
        while self.stack:
            self._close(self._pop())
        mark_math(self.tokens)

    # --- rendering ----------------------------------------------------------------------------
    def render(self, *, live_only: bool) -> str:
        out: list[str] = []
        line_start = True
        for token in self.tokens:
            text = token.text
            if token.math:
                text = without_math(text, token.math)
            if live_only and not token.live:
                if token.kind == "raw" or text.isspace():
                    text = "\n" if "\n" in text else " " * bool(text)
                else:
                    text = SHOWN_NOT_LIVE
            elif live_only:
                text = text.replace(MATH_MARK, SHOWN_NOT_LIVE)
            elif token.kind == "code":
                text = _code_span(text)
            if ESCAPED_DOLLAR in text:
                text = text.replace(ESCAPED_DOLLAR, "\\$" if token.kind in ("code", "block") else "$")
            # Each line starts with the prefix of the token that writes on it (quote marks, list indent).
            for i, part in enumerate(text.split("\n")):
                if i:
                    out.append("\n")
                    line_start = True
                if part:
                    if line_start and token.prefix:
                        out.append(token.prefix)
                    line_start = False
                    out.append(part)
        return "".join(out)


def _code_span(code: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{ticks}{pad}{code}{pad}{ticks}"


_QUOTE_MARKS_ONLY = re.compile(r"^(?:> ?)+\s*$")


def _tidy(text: str) -> str:
    text = text.replace(MATH_MARK, render_prompt("visible_text/math"))
    # Lines of nothing but quote marks are the quote's own layout: they go.
    lines = [line.rstrip() for line in text.split("\n") if not _QUOTE_MARKS_ONLY.match(line)]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
