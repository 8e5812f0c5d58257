"""The loopback Chat Completions API against the real openai SDK: replies, streamed tool-call deltas,
automatic caching numbers, the request rules and the faults."""

from __future__ import annotations

import json
import math

import openai
import pytest

from tests.fakes.messages_api import canonical_json, text_turn, tool_turn
from tests.fakes.openai_api import FakeChatCompletionsAPI, fault

pytestmark = pytest.mark.slow

TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
BIG = "You are a careful coding agent. " * 200


def client_for(api: FakeChatCompletionsAPI) -> openai.OpenAI:
    return openai.OpenAI(base_url=api.base_url, api_key=api.api_key, max_retries=0, timeout=10)


def tokens(item) -> int:
    return math.ceil(len(canonical_json(item)) / 4)


def test_parallel_tool_calls_plain_and_streamed():
    turn = tool_turn(("read_file", {"path": "a.py"}), ("read_file", {"path": "b.py"}), text="Both.")
    with FakeChatCompletionsAPI([turn, turn]) as api:
        client = client_for(api)
        messages = [{"role": "user", "content": "hi"}]
        plain = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        chunks = list(client.chat.completions.create(model="m", messages=messages, tools=TOOLS, stream=True,
                                                     stream_options={"include_usage": True}))
    choice = plain.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "Both."
    assert [json.loads(c.function.arguments) for c in choice.message.tool_calls] == [{"path": "a.py"}, {"path": "b.py"}]
    deltas: dict[int, str] = {}
    for chunk in chunks:
        for c in chunk.choices:
            for call in c.delta.tool_calls or []:
                deltas[call.index] = deltas.get(call.index, "") + (call.function.arguments or "")
    assert [json.loads(v) for _, v in sorted(deltas.items())] == [{"path": "a.py"}, {"path": "b.py"}]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0
    assert plain.usage.prompt_tokens == tokens(TOOLS[0]) + tokens(messages[0])


def test_cached_tokens_follow_the_prefix_rule():
    system = {"role": "system", "content": BIG}
    first = [system, {"role": "user", "content": "one"}]
    with FakeChatCompletionsAPI([text_turn("a"), text_turn("b")]) as api:
        client = client_for(api)
        one = client.chat.completions.create(model="m", messages=first)
        later = [*first, {"role": "assistant", "content": "a"}, {"role": "user", "content": "two"}]
        two = client.chat.completions.create(model="m", messages=later)
    assert one.usage.prompt_tokens_details.cached_tokens == 0
    shared = tokens(system) + tokens(first[1])
    assert two.usage.prompt_tokens_details.cached_tokens == shared // 128 * 128 > 0
    assert two.usage.prompt_tokens == shared + tokens(later[2]) + tokens(later[3])


@pytest.mark.parametrize("change,words", [
    ({"extra_body": {"best_of": 2}}, "Unrecognized request argument supplied: best_of"),
    ({"max_tokens": 5, "max_completion_tokens": 5}, "cannot both be set"),
    ({"stream_options": {"include_usage": True}}, "only allowed when 'stream' is enabled"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}, "two user messages"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]}, "before the conversation"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": {"path": "x"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"}]}, "expected a string"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
        {"role": "user", "content": "b"}]}, "did not have response messages: c1"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "c9", "content": "x"}]},
     "must be a response to a preceeding message"),
])
def test_requests_that_break_the_rules_are_refused(change: dict, words: str):
    with FakeChatCompletionsAPI([text_turn("never")]) as api, pytest.raises(openai.BadRequestError) as raised:
        client_for(api).chat.completions.create(**{"model": "m", "messages": [{"role": "user", "content": "x"}],
                                                   **change})
    assert words in raised.value.message and api.remaining_turns == 1 and len(api.errors) == 1


def test_a_wrong_key_is_401_unless_the_server_takes_any():
    with FakeChatCompletionsAPI([text_turn("never")]) as api, pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=api.base_url, api_key="sk-wrong", max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}])
    with FakeChatCompletionsAPI([text_turn("ok")], api_key=None) as api:
        reply = openai.OpenAI(base_url=api.base_url, api_key="anything", max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}])
    assert reply.choices[0].message.content == "ok"


@pytest.mark.parametrize("kind,error", [("429", openai.RateLimitError), ("500", openai.InternalServerError),
                                        ("503", openai.InternalServerError), ("401", openai.AuthenticationError),
                                        ("quota", openai.RateLimitError), ("reset", openai.APIConnectionError),
                                        ("tools_unsupported", openai.BadRequestError)])
def test_faults_raise_the_sdk_errors_and_the_next_turn_is_served(kind: str, error: type):
    with FakeChatCompletionsAPI([fault(kind, retry_after=2), text_turn("after")]) as api:
        client = client_for(api)
        with pytest.raises(error) as raised:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        after = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert after.choices[0].message.content == "after"
    if kind == "429":
        assert raised.value.response.headers["x-ratelimit-reset-requests"] == "2s"
    if kind == "quota":
        assert raised.value.code == "insufficient_quota"
