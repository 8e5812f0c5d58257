"""What a reader sees on the rendered page: the text of an issue, comment, review or PR body as github.com
shows it, from a real parse rather than a list of patterns.

Three steps, each one what GitHub itself does, so nothing depends on guessing where Markdown ends:
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
(`<code>`, `<pre>`, `<kbd>`, `<samp>`, `<tt>`), quotes (`>`, `<q>`) and links counts; the rest is blanked.
Its invisible characters are kept, because they break a phrase for a reader too.

Time is linear: the input is capped first (MAX_INPUT_BYTES), and each step is a single pass.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass, field
from html import escape

import cmarkgfm
import nh3
from cmarkgfm.cmark import Options

from gitbot.prompting import render_prompt

# GitHub refuses a body longer than 65,536 characters: at most four bytes each.
MAX_INPUT_BYTES = 4 * 65_536
# GitHub caps titles at 256 characters; a title is plain text, capped the same way.
MAX_TITLE_BYTES = 4 * 256
CMARK_OPTIONS = Options.CMARK_OPT_UNSAFE | Options.CMARK_OPT_FOOTNOTES | Options.CMARK_OPT_GITHUB_PRE_LANG
GITHUB_EXTENSIONS = ("table", "strikethrough", "autolink", "tagfilter", "tasklist")

# Fenced blocks that github.com draws rather than shows.
MATH_LANGUAGES = frozenset({"math"})
DIAGRAM_LANGUAGES = frozenset({"mermaid", "geojson", "topojson", "stl"})


@dataclass(frozen=True)
class Allowlist:
    """A forge's sanitizer: the elements it keeps, their attributes, and the elements dropped with
    their contents (any other element is unwrapped: its text renders)."""

    elements: frozenset[str]
    attributes: dict[str, frozenset[str]]
    dropped_with_contents: frozenset[str]


# html-pipeline's SanitizationFilter (gjtorikian/html-pipeline, lib/html_pipeline/sanitization_filter.rb),
# plus `picture`/`source`, which github.com also keeps, and the task list's checkbox, which GitHub's
# task-list filter adds after sanitizing.
_ALL_ATTRIBUTES = frozenset([
    "abbr", "accept", "accept-charset", "accesskey", "action", "align", "alt", "aria-describedby",
    "aria-hidden", "aria-label", "aria-labelledby", "axis", "border", "cellpadding", "cellspacing", "char",
    "charoff", "charset", "checked", "clear", "cols", "colspan", "color", "compact", "coords", "datetime",
    "dir", "disabled", "enctype", "for", "frame", "headers", "height", "hreflang", "hspace", "id", "ismap",
    "label", "lang", "maxlength", "media", "method", "multiple", "name", "nohref", "noshade", "nowrap", "open",
    "progress", "prompt", "readonly", "rel", "rev", "role", "rows", "rowspan", "rules", "scope", "selected",
    "shape", "size", "span", "start", "summary", "tabindex", "title", "type", "usemap", "valign", "value",
    "width", "itemprop",
])
GITHUB = Allowlist(
    elements=frozenset([
        "h1", "h2", "h3", "h4", "h5", "h6", "br", "b", "i", "strong", "em", "a", "pre", "code", "img", "tt",
        "div", "ins", "del", "sup", "sub", "p", "ol", "ul", "table", "thead", "tbody", "tfoot", "blockquote",
        "dl", "dt", "dd", "kbd", "q", "samp", "var", "hr", "ruby", "rt", "rp", "li", "tr", "td", "th", "s",
        "strike", "summary", "details", "caption", "figure", "figcaption", "abbr", "bdo", "cite", "dfn", "mark",
        "small", "span", "time", "wbr", "picture", "source", "input",
    ]),
    attributes={"*": _ALL_ATTRIBUTES, "a": frozenset({"href"}), "img": frozenset({"src", "longdesc"}),
                "div": frozenset({"itemscope", "itemtype"}), "blockquote": frozenset({"cite"}),
                "del": frozenset({"cite"}), "ins": frozenset({"cite"}), "q": frozenset({"cite"})},
    # Raw-text and foreign content: never shown as written (tagfilter already made most of them text).
    dropped_with_contents=frozenset([
        "script", "style", "svg", "math", "template", "noscript", "iframe", "noembed", "noframes", "xmp",
        "plaintext", "title", "textarea", "object",
    ]),
)

# Characters a reader does not see, beyond Unicode's "format" category (Cf: zero-width, bidi, tags, the
# soft hyphen): variation selectors, which can carry bytes chained after a visible character, and the
# Hangul fillers.
_INVISIBLE_EXTRA = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef\u115f\u1160\u3164\uffa0]")

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


def sanitized_html(markdown: str, allowlist: Allowlist = GITHUB) -> str:
    """Steps 1 and 2: the HTML the page is built from."""
    html = cmarkgfm.markdown_to_html_with_extensions(markdown, options=CMARK_OPTIONS,
                                                      extensions=list(GITHUB_EXTENSIONS))
    return nh3.clean(_shallow(_without_foreign(html, allowlist.elements | BLOCKS)), tags=set(allowlist.elements), clean_content_tags=set(allowlist.dropped_with_contents),
                     attributes={k: set(v) for k, v in allowlist.attributes.items()}, strip_comments=True,
                     link_rel=None, url_schemes={"http", "https", "mailto"})


_FOREIGN_TAG = re.compile(r"<(/?)(svg|math)(?![\w-])", re.IGNORECASE)
# Where foreign content holds HTML again. An HTML element opened inside one (`<svg><desc><p>`) makes an
# HTML5 parser ignore `</desc>` and `</svg>`, so the text after them may still be inside the drawing.
_INTEGRATION_POINT = re.compile(r"<(?:desc|foreignobject|title|mi|mo|mn|ms|mtext|annotation-xml)(?![\w-])",
                                re.IGNORECASE)
_ANY_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)")


def _without_foreign(html: str, html_elements: frozenset[str]) -> str:
    """The HTML without `<svg>` and `<math>` elements, cut lexically from the opening tag to its
    matching end tag — or to the end, when the drawing holds an integration point with an HTML element
    in it. An HTML5 parser lets `<code>`, `<p>` or `<b>` break out of foreign content (`<svg>`c`P</svg>`
    would show P, which GitHub drops), and ignores `</svg>` inside `<desc><p>` (`<svg><desc><p></svg>P`
    hides P): cutting this way keeps the words from the model under either reading."""
    parts: list[str] = []
    depth, last, start = 0, 0, 0
    for tag in _FOREIGN_TAG.finditer(html):
        if tag.group(1):
            if depth:
                depth -= 1
                if not depth:
                    if _holds_html(html, start, tag.start(), html_elements):
                        return "".join(parts)
                    end = html.find(">", tag.end())
                    last = len(html) if end == -1 else end + 1
        else:
            if not depth:
                parts.append(html[last:tag.start()])
                start = tag.start()
            depth += 1
    parts.append("" if depth else html[last:])
    return "".join(parts)


def _holds_html(html: str, start: int, end: int, html_elements: frozenset[str]) -> bool:
    point = _INTEGRATION_POINT.search(html, start, end)
    if point is None:
        return False
    return any(m.group(1).lower() in html_elements for m in _ANY_TAG.finditer(html, point.end(), end))


_TAG_NAME = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
# Elements that close themselves, or that a parser closes for them: they do not nest.
_NOT_NESTING = VOID | frozenset([
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "rp", "rt", "colgroup", "thead", "tbody",
    "tfoot",
])
MAX_NESTING = 64


def _shallow(html: str) -> str:
    """The HTML cut where elements nest deeper than MAX_NESTING (counted lexically, before any parse),
    with a note. No page nests that deep, and an HTML5 tree builder spends time quadratic in the
    depth (32,768 nested quotes take minutes); what is cut is never shown to the model."""
    depth = 0
    for tag in _TAG_NAME.finditer(html):
        name = tag.group(2).lower()
        if name in _NOT_NESTING:
            continue
        if tag.group(1):
            depth = max(0, depth - 1)
        else:
            depth += 1
            if depth > MAX_NESTING:
                return html[:tag.start()] + f"<p>{escape(render_prompt('visible_text/too_deep'))}</p>"
    return html


# An escaped dollar (`\$`) is a literal `$`, never a math delimiter, but cmark-gfm hands both on as `$`:
# it goes through the parse as a mark (a noncharacter, removed from the input first) and comes back
# as `$` in text and as `\$` in code, where backslashes are literal.
ESCAPED_DOLLAR = "\ufdd0"
_ESCAPE_PAIR = re.compile(r"\\[\\$]")


def _mark_escaped_dollars(markdown: str) -> str:
    # Left to right in pairs, as cmark reads them: `\\$` is an escaped backslash, then a real `$`.
    return _ESCAPE_PAIR.sub(lambda m: ESCAPED_DOLLAR if m.group(0) == "\\$" else m.group(0),
                            markdown.replace(ESCAPED_DOLLAR, ""))


def _walk(markdown: str, allowlist: Allowlist) -> _Walker:
    markdown, cut = cap_bytes(markdown.replace("\x00", "\ufffd"), MAX_INPUT_BYTES)
    markdown = _mark_escaped_dollars(markdown)
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
    math: list[tuple[int, int, bool]] = field(default_factory=list)  # math spans of `text`: start, end, marker


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
        self.not_live = 0  # open code-like, quote and link elements
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
        kept = text.rstrip("\n")
        self.trailing_newlines = len(text) - len(kept) + (self.trailing_newlines if not kept else 0)

    def hidden(self) -> bool:
        return self.skip > 0 or self.shrink > MAX_SHRINK_DEPTH

    # --- the parse ----------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.capture is not None:
            if tag not in VOID:
                self._push(tag)
            return
        if tag in BLOCKS and not self.after_bullet:
            self.break_line(1 if tag in TIGHT_BLOCKS else 2)
        self.after_bullet = tag == "li"
        if tag not in VOID:
            self._push(tag)
        values = dict(attrs)
        if tag == "pre":
            self.capture, self.capture_tag, self.pre_lang = [], "pre", (values.get("lang") or "").lower()
        elif tag in CODE_LIKE or tag in QUOTES or tag == "a":
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
        elif tag == "rp":
            self.skip += 1
        elif tag in SHRINKING:
            self.shrink += 1

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
                return
            captured, self.capture = "".join(self.capture), None
            if tag == "pre":
                self._code_block(captured)
            else:
                self.not_live -= 1
                if not self.hidden():
                    self.text(captured, "code")
            return
        if tag in CODE_LIKE or tag in QUOTES or tag == "a":
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
        elif tag == "rp":
            self.skip -= 1
        elif tag in SHRINKING:
            self.shrink -= 1
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
        if self.capture is not None:
            self.capture.append(data)
        elif self.hidden():
            return
        elif data.isspace() and (self.after_bullet or self.trailing_newlines or not self.stack
                                 or self.stack[-1] in CONTAINERS):
            return  # layout: the newlines between list items, rows and cells, or at a line's start
        else:
            self.after_bullet = False
            self.text(data)

    def finish(self) -> None:
        while self.stack:
            self._close(self._pop())
        _mark_math(self.tokens)

    # --- rendering ----------------------------------------------------------------------------
    def render(self, *, live_only: bool) -> str:
        out: list[str] = []
        line_start = True
        for token in self.tokens:
            text = token.text
            if token.math:
                text = _without_math(text, token.math)
            if live_only and not token.live:
                text = "\n" if token.kind == "raw" and "\n" in text else " " * bool(text)
            elif live_only:
                text = text.replace(MATH_MARK, " ")
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


MATH_MARK = "\x00math\x00"


def _without_math(text: str, spans: list[tuple[int, int, bool]]) -> str:
    """`text` without its math spans; the marker goes where a span starts."""
    parts, last = [], 0
    for start, end, marker in spans:
        parts.append(text[last:start])
        if marker:
            parts.append(MATH_MARK)
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _mark_math(tokens: list[_Token]) -> None:
    """Find `$…$` and `$$…$$` across the text and code tokens (a math region can span emphasis, a
    link's text or a code span: `$`…`$` is GitHub's other inline form) and record each token's part.

    GitHub's rules, leaning towards "math" where they are unclear: `$$` opens display math up to the
    next `$$`, across blocks; a single `$` (or a `$$` never closed) opens inline math when a non-space
    follows, up to the next `$` in the same block that follows a non-space. Dollars inside code
    spans do not count, and code blocks end any region."""
    # One string: text tokens as they are, a code span or an inline marker (an image) as one opaque
    # character, a block boundary as another, a code block as a third.
    pieces = [token.text if token.kind == "text" else _OPAQUE[token.kind] for token in tokens]
    spans = _math_spans("".join(pieces))
    if not spans:
        return
    # Hand each span to the tokens it covers (both lists are in order: one pass).
    first, start = 0, 0
    for token, piece in zip(tokens, pieces, strict=True):
        end = start + len(piece)
        while first < len(spans) and spans[first][1] <= start:
            first += 1
        j = first
        while j < len(spans) and spans[j][0] < end:
            marker = spans[j][0] >= start
            if token.kind == "text":
                token.math.append((max(spans[j][0], start) - start, min(spans[j][1], end) - start, marker))
            elif token.kind in ("code", "inline"):
                token.kind, token.text = "text", ""  # a code span or image inside math goes whole
                token.math = [(0, 0, True)] if marker else []
            j += 1
        start = end


_OPAQUE = {"code": "\x01", "inline": "\x04", "raw": "\x02", "block": "\x03"}
_DOLLARS = re.compile(r"\$+")


def _math_spans(text: str) -> list[tuple[int, int]]:
    """Every region GitHub might read as math, merged. Which single `$` pairs with which is ambiguous
    (`$5 … \\$$\\phantom{P}$`), so each `$` that can open is paired with the first `$` that can close
    after it, and the union of all these regions goes: no pairing can leave hidden math behind.
    Sorted lists and bisection keep it O(n log n) in the number of dollars."""
    runs = [(m.start(), m.end()) for m in _DOLLARS.finditer(text)]
    if not runs:
        return []
    closers = [i for start, end in runs for i in range(start, end) if i and not text[i - 1].isspace()]
    blocks = [m.start() for m in re.finditer("[\x02\x03]", text)]  # where inline math must end
    code_blocks = [m.start() for m in re.finditer("\x03", text)]  # where display math must end
    doubles = [start for start, end in runs if end - start >= 2]
    regions: list[tuple[int, int]] = []
    # `$$` … `$$`: paired left to right (text between two display blocks is not math), across blocks
    # but not across a code block.
    k = 0
    while k + 1 < len(doubles):
        if _between(code_blocks, doubles[k], doubles[k + 1]):
            k += 1
            continue
        regions.append((doubles[k], doubles[k + 1] + 2))
        k += 2
    for start, end in runs:
        opener = end - 1  # the run's last `$` opens inline math when a non-space follows
        follows = text[end:end + 1]
        if not follows or follows.isspace() or follows in "\x02\x03":
            continue
        k = bisect.bisect_left(closers, opener + 2)
        if k < len(closers) and not _between(blocks, opener, closers[k]):
            regions.append((opener, closers[k] + 1))
    regions.sort()
    merged: list[tuple[int, int]] = []
    for start, end in regions:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _between(positions: list[int], start: int, end: int) -> bool:
    k = bisect.bisect_right(positions, start)
    return k < len(positions) and positions[k] < end


_QUOTE_MARKS_ONLY = re.compile(r"^(?:> ?)+\s*$")


def _tidy(text: str) -> str:
    text = text.replace(MATH_MARK, render_prompt("visible_text/math"))
    # Lines of nothing but quote marks are the quote's own layout: they go.
    lines = [line.rstrip() for line in text.split("\n") if not _QUOTE_MARKS_ONLY.match(line)]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
