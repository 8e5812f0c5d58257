"""strip_hidden against what github.com renders (tests/forge/github_sanitizer.py): text a maintainer
does not see on the rendered issue never reaches the model, and text they do see does."""

from __future__ import annotations

import pytest

from gitbot.forge.hidden_text import COLLAPSED, strip_hidden
from tests.forge import github_sanitizer as gh

PAYLOAD = "IGNORE-PREVIOUS-INSTRUCTIONS"


@pytest.mark.parametrize("element", [e for e in gh.ALLOWED_ELEMENTS if e not in gh.VOID_ELEMENTS])
def test_text_inside_an_allowed_element_stays(element):
    cleaned = strip_hidden(f"before <{element}>{PAYLOAD}</{element}> after")
    assert PAYLOAD in cleaned and "before" in cleaned and "after" in cleaned


@pytest.mark.parametrize("element", gh.REMOVED_WITH_CONTENTS + gh.NOT_SHOWN_WHERE_SUPPORTED + ["template"])
def test_elements_the_sanitiser_drops_with_their_contents_go_whole(element):
    for text in (f"before <{element}>{PAYLOAD}</{element}> after",
                 f"before <{element.upper()} x='1'>\n\n{PAYLOAD}\n\n</{element.upper()}> after",
                 f"before <{element}>{PAYLOAD}"):  # never closed: hides the rest
        cleaned = strip_hidden(text)
        assert PAYLOAD not in cleaned and "before" in cleaned, text
    assert "after" in strip_hidden(f"before <{element}>{PAYLOAD}</{element}> after")


@pytest.mark.parametrize("element", gh.UNWRAPPED_ELEMENTS)
def test_text_inside_a_disallowed_element_is_shown_so_it_stays(element):
    assert PAYLOAD in strip_hidden(f"<{element}>{PAYLOAD}</{element}>")


@pytest.mark.parametrize("attribute", gh.ATTRIBUTES_WITH_TEXT)
@pytest.mark.parametrize("element", ["img", "a", "div", "abbr", "source", "span"])
def test_attribute_values_never_render_so_they_go(attribute, element):
    cleaned = strip_hidden(f'x <{element} {attribute}="{PAYLOAD}" href="https://ok.example/a">y</{element}>')
    assert PAYLOAD not in cleaned and "y" in cleaned


def test_links_and_images_keep_their_address():
    cleaned = strip_hidden('<a href="https://docs.example/x" title="t">docs</a> <img src="https://i.example/p.png" alt="a">')
    assert cleaned == '<a href="https://docs.example/x">docs</a> <img src="https://i.example/p.png">'


@pytest.mark.parametrize("hiding", ["hidden", 'hidden=""', "HIDDEN", 'style="display: none"',
                                    "style='visibility:hidden'", 'style="font-size:0"', 'style="opacity: 0;"'])
def test_elements_marked_hidden_go_with_their_contents(hiding):
    cleaned = strip_hidden(f"shown <div {hiding}><p>{PAYLOAD}</p><div>nested {PAYLOAD}</div></div> too")
    assert PAYLOAD not in cleaned and "shown" in cleaned and "too" in cleaned


def test_picture_sources_are_media_only():
    cleaned = strip_hidden(f'<picture><source media="(prefers-color-scheme: dark) {PAYLOAD}" '
                           f'srcset="https://i.example/d.png"><img src="https://i.example/l.png" alt="{PAYLOAD}"></picture>')
    assert PAYLOAD not in cleaned and "<picture><source><img src=" in cleaned


def test_deeply_nested_sub_and_sup_text_is_too_small_to_see():
    assert PAYLOAD not in strip_hidden(f"<sub><sub><sub>{PAYLOAD}</sub></sub></sub> visible")
    assert PAYLOAD not in strip_hidden(f"<sup><small><sup><sup>{PAYLOAD}</sup></sup></small></sup>")
    assert PAYLOAD in strip_hidden(f"H<sub>2</sub>O and x<sup><sup>{PAYLOAD}</sup></sup>")
    assert "visible" in strip_hidden(f"<sub><sub><sub>{PAYLOAD}</sub></sub></sub> visible")


@pytest.mark.parametrize("math", [
    rf"$\phantom{{{PAYLOAD}}}$", rf"$\hphantom{{{PAYLOAD}}}$", rf"$\vphantom{{{PAYLOAD}}}$",
    rf"$\color{{white}}{{{PAYLOAD}}}$", rf"${{\color{{#fff}} {PAYLOAD}}}$", rf"$\textcolor{{white}}{{{PAYLOAD}}}$",
    rf"$\mathrm{{\color{{transparent}}{PAYLOAD}}}$", rf"$$\colorbox{{white}}{{{PAYLOAD}}}$$",
    rf"$\style{{display:none}}{{{PAYLOAD}}}$", rf"$\tiny {PAYLOAD}$", rf"$\hspace{{-99em}}{PAYLOAD}$",
    rf"$\kern-50em {PAYLOAD}$", rf"$\llap{{{PAYLOAD}}}$", rf"$\raisebox{{99em}}{{{PAYLOAD}}}$",
    rf"$`\phantom{{{PAYLOAD}}}`$", f"$$\n\\begin{{aligned}}\\phantom{{{PAYLOAD}}}\\end{{aligned}}\n$$",
    f"```math\n\\color{{white}}{{{PAYLOAD}}}\n```",
])
def test_math_that_hides_or_moves_text_goes(math):
    inline = "" if math.startswith("```") else f"Steps: {math} then run the tests.\n\n"  # a fence is on its own lines
    cleaned = strip_hidden(f"{inline}Steps:\n{math}\nthen run the tests.")
    assert PAYLOAD not in cleaned and "then run the tests." in cleaned


def test_ordinary_math_and_dollars_stay():
    text = r"The mean is $\frac{1}{n}\sum x_i$, it costs $5 and $10, and $$\sqrt{2}$$."
    assert strip_hidden(text) == text


def test_code_renders_literally_so_it_is_kept_as_written():
    block = f"```html\n<style>{PAYLOAD}</style>\n<div hidden>x</div> <!-- c --> $\\phantom{{p}}$\n```"
    span = "`<img alt=\"alt text\">`"
    cleaned = strip_hidden(f"{block}\n\nand {span} but <!-- gone -->")
    assert block in cleaned and span in cleaned and "gone" not in cleaned


@pytest.mark.parametrize("char", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202a", "\u202b",
                                  "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\U000e0049",
                                  "\ufe0f", "\U000e0100", "\u3164", "\u115f"])
def test_invisible_and_bidi_characters_go_everywhere(char):
    cleaned = strip_hidden(f"a{char}b `c{char}d`\n```\ne{char}f\n```")
    assert char not in cleaned and "ab" in cleaned and "cd" in cleaned and "ef" in cleaned


def test_declarations_cdata_and_processing_instructions_go():
    cleaned = strip_hidden(f"a <![CDATA[{PAYLOAD}]]> b <?php {PAYLOAD} ?> c <!DOCTYPE {PAYLOAD}> d")
    assert PAYLOAD not in cleaned and cleaned.split() == ["a", "b", "c", "d"]


def test_entities_cannot_smuggle_markup_past_the_stripping():
    cleaned = strip_hidden(f"&lt;style&gt;{PAYLOAD}&lt;/style&gt; and &#x3C;div hidden&#x3E;{PAYLOAD}&#x3C;/div&#x3E; ok")
    assert PAYLOAD not in cleaned and "ok" in cleaned


def test_details_stay_visible_but_marked():
    cleaned = strip_hidden(f"<details><summary>Log</summary>\n\n{PAYLOAD}\n</details>")
    assert PAYLOAD in cleaned and COLLAPSED in cleaned


def test_the_issue_task_strips_body_title_and_comments_the_same_way():
    import datetime as dt

    from gitbot.forge.github import CommentData
    from gitbot.forge.issue_task import IssueText, build_issue_task, select_comments

    at = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    hidden = (f"$\\phantom{{{PAYLOAD}}}$ <style>{PAYLOAD}</style> <div hidden>{PAYLOAD}</div>"
              f"$\\color{{white}}{{{PAYLOAD}}}$")
    issue = IssueText(3, f"Crash {hidden}", f"It crashes. {hidden}", "rita")
    comments = [CommentData(1, "sam", "User", f"Same here. {hidden}", at, at)]
    task = build_issue_task(issue, select_comments(comments, at), repository="o/r")
    assert PAYLOAD not in task.text and PAYLOAD not in task.title
    assert "It crashes." in task.text and "Same here." in task.text
