"""The loop's conversation in Chat Completions form, checked by the fake server's validator (the real
API's rules), and replies back into the loop's blocks."""

from __future__ import annotations

import json

import pytest

from gitbot.llm.chat_format import chat_messages, chat_tools, reply_blocks, stop_reason, text_tool_call
from tests.fakes.messages_api import _Refusal
from tests.fakes.openai_api import validate_chat_request
from tests.llm.conftest import SYSTEM, TOOLS

CONVERSATION = [
    {"role": "user", "content": [{"type": "text", "text": "Fix it.", "cache_control": {"type": "ephemeral"}}]},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Two files at once."},
        {"type": "tool_use", "id": "call_a", "name": "read_file", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "call_b", "name": "read_file", "input": {"path": "b.py"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call_a", "content": "print('a')"},
        {"type": "tool_result", "tool_use_id": "call_b", "content": [{"type": "text", "text": "print('b')"}],
         "is_error": True},
        {"type": "text", "text": "Your reply was cut off; take a smaller step."}]},
    {"role": "assistant", "content": [{"type": "text", "text": "(empty reply)"}]},
    {"role": "user", "content": [{"type": "text", "text": "Continue."}]},
]


def body(messages):
    return {"model": "m", "messages": chat_messages(SYSTEM, messages), "tools": chat_tools(TOOLS),
            "max_completion_tokens": 100}


def test_a_conversation_with_parallel_calls_is_a_valid_request():
    request = body(CONVERSATION)
    validate_chat_request(request)
    roles = [m["role"] for m in request["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user", "assistant", "user"]
    calls = request["messages"][2]["tool_calls"]
    assert [(c["id"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("call_a", {"path": "a.py"}), ("call_b", {"path": "b.py"})]
    assert request["messages"][4] == {"role": "tool", "tool_call_id": "call_b", "content": "print('b')"}
    assert "cache_control" not in json.dumps(request)


def test_the_validator_refuses_what_the_real_api_refuses():
    unanswered = CONVERSATION[:2] + [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call_a", "content": "x"}]}]
    with pytest.raises(_Refusal, match="did not have response messages: call_b"):
        validate_chat_request(body(unanswered))
    orphan = {"model": "m", "messages": [{"role": "user", "content": "hi"},
                                         {"role": "tool", "tool_call_id": "call_z", "content": "x"}]}
    with pytest.raises(_Refusal, match="must be a response to a preceeding message"):
        validate_chat_request(orphan)


def test_replies_back_into_blocks():
    blocks = reply_blocks("Reading.", [("call_1", "read_file", '{"path": "a.py"}'), (None, "read_file", "{oops")])
    assert blocks == [{"type": "text", "text": "Reading."},
                      {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "a.py"}},
                      {"type": "tool_use", "id": "call_gitbot_1", "name": "read_file",
                       "input": {"arguments_not_json": "{oops"}}]
    assert stop_reason("stop", True) == "tool_use" and stop_reason("length", False) == "max_tokens"
    assert stop_reason(None, False) is None


@pytest.mark.parametrize("text,found", [
    ('{"name": "read_file", "arguments": {"path": "a.py"}}', "read_file"),
    ('```json\n{"name": "attempt_completion", "parameters": {}}\n```', "attempt_completion"),
    ('<tool_call>\n{"name": "read_file", "arguments": {}}\n</tool_call>', "read_file"),
    ('{"name": "rm_everything"}', None),
    ("I will now read the file.", None),
])
def test_a_tool_call_written_as_text(text: str, found: str | None):
    assert text_tool_call(text, {"read_file", "attempt_completion"}) == found
