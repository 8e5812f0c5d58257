"""The conversation of an earlier run, rebuilt from its record so that a new run can continue it.

A follow-up request (a review comment on a pull request gitbot made) continues the run that made the
change: the same system prompt and tools, the same messages, and one new user message with the new
request. Sent unchanged, that prefix is what the provider cached while the earlier run worked, so the
new run reads it back from the cache instead of paying to send it afresh, and the model remembers
what it did and why.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from gitbot.agent.conversation import Conversation
from gitbot.record import load_events


def messages_of_run(run_dir: Path) -> list[dict[str, Any]] | None:
    """The messages of the recorded run, in order, ending with a user message (its last tool results);
    None when the record has no start or the run stopped in the middle of a reply."""
    try:
        events = list(load_events(run_dir))
    except (OSError, ValueError):
        return None
    start = next((e for e in events if e.get("event") == "run_start"), None)
    if start is None or not isinstance(start.get("first_message"), str):
        return None
    conversation = Conversation(system="", tools=[], first_user_text=start["first_message"])
    for event in events:
        kind = event.get("event")
        if kind == "history":  # the run itself continued an earlier one
            conversation.messages = copy.deepcopy(event["messages"])
        elif kind == "reply":
            conversation.add_assistant(event["content"])
        elif kind == "user":
            conversation.add_user(event["content"])
    messages = conversation.messages
    # A conversation the API would refuse to continue: a reply whose tool calls have no results.
    if messages[-1]["role"] != "user":
        return None
    return messages
