"""Issue and comment text as a maintainer sees it rendered on github.com: everything that renders to
nothing is removed before the model reads it (the classic prompt-injection hiding places).

`strip_hidden` is the one entry point (issue bodies, titles, comments). What it removes follows
GitHub's sanitiser (html-pipeline's allow-list, on the `sanitize` gem, whose default config drops the
*contents* of `script style iframe math noembed noframes noscript plaintext svg xmp`), the Markdown
spec, and MathJax, which github.com uses for `$…$`, `$$…$$` and ```` ```math ```` blocks:

- invisible characters, everywhere (code included): Unicode format characters (zero-width spaces and
  joiners, bidi embeddings/overrides/isolates, the soft hyphen, tag characters that can spell ASCII),
  variation selectors and Hangul fillers;
- HTML comments, CDATA, processing instructions and declarations;
- elements whose contents the sanitiser drops (above), plus `template`; elements carrying the
  `hidden` attribute or an inline style that hides them (`display:none`, `visibility:hidden`,
  `font-size:0`, `opacity:0`), should a renderer keep it; `<rp>` (never shown where ruby is
  supported); text nested three or more levels deep in `<sub>`, `<sup>` or `<small>` (under half size);
- every attribute except `href` and `src`: attribute values never render as text (`alt`, `title`,
  `aria-label`, `label`, `summary`, `media`, `srcset`…);
- image alt text and link titles in Markdown (`![alt](u)`, `[t](u "title")`), link reference
  definitions (`[//]: # (comment)` renders as nothing);
- math that hides or moves text: a math region using `\\phantom`, `\\hphantom`, `\\vphantom`,
  `\\color`, `\\textcolor`, `\\colorbox`, `\\style`, `\\class`, `\\cssId`, `\\bbox`, tiny sizes,
  negative or arbitrary spacing (`\\hspace`, `\\kern`, `\\mkern`, `\\mspace`), overlaps (`\\llap`,
  `\\rlap`, `\\clap`, `\\smash`) or moves (`\\raise`, `\\lower`, `\\raisebox`) is removed whole.

Kept: code blocks and code spans as written (they render literally, so nothing in them is hidden;
only invisible characters go), and `<details>` sections (a reader can open them), marked as collapsed.
Entities are decoded first, so `&#x200B;` or `&lt;!--` cannot smuggle what the later steps remove.
Removing too much only costs the model text it did not need; removing too little is the attack.
"""

from __future__ import annotations

import html
import re
import unicodedata

COLLAPSED = "[collapsed section: hidden until a reader expands it]"
COLLAPSED_END = "[end of collapsed section]"

# Characters a reader does not see, beyond Unicode's "format" category (Cf): variation selectors,
# which can carry hidden bytes when chained after a visible character, and the Hangul fillers.
INVISIBLE_EXTRA = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef\u115f\u1160\u3164\uffa0]")
ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{1,31});")

# Fenced code blocks (``` or ~~~, closed by the same fence or the end) and inline code spans.
FENCE = re.compile(r"^[ ]{0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)\n(?P<body>.*?)"
                   r"(?:^[ ]{0,3}(?P=fence)[`~]*[ \t]*(?:\n|\Z)|\Z)", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(?<!`)(?P<ticks>`+)(?!`).+?(?<!`)(?P=ticks)(?!`)", re.DOTALL)

HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
MARKUP_DECLARATION = re.compile(r"<!\[CDATA\[.*?(?:\]\]>|\Z)|<\?.*?(?:\?>|\Z)|<![A-Za-z][^>]*>", re.DOTALL)
TAG = re.compile(r"<(?P<close>/?)(?P<name>[A-Za-z][A-Za-z0-9-]*)(?P<attrs>(?:\s+[^\s\"'>/=]+"
                 r"(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s\"'=<>`]+))?)*)\s*(?P<self>/?)>")
ATTRIBUTE = re.compile(r"(?P<name>[^\s\"'>/=]+)(?:\s*=\s*(?P<value>\"[^\"]*\"|'[^']*'|[^\s\"'=<>`]+))?")
KEPT_ATTRIBUTES = ("href", "src")
# Contents dropped by the sanitiser (sanitize's default remove_contents), and raw-text elements whose
# contents are not even parsed as HTML.
REMOVED_WITH_CONTENTS = frozenset({"script", "style", "iframe", "math", "noembed", "noframes", "noscript",
                                   "plaintext", "svg", "xmp", "template", "rp"})
RAW_TEXT = frozenset({"script", "style", "iframe", "noembed", "noframes", "noscript", "plaintext", "xmp"})
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
                  "wbr"})
SHRINKING = frozenset({"sub", "sup", "small"})
MAX_SHRINK_DEPTH = 2
HIDING_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0(?:\.0*)?\s*(?:;|$)",
                          re.IGNORECASE)

MATH_BLOCK_INFO = "math"
DOLLAR_BACKTICK_MATH = re.compile(r"\$(?P<ticks>`+).+?(?P=ticks)\$", re.DOTALL)
MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$(?!\s)[^$\n]+?(?<![\s\\])\$", re.DOTALL)
MATH_HIDER = re.compile(r"\\(?:[hv]?phantom|color|textcolor|colorbox|fcolorbox|style|class|cssId|bbox|tiny|Tiny"
                        r"|scriptsize|scriptscriptstyle|hspace|hskip|kern|mkern|mskip|mspace|[mathr]*[lrc]lap"
                        r"|mathllap|mathrlap|mathclap|smash|raise|lower|raisebox|moveleft|moveright|require"
                        r"|fontsize|unicode|toggle|mathtip|texttip)(?![A-Za-z])")

# Markdown: ![alt](url) -> ![](url), and the reference forms; [t](url "title") -> [t](url).
MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]")
LINK_TITLE = re.compile(r"(\]\([^)\s]+)\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\))\s*\)")
# A link reference definition: up to three spaces, [label]: destination, optionally a title, which
# may sit on the next line (and span lines, but not a blank one). Rendered, it is nothing at all.
# Footnotes (`[^1]: …`) are visible and kept.
_TITLE = r"""(?:"(?:[^"\n]|\n(?![ \t]*\n))*"|'(?:[^'\n]|\n(?![ \t]*\n))*'|\((?:[^()\n]|\n(?![ \t]*\n))*\))"""
REFERENCE_DEFINITION = re.compile(
    r"^[ ]{0,3}\[(?!\^)(?:[^\]\\\n]|\\.){1,999}\]:[ \t]*\n?[ \t]*(?:<[^<>\n]*>|[^\s<]\S*)"
    rf"(?:(?:[ \t]+|[ \t]*\n[ \t]*){_TITLE})?[ \t]*(?:\n|\Z)",
    re.MULTILINE,
)


def strip_hidden(text: str) -> str:
    """The text as a reader of the rendered issue sees it, minus everything invisible."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    text = ENTITY.sub(lambda m: html.unescape(m.group(0)), text)
    text = _drop_invisible(text)
    parts: list[str] = []
    last = 0
    for fence in FENCE.finditer(text):
        parts.append(_prose(text[last:fence.start()]))
        block = fence.group(0)
        is_math = fence.group("info").strip().lower() == MATH_BLOCK_INFO
        parts.append("" if is_math and MATH_HIDER.search(block) else block)
        last = fence.end()
    parts.append(_prose(text[last:]))
    return "".join(parts).strip()


def _drop_invisible(text: str) -> str:
    return INVISIBLE_EXTRA.sub("", "".join(ch for ch in text if unicodedata.category(ch) != "Cf"))


def _prose(text: str) -> str:
    """Text outside code blocks: code spans are kept as written, the rest is cleaned. (``$`…`$`` is
    math, not a code span: it goes first.)"""
    text = DOLLAR_BACKTICK_MATH.sub(lambda m: "" if MATH_HIDER.search(m.group(0)) else m.group(0), text)
    parts: list[str] = []
    last = 0
    for span in CODE_SPAN.finditer(text):
        parts.append(_clean(text[last:span.start()]))
        parts.append(span.group(0))
        last = span.end()
    parts.append(_clean(text[last:]))
    return "".join(parts)


def _clean(text: str) -> str:
    text = HTML_COMMENT.sub("", text)
    text = MARKUP_DECLARATION.sub("", text)
    text = MATH.sub(lambda m: "" if MATH_HIDER.search(m.group(0)) else m.group(0), text)
    text = _visible_html(text)
    text = MARKDOWN_IMAGE.sub("![]", text)
    text = LINK_TITLE.sub(r"\1)", text)
    return REFERENCE_DEFINITION.sub("", text)


def _hides(name: str, attrs: str) -> bool:
    for attr in ATTRIBUTE.finditer(attrs):
        key = attr.group("name").lower()
        if key == "hidden" or (key == "style" and HIDING_STYLE.search(attr.group("value") or "")):
            return True
    return name in REMOVED_WITH_CONTENTS


def _kept_attributes(attrs: str) -> str:
    kept = [f' {a.group("name").lower()}={a.group("value")}' for a in ATTRIBUTE.finditer(attrs)
            if a.group("name").lower() in KEPT_ATTRIBUTES and a.group("value")]
    return "".join(kept)


def _visible_html(text: str) -> str:
    """Tags with only their visible meaning: hidden elements go with their contents, attributes go,
    `<details>` becomes a marked section."""
    out: list[str] = []
    pos = 0
    hidden: list[str] = []  # open elements whose contents are dropped (the outermost first)
    shrink = 0  # how many <sub>/<sup>/<small> are open
    while (tag := TAG.search(text, pos)) is not None:
        if not hidden and shrink <= MAX_SHRINK_DEPTH:
            out.append(text[pos:tag.start()])
        pos = tag.end()
        name, closing = tag.group("name").lower(), bool(tag.group("close"))
        if name in RAW_TEXT and not closing:
            # Raw text up to its end tag (or the end): nothing in it is markup, none of it is shown.
            end = re.compile(rf"</{name}\s*>", re.IGNORECASE).search(text, pos)
            pos = end.end() if end else len(text)
            continue
        if hidden:
            if closing and name == hidden[-1]:
                hidden.pop()
            elif not closing and name not in VOID and not tag.group("self") and name == hidden[-1]:
                hidden.append(name)  # the same element nested: its end tag must not end the outer one
            continue
        if name in SHRINKING:
            if closing:
                if shrink and shrink <= MAX_SHRINK_DEPTH:
                    out.append(f"</{name}>")
                shrink = max(0, shrink - 1)
            else:
                shrink += 1
                if shrink <= MAX_SHRINK_DEPTH:
                    out.append(f"<{name}>")
            continue
        if closing:
            out.append(f"\n{COLLAPSED_END}\n" if name == "details" else f"</{name}>")
            continue
        if _hides(name, tag.group("attrs")):
            if name not in VOID and not tag.group("self"):
                hidden.append(name)
            continue
        if shrink > MAX_SHRINK_DEPTH:
            continue
        if name == "details":
            out.append(f"\n{COLLAPSED}\n")
        else:
            out.append(f"<{name}{_kept_attributes(tag.group('attrs'))}{tag.group('self') and ' /'}>")
    if not hidden and shrink <= MAX_SHRINK_DEPTH:
        out.append(text[pos:])
    return "".join(out)
