"""What the loop needs from a model provider: one request in, one reply out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from gitbot.llm.usage import ModelPrice, Usage


@dataclass
class ModelRequest:
    system: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    max_tokens: int
    # time.monotonic() after which no new attempt starts (the run's wall-time limit); None: no limit.
    deadline: float | None = None


@dataclass
class ModelReply:
    content: list[dict[str, Any]]
    stop_reason: str
    usage: Usage
    request_id: str | None = None
    wait_seconds: float = 0.0  # time spent waiting on the provider, retries included
    attempts: int = 1
    retry_log: list[str] = field(default_factory=list)
    raw_usage: dict[str, Any] | None = None  # the usage exactly as the provider reported it

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") == "tool_use"]

    @property
    def text(self) -> str:
        return "\n".join(b.get("text", "") for b in self.content if b.get("type") == "text").strip()


@dataclass(frozen=True)
class Endpoint:
    """Which service answers the requests, as the receipt names it and the price table prices it.

    `host` is set only when it is worth showing (a base URL that is not the provider's default);
    `price` and `context_window` are what the configuration says about the model there, and win over
    the price table (a self-hosted model can be priced at zero explicitly).
    """

    provider: str = "anthropic"  # anthropic | bedrock | vertex | openai | replay
    host: str | None = None
    base_url: str | None = None  # the endpoint when not the provider's default (kept for `gitbot resume`)
    region: str | None = None
    price: ModelPrice | None = None
    context_window: int | None = None

    def describe(self) -> str:
        where = ", ".join(part for part in (self.region, self.host) if part)
        return f"{self.provider} ({where})" if where else self.provider


class ProviderError(Exception):
    """The provider failed for good (fatal error, or transient errors that did not clear).

    `unexpected` marks a failure gitbot has no classification for (a bug here or in the SDK): the run
    record then keeps the traceback of its cause, while the console keeps the one-line message.
    """

    def __init__(self, message: str, *, unexpected: bool = False):
        super().__init__(message)
        self.unexpected = unexpected


class DeadlineReached(ProviderError):
    """The run's wall-time limit passed while waiting for (or retrying) a request."""


class MalformedReply(Exception):
    """A reply arrived but cannot be used (not JSON, not an event stream, cut short, fields missing).
    Retried like a connection reset: the next attempt usually gets a whole reply."""


class Provider(Protocol):
    model: str
    is_replay: bool
    endpoint: Endpoint

    def complete(self, request: ModelRequest) -> ModelReply: ...
