"""The loopback Messages API (tests/fakes/messages_api.py) against the real SDK: replies, streaming,
validation, faults and prompt caching. Token numbers are recomputed here from the documented rule."""

from __future__ import annotations

import http.client
import json
import math
import socket
from typing import Any

import anthropic
import pytest

from tests.fakes.messages_api import FakeMessagesAPI, fault, message_turn, text_turn, tool_turn

MODEL = "claude-sonnet-5-5"
OTHER_MODEL = "claude-opus-5-5"
EPHEMERAL = {"type": "ephemeral"}
TOOLS = [
    {"name": "read_file", "description": "Read a file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "list_files", "description": "List files.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
]
BIG_SYSTEM = "You are a careful coding agent. " * 160  # ~5,000 characters: well over 1,024 tokens


# -- helpers: an independent implementation of the documented token rule ------------------------


def _strip(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    out = {k: v for k, v in block.items() if k != "cache_control"}
    if isinstance(out.get("content"), list):
        out["content"] = [_strip(b) for b in out["content"]]
    return out


def tokens(block: Any) -> int:
    if isinstance(block, str):
        block = {"type": "text", "text": block}
    text = json.dumps(_strip(block), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return math.ceil(len(text) / 4)


def total(*blocks: Any) -> int:
    return sum(tokens(b) for b in blocks)


def client_for(api: FakeMessagesAPI, **kwargs: Any) -> anthropic.Anthropic:
    kwargs.setdefault("api_key", api.api_key)
    return anthropic.Anthropic(base_url=api.url, max_retries=0, timeout=10, **kwargs)


def user(*blocks: Any) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks]}


def valid_body(**changes: Any) -> dict:
    body = {"model": MODEL, "max_tokens": 100, "tools": TOOLS, "system": "You are a test.",
            "messages": [user("hello")]}
    body.update(changes)
    return body


def create(client: anthropic.Anthropic, body: dict, *, stream: bool = False):
    """The SDK's messages.create or messages.stream(...).get_final_message() for a body."""
    if stream:
        with client.messages.stream(**body) as s:
            return s.get_final_message()
    return client.messages.create(**body)


def raw_post(api: FakeMessagesAPI, path: str, body: bytes, headers: dict[str, str]):
    host, port = api.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("POST", path, body=body, headers={"content-type": "application/json", **headers})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response, data


def sse_events(data: bytes) -> list[tuple[str, dict]]:
    events = []
    for chunk in data.decode().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def dump(message: Any) -> list[dict]:
    return [b.model_dump(mode="json", exclude_none=True) for b in message.content]


# -- replies ------------------------------------------------------------------------------------


def test_tool_turn_round_trip_with_create():
    turn = tool_turn(("read_file", {"path": "stats.py"}), ("list_files", {"path": "."}), text="Let me look.")
    with FakeMessagesAPI([turn, text_turn("Done.")]) as api:
        client = client_for(api)
        first = client.messages.create(**valid_body())
        assert first.stop_reason == "tool_use" and first.model == MODEL and first.role == "assistant"
        content = dump(first)
        assert [b["type"] for b in content] == ["text", "tool_use", "tool_use"]
        assert content[0]["text"] == "Let me look."
        assert [(b["name"], b["input"]) for b in content[1:]] == [("read_file", {"path": "stats.py"}),
                                                                  ("list_files", {"path": "."})]
        ids = [b["id"] for b in content[1:]]
        assert all(i.startswith("toolu_") and len(i) > 10 for i in ids) and ids[0] != ids[1]
        assert first.usage.input_tokens == total(*TOOLS, "You are a test.", "hello")
        assert first.usage.output_tokens == total(*content)
        assert first.usage.cache_creation_input_tokens == 0 and first.usage.cache_read_input_tokens == 0
        results = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids]
        second = client.messages.create(**valid_body(messages=[
            user("hello"), {"role": "assistant", "content": content}, user(*results)]))
        assert dump(second) == [{"type": "text", "text": "Done."}] and second.stop_reason == "end_turn"
    assert api.errors == [] and api.remaining_turns == 0
    assert [r["status"] for r in api.requests] == [200, 200]
    assert api.requests[0]["path"] == "/v1/messages"
    assert api.requests[0]["body"] == valid_body()
    assert api.requests[0]["headers"]["authorization"] == "Bearer test-key"
    assert api.requests[0]["headers"]["anthropic-version"]
    assert api.requests[0]["usage"] == first.usage.model_dump(exclude_none=True)


def test_stream_get_final_message_matches_create():
    turn = tool_turn(("read_file", {"path": "a.py"}), text="Reading a file with a longer explanation first.")
    results = []
    for stream in (False, True):
        with FakeMessagesAPI([turn]) as api:
            results.append(create(client_for(api), valid_body(), stream=stream))
        assert api.requests[0]["body"].get("stream") is (True if stream else None)
        assert api.errors == []
    plain, streamed = results
    assert dump(streamed) == dump(plain)
    assert streamed.stop_reason == plain.stop_reason == "tool_use"
    assert streamed.usage.model_dump() == plain.usage.model_dump()
    assert streamed.model == MODEL


def test_raw_sse_event_order():
    content = [{"type": "thinking", "thinking": "Consider the options carefully.", "signature": "sig-abc"},
               {"type": "text", "text": "Here is a reasonably long answer."},
               {"type": "tool_use", "id": "toolu_fixed01", "name": "read_file", "input": {"path": "stats.py"}}]
    with FakeMessagesAPI([message_turn(content, stop_reason="tool_use")]) as api:
        body = json.dumps(valid_body(stream=True, messages=[user("hello")])).encode()
        response, data = raw_post(api, "/v1/messages", body, {"x-api-key": api.api_key,
                                                               "anthropic-version": "2026-10-21"})
    assert response.status == 200
    assert response.getheader("content-type").startswith("text/event-stream")
    assert response.getheader("connection") == "close"
    events = sse_events(data)
    assert all(data["type"] == name for name, data in events)
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["usage"]["output_tokens"] == 1
    assert start["usage"]["input_tokens"] == total(*TOOLS, "You are a test.", "hello")
    blocks = names[2:-2]
    per_index: dict[int, list] = {}
    for name, data in events[2:-2]:
        per_index.setdefault(data["index"], []).append((name, data))
    assert sorted(per_index) == [0, 1, 2]
    assert blocks == [n for i in (0, 1, 2) for n, _ in per_index[i]]  # blocks do not interleave
    for i in (0, 1, 2):
        kinds = [n for n, _ in per_index[i]]
        assert kinds[0] == "content_block_start" and kinds[-1] == "content_block_stop"
        assert set(kinds[1:-1]) == {"content_block_delta"}
    thinking = [d["delta"] for n, d in per_index[0] if n == "content_block_delta"]
    assert "".join(d["thinking"] for d in thinking if d["type"] == "thinking_delta") == content[0]["thinking"]
    assert thinking[-1] == {"type": "signature_delta", "signature": "sig-abc"}
    text = [d["delta"] for n, d in per_index[1] if n == "content_block_delta"]
    assert len(text) > 1 and {d["type"] for d in text} == {"text_delta"}
    assert "".join(d["text"] for d in text) == content[1]["text"]
    assert per_index[2][0][1]["content_block"] == {**content[2], "input": {}}
    partial = [d["delta"]["partial_json"] for n, d in per_index[2] if n == "content_block_delta"]
    assert json.loads("".join(partial)) == {"path": "stats.py"}
    delta = events[-2][1]
    assert delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert delta["usage"]["output_tokens"] == total(*content)


def test_streamed_thinking_block_is_rebuilt_by_the_sdk():
    content = [{"type": "thinking", "thinking": "Step one, then step two.", "signature": "c2lnbmF0dXJl"},
               {"type": "text", "text": "Answer."}]
    with FakeMessagesAPI([message_turn(content)]) as api:
        message = create(client_for(api), valid_body(), stream=True)
    assert dump(message) == content and message.stop_reason == "end_turn"


def test_text_turns_and_output_token_counting():
    script = [text_turn(""), text_turn("cut off", stop_reason="max_tokens"),
              text_turn("counted by hand", usage_output_tokens=777),
              tool_turn(("read_file", {"path": "x"}), usage_output_tokens=5)]
    with FakeMessagesAPI(script) as api:
        client = client_for(api)
        empty, cut, fixed, tool = (client.messages.create(**valid_body()) for _ in range(4))
    assert empty.content == [] and empty.usage.output_tokens == 1  # at least one output token
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens == tokens("cut off")
    assert fixed.usage.output_tokens == 777 and tool.usage.output_tokens == 5


def test_a_repeated_turn_gets_fresh_tool_use_ids():
    turn = tool_turn(("read_file", {"path": "a.py"}))
    with FakeMessagesAPI([turn] * 3) as api:
        client = client_for(api)
        messages = [user("go")]
        ids = []
        for _ in range(3):
            reply = client.messages.create(**valid_body(messages=messages))
            block = dump(reply)[0]
            ids.append(block["id"])
            messages += [{"role": "assistant", "content": dump(reply)},
                         user({"type": "tool_result", "tool_use_id": block["id"], "content": "x"})]
    assert api.errors == []
    assert ids[0] == turn["content"][0]["id"] and len(set(ids)) == 3


def test_prefill_and_pause_turn_continuation_are_accepted():
    paused = [{"type": "text", "text": "thinking…"}]
    with FakeMessagesAPI([message_turn(paused, stop_reason="pause_turn"), text_turn("continued")]) as api:
        client = client_for(api)
        first = client.messages.create(**valid_body())
        assert first.stop_reason == "pause_turn" and dump(first) == paused
        second = client.messages.create(**valid_body(messages=[user("hello"),
                                                               {"role": "assistant", "content": dump(first)}]))
    assert dump(second) == [{"type": "text", "text": "continued"}]
    assert api.errors == []


def test_env_total_usage_and_lifecycle():
    api = FakeMessagesAPI([text_turn("one"), text_turn("two", usage_output_tokens=10)]).start()
    try:
        assert api.env() == {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "test-key"}
        assert api.url.startswith("http://127.0.0.1:")
        client = client_for(api)
        a = client.messages.create(**valid_body())
        b = client.messages.create(**valid_body(system="Another system prompt."))
    finally:
        api.stop()
    keys = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    assert api.total_usage() == {k: getattr(a.usage, k) + getattr(b.usage, k) for k in keys}
    assert api.total_usage()["output_tokens"] == tokens("one") + 10
    with pytest.raises(anthropic.APIConnectionError):  # stopped: nothing listens any more
        client.messages.create(**valid_body())


def test_turn_helpers_reject_mistakes():
    with pytest.raises(ValueError):
        fault("418")
    with pytest.raises(ValueError):
        fault("429", retry_afterr=1)
    with pytest.raises(ValueError):
        tool_turn()
    with pytest.raises(ValueError):
        FakeMessagesAPI([{"kind": "nonsense"}])
    assert fault("429")["retry_after_ms"] == 1 and fault("429", retry_after=2)["retry_after_ms"] == 2000
    assert fault("429", retry_after_ms=None)["retry_after_ms"] is None


# -- validation ---------------------------------------------------------------------------------

TU = {"type": "tool_use", "id": "toolu_A", "name": "read_file", "input": {"path": "a"}}
TR = {"type": "tool_result", "tool_use_id": "toolu_A", "content": "ok"}
MARK = {"cache_control": EPHEMERAL}


def _answered(*assistant: dict, answer: list[dict]) -> list[dict]:
    return [user("hi"), {"role": "assistant", "content": list(assistant)}, user(*answer)]


INVALID = {
    "unknown field": ({"foo": 1}, "foo: Extra inputs are not permitted"),
    "temperature": ({"temperature": 0.5}, "temperature: is not supported"),
    "top_p": ({"top_p": 0.9}, "top_p: is not supported"),
    "top_k": ({"top_k": 5}, "top_k: is not supported"),
    "model missing": ({"model": None}, "model: Field required"),
    "max_tokens missing": ({"max_tokens": None}, "max_tokens: Field required"),
    "max_tokens zero": ({"max_tokens": 0}, "max_tokens: Input should be a positive integer"),
    "messages missing": ({"messages": None}, "messages: Field required"),
    "messages empty": ({"messages": []}, "messages: at least one message is required"),
    "first role assistant": ({"messages": [{"role": "assistant", "content": "hi"}]},
                             'messages.0.role: roles must alternate between "user" and "assistant"'),
    "two user messages": ({"messages": [user("a"), user("b")]}, "messages.1.role: roles must alternate"),
    "tool_use in a user message": ({"messages": [user(TU)]},
                                   "messages.0.content.0.type: 'tool_use' is not a valid content block type"),
    "image in an assistant message": (
        {"messages": [user("a"), {"role": "assistant", "content": [{"type": "image", "source": {}}]}]},
        "'image' is not a valid content block type in a 'assistant' message"),
    "empty text": ({"messages": [user("")]}, "messages.0.content.0.text: text content blocks must be non-empty"),
    "whitespace text": ({"messages": [user(" \n ")]}, "text content blocks must contain non-whitespace text"),
    "whitespace string content": ({"messages": [{"role": "user", "content": "   "}]},
                                  "messages.0.content: text content blocks must contain non-whitespace"),
    "tool_use not answered": ({"messages": _answered(TU, answer=["no result"])},
                              ("messages.1: `tool_use` ids were found without `tool_result` blocks "
                               "immediately after: toolu_A")),
    "tool_result after text": ({"messages": _answered(TU, answer=["first", TR])},
                               "messages.2.content.1: `tool_result` blocks must come first"),
    "tool_result for an unknown id": (
        {"messages": _answered(TU, answer=[TR, {**TR, "tool_use_id": "toolu_X"}])},
        "unexpected `tool_use_id` found in `tool_result` blocks: toolu_X"),
    "duplicate tool_use ids": ({"messages": _answered(TU, TU, answer=[TR])}, "`tool_use` ids must be unique"),
    "ends on an unanswered tool_use": ({"messages": [user("hi"), {"role": "assistant", "content": [TU]}]},
                                       "messages.1: `tool_use` ids were found without `tool_result`"),
    "tool blocks without tools": ({"tools": None, "messages": _answered(TU, answer=[TR])},
                                  "Requests which include `tool_use` or `tool_result` blocks must define tools."),
    "bad tool name": ({"tools": [{**TOOLS[0], "name": "read file"}]},
                      "tools.0.name: String should match pattern"),
    "duplicate tool names": ({"tools": [TOOLS[0], TOOLS[0]]}, "tools: Tool names must be unique"),
    "tool without input_schema": ({"tools": [{"name": "t"}]}, "tools.0.input_schema: Field required"),
    "five breakpoints": (
        {"system": [{"type": "text", "text": "s", **MARK}],
         "tools": [{**TOOLS[0], **MARK}, {**TOOLS[1], **MARK}],
         "messages": [user({"type": "text", "text": "a", **MARK}, {"type": "text", "text": "b", **MARK})]},
        "A maximum of 4 blocks with cache_control may be provided. Found 5."),
    "automatic caching takes a fifth slot": (
        {"system": [{"type": "text", "text": "s", **MARK}], "tools": [TOOLS[0], {**TOOLS[1], **MARK}],
         "cache_control": EPHEMERAL,
         "messages": [user({"type": "text", "text": "a", **MARK}, {"type": "text", "text": "b", **MARK}, "c")]},
        "A maximum of 4 blocks with cache_control may be provided. Found 5."),
    "bad ttl": ({"system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral", "ttl": "10m"}}]},
                "system.0.cache_control.ttl: Input should be '5m' or '1h'"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(INVALID))
def test_invalid_requests_are_refused_without_consuming_the_script(case: str):
    changes, expected = INVALID[case]
    body = valid_body(**changes)
    body = {k: v for k, v in body.items() if v is not None}
    with FakeMessagesAPI([text_turn("still here")]) as api:
        client = client_for(api)
        with pytest.raises(anthropic.BadRequestError) as raised:
            client.post("/v1/messages", body=body, cast_to=object)
        assert api.remaining_turns == 1
        assert raised.value.body["error"]["type"] == "invalid_request_error"
        assert expected in raised.value.body["error"]["message"]
        assert len(api.errors) == 1 and api.errors[0].startswith("/v1/messages: 400 invalid_request_error: ")
        assert expected in api.errors[0]
        assert api.requests[0]["status"] == 400 and api.requests[0]["usage"] is None
        assert dump(client.messages.create(**valid_body())) == [{"type": "text", "text": "still here"}]
    assert api.remaining_turns == 0 and len(api.errors) == 1


VALID = {
    "four breakpoints with automatic caching on a marked last block": {
        "system": [{"type": "text", "text": "s", **MARK}], "tools": [TOOLS[0], {**TOOLS[1], **MARK}],
        "cache_control": EPHEMERAL,
        "messages": [user({"type": "text", "text": "a", **MARK}, {"type": "text", "text": "b", **MARK})]},
    "parallel results in another order, then text": {
        "messages": _answered(TU, {**TU, "id": "toolu_B"},
                              answer=[{**TR, "tool_use_id": "toolu_B"}, TR, "and a note"])},
    "a one-hour ttl and string content": {
        "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "messages": [{"role": "user", "content": "plain string"}]},
    "server tool without input_schema": {"tools": [*TOOLS, {"type": "web_search_20250305", "name": "web_search"}]},
    "ends with an assistant prefill": {"messages": [user("hi"), {"role": "assistant", "content": "Sure:"}]},
}


@pytest.mark.parametrize("case", list(VALID))
def test_valid_edge_cases_are_served(case: str):
    with FakeMessagesAPI([text_turn("fine")]) as api:
        reply = client_for(api).post("/v1/messages", body=valid_body(**VALID[case]), cast_to=object)
    assert api.errors == [] and reply["content"] == [{"type": "text", "text": "fine"}]


def test_validation_comes_before_a_scripted_fault():
    with FakeMessagesAPI([fault("500"), text_turn("ok")]) as api:
        client = client_for(api)
        with pytest.raises(anthropic.BadRequestError):
            client.post("/v1/messages", body=valid_body(temperature=1), cast_to=object)
        assert api.remaining_turns == 2
        with pytest.raises(anthropic.InternalServerError):
            client.messages.create(**valid_body())
        assert dump(client.messages.create(**valid_body()))[0]["text"] == "ok"
    assert [r["status"] for r in api.requests] == [400, 500, 200]
    assert [r["fault"] for r in api.requests] == [None, "500", None]


def test_wrong_key_is_401_and_either_auth_header_works():
    with FakeMessagesAPI([text_turn("a"), text_turn("b")], api_key="sk-right") as api:
        with pytest.raises(anthropic.AuthenticationError) as raised:
            client_for(api, api_key="sk-wrong").messages.create(**valid_body())
        assert raised.value.body["error"]["type"] == "authentication_error"
        assert api.remaining_turns == 2
        assert api.errors == ["/v1/messages: 401 authentication_error: invalid x-api-key"]
        assert client_for(api).messages.create(**valid_body()).content[0].text == "a"
        response, data = raw_post(api, "/v1/messages", json.dumps(valid_body()).encode(),
                                  {"x-api-key": "sk-right", "anthropic-version": "2026-10-21"})
        assert response.status == 200 and json.loads(data)["content"] == [{"type": "text", "text": "b"}]
    assert len(api.errors) == 1


def test_missing_version_header_and_bad_json():
    with FakeMessagesAPI([text_turn("a")]) as api:
        with pytest.raises(anthropic.BadRequestError) as raised:
            client_for(api).messages.create(**valid_body(), extra_headers={"anthropic-version": anthropic.omit})
        assert raised.value.body["error"]["message"] == "anthropic-version: header is required"
        response, data = raw_post(api, "/v1/messages", b"{not json",
                                  {"x-api-key": api.api_key, "anthropic-version": "2026-10-21"})
        assert response.status == 400 and "not valid JSON" in json.loads(data)["error"]["message"]
        assert api.remaining_turns == 1
    assert api.errors == ["/v1/messages: 400 invalid_request_error: anthropic-version: header is required",
                          "/v1/messages: 400 invalid_request_error: fake server: the request body is not valid JSON"]
    assert api.requests[1]["body"] is None


def test_unknown_path_is_404():
    with FakeMessagesAPI([text_turn("a")]) as api:
        client = client_for(api)
        with pytest.raises(anthropic.NotFoundError) as raised:
            client.post("/v1/complete", body={"prompt": "x"}, cast_to=object)
        assert raised.value.body["error"]["type"] == "not_found_error"
        with pytest.raises(anthropic.NotFoundError):
            client.get("/v1/models", cast_to=object)
    assert api.remaining_turns == 1
    assert [e.split(":")[0] for e in api.errors] == ["/v1/complete", "/v1/models"]
    assert all(" 404 not_found_error: " in e for e in api.errors)


def test_script_exhaustion_is_a_recorded_400():
    with FakeMessagesAPI([text_turn("only")]) as api:
        client = client_for(api)
        client.messages.create(**valid_body())
        with pytest.raises(anthropic.BadRequestError) as raised:
            client.messages.create(**valid_body())
    assert raised.value.body["error"]["message"] == "fake server: script exhausted"
    assert api.errors == ["/v1/messages: 400 invalid_request_error: fake server: script exhausted"]
    assert api.requests[1]["usage"] is None


def test_count_tokens():
    with FakeMessagesAPI([text_turn("a")]) as api:
        client = client_for(api)
        counted = client.messages.count_tokens(model=MODEL, system=BIG_SYSTEM, tools=TOOLS,
                                               messages=[user("hello", "world")])
        assert counted.input_tokens == total(*TOOLS, BIG_SYSTEM, "hello", "world")
        with pytest.raises(anthropic.BadRequestError):
            client.messages.count_tokens(model=MODEL, messages=[user("a"), user("b")])
        assert api.remaining_turns == 1
    assert api.requests[0]["path"] == "/v1/messages/count_tokens" and api.requests[0]["usage"] is None
    assert api.total_usage()["input_tokens"] == 0
    assert len(api.errors) == 1 and api.errors[0].startswith("/v1/messages/count_tokens: 400 ")


# -- faults -------------------------------------------------------------------------------------

FAULT_ERRORS: dict[str, tuple[type[BaseException], type[BaseException]]] = {
    "429": (anthropic.RateLimitError, anthropic.RateLimitError),
    "500": (anthropic.InternalServerError, anthropic.InternalServerError),
    "529": (anthropic.OverloadedError, anthropic.OverloadedError),
    "503": (anthropic.ServiceUnavailableError, anthropic.ServiceUnavailableError),
    "401": (anthropic.AuthenticationError, anthropic.AuthenticationError),
    "400": (anthropic.BadRequestError, anthropic.BadRequestError),
    "spend_limit": (anthropic.EnforcedSpendLimitReachedError, anthropic.EnforcedSpendLimitReachedError),
    "reset": (anthropic.APIConnectionError, anthropic.APIConnectionError),
    "garbage": (json.JSONDecodeError, json.JSONDecodeError),
    "stream_error": (anthropic.OverloadedError, anthropic.APIStatusError),
}


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("kind", list(FAULT_ERRORS))
def test_each_fault_raises_the_sdk_error_and_the_next_turn_is_served(kind: str, stream: bool):
    expected = FAULT_ERRORS[kind][1 if stream else 0]
    with FakeMessagesAPI([fault(kind), text_turn("after the fault")]) as api:
        client = client_for(api)
        with pytest.raises(Exception) as raised:
            create(client, valid_body(), stream=stream)
        assert type(raised.value) is expected, repr(raised.value)
        after = create(client, valid_body(), stream=stream)
    assert dump(after) == [{"type": "text", "text": "after the fault"}]
    assert api.errors == [] and api.remaining_turns == 0
    assert [r["fault"] for r in api.requests] == [kind, None]
    assert api.requests[0]["usage"] is None
    assert api.total_usage() == api.requests[1]["usage"]


def test_transient_fault_headers_and_body():
    script = [fault("429"), fault("529", retry_after=2), fault("503", retry_after_ms=None, message="try later")]
    with FakeMessagesAPI(script) as api:
        client = client_for(api)
        caught = []
        for _ in script:
            with pytest.raises(anthropic.APIStatusError) as raised:
                client.messages.create(**valid_body())
            caught.append(raised.value)
    first, second, third = (e.response.headers for e in caught)
    assert (first["x-should-retry"], first["retry-after"], first["retry-after-ms"]) == ("true", "0", "1")
    assert (second["retry-after"], second["retry-after-ms"]) == ("2", "2000")
    assert third["retry-after"] == "0" and "retry-after-ms" not in third
    assert caught[2].body["error"] == {"type": "api_error", "message": "try later"}
    assert caught[1].body["error"]["type"] == "overloaded_error"
    assert caught[0].body["type"] == "error" and caught[0].body["error"]["type"] == "rate_limit_error"
    assert caught[0].body["request_id"] == first["request-id"] and first["request-id"].startswith("req_")
    assert [e.status_code for e in caught] == [429, 529, 503]


def test_fatal_fault_bodies():
    with FakeMessagesAPI([fault("spend_limit"), fault("400"), fault("401")]) as api:
        client = client_for(api)
        caught = []
        for _ in range(3):
            with pytest.raises(anthropic.APIStatusError) as raised:
                client.messages.create(**valid_body())
            caught.append(raised.value)
    spend, invalid, auth = caught
    assert spend.status_code == 429 and spend.response.headers["x-should-retry"] == "false"
    assert spend.body["error"]["type"] == "rate_limit_error"
    assert spend.body["error"]["details"] == {"error_code": "enforced_spend_limit_reached"}
    assert invalid.body["error"] == {"type": "invalid_request_error",
                                     "message": "fake server: scripted invalid request"}
    assert auth.status_code == 401 and auth.body["error"]["type"] == "authentication_error"
    assert api.errors == []  # scripted faults are not the server's own refusals


def test_stream_error_arrives_after_a_200():
    with FakeMessagesAPI([fault("stream_error")]) as api, pytest.raises(anthropic.APIStatusError) as raised:
        create(client_for(api), valid_body(), stream=True)
    assert raised.value.status_code == 200
    assert raised.value.body["error"]["type"] == "overloaded_error"
    assert api.requests[0]["status"] == 200 and api.requests[0]["fault"] == "stream_error"


def test_reset_is_a_real_tcp_reset():
    with FakeMessagesAPI([fault("reset")]) as api:
        host, port = api.url.removeprefix("http://").split(":")
        body = json.dumps(valid_body()).encode()
        request = (f"POST /v1/messages HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                   f"x-api-key: {api.api_key}\r\nanthropic-version: 2026-10-21\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(request)
            with pytest.raises(ConnectionResetError):
                while sock.recv(4096):  # an orderly close would end with b"" instead
                    pass
    assert api.requests[0]["status"] is None and api.requests[0]["fault"] == "reset"
    assert api.remaining_turns == 0


# -- prompt caching -----------------------------------------------------------------------------


def _usage(message: Any) -> tuple[int, int, int]:
    u = message.usage
    return u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens


def test_rolling_breakpoint_conversation():
    system = [{"type": "text", "text": BIG_SYSTEM, **MARK}]
    t1 = tool_turn(("read_file", {"path": "a.py"}))
    t2 = tool_turn(("read_file", {"path": "b.py"}))
    with FakeMessagesAPI([t1, t2, text_turn("done")]) as api:
        client = client_for(api)
        u1 = {"type": "text", "text": "Fix the bug, please.", **MARK}
        r1 = client.messages.create(model=MODEL, max_tokens=100, tools=TOOLS, system=system, messages=[user(u1)])
        prefix1 = total(*TOOLS, system[0], u1)
        assert _usage(r1) == (0, prefix1, 0)

        a1 = {"role": "assistant", "content": dump(r1)}
        res1 = {"type": "tool_result", "tool_use_id": dump(r1)[0]["id"], "content": "contents of a.py " * 20}
        r2 = client.messages.create(model=MODEL, max_tokens=100, tools=TOOLS, system=system,
                                    messages=[user(u1), a1, user({**res1, **MARK})])
        prefix2 = prefix1 + total(*dump(r1), res1)
        assert _usage(r2) == (0, prefix2 - prefix1, prefix1)

        a2 = {"role": "assistant", "content": dump(r2)}
        res2 = {"type": "tool_result", "tool_use_id": dump(r2)[0]["id"], "content": "contents of b.py " * 20}
        note = {"type": "text", "text": "Trailing text after the last breakpoint."}
        r3 = client.messages.create(model=MODEL, max_tokens=100, tools=TOOLS, system=system,
                                    messages=[user({k: v for k, v in u1.items() if k != "cache_control"}), a1,
                                              user({**res1, **MARK}), a2, user({**res2, **MARK}, note)])
        prefix3 = prefix2 + total(*dump(r2), res2)
        assert _usage(r3) == (tokens(note), prefix3 - prefix2, prefix2)
    assert api.errors == []
    assert api.total_usage()["cache_read_input_tokens"] == prefix1 + prefix2


@pytest.mark.parametrize("distance,hit", [(19, True), (20, True), (21, False)])
def test_breakpoint_look_back(distance: int, hit: bool):
    blocks = [{"type": "text", "text": f"block number {i:02d}"} for i in range(30)]
    marked = 4

    def request(bp: int) -> dict:
        content = [dict(b, **MARK) if i == bp else b for i, b in enumerate(blocks[:bp + 1])]
        return {"model": MODEL, "max_tokens": 10, "messages": [user(*content)]}

    with FakeMessagesAPI([text_turn("a"), text_turn("b")], min_cacheable_tokens=1) as api:
        client = client_for(api)
        assert _usage(client.messages.create(**request(marked))) == (0, total(*blocks[:marked + 1]), 0)
        second = client.messages.create(**request(marked + distance))
    everything = total(*blocks[:marked + distance + 1])
    read = total(*blocks[:marked + 1]) if hit else 0
    assert _usage(second) == (0, everything - read, read)


def test_below_the_minimum_nothing_is_cached():
    body = {"model": MODEL, "max_tokens": 10, "system": [{"type": "text", "text": "short system", **MARK}],
            "messages": [user({"type": "text", "text": "hi", **MARK})]}
    size = total(body["system"][0], "hi")
    with FakeMessagesAPI([text_turn("a"), text_turn("b")]) as api:  # default minimum: 1,024 tokens
        client = client_for(api)
        assert _usage(client.messages.create(**body)) == (size, 0, 0)
        assert _usage(client.messages.create(**body)) == (size, 0, 0)
    assert api.errors == []


@pytest.mark.parametrize("extra,cached", [(0, True), (1, False)])
def test_the_minimum_is_inclusive(extra: int, cached: bool):
    body = {"model": MODEL, "max_tokens": 10, "messages": [user({"type": "text", "text": "x" * 400, **MARK})]}
    size = total("x" * 400)
    with FakeMessagesAPI([text_turn("a"), text_turn("b")], min_cacheable_tokens=size + extra) as api:
        client = client_for(api)
        client.messages.create(**body)
        second = client.messages.create(**body)
    assert _usage(second) == ((0, 0, size) if cached else (size, 0, 0))


def test_automatic_caching_marks_the_last_block():
    first = [user(BIG_SYSTEM)]
    later = [*first, {"role": "assistant", "content": "Understood."}, user("Next question.")]
    with FakeMessagesAPI([text_turn("a"), text_turn("b"), text_turn("c")]) as api:
        client = client_for(api)
        r1 = client.messages.create(model=MODEL, max_tokens=10, messages=first, cache_control=EPHEMERAL)
        r2 = client.messages.create(model=MODEL, max_tokens=10, messages=later, cache_control=EPHEMERAL)
        r3 = client.messages.create(model=MODEL, max_tokens=10, messages=later)  # no breakpoint at all
    size1 = total(BIG_SYSTEM)
    size2 = size1 + total("Understood.", "Next question.")
    assert _usage(r1) == (0, size1, 0)
    assert _usage(r2) == (0, size2 - size1, size1)
    assert _usage(r3) == (size2, 0, 0)
    assert api.requests[0]["body"]["cache_control"] == EPHEMERAL


def test_a_different_model_or_prefix_misses():
    tools = [TOOLS[0], {**TOOLS[1], **MARK}]
    body = {"max_tokens": 10, "tools": tools, "system": [{"type": "text", "text": BIG_SYSTEM, **MARK}],
            "messages": [user("hello")]}
    size = total(*tools, BIG_SYSTEM)
    changed = {**body, "system": [{"type": "text", "text": BIG_SYSTEM + " Changed.", **MARK}]}
    with FakeMessagesAPI([text_turn("x")] * 4, min_cacheable_tokens=1) as api:
        client = client_for(api)
        assert _usage(client.messages.create(model=MODEL, **body)) == (tokens("hello"), size, 0)
        other = client.messages.create(model=OTHER_MODEL, **body)
        same = client.messages.create(model=MODEL, **body)
        edited = client.messages.create(model=MODEL, **changed)
    assert _usage(other) == (tokens("hello"), size, 0)  # written again under the other model
    assert _usage(same) == (tokens("hello"), 0, size)
    tools_only = total(*tools)
    assert _usage(edited) == (tokens("hello"), total(changed["system"][0]), tools_only)
