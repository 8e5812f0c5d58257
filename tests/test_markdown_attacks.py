"""A red team's attacks on issue 21's parse (markdown_text / markdown_html / markdown_math / mention).

Each test asserts the secure behaviour; the findings (all fixed) come first, then what held, kept for
coverage. Everything goes through build_issue_task or find_request; the timing cases call
find_request, the event decision that runs before any permission check."""

from __future__ import annotations

import time

import pytest

from gitbot.forge.issue_task import IssueText, build_issue_task, select_comments
from gitbot.forge.mention import find_request
from gitbot.markdown_text import visible_text
from gitbot.prompting import render_prompt

P = "PAYLOADXQ"  # hidden on the page: must not reach the model
V = "VISIBLEKW"  # shown on the page: must reach the model


def task_text(body: str, title: str = "A title") -> str:
    return build_issue_task(IssueText(1, title, body, "rita"), select_comments([], None), repository="o/r").text


# --- Finding 1: the lexical <svg>/<math> cut ends at a `</svg>` that is not an end tag ----------------
# _without_foreign (markdown_html.py) stops the drawing at the first `</svg>` it sees, even inside an
# attribute value, a comment, a processing instruction or CDATA. An HTML5 reader (and html-pipeline's
# remove_contents) keeps the text after it inside the drawing; the model reads it.
SVG_CUT_LEAKS = {
    "end tag in an attribute": f'{V} <svg><text title="</svg>">{P}</text></svg>',
    "end tag in a comment": f"{V} <svg><!-- </svg> -->{P}</svg>",
    "end tag in a processing instruction": f"{V} <svg><?x </svg> ?>{P}</svg>",
    "end tag in CDATA": f"{V} <svg><![CDATA[</svg>]]>{P}</svg>",
    "math end tag in an attribute": f'{V} <math><mi title="</math>">{P}</mi></math>',
}


@pytest.mark.parametrize("body", SVG_CUT_LEAKS.values(), ids=SVG_CUT_LEAKS.keys())
def test_text_inside_a_drawing_after_a_fake_end_tag_stays_hidden(body: str) -> None:
    text = task_text(body)
    assert V in text
    assert P not in text


@pytest.mark.parametrize("body", [
    '<svg><!-- </svg> -->@gitbot fix</svg>',
    '<svg><text title="</svg>">@gitbot fix</text></svg>',
])
def test_a_mention_inside_a_drawing_starts_nothing(body: str) -> None:
    assert find_request(body) is None


# --- Finding 2: inline math cut short by a block tag the HTML5 parse moves out of the paragraph --------
# GitHub reads `$…$` in the Markdown (math takes the raw HTML inside it as TeX source); html5ever closes
# the <p> at `<div>`/`<p>`/`<pre>`/…, and _math_spans never lets inline math cross that boundary.
MATH_BLOCK_LEAKS = {
    "div": f"{V} $\\phantom{{<div>{P}</div>}}$",
    "p": f"{V} $\\phantom{{<p>{P}}}$",
    "pre": f"{V} $\\phantom{{<pre>{P}</pre>}}$",
    "h1": f"{V} $\\phantom{{<h1>{P}</h1>}}$",
    "display math": f"{V} $$\\phantom{{<pre>{P}</pre>}}$$",
}


@pytest.mark.parametrize("body", MATH_BLOCK_LEAKS.values(), ids=MATH_BLOCK_LEAKS.keys())
def test_math_holding_a_block_tag_is_still_math(body: str) -> None:
    text = task_text(body)
    assert V in text
    assert P not in text


def test_a_mention_inside_math_holding_a_block_tag_starts_nothing() -> None:
    assert find_request("$\\phantom{<div>@gitbot fix</div>}$") is None


# --- Finding 3: an invisible character makes a mention of someone else, or a non-mention, live --------
# trigger_text keeps invisible characters, so the phrase's word-boundary look-arounds see a ZWSP where
# the reader sees a letter, a hyphen, a slash: the page shows `@gitbotter`, `@gitbot-other`, `x@gitbot`.
@pytest.mark.parametrize("body", [
    "@gitbot\u200bter fix",      # reads @gitbotter (another account)
    "@gitbot\u200b-other fix",   # reads @gitbot-other
    "x\u200b@gitbot fix",        # reads x@gitbot (not a mention, per the README)
    "docs/\u2060@gitbot fix",    # reads docs/@gitbot (a path)
])
def test_an_invisible_character_does_not_make_a_phrase_whole(body: str) -> None:
    assert find_request(body) is None


# --- Finding 4: the mode word is read past the words the reader sees right after the phrase ------------
# trigger_text blanks code, links, quotes and math to spaces, and find_request skips spaces: the reader
# sees "answer" (in a code span, a link, a quote, rendered math) but the run is in fix mode.
@pytest.mark.parametrize("body", [
    "@gitbot `answer` fix the parser",
    "@gitbot [answer](https://e.example) fix",
    "@gitbot <q>answer</q> fix",
    "@gitbot $\\text{answer}$ fix",
    "@gitbot ~~fix~~ answer",  # the reader sees "fix" struck out, then "answer"
])
def test_the_mode_is_the_word_the_reader_sees_next(body: str) -> None:
    request = find_request(body)
    assert request is not None
    assert request.mode != "fix"


# Reordered or look-alike "answer": the page shows "answer", the run is "auto" (may change code).
@pytest.mark.parametrize("body", [
    '@gitbot <bdo dir="rtl">rewsna</bdo> why does this fail?',
    "@gitbot \u202erewsna\u202c why does this fail?",
    "@gitbot \u0430nswer why does this fail?",  # Cyrillic a
])
def test_a_word_that_shows_as_answer_is_not_auto(body: str) -> None:
    request = find_request(body)
    assert request is not None
    assert request.mode == "answer"


# --- Finding 5: quadratic HTML5 reconstruction of formatting elements (time and memory) ----------------
# Each <p> makes html5ever reopen every active formatting element: K open <b>s and N paragraphs cost
# K*N elements. K=60 passes the lexical nesting cap (64); unmatched end tags (`</x>`) lower the lexical
# count without closing anything, so K is unbounded.
def _timed(body: str) -> float:
    start = time.perf_counter()
    find_request(body)
    return time.perf_counter() - start


def test_open_formatting_elements_and_many_paragraphs_are_fast() -> None:
    body = "".join(f"<b id={i}>" for i in range(60)) + "<p>x" * 16000  # 64 KiB: 10.6 s before the cap
    assert _timed(body) < 1.0


def test_unmatched_end_tags_do_not_lift_the_nesting_cap() -> None:
    # K=200 open <b>s, each followed by an end tag that closes nothing: the caps must still see 200.
    body = "".join(f"<b id={i}></x>" for i in range(200)) + "<p>x" * 600
    assert render_prompt("visible_text/too_deep") in visible_text(body)
    assert _timed(body) < 1.0


def test_a_wide_table_header_over_short_rows_is_fast() -> None:
    # Pure Markdown: cmark-gfm pads every row to the header's width (500 x 500 empty cells from 3 KiB is
    # 2.5 MB of HTML, 6.5 s before the cap).
    body = "|" + "a|" * 500 + "\n|" + "-|" * 500 + "\n" + "x\n" * 500
    assert _timed(body) < 1.0
    assert "was not read" in visible_text(body)


def test_a_long_run_of_dashes_is_fast() -> None:
    # The table-size check must not backtrack over a line that is almost a delimiter row.
    assert _timed("-" * 65_000 + "x") < 1.0


def test_many_unclosed_code_tags_in_a_paragraph_with_a_dollar_are_fast() -> None:
    assert _timed("$x " + "<code>" * 9000) < 1.0  # 9 s when the math finder looked for each one's end


def test_unclosed_quotes_inside_a_drawing_are_read_in_linear_time() -> None:
    assert _timed('<svg><a b="' * 6000 + "<svg><!--" * 3000) < 1.0


# --- Finding 6: visible text lost after `<svg`/`<math` written where it is not an element ----------------
@pytest.mark.parametrize("body", [
    f'<span title="<svg>">a</span> {V}',
    f"<!-- <math> -->\n\n{V}",
    f"<svg><desc><b>x</b></desc></svg> {V}",  # closed properly: the drawing ends at </svg>
])
def test_text_after_a_closed_or_quoted_drawing_is_kept(body: str) -> None:
    assert V in task_text(body)


# --- Finding 7: Mongolian variation selectors (and other invisible marks) reach the model ---------------
INVISIBLE_MARKS = "\u180b\u180c\u180d\u180f\u034f\u17b4\u17b5\u2800"


def test_mongolian_variation_selectors_are_dropped() -> None:
    body = f"{V}" + INVISIBLE_MARKS * 8
    text = task_text(body)
    assert V in text
    assert not any(ch in text for ch in INVISIBLE_MARKS)


# --- Held (kept for coverage) -----------------------------------------------------------------------------
HELD_HIDDEN = {
    "picture source srcset": f'{V} <picture><source srcset="{P}"><img alt="{P}"></picture>',
    "a title, abbr title": f'<a title="{P}">{V}</a> <abbr title="{P}">y</abbr>',
    "cdata": f"<![CDATA[ {P} ]]> {V}",
    "processing instruction": f"<?php {P} ?> {V}",
    "declaration": f"a <!X {P}> {V}",
    "link definition title": f'[ref]: https://x "{P}"\n\nsee [ref] {V}',
    "mermaid fence, any case": f"{V}\n\n```MerMaid\n%% {P}\n```",
    "tilde mermaid fence": f"{V}\n\n~~~mermaid\n%% {P}\n~~~",
    "mermaid fence in a list": f"- {V}\n- ```mermaid\n  %% {P}\n  ```",
    "math with info string": f"{V}\n\n```math foo\n\\phantom{{{P}}}\n```",
    "math across a line": f"{V} a $\\phantom{{{P}}}\nb$ c",
    "input value": f'{V} <input type="text" value="{P}">',
    "rp": f"{V} <ruby>a<rp>{P}</rp><rt>b</rt></ruby>",
    "sub span sub span sub": f"{V} <sub><span><sub><span><sub>{P}</sub></span></sub></span></sub>",
    "col title": f"{V}<table><colgroup><col title={P}></colgroup></table>",
}


@pytest.mark.parametrize("body", HELD_HIDDEN.values(), ids=HELD_HIDDEN.keys())
def test_held_hidden(body: str) -> None:
    text = task_text(body)
    assert V in text
    assert P not in text


@pytest.mark.parametrize("body", [
    "<sub><sub><sub>@gitbot</sub></sub></sub> fix",
    '<a name="x">@gitbot fix</a>',
    "x@gitbot.com fix",
    "@gitbot/fix",
    "\uff20gitbot fix",
    "[^1]: @gitbot fix",
    "    @gitbot fix",
    "<code>@gitbot fix</code>",
    "<kbd>@gitbot fix</kbd>",
    "> @gitbot fix",
    "$@gitbot fix$",
])
def test_held_no_run(body: str) -> None:
    assert find_request(body) is None


@pytest.mark.parametrize("body", ["~~@gitbot fix~~", "<del>@gitbot fix</del>", "<s>@gitbot fix</s>"])
def test_a_struck_out_mention_starts_nothing(body: str) -> None:
    assert find_request(body) is None


@pytest.mark.parametrize("body, mode", [
    ("@gitbot <sub><sub><sub>answer</sub></sub></sub> fix", "fix"),
    ("@gitbot <!-- fix --> answer", "answer"),
    ("@GitBot FIX", "fix"),
    ("@git<!-- -->bot answer", "answer"),
])
def test_held_modes(body: str, mode: str) -> None:
    request = find_request(body)
    assert request is not None and request.mode == mode
