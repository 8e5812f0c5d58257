"""The Anthropic Messages API through the official SDK.

The client is built the SDK's standard way, so ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL work as
users expect. The SDK's own retries are off (max_retries=0): gitbot retries itself so it can
tell a spend limit from a rate limit, honour retry-after, cap consecutive failures, and count
usage exactly once (only a reply that arrived is counted).
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

from gitbot.llm.base import DeadlineReached, ModelReply, ModelRequest, ProviderError
from gitbot.llm.usage import Usage

MAX_CONSECUTIVE_FAILURES = 6
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 8.0
RETRY_AFTER_CAP_SECONDS = 60.0
# The SDK refuses non-streaming requests it expects to take over 10 minutes (max_tokens > ~21,333).
STREAMING_ABOVE_MAX_TOKENS = 21_333
REQUEST_TIMEOUT_SECONDS = 600.0
# Error types the API sends inside a stream that started fine and that are worth retrying.
TRANSIENT_STREAM_ERRORS = ("overloaded_error", "api_error", "rate_limit_error")


class IncompleteReply(Exception):
    """A stream ended before the message was complete (no stop_reason): retried like a reset."""


class AnthropicProvider:
    is_replay = False

    def __init__(self, model: str, *, client: Any = None, backoff_base: float = BACKOFF_BASE_SECONDS,
                 sleep=time.sleep):
        import anthropic  # imported here: it costs about a second, and fast paths never need it

        self.model = model
        self._anthropic = anthropic
        self.client = client or anthropic.Anthropic(max_retries=0)
        self.backoff_base = backoff_base
        self._sleep = sleep

    def complete(self, request: ModelRequest) -> ModelReply:
        kwargs = {"model": self.model, "max_tokens": request.max_tokens, "system": request.system,
                  "tools": request.tools, "messages": request.messages}
        started = time.monotonic()
        retry_log: list[str] = []
        for attempt in range(1, MAX_CONSECUTIVE_FAILURES + 1):
            remaining = _remaining(request.deadline)
            if remaining is not None and remaining <= 0:
                raise DeadlineReached("the wall-time limit was reached while waiting for the model"
                                      + (f" ({retry_log[-1]})" if retry_log else ""))
            try:
                message = self._send(kwargs, request.max_tokens, remaining)
                if not isinstance(message.stop_reason, str):
                    raise IncompleteReply(f"the reply ended without a stop_reason ({message.stop_reason!r})")
            except Exception as exc:  # classified below; anything unknown is fatal
                transient, reason, delay = self._classify(exc)
                if not transient:
                    raise ProviderError(reason) from exc
                retry_log.append(f"attempt {attempt}: {reason}")
                if attempt == MAX_CONSECUTIVE_FAILURES:
                    raise ProviderError(
                        f"gave up after {attempt} consecutive failures; last: {reason}") from exc
                pause = delay if delay is not None else self._backoff(attempt)
                left = _remaining(request.deadline)
                self._sleep(pause if left is None else max(0.0, min(pause, left)))
                continue
            return self._reply(message, time.monotonic() - started, attempt, retry_log)
        raise AssertionError("unreachable")

    def _send(self, kwargs: dict[str, Any], max_tokens: int, remaining: float | None):
        client = self.client
        if remaining is not None and remaining < REQUEST_TIMEOUT_SECONDS:
            client = client.with_options(timeout=max(remaining, 1.0))
        if max_tokens > STREAMING_ABOVE_MAX_TOKENS:
            with client.messages.stream(**kwargs) as stream:
                return stream.get_final_message()
        return client.messages.create(**kwargs)

    def _reply(self, message: Any, waited: float, attempts: int, retry_log: list[str]) -> ModelReply:
        content = [block.model_dump(mode="json", exclude_none=True) for block in message.content]
        return ModelReply(content=content, stop_reason=message.stop_reason, usage=Usage.from_api(message.usage),
                          request_id=getattr(message, "_request_id", None) or getattr(message, "id", None),
                          wait_seconds=waited, attempts=attempts, retry_log=retry_log)

    def _backoff(self, attempt: int) -> float:
        delay = min(self.backoff_base * 2 ** (attempt - 1), BACKOFF_CAP_SECONDS)
        return delay * random.uniform(0.75, 1.0)

    def _classify(self, exc: Exception) -> tuple[bool, str, float | None]:
        """(transient?, human reason, delay the server asked for)."""
        a = self._anthropic
        if isinstance(exc, a.APIStatusError):
            status = exc.status_code
            message = _api_message(exc)
            request_id = exc.response.headers.get("request-id") if exc.response is not None else None
            where = f" (request id {request_id})" if request_id else ""
            if status in (401, 403):
                return False, f"authentication failed ({status}): {message}{where}", None
            if status == 429 and _is_spend_limit(exc):
                return False, f"spend limit reached (429): {message}{where}", None
            if status < 400:  # an `error` event in the middle of a stream that started fine
                transient = _error_type(exc) in TRANSIENT_STREAM_ERRORS
                return transient, f"error in the reply stream: {message}{where}", None
            if status in (408, 409, 429) or status >= 500:
                return True, f"HTTP {status}: {message}{where}", _retry_after(exc)
            return False, f"request rejected ({status}): {message}{where}", None
        if isinstance(exc, (a.APIConnectionError, IncompleteReply)) or _is_transport_error(exc):
            return True, f"connection failed: {exc}", None
        # A 200 whose body is not JSON surfaces as JSONDecodeError, not an SDK error.
        if isinstance(exc, (a.APIResponseValidationError, json.JSONDecodeError)):
            return True, f"malformed response: {exc}", None
        return False, f"unexpected provider error: {type(exc).__name__}: {exc}", None


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - time.monotonic()


def _is_transport_error(exc: Exception) -> bool:
    """A connection cut in the middle of a streamed body surfaces as the HTTP library's own error."""
    try:
        import httpx2
    except ImportError:  # the SDK's HTTP layer; present whenever the SDK is
        return False
    return isinstance(exc, httpx2.TransportError)


def _error_type(exc: Any) -> str | None:
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("type") if isinstance(error, dict) else None


def _api_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error") if isinstance(body.get("error"), dict) else body
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", exc))


def _is_spend_limit(exc: Any) -> bool:
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    if isinstance(details, dict) and details.get("error_code") == "enforced_spend_limit_reached":
        return True
    headers = exc.response.headers if getattr(exc, "response", None) is not None else {}
    return headers.get("x-should-retry", "").lower() == "false"


def _retry_after(exc: Any) -> float | None:
    headers = exc.response.headers if getattr(exc, "response", None) is not None else {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if 0 <= seconds <= RETRY_AFTER_CAP_SECONDS:
            return seconds
    return None
