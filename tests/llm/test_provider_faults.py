"""Every fault kind on every provider, through the real SDK clients and the loopback fakes: transient
faults are retried within the budget and counted once, fatal ones end at once with a clear reason."""

from __future__ import annotations

import pytest

from gitbot.llm.base import ProviderError
from gitbot.llm.retry import MAX_CONSECUTIVE_FAILURES
from gitbot.llm.usage import Usage
from tests.fakes import messages_api, openai_api
from tests.fakes.messages_api import tool_turn
from tests.llm.conftest import PROVIDERS, request, server_usage, wired

pytestmark = pytest.mark.slow

# 429, 5xx, a reset, a body that is not JSON, a 200 HTML page (a proxy's), a stream cut part-way, a reply
# missing its fields: each must be survived by each provider, streamed and not.
TRANSIENT = ("429", "500", "503", "reset", "garbage", "no_sse", "stream_cut", "missing_fields", "stream_error")
REPLY = tool_turn(("read_file", {"path": "stats.py"}), text="Let me look.")


def fault(name: str, kind: str, **opts):
    return (openai_api if name == "openai" else messages_api).fault(kind, **opts)


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("kind", TRANSIENT)
@pytest.mark.parametrize("name", PROVIDERS)
def test_a_transient_fault_is_retried_and_the_reply_counted_once(name: str, kind: str, streamed: bool):
    with wired(name, [fault(name, kind), REPLY]) as w:
        reply = w.provider.complete(request(max_tokens=32_000 if streamed else 4096))
    assert w.api.errors == []
    assert reply.attempts == 2 and len(reply.retry_log) == 1
    assert reply.stop_reason == "tool_use"
    assert [b["input"] for b in reply.tool_uses] == [{"path": "stats.py"}]
    assert reply.text == "Let me look."
    assert [r["fault"] for r in w.api.requests] == [kind, None]
    # The request that failed was really sent streamed (or not), like the one that succeeded.
    streamed_bodies = [r["body"].get("stream", False) for r in w.api.requests if r["body"]]
    if name not in ("bedrock", "vertex"):  # the platforms carry it in the path; the fakes check it there
        assert streamed_bodies == [streamed, streamed]
    assert [reply.usage] == [Usage(**u) for u in server_usage(w.api)]


@pytest.mark.parametrize("name", PROVIDERS)
def test_six_consecutive_failures_give_up_with_the_last_reason(name: str):
    script = [fault(name, "500")] * MAX_CONSECUTIVE_FAILURES + [REPLY]
    with wired(name, script) as w, pytest.raises(ProviderError) as raised:
        w.provider.complete(request())
    assert f"gave up after {MAX_CONSECUTIVE_FAILURES} consecutive failures" in str(raised.value)
    assert "500" in str(raised.value)
    assert len(w.api.requests) == MAX_CONSECUTIVE_FAILURES
    assert not raised.value.unexpected


@pytest.mark.parametrize("kind,words", [("401", "authentication failed"), ("400", "request rejected")])
@pytest.mark.parametrize("name", ["anthropic", "bedrock", "openai"])
def test_a_fatal_fault_ends_at_once(name: str, kind: str, words: str):
    with wired(name, [fault(name, kind), REPLY]) as w, pytest.raises(ProviderError) as raised:
        w.provider.complete(request())
    assert len(w.api.requests) == 1
    assert words in str(raised.value)
    assert not raised.value.unexpected


def test_vertex_auth_and_validation_faults_are_fatal():
    for kind, words in (("401", "authentication failed (401)"), ("400", "request rejected (400)")):
        with wired("vertex", [fault("vertex", kind), REPLY]) as w, pytest.raises(ProviderError) as raised:
            w.provider.complete(request())
        assert words in str(raised.value) and len(w.api.requests) == 1


def test_openai_rate_limit_reset_headers_are_honoured():
    sleeps: list[float] = []
    with wired("openai", [fault("openai", "429", retry_after=2), REPLY]) as w:
        w.provider._sleep = sleeps.append
        w.provider.complete(request())
    assert sleeps == [2.0]
    with wired("openai", [fault("openai", "429", retry_after=30, retry_after_ms=1500), REPLY]) as w:
        sleeps.clear()
        w.provider._sleep = sleeps.append
        w.provider.complete(request())
    assert sleeps == [1.5]  # retry-after-ms, when the server sends it, is the more precise


def test_anthropic_retry_after_is_honoured_and_bedrock_without_one_backs_off():
    sleeps: list[float] = []
    with wired("anthropic", [fault("anthropic", "429", retry_after=3), REPLY]) as w:
        w.provider._sleep = sleeps.append
        w.provider.complete(request())
    with wired("bedrock", [fault("bedrock", "429"), REPLY]) as w:
        w.provider._sleep = sleeps.append
        w.provider.complete(request())
    assert sleeps[0] == 3.0
    assert 0 < sleeps[1] <= 0.001  # no header from Bedrock: the backoff (base 0.001 s here)


@pytest.mark.parametrize("name,words", [("anthropic", "spend limit reached (429)"),
                                        ("openai", "quota exhausted (429)"),
                                        ("bedrock", "request rejected (400): fake server: scripted service quota")])
def test_a_spend_limit_or_exhausted_quota_is_not_retried(name: str, words: str):
    with wired(name, [fault(name, "spend_limit"), REPLY]) as w, pytest.raises(ProviderError) as raised:
        w.provider.complete(request())
    assert words in str(raised.value) and len(w.api.requests) == 1
