"""Secrets in what gitbot is about to publish: the diff it pushes and the texts it posts.

Two kinds of hit: a value gitbot knows is secret (the GitHub token, the Anthropic key, secret-named
inputs, and their base64 forms), and anything shaped like a GitHub token (`ghp_`, `gho_`, `ghs_`,
`ghu_`, `ghr_`, `github_pat_`) or an Anthropic key (`sk-ant-`) followed by at least 20 token
characters — a secret gitbot was never told about looks like that too.

A hit in the diff stops the push (a pushed secret is public, or at least readable by everyone with
read access, and stays in the history); a hit in a text is redacted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitbot.secrets import REDACTED, Secrets

TOKEN_SHAPE = re.compile(r"(?<![A-Za-z0-9_-])(?:gh[pousr]_|github_pat_|sk-ant-)[A-Za-z0-9_-]{20,}")
KNOWN = "a known secret value (a token, key or secret input gitbot was given)"
SHAPED = "a string shaped like a GitHub token or an Anthropic API key"


class PublishSecrets(Secrets):
    """`Secrets` whose `redact` also removes everything shaped like a token or an API key."""

    def redact(self, text: str) -> str:
        return TOKEN_SHAPE.sub(REDACTED, super().redact(text))


@dataclass(frozen=True)
class Leak:
    path: str
    kind: str  # KNOWN or SHAPED; never the value itself


def _kind(text: str, secrets: Secrets) -> str | None:
    if any(value in text for value in secrets.values):
        return KNOWN
    if TOKEN_SHAPE.search(text):
        return SHAPED
    if secrets.redact(text) != text:  # an encoded form of a known value (base64, URL-encoded, …)
        return KNOWN
    return None


def scan_diff(diff: str, secrets: Secrets) -> list[Leak]:
    """Secrets in what a `git diff --text` adds: added lines and the names of new or renamed files,
    by file. Removed and context lines are not looked at: taking a secret out must stay possible."""
    added: dict[str, list[str]] = {}
    path = "?"
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            path = text = line.removeprefix("diff --git ").split(" b/", 1)[-1]
        elif line.startswith("+++ "):
            text = line[4:]
            path = text[2:] if text.startswith("b/") else path
        elif line.startswith(("rename to ", "copy to ")):
            path = text = line.split(" to ", 1)[1]
        elif line.startswith("+"):
            text = line[1:]
        else:
            continue
        added.setdefault(path, []).append(text)
    leaks = []
    for path, lines in added.items():
        kind = _kind("\n".join(lines), secrets)
        if kind is not None:
            leaks.append(Leak(path, kind))
    return leaks
