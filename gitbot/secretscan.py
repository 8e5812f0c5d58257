"""Secret-shaped text: the scanner every door out of gitbot passes (model requests, the run record, the
uploaded artifact, the pushed diff, PR text and logs).

`scan(text)` returns a `Finding` per secret-shaped span: its kind (a rule name below) and line, never
the value. `redact(text)` replaces each with REDACTED and returns the findings too, so whoever stopped
them can say where.

What it finds (RULES, in this order):
- private keys: PEM blocks (`-----BEGIN … PRIVATE KEY-----` to its END line, also with JSON's `\\n`
  escapes, as in a GCP service-account file), PuTTY key files;
- cloud keys: AWS access key ids (`AKIA…`, `ASIA…`, …) and secret access keys (40 characters after an
  `aws…secret…` name), Google API keys (`AIza…`) and OAuth client secrets (`GOCSPX-…`), GCP
  service-account private key ids, Azure storage account keys and shared access keys in connection
  strings, Azure AD client secrets (`…8Q~…`);
- forge tokens: GitHub classic, OAuth, user-to-server, server-to-server (app installation) and refresh
  tokens (`ghp_ gho_ ghu_ ghs_ ghr_`), fine-grained PATs (`github_pat_`), GitLab tokens (`glpat-` and the
  other `gl…-` prefixes, runner registration tokens);
- Slack tokens (`xox…-`, `xapp-`) and webhook URLs, Stripe secret and restricted keys and webhook
  secrets, Anthropic (`sk-ant-`) and OpenAI (`sk-…T3BlbkFJ…`, `sk-proj-`, `sk-svcacct-`) keys, npm, PyPI
  and Hugging Face tokens, SendGrid keys, Telegram bot tokens;
- JWTs (three base64url parts, the first two JSON objects: `eyJ….eyJ….…`);
- credentials in URLs (`scheme://user:PASSWORD@host`) and `Authorization: Basic|Bearer …` values;
- high-entropy strings assigned to a secret-like name (`password`, `secret`, `token`, `api_key`,
  `access_key`, `private_key`, `client_secret`, `credential`…, as `=`, `:`, `:=` or `=>`): at least 16
  characters, letters and digits, and at least 3.5 bits of entropy per character. A random string with
  no such name is not found: nothing tells it from a hash or an id, and every lockfile is full of those.

False positives: a line carrying `gitbot: allow-secret` (or detect-secrets' `pragma: allowlist secret`),
or directly below a line carrying it, is not reported. Where gitbot publishes a change it only honours
the marker on lines the change does not add (forge/leaks.py): the agent could write the marker too.

Why not detect-secrets (PyPI, Yelp): its last release (1.5.0) is from May 2024; it has no rule for
Anthropic keys, fine-grained GitHub PATs, GitLab tokens other than its own list, or GCP service-account
keys written as JSON; its settings are process-global; and it scans one line at a time through every
plugin, about 5 s per MB with its filters (bench/bench_secretscan.py measures this scanner). Its rule
set is the model for this one, together with gitleaks' token shapes.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

REDACTED = "[REDACTED]"
ALLOW_MARKERS = ("gitbot: allow-secret", "pragma: allowlist secret")
MIN_MATCH_CHARS = 10  # no rule matches fewer characters (a record event has many short strings)
_ALLOW = re.compile("|".join(re.escape(m) for m in ALLOW_MARKERS))


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


# Values written to look like a secret in documentation and tests.
_PLACEHOLDER = re.compile(r"(?i)x{4}|\*{3}|example|placeholder|changeme|your[_-]|<[^>]*>|\$\{|\{\{|dummy|redacted")


def random_looking(value: str) -> bool:
    return (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            and entropy(value) >= 3.5 and not _PLACEHOLDER.search(value))


def _password_like(value: str) -> bool:
    return len(value) >= 8 and entropy(value) >= 2.5 and not _PLACEHOLDER.search(value)


@dataclass(frozen=True)
class Rule:
    """A kind of secret. Every pattern starts with literal text, so the regex engine skips to it
    instead of trying the rule at every position (one pass per rule is far faster than one combined
    alternation in Python's `re`)."""

    name: str
    pattern: str  # a group named `v`, when present, is what gets replaced; else the whole match
    check: Callable[[str], bool] | None = None  # a further test of the value (entropy, placeholders)
    left: str | None = None  # what must come right before the match; the finding includes it
    word_start: bool = False  # the match must not continue a word (`xghp_…` is not a token)
    lowered: bool = False  # the pattern is written in lower case and matched case-insensitively
    generic: bool = False  # a weaker rule: a specific rule at the same place names the finding

    # Compiled on first use: every command's environment is checked against the known secret values
    # (gitbot.secrets), which must not pay for compiling the scanner's rules.
    @cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.pattern)

    @cached_property
    def compiled_left(self) -> re.Pattern[str] | None:
        return re.compile(f"(?:{self.left})\\Z") if self.left else None


_PEM = r"[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?"
_NAME_TAIL = r"[a-z0-9_.-]{0,30}[\"']?\s*(?::=|=>|[:=])\s*[\"'`]?"

RULES: tuple[Rule, ...] = (
    Rule("private-key", rf"-----BEGIN {_PEM}-----(?:(?:[^-]|-(?!----END)){{0,20000}}-----END {_PEM}-----"
                        r"|[A-Za-z0-9+/=\s\\]*)"),
    Rule("private-key", r"PuTTY-User-Key-File-[23]: [^\n]*(?:\n[^\n]*){0,40}?\nPrivate-MAC: [0-9a-f]+"),
    Rule("aws-access-key-id", r"A(?:3T[A-Z0-9]|KIA|BIA|CCA|SIA|GPA|IDA|ROA|IPA|NPA|NVA|PKA)[A-Z0-9]{16}(?![A-Za-z0-9])",
         word_start=True),
    Rule("aws-secret-access-key", r"aws[a-z0-9_.-]{0,20}secret" + _NAME_TAIL + r"(?P<v>[a-z0-9/+]{40})(?![a-z0-9/+])",
         random_looking, lowered=True),
    Rule("google-api-key", r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])", word_start=True),
    Rule("google-oauth-client-secret", r"GOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])", word_start=True),
    Rule("gcp-service-account-key-id", r"\"private_key_id\"\s*:\s*\"(?P<v>[0-9a-f]{40})\""),
    Rule("azure-storage-key", r"(?:accountkey|sharedaccesskey)=(?P<v>[a-z0-9+/]{40,}={0,2})", lowered=True),
    Rule("azure-ad-client-secret", r"Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])", left=r"[A-Za-z0-9_~.]{3}\d"),
    Rule("github-token", r"gh[pousr]_[A-Za-z0-9]{30,}(?![A-Za-z0-9_])", word_start=True),
    Rule("github-token", r"github_pat_[A-Za-z0-9_]{30,}", word_start=True),
    Rule("gitlab-token", r"gl(?:pat|dt|rt|ptt|cbt|oas|soat|ffct|imt|agent)-[A-Za-z0-9_-]{20,}", word_start=True),
    Rule("gitlab-token", r"GR1348941[A-Za-z0-9_-]{20,}", word_start=True),
    Rule("slack-token", r"xox[abposre]-[A-Za-z0-9-]{10,}", word_start=True),
    Rule("slack-token", r"xapp-\d-[A-Za-z0-9-]{10,}", word_start=True),
    Rule("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}"),
    Rule("stripe-key", r"[sr]k_(?:live|test)_[A-Za-z0-9]{20,}", word_start=True),
    Rule("stripe-key", r"whsec_[A-Za-z0-9]{24,}", word_start=True),
    Rule("anthropic-key", r"sk-ant-[A-Za-z0-9_-]{20,}", word_start=True),
    Rule("openai-key", r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9_-]{0,100}T3BlbkFJ[A-Za-z0-9_-]{16,}"
                       r"|[A-Za-z0-9]{48}(?![A-Za-z0-9]))", word_start=True),
    Rule("npm-token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", word_start=True),
    Rule("pypi-token", r"pypi-AgE[A-Za-z0-9_-]{50,}", word_start=True),
    Rule("huggingface-token", r"hf_[A-Za-z]{34}(?![A-Za-z0-9])", word_start=True),
    Rule("sendgrid-key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])", word_start=True),
    Rule("telegram-bot-token", r":AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", left=r"(?<![0-9])\d{8,10}"),
    Rule("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", word_start=True),
    Rule("url-credentials", r"://[^\s/:@'\"]{1,100}:(?P<v>[^\s/@'\"]{3,200})@[A-Za-z0-9.-]", _password_like),
    Rule("http-authorization", r"authorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer|token)\s+(?P<v>[a-z0-9+/=._~-]{12,})",
         random_looking, lowered=True, generic=True),
    Rule("secret-assignment", r"(?:passwd|password|passphrase|secret|token|api[_.-]?key|apikey|access[_.-]?key"
                              r"|private[_.-]?key|credential|signing[_.-]?key)" + _NAME_TAIL
                              + r"(?P<v>[a-z0-9+/=_.~-]{16,200})(?![a-z0-9+/=_.~-])",
         random_looking, lowered=True, generic=True),
)


@dataclass(frozen=True)
class Finding:
    kind: str  # a rule name (or "known-secret", from gitbot.secrets)
    line: int  # 1-based line of the scanned text where it starts
    start: int  # its span in the scanned text: for replacing it, never for showing it
    end: int

    def where(self, path: str = "") -> str:
        """`path:line (kind)` or `line N (kind)`: everything a report may say about it."""
        return f"{path}:{self.line} ({self.kind})" if path else f"line {self.line} ({self.kind})"


class _Lines:
    """Line numbers of offsets and the allow-markers around them, worked out only for findings."""

    def __init__(self, text: str):
        self.text = text
        self._starts: list[int] | None = None

    def number(self, offset: int) -> int:
        if self._starts is None:
            self._starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        return bisect.bisect_right(self._starts, offset)

    def allowed(self, offset: int) -> bool:
        """The line holding `offset`, or the line above it, carries an allow-marker."""
        text = self.text
        start = text.rfind("\n", 0, offset) + 1
        end = text.find("\n", offset)
        if _ALLOW.search(text, start, len(text) if end < 0 else end):
            return True
        return start > 0 and bool(_ALLOW.search(text, text.rfind("\n", 0, start - 1) + 1, start - 1))


def _rule_spans(rule: Rule, text: str, lowered: str | None) -> list[tuple[int, int]]:
    """(start, end) of each accepted match of one rule."""
    spans = []
    if rule.lowered:
        haystack, rx = (lowered, rule.compiled) if lowered is not None else \
            (text, re.compile(rule.pattern, re.IGNORECASE))
    else:
        haystack, rx = text, rule.compiled
    has_value = "v" in rx.groupindex
    pos = 0
    while (match := rx.search(haystack, pos)) is not None:
        start, end = match.span("v") if has_value else match.span()
        pos = match.end()
        if rule.word_start and start > 0 and text[start - 1].isalnum():
            pos = match.start() + 1
            continue
        if rule.compiled_left is not None:
            before = rule.compiled_left.search(text, max(0, start - 40), start)
            if before is None:
                pos = match.start() + 1
                continue
            start = before.start()
        if rule.check is not None and not rule.check(text[start:end]):
            pos = match.start() + 1  # a rule inside the rejected span may still match
            continue
        spans.append((start, end))
    return spans


def scan(text: str, *, honour_markers: bool = True) -> list[Finding]:
    """Every secret-shaped span of `text`, in order, overlaps merged (see the module doc)."""
    if len(text) < MIN_MATCH_CHARS:
        return []
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lower case is longer: offsets would shift
        lowered = None
    candidates = []
    for rule in RULES:
        for start, end in _rule_spans(rule, text, lowered):
            candidates.append((start, rule.generic, -(end - start), end, rule.name))
    if not candidates:
        return []
    candidates.sort()
    lines = _Lines(text)
    findings: list[Finding] = []
    covered = -1
    for start, _generic, _length, end, name in candidates:
        if start < covered:
            continue  # inside a finding already made (a token inside a `secret = …` assignment)
        covered = end
        if honour_markers and lines.allowed(start):
            continue
        findings.append(Finding(name, lines.number(start), start, end))
    return findings


def replace(text: str, findings: list[Finding], replacement: str = REDACTED) -> str:
    """`text` with each finding's span replaced (findings as `scan` returns them: sorted, disjoint)."""
    if not findings:
        return text
    parts, last = [], 0
    for f in findings:
        parts.append(text[last:f.start])
        parts.append(replacement)
        last = f.end
    parts.append(text[last:])
    return "".join(parts)


def redact(text: str, *, honour_markers: bool = True) -> tuple[str, list[Finding]]:
    findings = scan(text, honour_markers=honour_markers)
    return replace(text, findings), findings


def describe(findings: list[Finding], limit: int = 10) -> str:
    """`line 3 (aws-access-key-id), line 9 (jwt)`: what a report says, never the values."""
    shown = ", ".join(f.where() for f in findings[:limit])
    return shown + (f" and {len(findings) - limit} more" if len(findings) > limit else "")
