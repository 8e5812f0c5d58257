"""A seeded generator of issue bodies with known-visible and known-hidden words, for the differential
test of markdown_text (tests/test_markdown_text_fuzz.py) and its bench.

The oracle is the construction itself, not the code under test: each case plants unique PAYLOAD
tokens in constructs github.com renders to nothing (or that gitbot chooses never to pass on: math,
diagrams) and unique VISIBLE tokens where the page shows them, then nests and combines them. A
PAYLOAD in the model's text is a leak; a missing VISIBLE token is over-stripping.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# {P}: a word the page does not show. Constructs marked "block" stand on their own lines.
HIDING = [
    ("inline", "<!-- {P} -->"),
    ("inline", "<!-- `a` {P} -->"),
    ("block", "<!--\n```\n{P}\n```\n-->"),
    ("block", "<!--\n\n{P}\n\n-->"),
    ("inline", '<img alt="{P}" src="x.png">'),
    ("inline", '<img alt="`{P}`" src="x.png">'),
    ("inline", '<img src=x alt="&quot;{P}">'),
    ("inline", '<img src="https://i.example/{P}.png">'),
    ("inline", "![{P}](https://i.example/x.png)"),
    ("inline", "![{P}](https://i.example/x.png \"{P}\")"),
    ("inline", "[]({P})"),
    ("inline", "[](https://e.example/{P})"),
    ("inline", "[x](https://e.example \"{P}\")"),
    ("inline", '<a href="https://e.example/{P}">x</a>'),
    ("inline", '<a title="{P}" href="#">x</a>'),
    ("inline", '<abbr title="{P}">x</abbr>'),
    ("inline", '<span aria-label="{P}" data-x="{P}">x</span>'),
    ("block", "[r{P}]: https://e.example '{P}'"),
    ("block", "[//]: # ({P})"),
    ("block", "[^u{P}]: {P}"),
    ("block", "| h |\n|---|\n| c | {P} |"),
    ("inline", "$\\phantom{{{P}}}$"),
    ("inline", "$x % {P}$"),
    ("inline", "$`{P}`$"),
    ("inline", "\\$$\\phantom{{{P}}}$"),
    ("inline", "$\\color{{white}}{{{P}}}$"),
    ("block", "$$\n\\text{{{P}}}\n$$"),
    ("block", "```math\n\\phantom{{{P}}}\n```"),
    ("block", "```mermaid\ngraph TD\n  A-->B\n  %% {P}\n```"),
    ("block", "```mermaid\ngraph TD\n  accTitle: {P}\n```"),
    ("block", "```geojson\n{{\"type\": \"Point\", \"{P}\": 1}}\n```"),
    ("block", "```topojson\n{{\"{P}\": 1}}\n```"),
    ("block", "```stl\nsolid {P}\nendsolid\n```"),
    ("inline", "<svg><text>{P}</text></svg>"),
    ("inline", "<svg>`c`{P}</svg>"),
    ("tail", "<svg><desc><p></svg>{P}"),  # still inside the drawing: the rest of the page is hidden
    ("inline", "<math><mi>{P}</mi></math>"),
    ("inline", "<template>{P}</template>"),
    ("inline", "<ruby>x<rp>{P}</rp><rt>y</rt></ruby>"),
    ("inline", "<sub><sub><sub>{P}</sub></sub></sub>"),
    ("inline", "<sup><small><sup>{P}</sup></small></sup>"),
    ("block", "<p></ {P}>"),
    ("block", "<div>\n<p/title={P}>x\n</div>"),
    ("inline", "<![CDATA[{P}]]>"),
    ("inline", "<?php {P} ?>"),
    ("inline", "<!DOCTYPE {P}>"),
    ("inline", "{TAGS}"),  # the payload spelled in Unicode tag characters
]

# {V}: a word the page shows. A construct that starts an HTML block at the start of a line (`<div>`,
# `<script>`, `<style>`) is a "block": what follows it on its line would be raw HTML, not Markdown.
SHOWING = [
    ("inline", "{V}"),
    ("inline", "**{V}**"),
    ("inline", "_{V}_"),
    ("inline", "~~{V}~~"),
    ("inline", "`{V}`"),
    ("inline", "`` a`{V} ``"),
    ("block", "```\n{V} <!-- x -->\n```"),
    ("block", "~~~python\nprint('{V}')\n~~~"),
    ("block", "    {V} <!-- x -->"),
    ("inline", "[{V}](https://e.example)"),
    ("inline", "<https://e.example/a> {V}"),
    ("block", "<div hidden>{V}</div>"),
    ("inline", "<span style=\"display:none\">{V}</span>"),
    ("block", "<style>{V}</style>"),
    ("block", "<script>{V}</script>"),
    ("inline", "<xmp>{V}</xmp>"),
    ("inline", "<kbd>{V}</kbd>"),
    ("inline", "<font color=white>{V}</font>"),
    ("inline", "<select><option>{V}</option></select>"),
    ("inline", "<sub><sub>{V}</sub></sub>"),
    ("inline", "<ruby>{V}<rt>r</rt></ruby>"),
    ("block", "<details><summary>s</summary>\n\n{V}\n\n</details>"),
    ("block", "<details>\n<summary>{V}</summary>\n\nx\n</details>"),
    ("block", "# {V}"),
    ("block", "| {V} |\n|---|\n| x |"),
    ("block", "| h |\n|---|\n| {V} |"),
    ("footnote", "x[^{V}]\n\n[^{V}]: {V}"),  # a label of its own: a second definition of a label is ignored
    ("block", "<!--> {V}"),  # an HTML block of one line: the rest of the line is raw HTML
    ("tail", "<!-- a --!> {V}"),  # cmark's HTML block runs on to a `-->`: the rest is raw HTML
    ("inline", "&lt;!-- {V} --&gt;"),
    ("inline", "&#{ORD};{VREST}"),  # the first letter as an entity
    ("inline", "{VZW}"),  # zero-width and bidi characters inside the word
    ("inline", "costs $5 and {V} $10"),
    ("inline", "\\$x {V}\\$"),
    ("block", "- [x] {V}"),
    ("block", "1. {V}"),
]

WRAPPERS = ["quote", "list", "details", "div", "none", "none"]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\u2066", "\ufe0f", "\U000e0100"]


@dataclass(frozen=True)
class Case:
    body: str
    payloads: list[str]
    visibles: list[str]
    hides_the_rest: bool  # ends in a construct that hides whatever follows it
    templates: list[str]  # the constructs it was built from


def _fill(template: str, *, payload: str = "", visible: str = "", rng: random.Random) -> str:
    zw = "".join(ch + (rng.choice(INVISIBLE) if i % 2 else "") for i, ch in enumerate(visible))
    return (template.replace("{TAGS}", "".join(chr(0xE0000 + ord(c)) for c in payload))
            .replace("{VZW}", zw).replace("{ORD}", str(ord(visible[:1] or "V"))).replace("{VREST}", visible[1:])
            .replace("{P}", payload).replace("{V}", visible)
            .replace("{{", "{").replace("}}", "}"))


def _wrap(kind: str, text: str, wrapper: str) -> tuple[str, str]:
    if wrapper == "quote":
        return "block", "\n".join("> " + line if line else ">" for line in text.split("\n"))
    if wrapper == "list":
        lines = text.split("\n")
        return "block", "\n".join(["- " + lines[0]] + [("  " + line) if line else "" for line in lines[1:]])
    if wrapper == "details":
        return "block", f"<details><summary>more</summary>\n\n{text}\n\n</details>"
    if wrapper == "div":
        return "block", f"<div>\n\n{text}\n\n</div>"
    return kind, text


def generate(seed: int, count: int, *, hidden_word: str | None = None) -> list[Case]:
    """`count` cases; `hidden_word`, when given, is planted in every hiding construct instead of a
    PAYLOAD token (the trigger phrase, say)."""
    rng = random.Random(seed)
    cases = []
    for n in range(count):
        parts: list[str] = []
        payloads: list[str] = []
        visibles: list[str] = []
        size = rng.randint(1, 5)
        tail, footnotes, used = False, set(), []
        for k in range(size):
            hiding = rng.random() < 0.5
            kind, template = rng.choice(HIDING if hiding else SHOWING)
            while kind == "tail" and k < size - 1:
                kind, template = rng.choice(HIDING if hiding else SHOWING)
            token = f"{'PAYLOAD' if hiding else 'VISIBLE'}{n}x{k}"
            tail = tail or kind == "tail"
            if kind == "footnote":
                kind = "block"
                footnotes.add(token)
            used.append(template)
            planted = hidden_word or token
            text = _fill(template, payload=planted, visible=planted, rng=rng) if hiding else \
                _fill(template, visible=token, rng=rng)
            # A hiding construct also carries a visible word next to it, so a cut that goes too far shows.
            if hiding and kind == "inline":
                neighbour = f"VISIBLE{n}x{k}n"
                text = f"{neighbour} {text}"
                visibles.append(neighbour)
            kind, text = _wrap(kind, text, rng.choice(WRAPPERS) if kind != "tail" else "none")
            if kind != "inline" and parts and parts[-1] == " ":
                parts[-1] = "\n\n"
            parts.append(text)
            (payloads if hiding else visibles).append(token)
            parts.append("\n\n" if kind != "inline" or rng.random() < 0.5 else " ")
        if tail:  # the footnotes section comes last in the HTML: an open drawing hides it too
            visibles = [v for v in visibles if v not in footnotes]
        cases.append(Case("".join(parts).strip(), payloads, visibles, tail, used))
    return cases
