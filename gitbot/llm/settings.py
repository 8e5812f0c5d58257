"""What the configuration (the policy's [model] table, CLI flags, Action inputs) says about the model:
plain data, read by gitbot/llm/providers.py. No SDK is imported here."""

from __future__ import annotations

from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:  # the price table loads only when a price is asked for
    from gitbot.llm.pricing import ModelPrice

PROVIDERS = ("anthropic", "bedrock", "vertex", "openai")


@dataclass(frozen=True)
class ModelSettings:
    provider: str | None = None  # one of PROVIDERS; None: anthropic
    name: str | None = None  # the model id, in the provider's own form
    base_url: str | None = None
    price: ModelPrice | None = None  # wins over the price table; may be zero (self-hosted)
    context_window: int | None = None
    max_output_tokens: int | None = None  # caps each request's max_tokens (small self-hosted models)
