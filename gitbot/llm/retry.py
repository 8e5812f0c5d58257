"""One retry policy for every provider: a budget of consecutive failures, backoff with jitter, the
delay a server asks for, and the run's deadline.

Each provider classifies its own SDK's errors into a `Failure`; what is shared here is what every
provider's faults have in common: a connection reset or a stream cut part-way surfaces as the HTTP
library's error, and a reply that cannot be used (not JSON, not an event stream, fields missing) as
`MalformedReply` or a JSON error. Those are retried. Anything nobody classified is fatal and
`unexpected`, so the run record keeps its traceback.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

from gitbot.llm.base import DeadlineReached, MalformedReply, ProviderError

MAX_CONSECUTIVE_FAILURES = 6
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 8.0
RETRY_AFTER_CAP_SECONDS = 60.0
# OpenAI's reset headers say "1s", "6m0s", "20ms".
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_DURATION_SCALE = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}

T = TypeVar("T")


@dataclass(frozen=True)
class Failure:
    transient: bool
    reason: str
    delay: float | None = None  # what the server asked us to wait
    unexpected: bool = False


@dataclass
class Outcome(Generic[T]):
    value: T
    attempts: int
    waited: float
    retry_log: list[str] = field(default_factory=list)


def with_retries(send: Callable[[float | None], T], classify: Callable[[Exception], Failure], *,
                 deadline: float | None, backoff_base: float = BACKOFF_BASE_SECONDS,
                 sleep: Callable[[float], None] = time.sleep) -> Outcome[T]:
    """send(seconds left before the deadline, or None) until it returns, a failure is fatal, the budget
    of consecutive failures is spent, or the deadline passes."""
    started = time.monotonic()
    retry_log: list[str] = []
    for attempt in range(1, MAX_CONSECUTIVE_FAILURES + 1):
        remaining = _remaining(deadline)
        if remaining is not None and remaining <= 0:
            raise DeadlineReached("the wall-time limit was reached while waiting for the model"
                                  + (f" ({retry_log[-1]})" if retry_log else ""))
        try:
            value = send(remaining)
        except Exception as exc:  # classified: anything unknown is fatal
            failure = common_failure(exc) or classify(exc)
            if not failure.transient:
                raise ProviderError(failure.reason, unexpected=failure.unexpected) from exc
            retry_log.append(f"attempt {attempt}: {failure.reason}")
            if attempt == MAX_CONSECUTIVE_FAILURES:
                raise ProviderError(f"gave up after {attempt} consecutive failures; last: {failure.reason}") from exc
            pause = failure.delay if failure.delay is not None else backoff(attempt, backoff_base)
            left = _remaining(deadline)
            sleep(pause if left is None else max(0.0, min(pause, left)))
            continue
        return Outcome(value, attempt, time.monotonic() - started, retry_log)
    raise AssertionError("unreachable")


def backoff(attempt: int, base: float) -> float:
    delay = min(base * 2 ** (attempt - 1), BACKOFF_CAP_SECONDS)
    return delay * random.uniform(0.75, 1.0)


def common_failure(exc: Exception) -> Failure | None:
    """The faults every provider shares, whatever its SDK."""
    if isinstance(exc, MalformedReply):
        return Failure(True, f"malformed reply: {exc}")
    if isinstance(exc, json.JSONDecodeError):  # a 200 whose body is not JSON
        return Failure(True, f"malformed reply: the body is not JSON ({exc})")
    if _is_transport_error(exc):  # a connection cut in the middle of a streamed body
        return Failure(True, f"connection failed: {type(exc).__name__}: {exc}")
    if _is_event_stream_error(exc):  # Bedrock: bytes that are not AWS event-stream frames
        return Failure(True, f"malformed reply: not an AWS event stream ({type(exc).__name__}: {exc})")
    return None


def redirect_failure(status: int, headers: Any) -> Failure | None:
    """A redirect the client was built not to follow (providers.py): fatal, and it says where to."""
    location = headers.get("location") if headers else None
    if not (300 <= status < 400 and location):
        return None
    parts = urlsplit(location)
    where = f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}" \
        if parts.scheme else parts.path
    return Failure(False, f"the endpoint answered with a redirect ({status}) to {where}: gitbot never follows a "
                          "model provider's redirect (the prompt would go to another address); if you trust it, "
                          "set the base URL to that address")


def unexpected(exc: Exception) -> Failure:
    return Failure(False, f"unexpected provider error: {type(exc).__name__}: {exc}", unexpected=True)


def retry_after(headers: Any) -> float | None:
    """The wait a response asks for: retry-after-ms, retry-after (seconds or an HTTP date), or OpenAI's
    x-ratelimit-reset-requests / -tokens (the later of the two), capped."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        seconds = _number(value, 0.001)
        if seconds is not None:
            return seconds if seconds <= RETRY_AFTER_CAP_SECONDS else None
    value = headers.get("retry-after")
    if value is not None:
        seconds = _number(value, 1.0)
        if seconds is None:
            try:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                seconds = None
        if seconds is not None:
            return max(0.0, seconds) if seconds <= RETRY_AFTER_CAP_SECONDS else None
    resets = [_duration(headers.get(name)) for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")]
    known = [s for s in resets if s is not None]
    if known and max(known) <= RETRY_AFTER_CAP_SECONDS:
        return max(known)
    return None


def _number(value: str, scale: float) -> float | None:
    try:
        seconds = float(value) * scale
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _duration(value: str | None) -> float | None:
    if not value:
        return None
    parts = _DURATION_PART.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value.strip():
        return None
    return sum(float(n) * _DURATION_SCALE[u] for n, u in parts)


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - time.monotonic()


def _is_transport_error(exc: Exception) -> bool:
    httpx2 = sys.modules.get("httpx2")  # the SDKs' HTTP layer: loaded whenever an SDK sent anything
    return httpx2 is not None and isinstance(exc, httpx2.TransportError)


def _is_event_stream_error(exc: Exception) -> bool:
    eventstream = sys.modules.get("botocore.eventstream")
    return eventstream is not None and isinstance(exc, eventstream.ParserError)
