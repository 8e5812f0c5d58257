"""Markdown to the sanitized HTML github.com builds a page from: cmark-gfm with GitHub's extensions, then
an HTML5 sanitizer (nh3) with html-pipeline's allow-list. Lexical cuts come first, each keeping
words from the model where an HTML5 parse could be read two ways or take too long: tables wider and
longer than any page has (before cmark-gfm), math holding a tag (markdown_math.math_holding_tags), HTML
far bigger than its Markdown, `<svg>`/`<math>` (foreign content), and nesting or open formatting
elements beyond any page's. What they cut is never shown; where they cut for size, a note says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape

import cmarkgfm
import nh3
from cmarkgfm.cmark import Options

from gitbot.markdown_math import math_holding_tags
from gitbot.prompting import render_prompt

CMARK_OPTIONS = Options.CMARK_OPT_UNSAFE | Options.CMARK_OPT_FOOTNOTES | Options.CMARK_OPT_GITHUB_PRE_LANG
GITHUB_EXTENSIONS = ("table", "strikethrough", "autolink", "tagfilter", "tasklist")


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

def sanitized_html(markdown: str, allowlist: Allowlist = GITHUB) -> str:
    """Steps 1 and 2: the HTML the page is built from."""
    markdown, table_note = _small_tables(markdown)
    # Source positions mark cmark's own blocks for math_holding_tags; raw HTML must not forge them (the
    # zero-width non-joiner is invisible, and dropped with the other invisible characters).
    markdown = markdown.replace("data-sourcepos", "data-source\u200cpos")
    html = math_holding_tags(cmarkgfm.markdown_to_html_with_extensions(
        markdown, options=CMARK_OPTIONS | Options.CMARK_OPT_SOURCEPOS, extensions=list(GITHUB_EXTENSIONS)))
    html = _within_budget(html, len(markdown)) + table_note
    return nh3.clean(_shallow(_without_foreign(html)), tags=set(allowlist.elements),
                     clean_content_tags=set(allowlist.dropped_with_contents),
                     attributes={k: set(v) for k, v in allowlist.attributes.items()}, strip_comments=True,
                     link_rel=None, url_schemes={"http", "https", "mailto"})


# One lexeme of raw HTML at a `<`, as an HTML5 tokenizer reads it: a comment (`<!-->` and `--!>` end one
# too), CDATA, a bogus comment (`<?…>`, `<!…>`, `</ …>`: to the first `>`), or a tag whose quoted
# attribute values may hold `>` and `</svg>`. Anything else is a literal `<`.
# An unclosed quote runs to the end, as in a tokenizer (and keeps the scan linear).
_ATTRIBUTES = r"""(?P<attributes>(?:=[ \t\n\f\r]*"[^"]*(?:"|\Z)|=[ \t\n\f\r]*'[^']*(?:'|\Z)|[^>])*)(?:>|\Z)"""
_LEXEME = re.compile(
    r"(?P<comment><!--(?:-?>|.*?--!?>|.*\Z))"
    r"|(?P<cdata><!\[CDATA\[)"
    r"|(?P<bogus><(?:[!?]|/(?![A-Za-z]))[^>]*(?:>|\Z))"
    r"|<(?P<end>/?)(?P<name>[A-Za-z][^\s/>]*)" + _ATTRIBUTES,
    re.DOTALL)
_FOREIGN = frozenset(["svg", "math"])
_FOREIGN_START = re.compile(r"<(?:svg|math)", re.IGNORECASE)
_VOID = frozenset(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
                   "track", "wbr"])


def _without_foreign(html: str) -> str:
    """The HTML without `<svg>` and `<math>` elements, cut from the opening tag to its matching end tag
    — or to the end, when an element opened inside the drawing is still open there. Tags are found
    lexically, skipping attribute values, comments, CDATA and processing instructions, so a `</svg>`
    written inside one ends nothing (`<svg><!-- </svg> -->P</svg>` hides P) and a `<svg>` written inside
    one starts nothing. An HTML5 parser lets `<code>`, `<p>` or `<b>` break out of foreign content
    (`<svg>`c`P</svg>` would show P, which GitHub drops), and ignores `</svg>` inside `<desc><p>`
    (`<svg><desc><p></svg>P` hides P): cutting this way keeps the words from the model under either
    reading."""
    starts = [m.start() for m in _FOREIGN_START.finditer(html)]
    if not starts:
        return html  # most bodies: no lexing at all
    parts: list[str] = []
    depth, last = 0, 0  # open drawings; where the text to keep starts
    inside: list[str] = []  # elements open inside the drawing
    pos = html.find("<")
    while pos != -1 and (depth or pos <= starts[-1]):  # past the last `<svg`/`<math`, nothing starts
        lexeme = _LEXEME.match(html, pos)
        if lexeme is None:
            pos = html.find("<", pos + 1)
            continue
        end = lexeme.end()
        if lexeme.group("cdata"):
            # CDATA in a drawing; in HTML, a bogus comment up to the first `>`.
            end = _after(html, "]]>", end) if depth else _after(html, ">", end)
        elif lexeme.group("name"):
            name = lexeme.group("name").lower()
            closing = bool(lexeme.group("end"))
            if name in _FOREIGN and not closing:
                if not depth:
                    parts.append(html[last:pos])
                depth += 1
            elif name in _FOREIGN and depth:
                depth -= 1
                if not depth:
                    if inside:
                        return "".join(parts)  # an element still open: `</svg>` may be ignored
                    last = end
            elif depth and closing:
                if name in inside:
                    del inside[len(inside) - 1 - inside[::-1].index(name):]
            elif depth and name not in _VOID and not lexeme.group("attributes").endswith("/"):
                inside.append(name)
        pos = html.find("<", end)
    parts.append("" if depth else html[last:])
    return "".join(parts)


def _after(html: str, close: str, start: int) -> int:
    """Where the text after the next `close` from `start` begins (the end, when there is none)."""
    end = html.find(close, start)
    return len(html) if end == -1 else end + len(close)


# A table row gets as many cells as its header has, however short the row: cmark-gfm pads it, so a
# wide header over many one-word rows is quadratic (3 KiB of Markdown gave 2.5 MB of HTML and took
# 6 s to read). No page shows a table this big; the text from the table on is cut, with a note.
MAX_TABLE_CELLS = 16_384
# The prefix (quote marks, list markers) never takes a `-` that the row could: that would backtrack
# quadratically over a long run of dashes.
_DELIMITER_ROW = re.compile(r"^(?:[ \t>]|[-*+][ \t])*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$", re.MULTILINE)

_BLANK_LINE = re.compile(r"\n[ \t>]*\n")


def _small_tables(markdown: str) -> tuple[str, str]:
    """The Markdown cut before the table whose cells (header width × the lines that follow it up to a
    blank line, counted lexically and generously) would pass MAX_TABLE_CELLS in all, and the note to
    put where it was cut ("" when nothing was cut)."""
    cells = 0
    for row in _DELIMITER_ROW.finditer(markdown):
        if "|" not in row.group(0):
            continue  # a thematic break or a heading's underline
        width = row.group(0).count("|") + 1
        blank = _BLANK_LINE.search(markdown, row.end())
        lines = markdown.count("\n", row.end(), blank.start() if blank else len(markdown)) + 1
        cells += width * (lines + 1)
        if cells > MAX_TABLE_CELLS:
            header = markdown.rfind("\n", 0, max(0, row.start() - 1)) + 1
            return markdown[:header], _not_read(len(markdown[header:].encode("utf-8", "surrogatepass")))
    return markdown, ""


# What the walk is given at most: HTML grows with the Markdown (a few times, for lists and tables), and
# a body that makes far more is an attack on the time it takes to read.
HTML_PER_INPUT_CHAR = 16
MAX_HTML_CHARS = 1 << 20


def _within_budget(html: str, input_chars: int) -> str:
    budget = min(MAX_HTML_CHARS, HTML_PER_INPUT_CHAR * max(input_chars, 4096))
    if len(html) <= budget:
        return html
    cut = html.rfind("<", 0, budget)  # at a tag's start, so no tag is read half
    cut = budget if cut <= 0 else cut
    return html[:cut] + _not_read(len(html) - cut)


def _not_read(count: int) -> str:
    return f"<p>{escape(render_prompt('visible_text/not_read', count=f'{count:,}'))}</p>"


_TAG_NAME = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
# Elements that close themselves, or that a parser closes for them: they do not nest.
_NOT_NESTING = frozenset([
    "br", "hr", "img", "input", "source", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup",
    "rp", "rt", "colgroup", "thead", "tbody", "tfoot",
])
MAX_NESTING = 64
# HTML5's active formatting elements: a parser reopens every one still open at each new block, so K of
# them over N paragraphs build K×N elements (60 over 16,000 paragraphs took 10 s).
FORMATTING = frozenset(["a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong",
                        "tt", "u"])
MAX_OPEN_FORMATTING = 16
# Elements a parser may rebuild in all: each tag after an open formatting element counts it once.
MAX_REBUILT = 16_384


def _shallow(html: str) -> str:
    """The HTML cut where elements nest deeper than MAX_NESTING, more than MAX_OPEN_FORMATTING
    formatting elements are open, or a parser would rebuild more than MAX_REBUILT of them (all counted
    lexically, before any parse), with a note. No page does this, and an HTML5 tree builder spends time
    quadratic in each (32,768 nested quotes take minutes); what is cut is never shown to the model.
    An end tag counts only when its element is open: `</x>` closes nothing, so it lifts no cap."""
    open_count: dict[str, int] = {}
    depth = formatting = rebuilt = 0
    for tag in _TAG_NAME.finditer(html):
        name = tag.group(2).lower()
        if name in _NOT_NESTING:
            rebuilt += formatting
        elif tag.group(1):
            if open_count.get(name):
                open_count[name] -= 1
                depth -= 1
                formatting -= name in FORMATTING
            continue
        else:
            open_count[name] = open_count.get(name, 0) + 1
            depth += 1
            rebuilt += formatting
            formatting += name in FORMATTING
        if depth > MAX_NESTING or formatting > MAX_OPEN_FORMATTING or rebuilt > MAX_REBUILT:
            return html[:tag.start()] + f"<p>{escape(render_prompt('visible_text/too_deep'))}</p>"
    return html
