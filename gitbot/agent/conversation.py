"""The conversation: history, cache breakpoints, and eliding old observations.

Caching follows Anthropic's incremental pattern. The prefix tools → system is stable (no
timestamps) and carries one breakpoint; the newest user message carries a rolling breakpoint,
and the user message before it keeps one, so the next request finds the previous write within
the API's ~20-block look-back even after a reply with many tool calls. Three breakpoints of
the four allowed.

Eliding happens in batches: when the estimate nears the budget, every tool result except the
newest few is replaced by a one-line stub at once. The cached prefix is invalidated once per
batch, not at every step.
"""

from __future__ import annotations

import copy
import json
from typing import Any

EPHEMERAL = {"type": "ephemeral"}
KEEP_RECENT_OBSERVATIONS = 5
CHARS_PER_TOKEN_GUESS = 3.5  # before the first reply tells us the real ratio
LARGE_INPUT_CHARS = 400  # tool_use inputs longer than this are elided with their result


def _chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


class Conversation:
    def __init__(self, system: str, tools: list[dict[str, Any]], first_user_text: str):
        self.system_text = system
        self.tools = tools
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": first_user_text}]}]
        self.elided_ids: set[str] = set()
        # Calibration from the last reply: real prompt tokens for a known size in characters.
        self._tokens_per_char: float | None = None

    # -- history ----------------------------------------------------------------------------
    def add_assistant(self, content: list[dict[str, Any]]) -> None:
        if self.messages and self.messages[-1]["role"] == "assistant":
            # The continuation of a paused turn (pause_turn): the same assistant message goes on.
            self.messages[-1]["content"].extend(content)
        else:
            self.messages.append({"role": "assistant", "content": content})

    def add_user(self, blocks: list[dict[str, Any]]) -> None:
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages[-1]["content"].extend(blocks)  # keep roles alternating
        else:
            self.messages.append({"role": "user", "content": blocks})

    # -- requests ---------------------------------------------------------------------------
    def system_blocks(self) -> list[dict[str, Any]]:
        return [{"type": "text", "text": self.system_text, "cache_control": EPHEMERAL}]

    def request_messages(self) -> list[dict[str, Any]]:
        messages = copy.deepcopy(self.messages)
        user_indexes = [i for i, m in enumerate(messages) if m["role"] == "user"]
        for i in user_indexes[-2:]:
            content = messages[i]["content"]
            if isinstance(content, list) and content:
                content[-1]["cache_control"] = EPHEMERAL
        return messages

    def size_chars(self) -> int:
        return _chars(self.tools) + len(self.system_text) + _chars(self.messages)

    def calibrate(self, prompt_tokens: int, chars: int) -> None:
        if prompt_tokens > 0 and chars > 0:
            self._tokens_per_char = prompt_tokens / chars

    def estimate_tokens(self) -> int:
        ratio = self._tokens_per_char or 1 / CHARS_PER_TOKEN_GUESS
        return int(self.size_chars() * ratio) + 1

    # -- context management -----------------------------------------------------------------
    def fit(self, budget_tokens: int) -> int:
        """Elide old observations until the estimate is within the budget; returns how many were elided.

        Tries keeping the newest 5 observations, then fewer: a run with huge outputs must never
        send a request over the budget.
        """
        if self.estimate_tokens() <= budget_tokens:
            return 0
        elided = 0
        for keep in (KEEP_RECENT_OBSERVATIONS, 2, 0):
            elided += self._elide_all_but(keep)
            if self.estimate_tokens() <= budget_tokens:
                break
        return elided

    def _elide_all_but(self, keep: int) -> int:
        results = [b for m in self.messages[1:] if m["role"] == "user" and isinstance(m["content"], list)
                   for b in m["content"] if b.get("type") == "tool_result"]
        old = results[:-keep] if keep else results
        names = self._tool_names()
        count = 0
        for block in old:
            tool_id = block["tool_use_id"]
            if tool_id in self.elided_ids:
                continue
            self.elided_ids.add(tool_id)
            name = names.get(tool_id, "tool")
            block["content"] = f"[output of {name} elided to save context; run the tool again if you need it]"
            count += 1
        for message in self.messages:
            if message["role"] != "assistant":
                continue
            for block in message["content"]:
                if block.get("type") == "tool_use" and block["id"] in self.elided_ids \
                        and isinstance(block.get("input"), dict):
                    block["input"] = {k: (v if _chars(v) <= LARGE_INPUT_CHARS else "[elided]")
                                      for k, v in block["input"].items()}
        return count

    def _tool_names(self) -> dict[str, str]:
        return {b["id"]: b["name"] for m in self.messages if m["role"] == "assistant"
                for b in m["content"] if b.get("type") == "tool_use"}
