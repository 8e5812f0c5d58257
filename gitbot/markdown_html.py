"""Markdown to the sanitized HTML github.com builds a page from: cmark-gfm with GitHub's extensions, then
an HTML5 sanitizer (nh3) with html-pipeline's allow-list. Two lexical cuts come first, each keeping
words from the model where an HTML5 parse could be read two ways or take too long: `<svg>`/`<math>`
(foreign content) and nesting deeper than any page has. What they cut is never shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape

import cmarkgfm
import nh3
from cmarkgfm.cmark import Options

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
    html = cmarkgfm.markdown_to_html_with_extensions(markdown, options=CMARK_OPTIONS,
                                                      extensions=list(GITHUB_EXTENSIONS))
    return nh3.clean(_shallow(_without_foreign(html, allowlist.elements)), tags=set(allowlist.elements),
                     clean_content_tags=set(allowlist.dropped_with_contents),
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
_NOT_NESTING = frozenset([
    "br", "hr", "img", "input", "source", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup",
    "rp", "rt", "colgroup", "thead", "tbody", "tfoot",
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
