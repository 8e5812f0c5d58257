"""The conversation: history, cache breakpoints, and eliding old observations.

Caching follows Anthropic's incremental pattern. The prefix tools → system is stable (no
timestamps) and carries one breakpoint; the newest user message carries a rolling breakpoint,
and the user message before it keeps one, so the next request finds the previous write within
the API's ~20-block look-back even after a reply with many tool calls. Three breakpoints of
the four allowed.

Eliding happens in batches: when the estimate nears the budget, every tool result except the
newest few is replaced by a one-line stub at once. The cached prefix is invalidated once per
batch, not at every step.

A message in the history is never changed in place: adding to the last message or eliding an old
observation puts a new message in its place. So a request can share the history's messages rather
than copy them all (the SDK copies what it is given before sending it), and each message's size is
measured once.
"""

from __future__ import annotations

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
        # size_chars' measures: id(message) -> (message, characters); the tools' (tools, characters).
        self._sizes: dict[int, tuple[dict[str, Any], int]] = {}
        self._tools_size: tuple[Any, int] = (None, 0)

    # -- history ---------------------------------------------------------------------------
    def add_assistant(self, content: list[dict[str, Any]]) -> None:
        if self.messages and self.messages[-1]["role"] == "assistant":
            # The continuation of a paused turn (pause_turn): the same assistant message goes on.
            self._extend_last(content)
        else:
            self.messages.append({"role": "assistant", "content": content})

    def add_user(self, blocks: list[dict[str, Any]]) -> None:
        if self.messages and self.messages[-1]["role"] == "user":
            self._extend_last(blocks)  # keep roles alternating
        else:
            self.messages.append({"role": "user", "content": blocks})

    def _extend_last(self, blocks: list[dict[str, Any]]) -> None:
        last = self.messages[-1]
        self.messages[-1] = {**last, "content": [*last["content"], *blocks]}

    # -- requests ---------------------------------------------------------------------------
    def system_blocks(self) -> list[dict[str, Any]]:
        return [{"type": "text", "text": self.system_text, "cache_control": EPHEMERAL}]

    def request_messages(self) -> list[dict[str, Any]]:
        """The history with the rolling cache breakpoints: the last two user messages are new copies
        that carry them, every other message is the history's own (never changed in place)."""
        messages = list(self.messages)
        user_indexes = [i for i, m in enumerate(messages) if m["role"] == "user"]
        for i in user_indexes[-2:]:
            content = messages[i]["content"]
            if isinstance(content, list) and content:
                marked = {**content[-1], "cache_control": EPHEMERAL}
                messages[i] = {**messages[i], "content": [*content[:-1], marked]}
        return messages

    def size_chars(self) -> int:
        """The characters of the tools, the system prompt and the messages as JSON. Each message is
        measured once (it never changes), and a list's JSON is its items' joined by ", " in brackets."""
        sizes, total = {}, 0
        for message in self.messages:
            known = self._sizes.get(id(message))
            if known is None or known[0] is not message:
                # The message itself is kept with its size: its id cannot be reused while it is held.
                known = (message, _chars(message))
            sizes[id(message)] = known
            total += known[1]
        self._sizes = sizes  # only the messages still in the history
        messages_chars = total + 2 + 2 * max(len(self.messages) - 1, 0)
        if self._tools_size[0] is not self.tools:
            self._tools_size = (self.tools, _chars(self.tools))
        return self._tools_size[1] + len(self.system_text) + messages_chars

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
        stubs = {}
        for block in old:
            tool_id = block["tool_use_id"]
            if tool_id not in self.elided_ids:
                self.elided_ids.add(tool_id)
                name = names.get(tool_id, "tool")
                stubs[tool_id] = f"[output of {name} elided to save context; run the tool again if you need it]"
        if stubs:
            self.messages = [self._elided(message, stubs) for message in self.messages]
        return len(stubs)

    @staticmethod
    def _elided(message: dict[str, Any], stubs: dict[str, str]) -> dict[str, Any]:
        """The message with the named tool results replaced by their stubs and the long inputs of those
        calls cut; the message itself when none of them is in it (messages are never changed in place)."""
        content = message["content"]
        if not isinstance(content, list):
            return message
        blocks, changed = [], False
        for block in content:
            if message["role"] == "user" and block.get("type") == "tool_result" and block["tool_use_id"] in stubs:
                block, changed = {**block, "content": stubs[block["tool_use_id"]]}, True
            elif message["role"] == "assistant" and block.get("type") == "tool_use" and block["id"] in stubs \
                    and isinstance(block.get("input"), dict):
                short = {k: (v if _chars(v) <= LARGE_INPUT_CHARS else "[elided]") for k, v in block["input"].items()}
                block, changed = {**block, "input": short}, True
            blocks.append(block)
        return {**message, "content": blocks} if changed else message

    def _tool_names(self) -> dict[str, str]:
        return {b["id"]: b["name"] for m in self.messages if m["role"] == "assistant"
                for b in m["content"] if b.get("type") == "tool_use"}
