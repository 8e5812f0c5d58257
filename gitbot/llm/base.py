"""What the loop needs from a model provider: one request in, one reply out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from gitbot.llm.usage import Usage


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

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") == "tool_use"]

    @property
    def text(self) -> str:
        return "\n".join(b.get("text", "") for b in self.content if b.get("type") == "text").strip()


class ProviderError(Exception):
    """The provider failed for good (fatal error, or transient errors that did not clear)."""


class DeadlineReached(ProviderError):
    """The run's wall-time limit passed while waiting for (or retrying) a request."""


class Provider(Protocol):
    model: str
    is_replay: bool

    def complete(self, request: ModelRequest) -> ModelReply: ...
