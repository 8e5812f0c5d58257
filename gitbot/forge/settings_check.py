"""The checks every adapter's settings share (the Action's inputs, the GitLab job's GITBOT_* variables).

Each check takes the setting's name as the user writes it (`max-cost-usd`, `GITBOT_MAX_COST_USD`), so a
message names what to fix, and adds to one list: a job reports every problem at once, not the first.
"""

from __future__ import annotations

import math
import re

from gitbot.forge.mention import valid_phrase

DEFAULT_LABEL = "gitbot"
DEFAULT_TRIGGER_PHRASE = "@gitbot"
# A change request's conversation with gitbot, unless the job says otherwise: at most this many
# follow-up iterations, and at most this much spent on it in all.
DEFAULT_MAX_ITERATIONS = 10
DEFAULT_MAX_TOTAL_COST_USD = 10.0
PROVIDERS = ("anthropic", "bedrock", "vertex", "openai")
TRUE_WORDS = {"true", "yes", "1", "on"}
FALSE_WORDS = {"false", "no", "0", "off", ""}


class Problems(list[str]):
    """What is wrong with a job's settings, as messages; each check returns the value it read."""

    def number(self, name: str, raw: str, kind: type, minimum: float) -> float | int | None:
        if not raw:
            return None
        try:
            value = kind(raw)
        except ValueError:
            self.append(f"{name} must be a {'whole ' if kind is int else ''}number, got {raw!r}")
            return None
        if (isinstance(value, float) and not math.isfinite(value)) or value < minimum:
            self.append(f"{name} must be at least {minimum}, got {raw!r}")
            return None
        return value

    def flag(self, name: str, raw: str, default: bool) -> bool:
        word = raw.lower()
        if not word:
            return default
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        self.append(f"{name} must be true or false, got {word!r}")
        return default

    def provider(self, name: str, raw: str) -> str:
        provider = (raw or "anthropic").lower()
        if provider not in PROVIDERS:
            self.append(f"{name} must be one of {', '.join(PROVIDERS)}, got {provider!r}")
        return provider

    def base_url(self, name: str, raw: str) -> str | None:
        if raw and not re.match(r"^https?://[^\s/@]+(/\S*)?$", raw):
            self.append(f"{name} must be an http(s) URL without credentials, got {raw!r}")
        return raw or None

    def check_command(self, name: str, raw: str) -> str | None:
        if "\n" in raw:
            self.append(f"{name} must be one line (for several commands use `sh -c '…'`)")
        return raw or None

    def trigger_phrase(self, name: str, raw: str) -> str:
        phrase = raw or DEFAULT_TRIGGER_PHRASE
        if not valid_phrase(phrase):
            self.append(
                f"{name} must be 2 to 40 characters without spaces, backticks, brackets or `>`, got {phrase!r}"
            )
        return phrase

    def branch(self, name: str, raw: str) -> str | None:
        if raw and (raw.startswith("-") or any(c in raw for c in " ~^:?*[\\")):
            self.append(f"{name} is not a valid branch name: {raw!r}")
        return raw or None
