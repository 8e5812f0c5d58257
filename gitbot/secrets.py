"""Secret values known to gitbot's own process, so they can be kept out of everything else.

Secrets live only in gitbot's process: tools get an allow-listed environment, and any
text that goes to the model, the record, logs or a PR passes through `redact` first.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field

# Environment variables whose values are secrets whatever their content.
SECRET_ENV_NAMES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GITHUB_TOKEN", "GH_TOKEN",
                    "INPUT_ANTHROPIC-API-KEY", "INPUT_GITHUB-TOKEN", "ACTIONS_RUNTIME_TOKEN",
                    "ACTIONS_ID_TOKEN_REQUEST_TOKEN")
# Name fragments that mark a variable as secret-bearing.
SECRET_NAME_HINTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "PRIVATE_KEY", "CREDENTIAL")
MIN_SECRET_LENGTH = 8  # shorter values would redact ordinary words
REDACTED = "[REDACTED]"
# Forms a secret takes on its way into text: actions/checkout stores the job token in .git/config as
# `AUTHORIZATION: basic base64("x-access-token:" + token)`.
ENCODED_PREFIXES = ("", "x-access-token:")


def encoded_forms(value: str) -> set[str]:
    """The base64 forms of a secret worth redacting too (padding stripped, so a form embedded in a
    longer base64 text still matches)."""
    forms = set()
    for prefix in ENCODED_PREFIXES:
        encoded = base64.b64encode((prefix + value).encode("utf-8")).decode("ascii").rstrip("=")
        if len(encoded) >= MIN_SECRET_LENGTH:
            forms.add(encoded)
    return forms


@dataclass
class Secrets:
    values: set[str] = field(default_factory=set)

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> Secrets:
        environ = os.environ if environ is None else environ
        found = set()
        for name, value in environ.items():
            upper = name.upper()
            secret_name = upper in SECRET_ENV_NAMES or any(hint in upper for hint in SECRET_NAME_HINTS)
            if secret_name and len(value) >= MIN_SECRET_LENGTH:
                found.add(value)
                found |= encoded_forms(value)
        return cls(found)

    def add(self, value: str | None) -> None:
        if value and len(value) >= MIN_SECRET_LENGTH:
            self.values.add(value)
            self.values |= encoded_forms(value)

    def redact(self, text: str) -> str:
        # Longest first, so a secret that contains another is replaced whole.
        for value in sorted(self.values, key=len, reverse=True):
            if value in text:
                text = text.replace(value, REDACTED)
        return text
