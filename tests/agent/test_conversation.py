"""gitbot.agent.conversation: a request shares the history's messages instead of copying them, and
sizes are measured once per message. Both hold only because no message is changed in place: these
tests fail when one is."""

from __future__ import annotations

import copy
import json

from gitbot.agent.conversation import Conversation

TOOLS = [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}]


def _json_chars(conversation: Conversation) -> int:
    """size_chars as it was first written: every part encoded whole."""
    return (len(json.dumps(conversation.tools, ensure_ascii=False)) + len(conversation.system_text)
            + len(json.dumps(conversation.messages, ensure_ascii=False)))


def _call(n: int, path: str = "a.py") -> list[dict]:
    return [{"type": "text", "text": f"step {n}"},
            {"type": "tool_use", "id": f"call-{n}", "name": "read_file", "input": {"path": path}}]


def _result(n: int, text: str) -> list[dict]:
    return [{"type": "tool_result", "tool_use_id": f"call-{n}", "content": text}]


def _conversation(steps: int) -> Conversation:
    conversation = Conversation("system prompt ünïcode", TOOLS, "Fix the bug.")
    for n in range(steps):
        conversation.add_assistant(_call(n))
        conversation.add_user(_result(n, f"output {n} " + "é" * n))
    return conversation


def test_the_size_follows_every_change_to_the_history():
    conversation = _conversation(3)
    assert conversation.size_chars() == _json_chars(conversation)
    # The last user message grows (a nudge after the results) and a paused turn continues.
    conversation.add_user([{"type": "text", "text": "a nudge " * 20}])
    assert conversation.size_chars() == _json_chars(conversation)
    conversation.add_assistant(_call(3))
    conversation.add_assistant([{"type": "text", "text": "and more after a pause_turn"}])
    assert conversation.size_chars() == _json_chars(conversation)
    conversation.add_user(_result(3, "x" * 500))
    assert conversation.size_chars() == _json_chars(conversation)
    # Eliding shrinks old results and long inputs.
    conversation.add_assistant(_call(4, path="p" * 600))
    conversation.add_user(_result(4, "y" * 900))
    before = conversation.size_chars()
    assert conversation._elide_all_but(0) == 5
    assert conversation.size_chars() == _json_chars(conversation) < before
    # A history put in whole (resume, a follow-up) is measured afresh.
    conversation.messages = copy.deepcopy(_conversation(6).messages)
    assert conversation.size_chars() == _json_chars(conversation)


def test_a_request_is_a_snapshot_later_changes_do_not_reach():
    conversation = _conversation(7)
    first = conversation.request_messages()
    sent = json.dumps(first)
    history = json.dumps(conversation.messages)
    # Only the request carries the rolling cache breakpoints, on the last block of the last two user messages.
    assert "cache_control" not in history
    marked = [i for i, m in enumerate(first) for b in m["content"] if "cache_control" in b]
    assert marked == [len(first) - 3, len(first) - 1]
    conversation.add_user([{"type": "text", "text": "more"}])
    conversation.add_assistant(_call(7))
    conversation.fit(1)  # elides every observation
    assert json.dumps(first) == sent
    assert "elided to save context" in json.dumps(conversation.request_messages())


def test_eliding_leaves_the_newest_observations_and_counts_each_once():
    conversation = _conversation(8)
    assert conversation._elide_all_but(5) == 3
    assert conversation._elide_all_but(5) == 0
    contents = [b["content"] for m in conversation.messages if m["role"] == "user"
                for b in m["content"] if b.get("type") == "tool_result"]
    assert [c.startswith("[output of read_file elided") for c in contents] == [True] * 3 + [False] * 5
