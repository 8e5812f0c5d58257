"""The trigger phrase: live only as a reader sees it written, and never live in what gitbot posts."""

from __future__ import annotations

import pytest

from gitbot.forge.mention import defuse, find_request, live_mentions, valid_phrase


@pytest.mark.parametrize(
    "text,mode",
    [
        ("@gitbot fix the empty list", "fix"),
        ("Please, @GitBot answer: why does this fail?", "answer"),
        ("(@gitbot) can you look?", "auto"),
        ("thanks @gitbot.", "auto"),
        ("@gitbot, fix it", "fix"),
        ("line one\n@gitbot\nline three", "auto"),
        ("`code` then @gitbot answer", "answer"),
    ],
)
def test_a_live_mention_is_a_request_with_its_mode(text, mode):
    request = find_request(text)
    assert request is not None and request.mode == mode


@pytest.mark.parametrize(
    "text",
    [
        "no mention at all",
        "x@gitbot is not a mention",
        "@gitbotter is someone else",
        "@gitbot-ci is someone else",
        "mail ops@gitbot.dev",
        "see docs/@gitbot/setup.md",
        "inline `@gitbot fix` code",
        "``a ` @gitbot`` double-backtick span",
        "```\n@gitbot fix\n```",
        "~~~~\n@gitbot fix\n~~~~",
        "> @gitbot fix it\n\nI quoted the earlier comment",
        "<!-- @gitbot fix --> hidden",
        "@\u200bgitbot broken by a zero-width space",
    ],
)
def test_code_quotes_hidden_text_and_other_words_are_not_requests(text):
    assert find_request(text) is None


def test_an_unclosed_fence_hides_the_rest_and_an_unmatched_backtick_hides_nothing():
    assert find_request("```\ncode\n@gitbot fix") is None
    assert find_request("a ` b @gitbot fix") is not None


@pytest.mark.parametrize(
    "text",
    [
        "@gitbot fix this",
        "Summary: ask @gitbot, or @GITBOT again; (@gitbot) @gitbot.",
        "quoted `@gitbot` and live @gitbot",
        "/cc @gitbot answer why",
    ],
)
def test_defused_text_reads_the_same_and_holds_no_live_phrase(text):
    defused = defuse(text)
    assert live_mentions(defused) == []
    assert defused.replace("\u200b", "") == text


def test_a_custom_phrase_is_matched_and_defused_as_a_whole_word():
    assert find_request("/fixit now please", "/fixit").mode == "auto"
    assert find_request("see a/fixit/b", "/fixit") is None
    assert live_mentions(defuse("run /fixit", "/fixit"), "/fixit") == []


@pytest.mark.parametrize(
    "phrase,ok",
    [("@gitbot", True), ("/fix", True), ("a", False), ("two words", False), ("`x`", False), ("> x", False)],
)
def test_which_phrases_are_accepted(phrase, ok):
    assert valid_phrase(phrase) is ok
