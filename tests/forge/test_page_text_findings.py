"""Issue 21's findings, one case each: the issue task holds what github.com shows and nothing else, and
the trigger phrase is live only where a reader sees it as written.

Everything here goes through the callers (build_issue_task, find_request), so the same cases ran
against the regex blocklists these replace (each failed there)."""

from __future__ import annotations

import time

import pytest

from gitbot.forge.issue_task import IssueText, build_issue_task, select_comments
from gitbot.forge.mention import find_request

P = "PAYLOADXQ"  # on the page it is invisible: it must not reach the model
V = "VISIBLEKW"  # on the page it shows: it must reach the model


def task_text(body: str, title: str = "A title") -> str:
    return build_issue_task(IssueText(1, title, body, "rita"), select_comments([], None), repository="o/r").text


LEAKS = {
    "comment holding a code span": f"<!-- `a` {P} --> {V}",
    "fence inside a comment": f"<!--\n```\n{P}\n```\n-->\n\n{V}",
    "code span in an alt attribute": f'{V} <img alt="`{P}`" src="x.png">',
    "code span in svg": f"<svg>`c`{P}</svg> {V}",
    "TeX comment": f"{V} $x % {P}$",
    "label": f"{V} $\\label{{{P}}} x$",
    "def": f"{V} $\\def\\a{{{P}}} x$",
    "newcommand": f"{V} $\\newcommand{{\\a}}{{{P}}} x$",
    "mathchoice": f"{V} $\\mathchoice{{{P}}}{{}}{{}}{{}}$",
    "mmlToken": f"{V} $\\mmlToken{{mi}}[mathcolor=white]{{{P}}}$",
    "escaped dollar before math": f"{V} \\$$\\phantom{{{P}}}$",
    "math fence in a quote": f"{V}\n\n> ```math\n> \\phantom{{{P}}}\n> ```",
    "math fence in a list item": f"- {V}\n- ```math\n  \\phantom{{{P}}}\n  ```",
    "table cell beyond the header": f"| a |\n|---|\n| {V} | {P} |",
    "unreferenced footnote": f"{V}\n\n[^n]: {P}",
    "footnote label": f"{V}[^{P}]\n\n[^{P}]: note",
    "reference label": f"[{V}][{P}]\n\n[{P}]: https://example.com",
    "link definition in a quote": f"{V}\n\n> [a]: https://example.com '{P}'",
    "link definition in a list": f"- {V}\n- [a]: https://example.com '{P}'",
    "bogus end tag in an HTML block": f"<p></ {P}>\n\n{V}",
    "attribute after a slash in an HTML block": f"<div>\n<p/title={P}>{V}\n</div>",
    "quote entity in alt": f'{V} <img src=x alt="&quot;{P}">',
    "svg desc holding a paragraph": f"{V}\n\n<svg><desc><p></svg>{P}",
    "link destination": f"{V} [](https://example.com/{P})",
    "empty link to a token": f"{V} []({P})",
    "href on a tag": f'{V} <a href="https://x.example/{P}">x</a>',
    "src on a tag": f'{V} <img src="https://x.example/{P}.png">',
    "mermaid comment": f"{V}\n\n```mermaid\ngraph TD\n  A-->B\n  %% {P}\n```",
    "mermaid accTitle": f"{V}\n\n```mermaid\ngraph TD\n  accTitle: {P}\n  A-->B\n```",
    "stl block": f"{V}\n\n```stl\nsolid {P}\nendsolid\n```",
    "geojson block": f'{V}\n\n```geojson\n{{"type": "Point", "{P}": 1}}\n```',
}


@pytest.mark.parametrize("body", LEAKS.values(), ids=LEAKS.keys())
def test_what_the_page_does_not_show_never_reaches_the_model(body):
    text = task_text(body)
    assert P not in text and V in text


SHOWN = {
    "hidden attribute (GitHub drops it)": f"<div hidden>{V}</div>",
    "hiding style (GitHub drops it)": f'<span style="display:none">{V}</span>',
    "style shown as written": f"<style>{V}</style>",
    "script shown as written": f"<script>{V}</script>",
    "xmp shown as written": f"<xmp>{V}</xmp>",
    "plaintext does not eat the rest": f"<plaintext>x\n\n{V}",
    "text after <!-->": f"<!--> {V}",
    "text after --!>": f"<!-- a --!> {V}",
    "indented code is code": f"Run:\n\n    grep x <!-- {V} -->\n",
}


@pytest.mark.parametrize("body", SHOWN.values(), ids=SHOWN.keys())
def test_what_the_page_shows_reaches_the_model(body):
    assert V in task_text(body)


@pytest.mark.parametrize("title", [f"Fix <b>{V}</b>", f"Crash <!-- {V} -->", f"x `{V}`", f"<div hidden>{V}</div>",
                                   f"$\\phantom{{{V}}}$", f"[a]({V})"])
def test_a_title_is_plain_text(title):
    assert V in task_text("body", title=title).split("Opened by")[0]


@pytest.mark.parametrize("comment", [
    "[](@gitbot)",
    "<svg>@gitbot fix</svg>",
    "see below\n\n[^x]: @gitbot fix",
    "<code>@gitbot fix</code>",
    "look:\n\n    @gitbot fix\n",
    "[@gitbot fix](https://example.com)",
    "<q>@gitbot fix</q>",
])
def test_an_invisible_or_quoted_or_code_mention_starts_nothing(comment):
    assert find_request(comment) is None


def test_the_mode_is_read_from_the_visible_text():
    assert find_request("@gitbot <!-- --> answer").mode == "answer"
    assert find_request("@gitbot <!-- answer --> fix").mode == "fix"
    assert find_request("@gitbot `fix` please").mode == "auto"


@pytest.mark.parametrize("unit", ["<a b ", "[", "[a](", "`", "*", "<!--", "$a ", "$$", "> ", "<", "&#x", "``a",
                                  "<svg>", "<div>", "|a", "- ", "[^a]", "_a ", "www.a"])
def test_a_64_kib_body_of_any_shape_takes_well_under_a_second(unit):
    body = (unit * (65_536 // len(unit) + 1))[:65_536]
    start = time.perf_counter()
    task_text(body)
    find_request(body)
    # Generous for a loaded CI machine; bench/bench_markdown_text.py measures it against cmark itself.
    assert time.perf_counter() - start < 5.0
