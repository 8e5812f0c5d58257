"""The loop's Messages-style conversation in the OpenAI Chat Completions format, and back.

The loop keeps Anthropic content blocks. To Chat Completions: system blocks become one system message;
an assistant turn's `tool_use` blocks become its `tool_calls` (arguments as a JSON string); a user
turn's `tool_result` blocks become `tool` messages right after it, in order, and its text blocks one
user message after those. Back: text and `tool_calls` become `text` and `tool_use` blocks, and the
finish reason a stop_reason the loop knows. Cache markers are dropped: caching there is automatic.
"""

from __future__ import annotations

import json
import re
from typing import Any

FINISH_TO_STOP = {"tool_calls": "tool_use", "function_call": "tool_use", "stop": "end_turn",
                  "length": "max_tokens", "content_filter": "refusal"}
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def chat_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                              "parameters": t["input_schema"]}} for t in tools]


def chat_messages(system: list[dict[str, Any]], messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    system_text = "\n\n".join(b["text"] for b in system if b.get("type") == "text" and b.get("text"))
    if system_text:
        out.append({"role": "system", "content": system_text})
    for message in messages:
        blocks = _blocks(message["content"])
        if message["role"] == "assistant":
            out.append(_assistant(blocks))
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                out.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": _result_text(block)})
        texts = [b["text"] for b in blocks if b.get("type") == "text" and b.get("text")]
        if texts:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _assistant(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    text = "\n".join(b["text"] for b in blocks if b.get("type") == "text" and b.get("text"))
    calls = [{"id": b["id"], "type": "function",
              "function": {"name": b["name"], "arguments": json.dumps(b.get("input", {}), ensure_ascii=False)}}
             for b in blocks if b.get("type") == "tool_use"]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    elif not text:
        message["content"] = ""
    return message


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        content = "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return str(content)


def reply_blocks(text: str | None, calls: list[tuple[str | None, str, str]]) -> list[dict[str, Any]]:
    """Content blocks from a reply's text and its (id, name, JSON arguments) tool calls. A call without an
    id gets one (some servers omit it); arguments that are not a JSON object are passed on under
    `arguments_not_json`, so the tool's input check tells the model what went wrong."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for n, (call_id, name, arguments) in enumerate(calls):
        try:
            tool_input = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            tool_input = None
        if not isinstance(tool_input, dict):
            tool_input = {"arguments_not_json": arguments}
        content.append({"type": "tool_use", "id": call_id or f"call_gitbot_{n}", "name": name, "input": tool_input})
    return content


def stop_reason(finish_reason: str | None, has_tool_calls: bool) -> str | None:
    if finish_reason is None:
        return None
    if has_tool_calls:  # some servers say "stop" for a reply that calls tools
        return "tool_use"
    return FINISH_TO_STOP.get(finish_reason, "end_turn")


def text_tool_call(text: str, tool_names: set[str]) -> str | None:
    """The tool a reply names when it writes a call as text instead of calling it: what a model (or a
    server) without tool-calling support does. None when the text is ordinary prose."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    candidate = fenced.group(1) if fenced else stripped
    tagged = re.search(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", candidate, re.DOTALL)
    if tagged:
        candidate = tagged.group(1)
    try:
        data = json.loads(candidate)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    function = data.get("function")
    name = data.get("name") or (function.get("name") if isinstance(function, dict) else None)
    return name if isinstance(name, str) and name in tool_names else None
