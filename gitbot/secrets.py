"""Secret values known to gitbot's own process, so they can be kept out of everything else.

Secrets live only in gitbot's process: tools get an allow-listed environment, and any
text that goes to the model, the record, logs or a PR passes through `redact` first.

`redact` replaces each known value and the forms it takes on its way into text (base64 at any
byte alignment, alone or as a `user:VALUE` pair, URL-encoded, hex) — one regex, built when values
are added, does it in a single pass — and then everything the secret scanner finds
(gitbot/secretscan.py: private keys, cloud keys, forge tokens, …) even when the value itself is
unknown. `scrub` does the same and also says what it replaced where (never the value). The
scanner's allow-marker never lets a known value through.
"""

from __future__ import annotations

import base64
import os
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from gitbot import secretscan
from gitbot.secretscan import REDACTED, Finding  # noqa: F401  (REDACTED: callers import it from here)

# Environment variables whose values are secrets whatever their content.
SECRET_ENV_NAMES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GITHUB_TOKEN", "GH_TOKEN",
                    "INPUT_ANTHROPIC-API-KEY", "INPUT_GITHUB-TOKEN", "ACTIONS_RUNTIME_TOKEN",
                    "ACTIONS_ID_TOKEN_REQUEST_TOKEN")
# Name fragments that mark a variable as secret-bearing.
SECRET_NAME_HINTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "PRIVATE_KEY", "CREDENTIAL")
MIN_SECRET_LENGTH = 8  # shorter values would redact ordinary words
# Forms a secret takes on its way into text: actions/checkout stores the job token in .git/config as
# `AUTHORIZATION: basic base64("x-access-token:" + token)`; git credential URLs use `user:token`.
ENCODED_PREFIXES = ("", "x-access-token:", "x:")
KNOWN_SECRET = "known-secret"  # the kind of a finding that is one of the values gitbot was given
# How much text `Secrets` remembers as already found clean (see Secrets.scrub): a run's history is
# scrubbed again in every record event and request, and rescanning what did not change was most of a
# step's own cost. Past this many characters the memory starts over.
CLEAN_MEMORY_CHARS = 4_000_000  # several times a full context window


def _base64_cores(data: bytes) -> set[str]:
    """The base64 forms of `data` at each of the three byte alignments it can have inside a longer
    encoded text (the characters shared with the bytes before it are dropped)."""
    cores = set()
    for offset in range(3):
        total = offset + len(data)
        encoded = base64.b64encode(b"\0" * offset + data).decode("ascii")
        start = (0, 2, 3)[offset]
        end = 4 * (total // 3) + total % 3
        # The characters that encode only `data`, and (longer, preferred) the rest of the encoding
        # with and without padding, for when `data` ends the encoded text.
        for form in (encoded[start:end], encoded[start:], encoded[start:].rstrip("=")):
            cores.add(form)
            cores.add(form.replace("+", "-").replace("/", "_"))  # the URL-safe alphabet
    return cores


def encoded_forms(value: str) -> set[str]:
    """The forms of a secret worth redacting besides the value itself: base64 (all alignments, alone
    and in `x-access-token:`/`x:` pairs), URL-encoded and hex."""
    raw = value.encode("utf-8")
    forms: set[str] = set()
    for prefix in ENCODED_PREFIXES:
        forms |= _base64_cores(prefix.encode("utf-8") + raw)
    for quoted in (urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value, safe="")):
        forms.add(quoted)
        forms.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quoted))
    forms.add(raw.hex())
    forms.add(raw.hex().upper())
    forms.discard(value)
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}


def _trie_regex(words: set[str]) -> str:
    """One regex matching any of `words`, longest first at each position, without trying every word
    at every position (a plain alternation of hundreds of literals is slow in Python's `re`)."""
    trie: dict = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def build(node: dict) -> str:
        # Runs of single-child nodes become plain text, so the nesting only grows at branch points.
        text = []
        while len(node) == 1 and "" not in node:
            (char, node), = node.items()
            text.append(re.escape(char))
        branches = [re.escape(char) + build(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return "".join(text)
        group = "(?:" + "|".join(branches) + ")"
        # A word ends here too: the longer continuations are tried first (greedy), then nothing.
        return "".join(text) + (group + "?" if "" in node else group)

    return build(trie)


@dataclass
class Secrets:
    values: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._pattern: re.Pattern[str] | None = None
        self._built_from: frozenset[str] | None = None
        # Texts in which scrub found nothing, under the values the pattern was built from: scrubbing one
        # again gives the same answer, so it is not scanned again. Forgotten whenever the values change.
        self._clean: set[str] = set()
        self._clean_chars = 0

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> Secrets:
        environ = os.environ if environ is None else environ
        found = set()
        for name, value in environ.items():
            upper = name.upper()
            secret_name = upper in SECRET_ENV_NAMES or any(hint in upper for hint in SECRET_NAME_HINTS)
            if secret_name and len(value) >= MIN_SECRET_LENGTH:
                found.add(value)
        return cls(found)

    def add(self, value: str | None) -> None:
        if value and len(value) >= MIN_SECRET_LENGTH and value not in self.values:
            self.values.add(value)
            self._pattern = None

    def pattern(self) -> re.Pattern[str] | None:
        """The combined regex of every known value and its encoded forms (None: no value known)."""
        if self._built_from != self.values:
            words: set[str] = set()
            for value in self.values:
                if len(value) >= MIN_SECRET_LENGTH:
                    words.add(value)
                    words |= encoded_forms(value)
            self._pattern = re.compile(_trie_regex(words)) if words else None
            self._built_from = frozenset(self.values)
            self._forget_clean()  # a new value may be in a text found clean before
        return self._pattern

    def _forget_clean(self) -> None:
        self._clean = set()
        self._clean_chars = 0

    def _remember_clean(self, text: str, clean: set[str]) -> None:
        """`clean` is the set scrub started with: if the values changed meanwhile (another thread), the
        text goes into the set just forgotten, not into the new one."""
        if self._clean_chars + len(text) > CLEAN_MEMORY_CHARS:
            self._forget_clean()
            return
        clean.add(text)
        self._clean_chars += len(text)

    def redact(self, text: str) -> str:
        return self.scrub(text)[0]

    def scrub(self, text: str) -> tuple[str, list[Finding]]:
        """`text` without known values and secret-shaped spans, and what was replaced where. The
        scanner's allow-marker is never honoured: everything gitbot scrubs is text the agent or the model
        can write (tool output, model text, records, the pushed diff), so it can write the marker too
        (a directory named after it, and `grep -H` prints it on every line). forge/leaks.py alone
        excuses a marked line the change moved unchanged."""
        known: list[Finding] = []
        pattern = self.pattern()  # first: it forgets the clean texts when the values changed
        clean = self._clean
        if text in clean:
            return text, []
        if pattern is not None:
            line, last = 1, 0
            for match in pattern.finditer(text):
                line += text.count("\n", last, match.start())
                last = match.start()
                known.append(Finding(KNOWN_SECRET, line, match.start(), match.end()))
            if known:
                text = secretscan.replace(text, known)
        text, shaped = secretscan.redact(text, honour_markers=False)
        if not known and not shaped:
            self._remember_clean(text, clean)
        return text, known + shaped

    def scrub_data(self, data: Any) -> tuple[Any, list[Finding]]:
        """`data` (JSON-like: dicts, lists, strings, numbers) with every string scrubbed, keys included;
        a copy where anything changed. Findings' lines are those of the string they were in."""
        if isinstance(data, str):
            return self.scrub(data)
        if isinstance(data, dict):
            found: list[Finding] = []
            out = {}
            for key, value in data.items():
                key, in_key = self.scrub_data(key)
                value, in_value = self.scrub_data(value)
                out[key] = value
                found += in_key + in_value
            return (out, found) if found else (data, found)
        if isinstance(data, (list, tuple)):
            found = []
            items = []
            for item in data:
                item, in_item = self.scrub_data(item)
                items.append(item)
                found += in_item
            return (items, found) if found else (data, found)
        return data, []
