"""The shared retry rules: what a server asks us to wait, and what is fatal."""

from __future__ import annotations

import email.utils
import time

import pytest

from gitbot.llm.base import MalformedReply, ProviderError
from gitbot.llm.retry import Failure, retry_after, with_retries


@pytest.mark.parametrize("headers,seconds", [
    ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
    ({"retry-after": "2"}, 2.0),
    ({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"}, None),  # over the cap
    ({"x-ratelimit-reset-requests": "20ms", "x-ratelimit-reset-tokens": "1.5s"}, 1.5),
    ({"retry-after": "soon"}, None),
    ({"retry-after": "600"}, None),
    ({}, None),
])
def test_retry_after(headers: dict, seconds: float | None):
    assert retry_after(headers) == seconds


def test_retry_after_as_an_http_date():
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 3 <= retry_after({"retry-after": when}) <= 5


def test_an_unclassified_error_is_fatal_and_marked_unexpected():
    calls = []

    def send(remaining):
        calls.append(remaining)
        raise KeyError("nobody expected this")

    def classify(exc):
        return Failure(False, f"unexpected: {exc!r}", unexpected=True)

    with pytest.raises(ProviderError) as raised:
        with_retries(send, classify, deadline=None, sleep=lambda s: None)
    assert raised.value.unexpected and isinstance(raised.value.__cause__, KeyError) and len(calls) == 1


def test_a_malformed_reply_is_retried_whatever_the_provider_says():
    attempts = []

    def send(remaining):
        attempts.append(1)
        if len(attempts) < 3:
            raise MalformedReply("cut short")
        return "ok"

    outcome = with_retries(send, lambda exc: Failure(False, "never asked"), deadline=None, sleep=lambda s: None)
    assert (outcome.value, outcome.attempts) == ("ok", 3)
    assert outcome.retry_log == ["attempt 1: malformed reply: cut short", "attempt 2: malformed reply: cut short"]
