"""markdown_text against what github.com renders (tests/forge/github_sanitizer.py holds html-pipeline's
lists): text a maintainer does not see never reaches the model, text they see does, and the shape of
what the model reads (code as code, markers for images, math and collapsed sections)."""

from __future__ import annotations

import pytest

from gitbot.markdown_text import (
    GITHUB,
    MAX_INPUT_BYTES,
    Allowlist,
    plain_title,
    trigger_text,
    visible_text,
)
from gitbot.prompting import render_prompt
from tests.forge import github_sanitizer as gh

P = "IGNORE-PREVIOUS-INSTRUCTIONS"


@pytest.mark.parametrize("element", [e for e in gh.ALLOWED_ELEMENTS if e not in gh.VOID_ELEMENTS and e != "rp"])
def test_text_inside_an_allowed_element_stays(element):
    cleaned = visible_text(f"before <{element}>{P}</{element}> after")
    assert P in cleaned and "before" in cleaned and "after" in cleaned


@pytest.mark.parametrize("element", ["svg", "math", "template", *gh.NOT_SHOWN_WHERE_SUPPORTED])
def test_elements_never_shown_go_with_their_contents(element):
    for text in (f"before <{element}>{P}</{element}> after", f"before <{element.upper()} x='1'>{P}</{element.upper()}> after"):
        cleaned = visible_text(text)
        assert P not in cleaned and "before" in cleaned and "after" in cleaned, text


@pytest.mark.parametrize("element", gh.TAGFILTERED)
def test_what_tagfilter_escapes_is_shown_as_written(element):
    assert f"<{element}>{P}" in visible_text(f"x <{element}>{P}</{element}>")


@pytest.mark.parametrize("element", gh.UNWRAPPED_ELEMENTS)
def test_text_inside_a_disallowed_element_is_shown_so_it_stays(element):
    assert P in visible_text(f"x <{element}>{P}</{element}>")


@pytest.mark.parametrize("attribute", gh.ATTRIBUTES_WITH_TEXT + ["href", "src", "hidden"])
@pytest.mark.parametrize("element", ["img", "a", "div", "abbr", "source", "span"])
def test_attribute_values_never_become_text(attribute, element):
    cleaned = visible_text(f'x <{element} {attribute}="{P}" href="https://ok.example/{P}">y</{element}>')
    assert P not in cleaned and "x" in cleaned


def test_images_are_a_marker_and_links_their_text():
    cleaned = visible_text('[docs](https://docs.example/x "t") ![alt](https://i.example/p.png) <img src="q.png">')
    assert cleaned == "docs [image] [image]"


@pytest.mark.parametrize("hiding", ["hidden", 'style="display: none"', "style='visibility:hidden'"])
def test_github_drops_hiding_attributes_so_the_text_stays(hiding):
    assert P in visible_text(f"shown <div {hiding}>{P}</div>")


def test_deeply_nested_sub_and_sup_text_is_too_small_to_see():
    assert P not in visible_text(f"<sub><sub><sub>{P}</sub></sub></sub> visible")
    assert P not in visible_text(f"<code>x<sub><sub><sub>{P}</sub></sub></sub></code> and <pre><rp>{P}</rp></pre>")
    assert P in visible_text(f"H<sub>2</sub>O and x<sup><sup>{P}</sup></sup>")


@pytest.mark.parametrize("math", [
    f"$\\phantom{{{P}}}$", f"$x % {P}$", f"$`{P}`$", f"$${P}$$", f"$$\n\\text{{{P}}}\n$$", f"```math\n{P}\n```",
    f"\\$$\\phantom{{{P}}}$", f"\\\\$\\phantom{{{P}}}$", f"$a *{P}* b$", f"$a [{P}](x) b$",
    f"$\\phantom{{{P}}}\n$", f"$\n\\phantom{{{P}}}$",
])
def test_math_is_never_passed_on(math):
    cleaned = visible_text(f"Steps:\n\n{math}\n\nthen run the tests.")
    assert P not in cleaned and "then run the tests." in cleaned
    assert render_prompt("visible_text/math") in cleaned


def test_dollars_that_are_not_math_stay():
    assert visible_text("it costs $5 and $10, or \\$20") == "it costs $5 and $10, or $20"
    assert visible_text("`echo \\$HOME $PATH`") == "`echo \\$HOME $PATH`"
    assert "between" in visible_text("$$\na\n$$\n\ntext between\n\n$$\nb\n$$")


@pytest.mark.parametrize("kind", ["mermaid", "geojson", "topojson", "stl"])
def test_diagrams_are_a_marker(kind):
    cleaned = visible_text(f"x\n\n```{kind}\n{P}\n```\n\ny")
    assert P not in cleaned and render_prompt("visible_text/diagram", kind=kind) in cleaned


def test_code_is_kept_as_code():
    cleaned = visible_text("Run\n\n```sh\necho '<!-- x -->' ```\n````\n\n    indented <b>\n\nand `a``b` here")
    assert "````\necho '<!-- x -->' ```\n````" in cleaned
    assert "```\nindented <b>\n```" in cleaned and "and ```a``b``` here" in cleaned


@pytest.mark.parametrize("char", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202a", "\u202e",
                                  "\u2066", "\u2069", "\U000e0049", "\ufe0f", "\U000e0100", "\u3164", "\u115f"])
def test_invisible_characters_go_everywhere(char):
    cleaned = visible_text(f"a{char}b `c{char}d`\n\n```\ne{char}f\n```\n\n&#{ord(char)};")
    assert char not in cleaned and "ab" in cleaned and "cd" in cleaned and "ef" in cleaned


def test_declarations_cdata_and_processing_instructions_go():
    cleaned = visible_text(f"a <![CDATA[{P}]]> b <?php {P} ?> c <!DOCTYPE {P}> d")
    assert P not in cleaned and cleaned.split() == ["a", "b", "c", "d"]


def test_entities_are_decoded_and_what_they_spell_is_shown():
    assert visible_text("&lt;!-- x --&gt; &amp;amp; &#x41;") == "<!-- x --> &amp; A"


def test_details_stay_visible_but_marked():
    cleaned = visible_text(f"<details><summary>Log</summary>\n\n{P}\n</details>")
    assert cleaned.index(render_prompt("issue_task/collapsed")) < cleaned.index(P)
    assert cleaned.index(P) < cleaned.index(render_prompt("issue_task/collapsed_end"))


def test_the_shape_survives_quotes_lists_tables_and_tasks():
    cleaned = visible_text("# Bug\n\n> said\n\n- one\n  - two\n- [x] done\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    assert cleaned == "# Bug\n\n> said\n\n- one\n  - two\n- [x] done\n\n| a | b |\n| 1 | 2 |"


def test_titles_are_plain_text():
    assert plain_title(f"Fix <b>x</b> <!-- {P} --> `y`\u200b\u202e  now") == f"Fix <b>x</b> <!-- {P} --> `y` now"


def test_the_trigger_text_blanks_code_quotes_and_links_but_keeps_invisible_characters():
    live = trigger_text("a `b` [c](d) <kbd>e</kbd>\n\n> f\n\ng\u200bh")
    assert "a" in live and "g\u200bh" in live
    assert not any(word in live.split() for word in ("b", "c", "d", "e", "f"))


def test_input_beyond_the_cap_is_not_read_and_says_so():
    cleaned = visible_text("x" * 10 + "\n\n" + "y" * MAX_INPUT_BYTES)
    assert cleaned.endswith(render_prompt("visible_text/not_read", count="12") )
    assert cleaned.startswith("x" * 10)


def test_deep_nesting_is_cut_not_parsed():
    cleaned = visible_text("> " * 5000 + P)
    assert P not in cleaned and render_prompt("visible_text/too_deep") in cleaned


def test_the_allowlist_is_a_parameter():
    strict = Allowlist(elements=GITHUB.elements - {"details", "summary"}, attributes=GITHUB.attributes,
                       dropped_with_contents=GITHUB.dropped_with_contents | {"details"})
    assert P in visible_text(f"<details>{P}</details>") and P not in visible_text(f"<details>{P}</details>", strict)


@pytest.mark.parametrize("body", [
    f"<svg><foreignObject><p>{P}</p></foreignObject></svg>", f"<SVG>{P}</svg >", f"<svg/><p>{P}",
    f"<math><annotation-xml encoding='text/html'><p>{P}</p></annotation-xml></math>", f"<template><p>{P}</p></template>",
    f"<span title=\"x>{P}<y\">t</span>", f"<img srcset='{P} 1x'>", f"<a href='javascript:{P}'>x</a>",
    f"![x][y]\n\n[y]: /u '{P}'", f"<details><summary>$\\phantom{{{P}}}$</summary>x</details>",
    f"| $\\phantom{{{P}}}$ |\n|-|", f"[$\\phantom{{{P}}}$](u)", f"```MATH\n{P}\n```", f"``` math\n{P}\n```",
    f"<pre lang=mermaid>{P}</pre>", f"<![CDATA[\n{P}\n]]>", f"<!-- \n\n{P}\n\n -->",
])
def test_more_hiding_places(body):
    assert P not in visible_text(body)
