"""Tokens of one model request (or a run's total), by class, as every provider reports them; and a
model's price per class, what those tokens cost."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Self

PER_MILLION = 1_000_000
DEFAULT_CONTEXT_WINDOW = 200_000


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __iadd__(self, other: Usage) -> Self:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        return self

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request, whether cached or not."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @classmethod
    def from_api(cls, usage: Any) -> Usage:
        get = (lambda k: usage.get(k)) if isinstance(usage, dict) else (lambda k: getattr(usage, k, None))
        return cls(*(int(get(k) or 0) for k in ("input_tokens", "output_tokens",
                                                 "cache_creation_input_tokens", "cache_read_input_tokens")))

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class ModelPrice:
    input: float
    output: float
    cache_write: float
    cache_read: float
    context_window: int = DEFAULT_CONTEXT_WINDOW
    tier_above_tokens: int | None = None
    tier: ModelPrice | None = None

    def cost(self, usage: Usage) -> float:
        if self.tier is not None and self.tier_above_tokens is not None \
                and usage.prompt_tokens > self.tier_above_tokens:
            return self.tier.cost(usage)
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_creation_input_tokens * self.cache_write
                + usage.cache_read_input_tokens * self.cache_read) / PER_MILLION

    def scaled(self, factor: float) -> ModelPrice:
        return replace(self, input=self.input * factor, output=self.output * factor,
                       cache_write=self.cache_write * factor, cache_read=self.cache_read * factor,
                       tier=self.tier.scaled(factor) if self.tier is not None else None)
