"""A loopback OpenAI Chat Completions API for tests: real HTTP, scripted replies, strict validation,
streaming with tool-call deltas, automatic prompt caching, faults per turn.

`FakeChatCompletionsAPI(script)` serves `POST /v1/chat/completions` on 127.0.0.1 so the real `openai`
SDK talks to it over a real socket (it reuses the Messages fake's server and lifecycle):

    with FakeChatCompletionsAPI([tool_turn(("read_file", {"path": "a.py"})), text_turn("done")]) as api:
        client = openai.OpenAI(base_url=api.base_url, api_key=api.api_key, max_retries=0)
        ...
    api.requests, api.errors, api.total_usage()

The script uses the Messages fake's turns (`tool_turn`, `text_turn`, `message_turn`), served in order, one
per valid request: text blocks become the message's `content` (joined by newlines), `tool_use` blocks its
`tool_calls` (ids `call_<random>`, arguments the JSON of the input), and the finish reason is
"tool_calls" when there are tool calls, else "stop" ("length" for a turn whose stop_reason is max_tokens).
`fault(kind)` (this module's) answers the next valid request with a failure instead:

- "429": rate_limit_exceeded, with x-ratelimit-remaining-requests 0 and x-ratelimit-reset-requests /
  -tokens of `retry_after` seconds ("0s" by default) and, when `retry_after_ms` is given, retry-after-ms;
  "500" server_error; "503" and "529" (the engine is overloaded): all transient;
- "401" invalid_api_key; "400" invalid_request_error; "quota" and "spend_limit" (429 insufficient_quota,
  which retrying does not fix); "tools_unsupported" (400 "… does not support tools", as Ollama says);
- "reset" (a TCP reset); "garbage" (200 whose body is not JSON; a stream whose data is not JSON);
  "no_sse" (200 with an HTML page); "stream_cut" (a stream cut part-way through a tool call, with neither
  finish_reason nor [DONE]; a reset when not streaming); "stream_error" (a stream that sends an `error`
  object after its first chunk; a 500 when not streaming); "missing_fields" (a completion without choices
  or usage; a stream that ends with [DONE] and no finish_reason).

Validation, as the real API does it (400 invalid_request_error, 401 for a wrong key unless the server was
made with api_key=None, as self-hosted servers take any key; 404 for another
path; each refusal appended to `errors` as "path: status type: message"): known fields only; a model and
a non-empty message list; not both max_tokens and max_completion_tokens; stream_options only with stream;
function tools with valid, unique names; roles system/developer/user/assistant/tool with the content each
allows, tool-call arguments as a JSON *string*; every assistant `tool_calls` answered by `tool` messages
with its ids right after it, and no `tool` message without one; and the roles in the order a chat
template needs them: system/developer first, then user, never two user or two assistant messages in a
row, an assistant only after a user or tool message.

Token counting (deterministic): each tool definition and each message costs ceil(len(canonical_json)/4)
tokens (the Messages fake's canonical JSON); `prompt_tokens` is their sum. The completion costs the same
over the reply message (at least 1) unless the turn sets `usage_output_tokens`. Caching is automatic, as
OpenAI's is: the tools and messages form a chain of prefixes; the longest prefix an earlier request sent
is read from the cache, rounded down to a multiple of 128 tokens, and only when the prompt has at least
`min_cacheable_tokens` (1,024); it is reported as `prompt_tokens_details.cached_tokens` (part of
`prompt_tokens`). Every prefix of every request is remembered.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from typing import Any

from tests.fakes.messages_api import (
    PROXY_PAGE,
    FakeMessagesAPI,
    _chunks,
    _invalid,
    _random_id,
    _Refusal,
    canonical_json,
)

CHAT_PATH = "/v1/chat/completions"
CHAT_FIELDS = frozenset({
    "model", "messages", "max_tokens", "max_completion_tokens", "tools", "tool_choice", "parallel_tool_calls",
    "stream", "stream_options", "temperature", "top_p", "n", "stop", "seed", "user", "metadata", "store",
    "response_format", "reasoning_effort", "prompt_cache_key", "frequency_penalty", "presence_penalty",
    "logprobs", "top_logprobs", "logit_bias", "service_tier", "safety_identifier", "verbosity"})
ROLES = ("system", "developer", "user", "assistant", "tool")
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
CACHE_BLOCK = 128
# kind -> (status, error type, code, message, transient)
FAULTS: dict[str, tuple[int, str, str | None, str, bool]] = {
    "429": (429, "requests", "rate_limit_exceeded", "Rate limit reached for requests (fake server).", True),
    "500": (500, "server_error", None, "The server had an error while processing your request.", True),
    "503": (503, "server_error", None, "The engine is currently overloaded, please try again later.", True),
    "529": (503, "server_error", None, "The engine is currently overloaded, please try again later.", True),
    "401": (401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.", False),
    "400": (400, "invalid_request_error", None, "fake server: scripted invalid request", False),
    "quota": (429, "insufficient_quota", "insufficient_quota",
              "You exceeded your current quota, please check your plan and billing details.", False),
    "tools_unsupported": (400, "api_error", None, "registry.ollama.ai/library/tiny:latest does not support tools",
                          False),
    "reset": (0, "", None, "", True),
    "garbage": (200, "", None, "", True),
    "no_sse": (200, "", None, "", True),
    "stream_cut": (0, "", None, "", True),
    "stream_error": (500, "server_error", None, "The server had an error while processing your request.", True),
    "missing_fields": (200, "", None, "", True),
}
FAULTS["spend_limit"] = FAULTS["quota"]
FAULT_OPTIONS = frozenset({"retry_after", "retry_after_ms", "message"})


def fault(kind: str, **opts: Any) -> dict:
    """A failure that answers the next valid request (see the module docstring for the kinds)."""
    if kind not in FAULTS:
        raise ValueError(f"unknown fault kind {kind!r}; expected one of {sorted(FAULTS)}")
    unknown = set(opts) - FAULT_OPTIONS
    if unknown:
        raise ValueError(f"unknown fault options: {sorted(unknown)}")
    return {"kind": "fault", "fault": kind, "retry_after": opts.get("retry_after", 0),
            "retry_after_ms": opts.get("retry_after_ms"), "message": opts.get("message")}


def item_tokens(item: Any) -> int:
    return math.ceil(len(canonical_json(item)) / 4)


# ----------------------------------------------------------------------------------------- validation


def _check_text_parts(content: Any, where: str) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, list) or not content:
        raise _invalid(f"Invalid type for '{where}': expected a string or an array of content parts.")
    for k, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise _invalid(f"Invalid value for '{where}[{k}]': expected a text content part.")


def _validate_tools(tools: Any) -> None:
    if not isinstance(tools, list):
        raise _invalid("Invalid type for 'tools': expected an array.")
    names: set[str] = set()
    for k, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict):
            raise _invalid(f"Invalid value for 'tools[{k}]': expected a function tool.")
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise _invalid(f"Invalid 'tools[{k}].function.name': string does not match pattern. Expected a "
                           f"string that matches the pattern '^[a-zA-Z0-9_-]+$'.")
        if name in names:
            raise _invalid(f"Invalid 'tools': function names must be unique; {name!r} appears twice.")
        names.add(name)
        if "parameters" in function and not isinstance(function["parameters"], dict):
            raise _invalid(f"Invalid type for 'tools[{k}].function.parameters': expected an object.")


def _validate_message(message: Any, i: int) -> None:
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise _invalid(f"Invalid type for '{where}': expected an object.")
    role = message.get("role")
    if role not in ROLES:
        raise _invalid(f"Invalid value: '{role}'. Supported values are: {', '.join(repr(r) for r in ROLES)}.")
    content = message.get("content")
    if role in ("system", "developer", "user"):
        _check_text_parts(content, f"{where}.content")
    elif role == "tool":
        if not isinstance(message.get("tool_call_id"), str) or not message["tool_call_id"]:
            raise _invalid(f"Missing required parameter: '{where}.tool_call_id'.")
        _check_text_parts(content, f"{where}.content")
    else:
        calls = message.get("tool_calls")
        if content is not None:
            _check_text_parts(content, f"{where}.content")
        if calls is None and content is None:
            raise _invalid(f"Invalid value for '{where}': an assistant message needs content or tool_calls.")
        for k, call in enumerate(calls or []):
            cw = f"{where}.tool_calls[{k}]"
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not isinstance(function, dict):
                raise _invalid(f"Missing required parameter: '{cw}.id'.")
            if call.get("type") != "function" or not isinstance(function.get("name"), str):
                raise _invalid(f"Missing required parameter: '{cw}.function.name'.")
            if not isinstance(function.get("arguments"), str):
                raise _invalid(f"Invalid type for '{cw}.function.arguments': expected a string, but got "
                               f"{type(function.get('arguments')).__name__} instead.")


def _validate_order(messages: list[dict]) -> None:
    """Tool calls answered right after they are made, and roles in an order a chat template accepts."""
    previous = None
    pending: list[str] = []  # tool_call ids of the last assistant message not answered yet
    for i, message in enumerate(messages):
        role = message["role"]
        if pending and role != "tool":
            raise _invalid("An assistant message with 'tool_calls' must be followed by tool messages responding "
                           f"to each 'tool_call_id'. The following tool_call_ids did not have response "
                           f"messages: {', '.join(pending)}")
        if role == "tool":
            if message["tool_call_id"] not in pending:
                raise _invalid(f"Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                               f"message with 'tool_calls' (messages[{i}].tool_call_id "
                               f"{message['tool_call_id']!r}).")
            pending.remove(message["tool_call_id"])
        elif role in ("system", "developer"):
            if previous not in (None, "system", "developer"):
                raise _invalid(f"messages[{i}]: a {role} message must come before the conversation.")
        elif role == "user":
            if previous == "user":
                raise _invalid(f"messages[{i}]: conversation roles must alternate user/assistant; two user "
                               f"messages in a row.")
        else:  # assistant
            if previous not in ("user", "tool"):
                raise _invalid(f"messages[{i}]: an assistant message must follow a user or tool message.")
            pending = [call["id"] for call in message.get("tool_calls") or []]
            if len(set(pending)) != len(pending):
                raise _invalid(f"messages[{i}].tool_calls: duplicate tool_call ids.")
        previous = role
    if pending:
        raise _invalid("An assistant message with 'tool_calls' must be followed by tool messages responding to "
                       f"each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                       f"{', '.join(pending)}")


def validate_chat_request(body: Any) -> None:
    if not isinstance(body, dict):
        raise _invalid("fake server: the request body must be a JSON object")
    for key in body:
        if key not in CHAT_FIELDS:
            raise _invalid(f"Unrecognized request argument supplied: {key}")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _invalid("you must provide a model parameter")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _invalid("Invalid 'messages': empty array. Expected an array with minimum length 1.")
    if "max_tokens" in body and "max_completion_tokens" in body:
        raise _invalid("max_tokens and max_completion_tokens cannot both be set")
    for key in ("max_tokens", "max_completion_tokens"):
        value = body.get(key)
        if key in body and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise _invalid(f"Invalid '{key}': expected a positive integer.")
    if "stream_options" in body and body.get("stream") is not True:
        raise _invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
    if "tools" in body:
        _validate_tools(body["tools"])
    for i, message in enumerate(messages):
        _validate_message(message, i)
    _validate_order(messages)


# ----------------------------------------------------------------------------------------- the server


class FakeChatCompletionsAPI(FakeMessagesAPI):
    """A scripted Chat Completions API on 127.0.0.1:<free port>; a context manager (or .start() / .stop())."""

    def __init__(self, script: list[dict], *, api_key: str | None = "sk-test-openai-key",
                 min_cacheable_tokens: int = 1024):
        # api_key None: any key or none is accepted, as self-hosted servers (vLLM, Ollama) do.
        super().__init__(script, api_key=api_key)
        self.min_cacheable_tokens = min_cacheable_tokens
        self._prefixes: set[str] = set()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def env(self) -> dict[str, str]:
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self.api_key}

    def total_usage(self) -> dict[str, int]:
        keys = ("prompt_tokens", "completion_tokens", "cached_tokens")
        with self._lock:
            usages = [r["usage"] for r in self.requests if r["usage"]]
        return {k: sum(u[k] for u in usages) for k in keys}

    # -- request handling

    def _decide(self, method: str, path: str, headers: dict, raw: bytes, body: Any, record: dict) -> tuple:
        if method != "POST" or path != CHAT_PATH:
            raise _Refusal(404, "invalid_request_error", f"Invalid URL ({method} {path})")
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            raise _Refusal(401, "invalid_request_error", "Incorrect API key provided.")
        if body is None:
            raise _invalid("We could not parse the JSON body of your request.")
        validate_chat_request(body)
        if self._next >= len(self._script):
            raise _invalid("fake server: script exhausted")
        turn = self._script[self._next]
        self._next += 1
        streaming = body.get("stream") is True
        if turn["kind"] == "fault":
            record["fault"] = turn["fault"]
            return self._chat_fault(turn, streaming, body)
        return self._chat_reply(turn, body, streaming, record)

    def _account(self, body: dict) -> tuple[int, int]:
        """(prompt_tokens, cached_tokens) for this request; remembers its prefixes."""
        items = [("tool", t) for t in body.get("tools") or []] + [("message", m) for m in body["messages"]]
        chain = hashlib.sha256(("model:" + body["model"]).encode()).hexdigest()
        total, cached, seen = 0, 0, []
        for kind, item in items:
            total += item_tokens(item)
            chain = hashlib.sha256(f"{chain}|{kind}|{canonical_json(item)}".encode()).hexdigest()
            if chain in self._prefixes:
                cached = total
            seen.append(chain)
        self._prefixes.update(seen)
        if total < self.min_cacheable_tokens:
            return total, 0
        return total, cached // CACHE_BLOCK * CACHE_BLOCK

    def _chat_reply(self, turn: dict, body: dict, streaming: bool, record: dict) -> tuple:
        text = "\n".join(b["text"] for b in turn["content"] if b.get("type") == "text" and b.get("text"))
        calls = [{"id": _random_id("call_"), "type": "function",
                  "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
                 for b in turn["content"] if b.get("type") == "tool_use"]
        message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        finish = "tool_calls" if calls else ("length" if turn["stop_reason"] == "max_tokens" else "stop")
        prompt, cached = self._account(body)
        out = turn.get("usage_output_tokens")
        completion = max(1, item_tokens(message)) if out is None else int(out)
        record["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion, "cached_tokens": cached}
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                 "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                 "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                               "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
        base = {"id": _random_id("chatcmpl-"), "created": int(time.time()), "model": body["model"],
                "system_fingerprint": "fp_fake"}
        if not streaming:
            return self._json(200, {**base, "object": "chat.completion", "usage": usage,
                                    "choices": [{"index": 0, "message": message, "finish_reason": finish,
                                                 "logprobs": None}]}, _request_headers())
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = self._chunks(base, message, calls, finish, with_usage)
        if with_usage:
            chunks.append({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        return self._sse(chunks, done=True)

    def _chunks(self, base: dict, message: dict, calls: list[dict], finish: str | None,
                with_usage: bool) -> list[dict]:
        def chunk(delta: dict, finish_reason: str | None = None) -> dict:
            data = {**base, "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]}
            if with_usage:
                data["usage"] = None
            return data

        chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
        chunks += [chunk({"content": piece}) for piece in _chunks(message["content"])] if message["content"] else []
        for index, call in enumerate(calls):
            chunks.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                                 "function": {"name": call["function"]["name"], "arguments": ""}}]}))
            chunks += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                       for piece in _chunks(call["function"]["arguments"])]
        if finish is not None:
            chunks.append(chunk({}, finish))
        return chunks

    @staticmethod
    def _sse(chunks: list[dict | bytes], *, done: bool) -> tuple:
        frames = [c if isinstance(c, bytes) else f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
        if done:
            frames.append(b"data: [DONE]\n\n")
        return ("stream", 200, frames, {"content-type": "text/event-stream; charset=utf-8", **_request_headers()})

    def _chat_fault(self, turn: dict, streaming: bool, body: dict) -> tuple:
        kind = turn["fault"]
        status, error_type, code, default_message, _transient = FAULTS[kind]
        message = turn.get("message") or default_message
        base = {"id": _random_id("chatcmpl-"), "created": int(time.time()), "model": body["model"]}
        if kind == "reset" or (kind == "stream_cut" and not streaming):
            return ("reset", None)
        if kind == "no_sse":
            return ("raw", 200, PROXY_PAGE, {"content-type": "text/html; charset=utf-8"})
        if kind == "garbage":
            if streaming:
                return self._sse([b"data: {this is not json\n\n"], done=False)
            return ("raw", 200, b"<html>502 Bad Gateway: this is not JSON", {"content-type": "application/json"})
        if kind == "stream_cut":
            call = {"id": _random_id("call_"), "type": "function", "function": {"name": "read_file", "arguments": ""}}
            partial = self._chunks(base, {"content": None}, [call], None, False)
            partial.append({**base, "object": "chat.completion.chunk", "choices": [{
                "index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]},
                "finish_reason": None}]})
            return self._sse(partial, done=False)
        if kind == "missing_fields":
            if streaming:
                return self._sse(self._chunks(base, {"content": None}, [], None, False), done=True)
            return self._json(200, {**base, "object": "chat.completion"})
        if kind == "stream_error" and streaming:
            first = self._chunks(base, {"content": None}, [], None, False)
            return self._sse([*first, {"error": {"message": message, "type": error_type, "param": None,
                                                 "code": None}}], done=False)
        headers: dict[str, str] = {}
        if kind == "429":
            reset = f"{turn.get('retry_after', 0):g}s"
            headers.update({"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
                            "x-ratelimit-reset-requests": reset, "x-ratelimit-reset-tokens": reset})
            if turn.get("retry_after_ms") is not None:
                headers["retry-after-ms"] = f"{turn['retry_after_ms']:g}"
        return self._error(status, error_type, message, headers=headers, details={"code": code})

    def _error(self, status: int, error_type: str, message: str, *, headers: dict | None = None,
               details: dict | None = None) -> tuple:
        error = {"message": message, "type": error_type, "param": None, "code": (details or {}).get("code")}
        return self._json(status, {"error": error}, {**_request_headers(), **(headers or {})})


def _request_headers() -> dict[str, str]:
    return {"x-request-id": _random_id("req_"), "openai-processing-ms": "5"}
