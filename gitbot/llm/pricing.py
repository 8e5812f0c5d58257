"""Prices as data (gitbot/data/prices.toml) and the cost of one request.

An unknown model costs None ("unknown"), never $0: a receipt that says $0 for an unpriced
model is worse than one that says it does not know. A price the configuration gives (the policy's
[model] table) wins over the table, and may be zero (a self-hosted model).

Bedrock and Vertex use their own model ids for the same models: `us.anthropic.claude-sonnet-4-5-
20250929-v1:0`, `claude-sonnet-4-5@20250929`. They are priced as the Anthropic model they name, times
the platform's factor for the kind of endpoint (global or regional), from the [platforms] table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from gitbot.llm.usage import DEFAULT_CONTEXT_WINDOW, ModelPrice, Usage

if TYPE_CHECKING:
    from gitbot.llm.base import Endpoint

PRICES_FILE = Path(__file__).resolve().parent.parent / "data" / "prices.toml"
# Bedrock: an optional inference-profile prefix (us., eu., global., ...), the provider, the model,
# an optional version suffix (-v1:0, -v1). An ARN names the model (or profile) after its last "/".
BEDROCK_ID = re.compile(r"^(?:(?P<geo>[a-z]{2,6}(?:-[a-z]+)?)\.)?anthropic\.(?P<model>.+?)(?:-v\d+(?::\d+)?)?$")
DATED = re.compile(r"-\d{8}$")


@dataclass(frozen=True)
class PriceTable:
    effective_date: str
    source: str
    models: dict[str, ModelPrice]
    aliases: dict[str, str]
    # platform -> endpoint kind ("global", "regional") -> factor on the Anthropic price
    platforms: dict[str, dict[str, float]] | None = None

    def price(self, model: str, endpoint: Endpoint | None = None) -> ModelPrice | None:
        if endpoint is not None and endpoint.price is not None:
            return endpoint.price
        provider = endpoint.provider if endpoint is not None else "anthropic"
        if provider in ("anthropic", "replay"):
            return self._anthropic(model)
        if provider in ("bedrock", "vertex"):
            family, kind = platform_model(provider, model, endpoint.region if endpoint else None)
            price = self._anthropic(family)
            factor = (self.platforms or {}).get(provider, {}).get(kind)
            if price is None or factor is None:
                return None
            return price.scaled(factor)
        return None  # OpenAI-compatible endpoints: only a configured price is known

    def cost(self, model: str, usage: Usage, endpoint: Endpoint | None = None) -> float | None:
        price = self.price(model, endpoint)
        return None if price is None else price.cost(usage)

    def _anthropic(self, model: str) -> ModelPrice | None:
        name = self.aliases.get(model, model)
        if name not in self.models and DATED.search(name):
            name = DATED.sub("", name)
        return self.models.get(self.aliases.get(name, name))


def platform_model(provider: str, model: str, region: str | None) -> tuple[str, str]:
    """(the Anthropic model id a platform id names, "global" or "regional")."""
    if provider == "bedrock":
        match = BEDROCK_ID.match(model.rsplit("/", 1)[-1])
        if match is None:  # an application inference profile ARN, or not a Claude model
            return model, "regional"
        return match.group("model"), "global" if match.group("geo") == "global" else "regional"
    family = model.split("@", 1)[0]  # Vertex: claude-sonnet-4-5@20250929
    return family, "global" if region == "global" else "regional"


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
    import tomllib  # on first use: loading a policy needs ModelPrice, not the price table

    data = tomllib.loads(path.read_text(encoding="utf-8"))
    platforms = {name: {kind: float(factor) for kind, factor in table.items() if kind in ("global", "regional")}
                 for name, table in data.get("platforms", {}).items()}
    return PriceTable(effective_date=data["effective_date"], source=data["source"],
                      models={name: _model_price(entry) for name, entry in data["models"].items()},
                      aliases=dict(data.get("aliases", {})), platforms=platforms)
