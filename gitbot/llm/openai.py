"""OpenAI-compatible Chat Completions through the `openai` SDK: OpenAI, OpenRouter, vLLM, Ollama,
LM Studio — anything that serves /v1/chat/completions with tool calling.

The conversation is translated by gitbot/llm/chat_format.py. Long replies stream (with usage in the
last chunk) so no proxy sits on an idle connection for minutes. Usage: `prompt_tokens` counts the
cached part too, so input = prompt_tokens - cached_tokens and the cached part is a cache read. A server
or model that cannot call tools is a configuration problem, reported as such at once.
"""

from __future__ import annotations

import time
from typing import Any

from gitbot.llm.base import Endpoint, MalformedReply, ModelReply, ModelRequest
from gitbot.llm.chat_format import chat_messages, chat_tools, reply_blocks, stop_reason, text_tool_call
from gitbot.llm.retry import (
    BACKOFF_BASE_SECONDS,
    Failure,
    redirect_failure,
    retry_after,
    unexpected,
    with_retries,
)
from gitbot.llm.usage import Usage

STREAMING_ABOVE_MAX_TOKENS = 21_333
REQUEST_TIMEOUT_SECONDS = 600.0
# Words in a 4xx that mean the model or server cannot do tool calling (Ollama: "does not support tools";
# vLLM: '"auto" tool choice requires --enable-auto-tool-choice'; OpenRouter: "support tool use").
TOOLS_UNSUPPORTED_WORDS = ("support tools", "tool choice", "tool use", "tool_choice", "tool calling",
                           "function calling", "tools are not supported", "does not support function")
NO_TOOLS_HELP = ("gitbot needs a model that calls tools: pick one with tool calling, and on vLLM start the "
                 "server with --enable-auto-tool-choice --tool-call-parser <parser>")


class OpenAIProvider:
    is_replay = False

    def __init__(self, model: str, *, client: Any, endpoint: Endpoint | None = None,
                 max_output_tokens: int | None = None, backoff_base: float = BACKOFF_BASE_SECONDS,
                 sleep=time.sleep):
        import openai  # imported here, like every SDK: fast paths never need it

        self.model = model
        self._openai = openai
        self.client = client
        self.endpoint = endpoint or Endpoint("openai")
        self.max_output_tokens = max_output_tokens
        self.backoff_base = backoff_base
        self._sleep = sleep

    def complete(self, request: ModelRequest) -> ModelReply:
        max_tokens = min(request.max_tokens, self.max_output_tokens or request.max_tokens)
        kwargs: dict[str, Any] = {"model": self.model, "messages": chat_messages(request.system, request.messages),
                                  "max_completion_tokens": max_tokens}
        if request.tools:
            kwargs["tools"] = chat_tools(request.tools)
        tool_names = {t["name"] for t in request.tools}
        stream = max_tokens > STREAMING_ABOVE_MAX_TOKENS
        outcome = with_retries(lambda remaining: self._send(kwargs, stream, remaining, tool_names), self._classify,
                               deadline=request.deadline, backoff_base=self.backoff_base, sleep=self._sleep)
        reply = outcome.value
        reply.wait_seconds, reply.attempts, reply.retry_log = outcome.waited, outcome.attempts, outcome.retry_log
        return reply

    def _send(self, kwargs: dict[str, Any], stream: bool, remaining: float | None,
              tool_names: set[str]) -> ModelReply:
        client = self.client
        if remaining is not None and remaining < REQUEST_TIMEOUT_SECONDS:
            client = client.with_options(timeout=max(remaining, 1.0))
        if stream:
            text, refusal, calls, finish, usage, request_id = self._streamed(client, kwargs)
        else:
            completion = client.chat.completions.create(**kwargs)
            choices = getattr(completion, "choices", None)
            message = choices[0].message if choices else None
            if message is None:
                raise MalformedReply("the reply has no choices")
            text, refusal = message.content, getattr(message, "refusal", None)
            calls = [(c.id, c.function.name, c.function.arguments or "") for c in message.tool_calls or []]
            finish, usage = choices[0].finish_reason, getattr(completion, "usage", None)
            request_id = getattr(completion, "_request_id", None) or getattr(completion, "id", None)
        reason = stop_reason(finish, bool(calls))
        if reason is None:
            raise MalformedReply("the reply ended without a finish_reason: cut before its end")
        if usage is None:
            raise MalformedReply("the reply has no usage")
        if not calls and text and tool_names and text_tool_call(text, tool_names):
            raise ToolsUnsupported(f"the model wrote a call to {text_tool_call(text, tool_names)!r} as text "
                                   "instead of calling it: the server does not parse its tool calls")
        content = reply_blocks(text, calls)
        if refusal:
            content.insert(0, {"type": "text", "text": refusal})
            reason = "refusal"
        return ModelReply(content=content, stop_reason=reason, usage=_usage(usage), request_id=request_id,
                          raw_usage=_dump(usage))

    def _streamed(self, client: Any, kwargs: dict[str, Any]):
        text: list[str] = []
        refusal: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish = usage = request_id = None
        chunks = client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True})
        with chunks:
            request_id = chunks.response.headers.get("x-request-id")
            for chunk in chunks:
                request_id = request_id or getattr(chunk, "id", None)
                usage = getattr(chunk, "usage", None) or usage
                for choice in getattr(chunk, "choices", None) or []:
                    delta = choice.delta
                    if delta is not None:
                        text.append(delta.content or "")
                        refusal.append(getattr(delta, "refusal", None) or "")
                        for call in delta.tool_calls or []:
                            slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                            slot["id"] = call.id or slot["id"]
                            if call.function is not None:
                                slot["name"] += call.function.name or ""
                                slot["arguments"] += call.function.arguments or ""
                    finish = choice.finish_reason or finish
        ordered = [(c["id"] or None, c["name"], c["arguments"]) for _, c in sorted(calls.items())]
        return "".join(text) or None, "".join(refusal) or None, ordered, finish, usage, request_id

    def _classify(self, exc: Exception) -> Failure:
        o = self._openai
        if isinstance(exc, ToolsUnsupported):
            return Failure(False, f"configuration: {exc}. {NO_TOOLS_HELP}")
        if isinstance(exc, o.APIStatusError):
            status = exc.status_code
            message, code = _api_error(exc)
            headers = exc.response.headers if exc.response is not None else {}
            request_id = headers.get("x-request-id")
            where = f" (request id {request_id})" if request_id else ""
            if (redirect := redirect_failure(status, headers)) is not None:
                return redirect
            if status in (401, 403):
                return Failure(False, f"authentication failed ({status}): {message}{where}")
            if status == 429 and code == "insufficient_quota":
                return Failure(False, f"quota exhausted (429): {message}{where}")
            if status in (408, 409, 429) or status >= 500:
                return Failure(True, f"HTTP {status}: {message}{where}", retry_after(headers))
            if any(words in message.lower() for words in TOOLS_UNSUPPORTED_WORDS):
                return Failure(False, f"configuration: the model {self.model!r} cannot be used with tools "
                                      f"({status}: {message}). {NO_TOOLS_HELP}")
            return Failure(False, f"request rejected ({status}): {message}{where}")
        if isinstance(exc, o.APIConnectionError):
            return Failure(True, f"connection failed: {exc}")
        if isinstance(exc, o.APIResponseValidationError):
            return Failure(True, f"malformed reply: {exc}")
        if isinstance(exc, o.APIError):  # an `error` object inside a stream that started fine
            return Failure(True, f"error in the reply stream: {exc}")
        return unexpected(exc)


class ToolsUnsupported(Exception):
    """The model answered with a tool call written as text: it (or its server) cannot call tools."""


def _usage(usage: Any) -> Usage:
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    return Usage(input_tokens=max(0, prompt - cached), output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                 cache_read_input_tokens=cached)


def _dump(usage: Any) -> dict[str, Any] | None:
    dump = getattr(usage, "model_dump", None)
    return dump(mode="json", exclude_none=True) if dump else None


def _api_error(exc: Any) -> tuple[str, str | None]:
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), dict) else body
    if isinstance(error, dict):
        return str(error.get("message") or exc.message), error.get("code") if isinstance(error.get("code"), str) else None
    return str(getattr(exc, "message", exc)), None
