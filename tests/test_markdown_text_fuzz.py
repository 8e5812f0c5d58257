"""The differential test: seeded bodies with planted PAYLOAD words (in constructs github.com renders to
nothing, or that gitbot never passes on: math, diagrams) and VISIBLE words (where the page shows them),
nested and combined (tests/page_fuzz.py). No PAYLOAD may reach the text the model reads; under 1% of
the VISIBLE words may be lost; a trigger phrase planted where it is hidden, in code, a quote or a link
starts nothing, and one in plain view does."""

from __future__ import annotations

import pytest

from gitbot.forge.mention import find_request
from gitbot.markdown_text import visible_text
from tests.page_fuzz import HIDING, SHOWING, generate

CASES = 1000


@pytest.mark.parametrize("seed", [21, 2021])
def test_no_hidden_word_reaches_the_model_and_visible_ones_do(seed):
    leaks, missing, visible = [], 0, 0
    for case in generate(seed, CASES):
        text = visible_text(case.body)
        leaks += [(p, case.body) for p in case.payloads if p in text]
        visible += len(case.visibles)
        missing += sum(v not in text for v in case.visibles)
    assert not leaks, leaks[:3]
    assert visible > 2 * CASES and missing / visible < 0.01, (missing, visible)


def test_every_construct_is_planted():
    used = {template for case in generate(21, CASES) for template in case.templates}
    assert used == {template for _, template in HIDING + SHOWING}


def test_a_hidden_or_quoted_trigger_phrase_starts_nothing_and_a_plain_one_does():
    for case in generate(7, CASES // 3, hidden_word="@gitbot"):
        assert find_request(case.body) is None, case.body
        if not case.hides_the_rest:
            request = find_request(case.body + "\n\n@gitbot answer please")
            assert request is not None and request.mode == "answer", case.body
