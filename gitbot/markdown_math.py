"""Math on a GitHub page: `$…$`, `$$…$$` and `$`…`$` are drawn by MathJax, which can hide text
(`\\phantom`, TeX comments, colours), so every region GitHub might read as math is found and replaced
by a marker (markdown_text.py), never passed on as source.

cmark-gfm knows nothing of math, so the regions are found in the text it leaves, across the tokens of
the walk (a region can span emphasis, a link's text or a code span). An escaped `\\$` is carried
through the parse as a mark, so it never counts as a delimiter.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

# An escaped dollar (`\$`) is a literal `$`, never a math delimiter, but cmark-gfm hands both on as `$`:
# it goes through the parse as a mark (a noncharacter, removed from the input first) and comes back
# as `$` in text and as `\$` in code, where backslashes are literal.
ESCAPED_DOLLAR = "\ufdd0"
_ESCAPE_PAIR = re.compile(r"\\[\\$]")


def mark_escaped_dollars(markdown: str) -> str:
    # Left to right in pairs, as cmark reads them: `\\$` is an escaped backslash, then a real `$`.
    return _ESCAPE_PAIR.sub(lambda m: ESCAPED_DOLLAR if m.group(0) == "\\$" else m.group(0),
                            markdown.replace(ESCAPED_DOLLAR, ""))


MATH_MARK = "\x00math\x00"


def without_math(text: str, spans: list[tuple[int, int, bool]]) -> str:
    """`text` without its math spans; the marker goes where a span starts."""
    parts, last = [], 0
    for start, end, marker in spans:
        parts.append(text[last:start])
        if marker:
            parts.append(MATH_MARK)
        last = end
    parts.append(text[last:])
    return "".join(parts)


def mark_math(tokens: list[Any]) -> None:
    """Find `$…$` and `$$…$$` across the text and code tokens (a math region can span emphasis, a
    link's text or a code span: `$`…`$` is GitHub's other inline form) and record each token's part.

    GitHub's rules, leaning towards "math" where they are unclear: `$$` pairs with the next `$$`,
    across blocks; any `$` followed by a non-space may open inline math, up to the next `$` in the same
    block that follows a non-space (see _math_spans). Dollars inside code spans do not count, and
    code blocks end any region."""
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
                token.math = token.math or []
                token.math.append((max(spans[j][0], start) - start, min(spans[j][1], end) - start, marker))
            elif token.kind in ("code", "inline"):
                token.kind, token.text = "text", ""  # a code span or image inside math goes whole
                token.math = [(0, 0, True)] if marker else []
            j += 1
        start = end


_OPAQUE = {"code": "\x01", "inline": "\x04", "raw": "\x02", "block": "\x03"}
_DOLLARS = re.compile(r"\$+")
# What may not stand inside a `$` delimiter. Only spaces and tabs: whether GitHub lets a line break
# stand there is unclear, so a `$` next to one counts (more math, fewer words passed on).
_SPACES = frozenset(" \t")


def _math_spans(text: str) -> list[tuple[int, int]]:
    """Every region GitHub might read as math, merged. Which single `$` pairs with which is ambiguous
    (`$5 … \\$$\\phantom{P}$`), so each `$` that can open is paired with the first `$` that can close
    after it, and the union of all these regions goes: no pairing can leave hidden math behind.
    Sorted lists and bisection keep it O(n log n) in the number of dollars."""
    runs = [(m.start(), m.end()) for m in _DOLLARS.finditer(text)]
    if not runs:
        return []
    closers = [i for start, end in runs for i in range(start, end) if i and text[i - 1] not in _SPACES]
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
        if not follows or follows in _SPACES or follows in "\x02\x03":
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


# cmark-gfm's own blocks whose content is inline text (raw HTML cannot forge the attribute: the input's
# `data-sourcepos` is broken up first, see markdown_html.py).
_INLINE_BLOCK = re.compile(r'<(?:p|h[1-6]|th|td|li) data-sourcepos="[^"]*">')
_SOURCEPOS = re.compile(r' data-sourcepos="[^"]*"')
_RAW_TAG = re.compile(r"<code>[^<]*</code>|<[^>]*>")  # cmark escapes `<` in a code span
_HELD_MATH = "$\u2026$"


def math_holding_tags(html: str) -> str:
    """cmark-gfm's HTML (rendered with source positions) with every math region that holds a tag
    replaced by `$…$`, and the source positions gone. GitHub reads math in the Markdown, so a tag inside
    `$\\phantom{<div>P</div>}$` is TeX source; an HTML5 parse would end the paragraph at `<div>` and
    the math found afterwards (mark_math) would stop there, showing P. So math is found here too, on
    each paragraph, heading, cell or list item cmark made, with every tag an opaque character."""
    parts: list[str] = []
    last = 0
    for block in _INLINE_BLOCK.finditer(html):
        start = block.end()
        end = html.find(' data-sourcepos="', start)
        end = len(html) if end == -1 else end
        content = html[start:end]
        if "$" not in content or "<" not in content:
            continue
        opaque = _RAW_TAG.sub(lambda m: ("\x01" if m.group(0).startswith("<code>") else "\x04") * len(m.group(0)),
                              content)
        for span_start, span_end in _math_spans(opaque):
            if "\x04" in opaque[span_start:span_end]:
                parts.append(html[last:start + span_start])
                parts.append(_HELD_MATH)
                last = start + span_end
    parts.append(html[last:])
    return _SOURCEPOS.sub("", "".join(parts))
