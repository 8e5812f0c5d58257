"""A loopback Anthropic Messages API for tests: real HTTP, scripted replies, strict validation, caching.

`FakeMessagesAPI(script)` serves `POST /v1/messages` on 127.0.0.1 (stdlib `ThreadingHTTPServer` in a
daemon thread) so the real `anthropic` SDK talks to it over a real socket:

    with FakeMessagesAPI([tool_turn(("read_file", {"path": "a.py"})), text_turn("done")]) as api:
        client = anthropic.Anthropic(base_url=api.url, api_key=api.api_key, max_retries=0)
        ...
    api.requests, api.errors, api.total_usage()

The script is a list of turns, served in order, one per valid request:

- `tool_turn(*calls, text=None)`: optional leading text, then one `tool_use` block per `(name, input)`,
  stop_reason "tool_use". Ids are `toolu_<random>`; an id this server already served is replaced by a fresh
  one, so `[tool_turn(...)] * 5` still gives a conversation with unique ids.
- `text_turn(text, stop_reason="end_turn")`: one text block (no content at all for empty text).
- `message_turn(content, stop_reason="end_turn")`: any content blocks, served as given.
- `fault(kind, ...)`: answers the next *valid* request with a failure instead of a reply, then the script
  moves on. Kinds: "429" (rate_limit_error), "500" (api_error), "529" (overloaded_error), "503" (api_error),
  all transient, with `x-should-retry: true`, `retry-after` and `retry-after-ms`; "401"
  (authentication_error), "400" (invalid_request_error), "spend_limit" (429 rate_limit_error with
  `error.details.error_code = enforced_spend_limit_reached` and `x-should-retry: false`); "reset" (the TCP
  connection is closed with an RST, no answer); "garbage" (200 whose body is not JSON); "stream_error"
  (a streaming request gets 200 and then an SSE `error` event with overloaded_error; a non-streaming one
  gets a plain 529); "stream_cut" (a stream that starts and is cut off before message_stop; a reset when
  not streaming); "no_sse" (200 with an HTML page, content-type text/html, what a proxy's error page looks
  like, streaming or not); "missing_fields" (200 with a message that has no content, stop_reason or usage;
  a stream that goes from message_start to message_stop with no message_delta).

Platform fakes (tests/fakes/bedrock_api.py, vertex_api.py) subclass this server: `_accept` routes and
authenticates a request and returns its Messages body, `_stream` frames streamed events, `_error` shapes an
error body, `_garbage_stream` is a stream whose framing holds no usable event.

Validation (400 invalid_request_error; 401 for a wrong key; 404 for an unknown path) happens before any
turn is consumed, and every request the server refuses on its own is appended to `errors` as
"path: status type: message". A valid request after the script ran out gets 400 "fake server: script
exhausted" (also an error). Every request is recorded in `requests`.

Token counting (deterministic, documented so tests can compute exact numbers):

- every block costs ceil(len(canonical_json(block)) / 4) tokens, where canonical JSON has sorted keys, no
  spaces (separators "," and ":"), non-ASCII kept as is, and `cache_control` fields removed (from the block
  and from the blocks of its `content` list);
- a request is flattened into blocks: each tool definition, then the system blocks, then each message's
  content blocks in order; a string `system` or a string message content counts as one
  `{"type": "text", "text": ...}` block;
- output tokens are counted the same way over the reply's content (at least 1), unless the turn sets
  `usage_output_tokens`.

Prompt caching (`PromptCache`): each flattened block is tagged with its role ("tools", "system", "user",
"assistant") and chained into a prefix hash seeded with the model. Blocks carrying `cache_control` are
breakpoints; a top-level `cache_control` (automatic caching) makes the last block a breakpoint, which takes
one of the 4 slots unless that block is already marked. Reading: each breakpoint checks its own position
and the `cache_lookback_blocks` positions before it for a prefix written by an earlier request; the longest
hit over all breakpoints is `cache_read_input_tokens`. Writing: every breakpoint whose prefix reaches
`min_cacheable_tokens` stores its prefix; `cache_creation_input_tokens` is the tokens from the end of the
hit up to the last breakpoint written; `input_tokens` is the rest. Below the minimum nothing is cached and
nothing fails. A different model never hits.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
import secrets
import socket
import string
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

API_VERSION_HEADER = "anthropic-version"
MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"

MESSAGE_FIELDS = frozenset({
    "model", "messages", "max_tokens", "system", "tools", "tool_choice", "stream", "stop_sequences",
    "metadata", "cache_control", "thinking", "service_tier", "output_config", "container", "mcp_servers",
    "context_management", "inference_geo"})
COUNT_TOKENS_FIELDS = frozenset({
    "model", "messages", "system", "tools", "tool_choice", "thinking", "cache_control", "output_config",
    "mcp_servers", "context_management"})
SAMPLING_FIELDS = ("temperature", "top_p", "top_k")
BLOCK_TYPES = {
    "user": frozenset({"text", "image", "document", "tool_result", "search_result"}),
    "assistant": frozenset({"text", "tool_use", "thinking", "redacted_thinking", "server_tool_use",
                            "web_search_tool_result"}),
}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
MAX_CACHE_BREAKPOINTS = 4
CACHE_TTLS = ("5m", "1h")

# kind -> (HTTP status, error type, default message, transient?)
FAULTS: dict[str, tuple[int, str, str, bool]] = {
    "429": (429, "rate_limit_error", "fake server: scripted rate limit", True),
    "500": (500, "api_error", "fake server: scripted internal server error", True),
    "529": (529, "overloaded_error", "Overloaded", True),
    "503": (503, "api_error", "fake server: scripted service unavailable", True),
    "401": (401, "authentication_error", "fake server: scripted authentication failure (invalid x-api-key)",
            False),
    "400": (400, "invalid_request_error", "fake server: scripted invalid request", False),
    "spend_limit": (429, "rate_limit_error",
                    "fake server: scripted spend limit: you have reached your specified API usage limits",
                    False),
    "reset": (0, "", "", False),
    "garbage": (200, "", "", False),
    "stream_error": (529, "overloaded_error", "Overloaded", True),
    # A stream that starts fine and is cut off part-way (the connection closes before message_stop);
    # without streaming it is a reset.
    "stream_cut": (0, "", "", True),
    # A 200 whose body is an HTML page (what a proxy's error page looks like), for a stream or not.
    "no_sse": (200, "", "", True),
    # A 200 whose reply lacks required fields: no content, stop_reason or usage (a stream: no message_delta).
    "missing_fields": (200, "", "", True),
}
PROXY_PAGE = b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1><p>upstream unavailable</p></body></html>"
FAULT_OPTIONS = frozenset({"retry_after", "retry_after_ms", "message"})
_ID_ALPHABET = string.ascii_letters + string.digits


# ----------------------------------------------------------------------------------------------- turns


def _random_id(prefix: str, length: int = 24) -> str:
    return prefix + "".join(secrets.choice(_ID_ALPHABET) for _ in range(length))


def tool_turn(*calls: tuple[str, dict], text: str | None = None,
              usage_output_tokens: int | None = None) -> dict:
    """A reply that calls tools: optional leading text, then one tool_use block per (name, input)."""
    if not calls:
        raise ValueError("tool_turn needs at least one (name, input) call")
    content: list[dict] = [{"type": "text", "text": text}] if text else []
    for name, tool_input in calls:
        content.append({"type": "tool_use", "id": _random_id("toolu_"), "name": name, "input": dict(tool_input)})
    return {"kind": "reply", "content": content, "stop_reason": "tool_use",
            "usage_output_tokens": usage_output_tokens}


def text_turn(text: str, stop_reason: str = "end_turn", *, usage_output_tokens: int | None = None) -> dict:
    """A reply with one text block (no content at all when `text` is empty)."""
    content = [{"type": "text", "text": text}] if text else []
    return {"kind": "reply", "content": content, "stop_reason": stop_reason,
            "usage_output_tokens": usage_output_tokens}


def message_turn(content: list[dict], stop_reason: str = "end_turn", *,
                 usage_output_tokens: int | None = None) -> dict:
    """A reply with exactly these content blocks."""
    return {"kind": "reply", "content": copy.deepcopy(list(content)), "stop_reason": stop_reason,
            "usage_output_tokens": usage_output_tokens}


def fault(kind: str, **opts: Any) -> dict:
    """A failure that answers the next valid request (see the module docstring for the kinds).

    opts: retry_after (seconds, default 0), retry_after_ms (default max(1, retry_after * 1000); None omits
    the header), message (replaces the default error message).
    """
    if kind not in FAULTS:
        raise ValueError(f"unknown fault kind {kind!r}; expected one of {sorted(FAULTS)}")
    unknown = set(opts) - FAULT_OPTIONS
    if unknown:
        raise ValueError(f"unknown fault options: {sorted(unknown)}")
    retry_after = opts.get("retry_after", 0)
    retry_after_ms = opts["retry_after_ms"] if "retry_after_ms" in opts else max(1, round(retry_after * 1000))
    return {"kind": "fault", "fault": kind, "retry_after": retry_after, "retry_after_ms": retry_after_ms,
            "message": opts.get("message")}


# ------------------------------------------------------------------------------------- token counting


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, non-ASCII kept: the text whose length the token count is based on."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _strip_cache_control(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    out = {k: v for k, v in block.items() if k != "cache_control"}
    if isinstance(out.get("content"), list):
        out["content"] = [_strip_cache_control(b) for b in out["content"]]
    return out


def _has_cache_control(block: Any) -> bool:
    if not isinstance(block, dict):
        return False
    if "cache_control" in block:
        return True
    inner = block.get("content")
    return isinstance(inner, list) and any(isinstance(b, dict) and "cache_control" in b for b in inner)


def block_tokens(block: Any) -> int:
    """ceil(len(canonical_json(block without cache_control)) / 4)."""
    return math.ceil(len(canonical_json(_strip_cache_control(block))) / 4)


def _as_blocks(content: Any) -> list:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def flatten(body: dict) -> list[tuple[str, dict]]:
    """(role, block) for every block of the prompt, in cache-prefix order: tools, system, messages."""
    blocks: list[tuple[str, dict]] = [("tools", tool) for tool in body.get("tools") or []]
    if body.get("system"):
        blocks += [("system", block) for block in _as_blocks(body["system"])]
    for message in body.get("messages") or []:
        blocks += [(message["role"], block) for block in _as_blocks(message.get("content"))]
    return blocks


def count_input_tokens(body: dict) -> int:
    """All prompt tokens of a request (what count_tokens answers)."""
    return sum(block_tokens(block) for _, block in flatten(body))


def output_tokens(content: list[dict]) -> int:
    return max(1, sum(block_tokens(block) for block in content))


class PromptCache:
    """The server's prompt cache: prefix hashes written by earlier requests (see the module docstring)."""

    def __init__(self, min_cacheable_tokens: int = 1024, lookback_blocks: int = 20):
        self.min_cacheable_tokens = min_cacheable_tokens
        self.lookback_blocks = lookback_blocks
        self._entries: set[str] = set()

    def __len__(self) -> int:
        return len(self._entries)

    def account(self, body: dict) -> dict[str, int]:
        """input_tokens, cache_creation_input_tokens and cache_read_input_tokens for this request;
        writes the request's cacheable breakpoints."""
        blocks = flatten(body)
        cumulative: list[int] = []
        hashes: list[str] = []
        running = 0
        chain = hashlib.sha256(("model:" + str(body.get("model"))).encode()).hexdigest()
        for role, block in blocks:
            running += block_tokens(block)
            cumulative.append(running)
            chain = hashlib.sha256(f"{chain}|{role}|{canonical_json(_strip_cache_control(block))}".encode())
            chain = chain.hexdigest()
            hashes.append(chain)
        breakpoints = [i for i, (_, block) in enumerate(blocks) if _has_cache_control(block)]
        if body.get("cache_control") and blocks and (len(blocks) - 1) not in breakpoints:
            breakpoints.append(len(blocks) - 1)
        hit_end = -1
        for bp in breakpoints:
            for pos in range(bp, max(-1, bp - self.lookback_blocks - 1), -1):
                if hashes[pos] in self._entries:
                    hit_end = max(hit_end, pos)
                    break
        read = cumulative[hit_end] if hit_end >= 0 else 0
        written = [bp for bp in breakpoints if cumulative[bp] >= self.min_cacheable_tokens]
        for bp in written:
            self._entries.add(hashes[bp])
        last_written = max(written, default=-1)
        creation = cumulative[last_written] - read if last_written > hit_end else 0
        total = running
        return {"input_tokens": total - read - creation, "cache_creation_input_tokens": creation,
                "cache_read_input_tokens": read}


# ----------------------------------------------------------------------------------------- validation


class _Refusal(Exception):
    def __init__(self, status: int, error_type: str, message: str):
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message


def _invalid(message: str) -> _Refusal:
    return _Refusal(400, "invalid_request_error", message)


def _check_text(text: Any, where: str) -> None:
    if not isinstance(text, str):
        raise _invalid(f"{where}: Input should be a valid string")
    if not text:
        raise _invalid(f"{where}: text content blocks must be non-empty")
    if not text.strip():
        raise _invalid(f"{where}: text content blocks must contain non-whitespace text")


def _check_cache_control(cc: Any, where: str) -> None:
    if not isinstance(cc, dict) or cc.get("type") != "ephemeral":
        raise _invalid(f"{where}.cache_control.type: Input should be 'ephemeral'")
    if "ttl" in cc and cc["ttl"] not in CACHE_TTLS:
        raise _invalid(f"{where}.cache_control.ttl: Input should be '5m' or '1h'")


def _marked_blocks(where: str, block: Any) -> list[tuple[str, Any]]:
    """(location, cache_control) for a block and the blocks of its `content` list."""
    found: list[tuple[str, Any]] = []
    if isinstance(block, dict):
        if "cache_control" in block:
            found.append((where, block["cache_control"]))
        if isinstance(block.get("content"), list):
            for k, inner in enumerate(block["content"]):
                if isinstance(inner, dict) and "cache_control" in inner:
                    found.append((f"{where}.content.{k}", inner["cache_control"]))
    return found


def _validate_tools(tools: Any) -> None:
    if not isinstance(tools, list):
        raise _invalid("tools: Input should be a valid list")
    names: set[str] = set()
    for k, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _invalid(f"tools.{k}: Input should be a valid dictionary")
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise _invalid(f"tools.{k}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
        if name in names:
            raise _invalid(f"tools: Tool names must be unique; {name!r} is defined more than once")
        names.add(name)
        if tool.get("type", "custom") == "custom" and not isinstance(tool.get("input_schema"), dict):
            raise _invalid(f"tools.{k}.input_schema: Field required")


def _validate_system(system: Any) -> None:
    if isinstance(system, str):
        return
    if not isinstance(system, list):
        raise _invalid("system: Input should be a valid string or a list of text blocks")
    for k, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise _invalid(f"system.{k}.type: Input should be 'text'")
        _check_text(block.get("text"), f"system.{k}.text")


def _validate_block(block: Any, role: str, where: str) -> None:
    if not isinstance(block, dict):
        raise _invalid(f"{where}: Input should be a valid dictionary")
    kind = block.get("type")
    if kind not in BLOCK_TYPES[role]:
        raise _invalid(f"{where}.type: {kind!r} is not a valid content block type in a {role!r} message")
    if kind == "text":
        _check_text(block.get("text"), f"{where}.text")
    elif kind in ("tool_use", "server_tool_use"):
        if not isinstance(block.get("id"), str) or not block["id"]:
            raise _invalid(f"{where}.id: Field required")
        if not isinstance(block.get("name"), str):
            raise _invalid(f"{where}.name: Field required")
        if not isinstance(block.get("input"), dict):
            raise _invalid(f"{where}.input: Input should be a valid dictionary")
    elif kind == "tool_result":
        if not isinstance(block.get("tool_use_id"), str) or not block["tool_use_id"]:
            raise _invalid(f"{where}.tool_use_id: Field required")
        inner = block.get("content")
        if isinstance(inner, list):
            for k, sub in enumerate(inner):
                if isinstance(sub, dict) and sub.get("type") == "text":
                    _check_text(sub.get("text"), f"{where}.content.{k}.text")


def _validate_messages(messages: Any) -> bool:
    """Checks roles, blocks and tool_use/tool_result pairing; returns whether any tool block is present."""
    if not isinstance(messages, list):
        raise _invalid("messages: Input should be a valid list")
    if not messages:
        raise _invalid("messages: at least one message is required")
    seen_ids: set[str] = set()
    uses: list[list[str]] = []
    any_tool_blocks = False
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _invalid(f"messages.{i}: Input should be a valid dictionary")
        role = message.get("role")
        expected = "user" if i % 2 == 0 else "assistant"
        if role not in BLOCK_TYPES:
            raise _invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if role != expected:
            raise _invalid(f'messages.{i}.role: roles must alternate between "user" and "assistant", '
                           f'starting with "user"; expected "{expected}" here')
        content = message.get("content")
        ids: list[str] = []
        if isinstance(content, str):
            _check_text(content, f"messages.{i}.content")
        elif isinstance(content, list):
            if not content and not (role == "assistant" and i == len(messages) - 1):
                raise _invalid(f"messages.{i}.content: all messages must have non-empty content")
            other_seen = False
            for j, block in enumerate(content):
                where = f"messages.{i}.content.{j}"
                _validate_block(block, role, where)
                kind = block["type"]
                if kind == "tool_use":
                    if block["id"] in seen_ids:
                        raise _invalid(f"{where}: `tool_use` ids must be unique; {block['id']} appears twice")
                    seen_ids.add(block["id"])
                    ids.append(block["id"])
                if kind in ("tool_use", "tool_result"):
                    any_tool_blocks = True
                if kind == "tool_result":
                    if other_seen:
                        raise _invalid(f"{where}: `tool_result` blocks must come first in the user message, "
                                       f"before any other content")
                    previous = uses[i - 1] if i > 0 else []
                    if block["tool_use_id"] not in previous:
                        raise _invalid(f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: "
                                       f"{block['tool_use_id']}. Each `tool_result` block must have a "
                                       f"corresponding `tool_use` block in the previous message.")
                else:
                    other_seen = True
        else:
            raise _invalid(f"messages.{i}.content: Input should be a valid string or list of content blocks")
        uses.append(ids)
    for i, ids in enumerate(uses):
        if not ids:
            continue
        answered: set[str] = set()
        if i + 1 < len(messages) and isinstance(messages[i + 1].get("content"), list):
            answered = {b.get("tool_use_id") for b in messages[i + 1]["content"] if b.get("type") == "tool_result"}
        missing = [tid for tid in ids if tid not in answered]
        if missing:
            raise _invalid(f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                           f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                           f"`tool_result` block in the next message.")
    return any_tool_blocks


def validate_request(body: Any, *, count_tokens: bool = False) -> None:
    """Raises _Refusal (400 invalid_request_error) when the body breaks a Messages API rule."""
    if not isinstance(body, dict):
        raise _invalid("fake server: the request body must be a JSON object")
    allowed = COUNT_TOKENS_FIELDS if count_tokens else MESSAGE_FIELDS
    for key in body:
        if key in SAMPLING_FIELDS:
            raise _invalid(f"{key}: is not supported by this API version (sampling parameters were removed "
                           f"in anthropic-version 2026-10-21)")
        if key not in allowed:
            raise _invalid(f"{key}: Extra inputs are not permitted")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _invalid("model: Field required")
    if not count_tokens:
        if "max_tokens" not in body:
            raise _invalid("max_tokens: Field required")
        max_tokens = body["max_tokens"]
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise _invalid("max_tokens: Input should be a positive integer")
    if "messages" not in body:
        raise _invalid("messages: Field required")
    if "tools" in body:
        _validate_tools(body["tools"])
    if "system" in body:
        _validate_system(body["system"])
    has_tool_blocks = _validate_messages(body["messages"])
    if has_tool_blocks and not body.get("tools"):
        raise _invalid("Requests which include `tool_use` or `tool_result` blocks must define tools.")
    marked: list[tuple[str, Any]] = []
    for k, tool in enumerate(body.get("tools") or []):
        marked += _marked_blocks(f"tools.{k}", tool)
    if isinstance(body.get("system"), list):
        for k, block in enumerate(body["system"]):
            marked += _marked_blocks(f"system.{k}", block)
    for i, message in enumerate(body["messages"]):
        if isinstance(message.get("content"), list):
            for j, block in enumerate(message["content"]):
                marked += _marked_blocks(f"messages.{i}.content.{j}", block)
    for where, cc in marked:
        _check_cache_control(cc, where)
    found = len(marked)
    if body.get("cache_control") is not None:
        _check_cache_control(body["cache_control"], "cache_control")
        blocks = flatten(body)
        if blocks and not _has_cache_control(blocks[-1][1]):
            found += 1
    if found > MAX_CACHE_BREAKPOINTS:
        raise _invalid(f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
                       f"Found {found}.")


# ----------------------------------------------------------------------------------------- the server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeMessagesAPI/1.0"

    def _dispatch(self) -> None:
        self.server.fake._handle(self)  # type: ignore[attr-defined]

    do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]):
        super().__init__(address, handler)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_open_connections(self) -> None:
        """Ends keep-alive connections too, so nothing is served after stop()."""
        with self._open_lock:
            open_sockets = list(self._open)
        for sock in open_sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _chunks(text: str, parts: int = 3) -> list[str]:
    size = max(1, math.ceil(len(text) / parts))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


class FakeMessagesAPI:
    """A scripted Messages API on 127.0.0.1:<free port>; a context manager (or .start() / .stop())."""

    def __init__(self, script: list[dict], *, api_key: str = "test-key", min_cacheable_tokens: int = 1024,
                 cache_lookback_blocks: int = 20, think_seconds: float = 0.0):
        for n, turn in enumerate(script):
            if not isinstance(turn, dict) or turn.get("kind") not in ("reply", "fault"):
                raise ValueError(f"script[{n}] is not a turn (use tool_turn, text_turn, message_turn or fault)")
        self._script = list(script)
        self._next = 0
        self.think_seconds = think_seconds  # how long each reply takes, as a model's would
        self.api_key = api_key
        self.cache = PromptCache(min_cacheable_tokens, cache_lookback_blocks)
        self.requests: list[dict] = []
        self.errors: list[str] = []
        self.url = ""
        self._served_ids: set[str] = set()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> FakeMessagesAPI:
        if self._server is not None:
            return self
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-messages-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server.close_open_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- snapshots

    def snapshot(self) -> dict[str, Any]:
        """What the server remembers now (requests, errors, prompt cache, served ids, turns used), for
        `resume_from`."""
        with self._lock:
            return copy.deepcopy({"next": self._next, "requests": self.requests, "errors": self.errors,
                                  "cache": self.cache._entries, "served_ids": self._served_ids})

    def resume_from(self, snapshot: dict[str, Any]) -> None:
        """Remember what the server of `snapshot` remembered, as if this server had answered its requests:
        the first turns of this server's script stand for the turns that one had served."""
        if snapshot["next"] > len(self._script):
            raise ValueError(f"the script has {len(self._script)} turns; {snapshot['next']} were served")
        memory = copy.deepcopy(snapshot)
        with self._lock:
            self._next = memory["next"]
            self.requests, self.errors = memory["requests"], memory["errors"]
            self.cache._entries, self._served_ids = memory["cache"], memory["served_ids"]

    # -- inspection

    @property
    def remaining_turns(self) -> int:
        return len(self._script) - self._next

    def env(self) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": self.api_key}

    def total_usage(self) -> dict[str, int]:
        keys = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        with self._lock:
            usages = [r["usage"] for r in self.requests if r["usage"]]
        return {k: sum(u[k] for u in usages) for k in keys}

    # -- request handling

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        path = urlsplit(handler.path).path
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record: dict[str, Any] = {"path": path, "headers": headers, "body": body, "status": None, "usage": None,
                                  "fault": None, "target": handler.path}
        with self._lock:
            self.requests.append(record)
            try:
                action = self._decide(handler.command, path, headers, raw, body, record)
            except _Refusal as refusal:
                self.errors.append(f"{path}: {refusal.status} {refusal.error_type}: {refusal.message}")
                action = self._error(refusal.status, refusal.error_type, refusal.message)
            record["status"] = action[1] if action[0] != "reset" else None
        if self.think_seconds and record["usage"]:
            time.sleep(self.think_seconds)
        self._respond(handler, action)

    def _decide(self, method: str, path: str, headers: dict, raw: bytes, body: Any, record: dict) -> tuple:
        route, body = self._accept(method, path, headers, raw, body, record["target"])
        if route == "count_tokens":
            validate_request(body, count_tokens=True)
            return self._json(200, {"input_tokens": count_input_tokens(body)})
        if route != "messages":  # a platform's own endpoint (an OAuth token) answered by _accept
            return route
        validate_request(body)
        if self._next >= len(self._script):
            raise _invalid("fake server: script exhausted")
        turn = self._script[self._next]
        self._next += 1
        streaming = body.get("stream") is True
        if turn["kind"] == "fault":
            record["fault"] = turn["fault"]
            return self._fault(turn, streaming, body["model"])
        return self._reply(turn, body, streaming, record)

    def _accept(self, method: str, path: str, headers: dict, raw: bytes, body: Any,
                target: str) -> tuple[Any, Any]:
        """Routing, authentication and the platform's framing of the request (`target`: the path as sent,
        query included): ("messages" or "count_tokens", the Messages API body), or an action that answers
        the request on its own. Platform fakes (Bedrock, Vertex) override it."""
        if method != "POST" or path not in (MESSAGES_PATH, COUNT_TOKENS_PATH):
            raise _Refusal(404, "not_found_error", f"fake server: no route for {method} {path}")
        bearer = headers.get("authorization", "")
        if headers.get("x-api-key") != self.api_key and bearer != f"Bearer {self.api_key}":
            if "x-api-key" not in headers and not bearer:
                raise _Refusal(401, "authentication_error", "x-api-key header is required")
            raise _Refusal(401, "authentication_error", "invalid x-api-key")
        if not headers.get(API_VERSION_HEADER):
            raise _invalid(f"{API_VERSION_HEADER}: header is required")
        if body is None:
            raise _invalid("fake server: the request body is not valid JSON")
        return ("count_tokens" if path == COUNT_TOKENS_PATH else "messages"), body

    def _reply(self, turn: dict, body: dict, streaming: bool, record: dict) -> tuple:
        content = copy.deepcopy(turn["content"])
        for block in content:
            if block.get("type") in ("tool_use", "server_tool_use"):
                if block.get("id") in self._served_ids or not block.get("id"):
                    block["id"] = _random_id("toolu_" if block["type"] == "tool_use" else "srvtoolu_")
                self._served_ids.add(block["id"])
        usage = self.cache.account(body)
        out = turn.get("usage_output_tokens")
        usage = {"input_tokens": usage["input_tokens"],
                 "output_tokens": output_tokens(content) if out is None else int(out),
                 "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
                 "cache_read_input_tokens": usage["cache_read_input_tokens"]}
        record["usage"] = dict(usage)
        message = {"id": _random_id("msg_"), "type": "message", "role": "assistant", "model": body["model"],
                   "content": content, "stop_reason": turn["stop_reason"], "stop_sequence": None, "usage": usage}
        if streaming:
            return self._stream(self._events(message))
        return self._json(200, message)

    def _stream(self, events: list[tuple[str, dict]]) -> tuple:
        """A streamed answer: the events framed as the platform frames them (here: server-sent events)."""
        return ("stream", 200, [_sse(name, data) for name, data in events],
                {"content-type": "text/event-stream; charset=utf-8"})

    def _events(self, message: dict) -> list[tuple[str, dict]]:
        usage = message["usage"]
        start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
                 "usage": {**usage, "output_tokens": 1}}
        events = [("message_start", {"type": "message_start", "message": start}),
                  ("ping", {"type": "ping"})]
        for index, block in enumerate(message["content"]):
            kind = block.get("type")
            deltas: list[dict] = []
            if kind == "text":
                opening = {**block, "text": ""}
                deltas = [{"type": "text_delta", "text": piece} for piece in _chunks(block["text"])]
            elif kind in ("tool_use", "server_tool_use"):
                opening = {**block, "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": piece}
                          for piece in _chunks(json.dumps(block["input"]))]
            elif kind == "thinking":
                opening = {**block, "thinking": "", "signature": ""}
                deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _chunks(block["thinking"])]
                deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
            else:
                opening = block
            events.append(("content_block_start",
                               {"type": "content_block_start", "index": index, "content_block": opening}))
            events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
                       for d in deltas]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]},
            "usage": dict(usage)}))
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    def _fault(self, turn: dict, streaming: bool, model: str) -> tuple:
        kind = turn["fault"]
        status, error_type, default_message, transient = FAULTS[kind]
        message = turn.get("message") or default_message
        if kind == "reset" or (kind == "stream_cut" and not streaming):
            return ("reset", None)
        if kind == "stream_cut":
            start = {"id": _random_id("msg_"), "type": "message", "role": "assistant", "model": model,
                     "content": [], "stop_reason": None, "stop_sequence": None,
                     "usage": {"input_tokens": 0, "output_tokens": 1}}
            return self._stream([
                ("message_start", {"type": "message_start", "message": start}),
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": "Let me"}}),
            ])
        if kind == "no_sse":
            return ("raw", 200, PROXY_PAGE, {"content-type": "text/html; charset=utf-8"})
        if kind == "missing_fields":
            bare = {"id": _random_id("msg_"), "type": "message", "role": "assistant", "model": model}
            if streaming:
                start = {**bare, "content": [], "stop_reason": None, "stop_sequence": None,
                         "usage": {"input_tokens": 0, "output_tokens": 1}}
                return self._stream([("message_start", {"type": "message_start", "message": start}),
                                     ("message_stop", {"type": "message_stop"})])
            return self._json(200, bare)
        if kind == "garbage":
            if streaming:
                return self._garbage_stream()
            return ("raw", 200, b"<html>502 Bad Gateway: this is not JSON", {"content-type": "application/json"})
        if kind == "stream_error" and streaming:
            start = {"id": _random_id("msg_"), "type": "message", "role": "assistant", "model": model,
                     "content": [], "stop_reason": None, "stop_sequence": None,
                     "usage": {"input_tokens": 0, "output_tokens": 1}}
            error = {"type": "error", "error": {"type": error_type, "message": message},
                     "request_id": _random_id("req_")}
            return self._stream([("message_start", {"type": "message_start", "message": start}),
                                 ("ping", {"type": "ping"}), ("error", error)])
        headers: dict[str, str] = {}
        if transient:
            headers["x-should-retry"] = "true"
            headers["retry-after"] = _number(turn.get("retry_after", 0))
            if turn.get("retry_after_ms") is not None:
                headers["retry-after-ms"] = _number(turn["retry_after_ms"])
        details = None
        if kind == "spend_limit":
            headers["x-should-retry"] = "false"
            details = {"error_code": "enforced_spend_limit_reached"}
        return self._error(status, error_type, message, headers=headers, details=details)

    def _garbage_stream(self) -> tuple:
        """A stream whose framing is right and whose data is not JSON."""
        return ("stream", 200, [b"event: message_start\ndata: {this is not json\n\n"],
                {"content-type": "text/event-stream; charset=utf-8"})

    @staticmethod
    def _json(status: int, payload: Any, headers: dict | None = None) -> tuple:
        return ("raw", status, json.dumps(payload).encode(), {"content-type": "application/json", **(headers or {})})

    def _error(self, status: int, error_type: str, message: str, *, headers: dict | None = None,
               details: dict | None = None) -> tuple:
        request_id = _random_id("req_")
        error: dict[str, Any] = {"type": error_type, "message": message}
        if details:
            error["details"] = details
        return self._json(status, {"type": "error", "error": error, "request_id": request_id},
                          {**(headers or {}), "request-id": request_id})

    @staticmethod
    def _respond(handler: BaseHTTPRequestHandler, action: tuple) -> None:
        kind = action[0]
        try:
            if kind == "reset":
                handler.close_connection = True
                sock = handler.connection
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()  # the real close (an RST, linger 0) happens when the handler's files close
                return
            if kind == "raw":
                _, status, payload, headers = action
                handler.send_response(status)
                headers = {"request-id": _random_id("req_"), **headers}
                for name, value in headers.items():
                    handler.send_header(name, value)
                handler.send_header("content-length", str(len(payload)))
                handler.end_headers()
                handler.wfile.write(payload)
                return
            _, status, events, headers = action
            handler.close_connection = True
            handler.send_response(status)
            for name, value in {"cache-control": "no-cache", "request-id": _random_id("req_"), **headers}.items():
                handler.send_header(name, value)
            handler.send_header("connection", "close")
            handler.end_headers()
            for event in events:
                handler.wfile.write(event)
                handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True
