"""Tokens of one model request (or a run's total), by class: what every provider reports and prices read."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Self


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
