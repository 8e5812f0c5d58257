"""What github.com's Markdown sanitiser does with HTML, as data for the hidden-text tests.

Built from html-pipeline's SanitizationFilter allow-list (gjtorikian/html-pipeline,
lib/html/pipeline/sanitization_filter.rb and lib/html_pipeline/sanitization_filter.rb: the elements
and attributes GitHub's pipeline lets through), and cmark-gfm's tagfilter extension, which turns some
tags into text before the sanitizer runs. Anything not allowed is unwrapped: its tag goes, its text
stays visible.
"""

# Rendered, with their text visible.
ALLOWED_ELEMENTS = [
    "h1", "h2", "h3", "h4", "h5", "h6", "br", "b", "i", "strong", "em", "a", "pre", "code", "img", "tt",
    "div", "ins", "del", "sup", "sub", "p", "ol", "ul", "table", "thead", "tbody", "tfoot", "blockquote",
    "dl", "dt", "dd", "kbd", "q", "samp", "var", "hr", "ruby", "rt", "li", "tr", "td", "th", "s", "strike",
    "summary", "details", "caption", "figure", "figcaption", "abbr", "bdo", "cite", "dfn", "mark", "small",
    "span", "time", "wbr", "picture", "source",
]
VOID_ELEMENTS = {"br", "hr", "img", "wbr", "source"}
# Escaped by cmark-gfm's tagfilter extension before any sanitizer sees them: shown as written.
TAGFILTERED = ["title", "textarea", "style", "xmp", "iframe", "noembed", "noframes", "script", "plaintext"]
# Not allowed, unwrapped: the text inside renders.
UNWRAPPED_ELEMENTS = [
    "font", "center", "marquee", "section", "article", "aside", "header", "footer", "nav", "label",
    "button", "u",
]
# `<rp>` is allowed, but a browser that supports ruby does not show it.
NOT_SHOWN_WHERE_SUPPORTED = ["rp"]
# Attribute values never render as text, allowed or not (the allow-list's `all` entries, and some
# that are not allowed but carry text).
ATTRIBUTES_WITH_TEXT = [
    "abbr", "accept", "accept-charset", "accesskey", "action", "align", "alt", "aria-describedby",
    "aria-label", "aria-labelledby", "axis", "char", "charset", "datetime", "dir", "for", "headers", "hreflang",
    "itemprop", "itemtype", "label", "lang", "media", "name", "prompt", "rel", "rev", "scope", "summary",
    "title", "type", "usemap", "value", "data-note", "placeholder", "srcset", "style", "class", "id",
    "longdesc", "cite",
]
