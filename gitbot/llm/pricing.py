"""Prices as data (gitbot/data/prices.toml) and the cost of one request.

An unknown model costs None ("unknown"), never $0: a receipt that says $0 for an unpriced
model is worse than one that says it does not know.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gitbot.llm.usage import Usage

PRICES_FILE = Path(__file__).resolve().parent.parent / "data" / "prices.toml"
PER_MILLION = 1_000_000
DEFAULT_CONTEXT_WINDOW = 200_000


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


@dataclass(frozen=True)
class PriceTable:
    effective_date: str
    source: str
    models: dict[str, ModelPrice]
    aliases: dict[str, str]

    def price(self, model: str) -> ModelPrice | None:
        return self.models.get(self.aliases.get(model, model))

    def cost(self, model: str, usage: Usage) -> float | None:
        price = self.price(model)
        return None if price is None else price.cost(usage)


def _model_price(entry: dict) -> ModelPrice:
    tier = None
    if "tier_above_tokens" in entry:
        tier = ModelPrice(input=entry["tier_input"], output=entry["tier_output"],
                          cache_write=entry["tier_cache_write"], cache_read=entry["tier_cache_read"],
                          context_window=entry.get("context_window", DEFAULT_CONTEXT_WINDOW))
    return ModelPrice(input=entry["input"], output=entry["output"], cache_write=entry["cache_write"],
                      cache_read=entry["cache_read"],
                      context_window=entry.get("context_window", DEFAULT_CONTEXT_WINDOW),
                      tier_above_tokens=entry.get("tier_above_tokens"), tier=tier)


@cache
def load_prices(path: Path = PRICES_FILE) -> PriceTable:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return PriceTable(effective_date=data["effective_date"], source=data["source"],
                      models={name: _model_price(entry) for name, entry in data["models"].items()},
                      aliases=dict(data.get("aliases", {})))
