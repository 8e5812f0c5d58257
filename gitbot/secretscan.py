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
- SQL passwords (`WITH PASSWORD '…'`, `IDENTIFIED BY '…'`);
- high-entropy strings assigned to a secret-like name (`password`, `secret`, `token`, `api_key`,
  `access_key`, `private_key`, `client_secret`, `credential`…, as `=`, `:`, `:=` or `=>`): at least 16
  characters, letters and digits, and at least 3.5 bits of entropy per character. A random string with
  no such name is not found: nothing tells it from a hash or an id, and every lockfile is full of those.

False positives: `scan(text)` does not report a line carrying `gitbot: allow-secret` (or detect-secrets'
`pragma: allowlist secret`), or directly below a line carrying it. gitbot's own doors never honour it
(Secrets.scrub passes honour_markers=False: the agent or the model could write the marker too), except
the pushed diff for a marked line the change removes and adds again unchanged (forge/leaks.py).

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
KEYWORD_KIND = "password-assignment"  # a plain value under a secret's name (see _keyword_spans)
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


# A value that is one template placeholder and nothing else: Python's `{password}`, `%(password)s`, `%s`,
# shell's `$PASS`, `$(cat pw)`, JavaScript's `${pw}`. The text it stands for is somewhere else.
_TEMPLATE_VALUE = re.compile(r"\{[^{}]*\}|%\([\w.]+\)[sr]|%[sr]|\$\w+|\$\{[^{}]*\}|\$\([^()]*\)")


def _password_like(value: str) -> bool:
    return (len(value) >= 8 and entropy(value) >= 2.5 and not _PLACEHOLDER.search(value)
            and not _TEMPLATE_VALUE.fullmatch(value) and value.lower() not in _NOT_VALUES)  # `user:PASSWORD@host`


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

# A PEM private key: its BEGIN line, then its END line within PEM_BODY_CHARS (found with str.find over the
# END lines' positions, never a regex that walks and backtracks the body from every BEGIN: many BEGIN lines
# without an END were quadratic), else the base64 (or JSON-escaped) run after the BEGIN line.
PEM_BODY_CHARS = 20000
_PEM_BEGIN = re.compile(rf"-----BEGIN {_PEM}-----")
_PEM_END = re.compile(rf"-----END {_PEM}-----")
_PEM_RUN = re.compile(r"[A-Za-z0-9+/=\s\\]*")


def _private_key_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    ends: list[int] | None = None
    pos = 0
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        body = begin.end()
        if ends is None:  # every END line's start, once
            ends = [m.start() for m in re.finditer("-----END", text)]
        i = bisect.bisect_left(ends, body)
        end_line = _PEM_END.match(text, ends[i]) if i < len(ends) and ends[i] - body <= PEM_BODY_CHARS else None
        end = end_line.end() if end_line else _PEM_RUN.match(text, body).end()
        spans.append((begin.start(), end))
        pos = max(end, begin.start() + 1)
    return spans


RULES: tuple[Rule, ...] = (
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
    # The host may be a placeholder too: `f"postgresql://app:<password>@{host}/db"`, `…@${HOST}`, `…@%(host)s`.
    Rule("url-credentials", r"://[^\s/:@'\"]{1,100}:(?P<v>[^\s/@'\"]{3,200})@[A-Za-z0-9.{$%\[-]", _password_like),
    Rule("http-authorization", r"authorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer|token)\s+(?P<v>[a-z0-9+/=._~-]{12,})",
         random_looking, lowered=True, generic=True),
    # SQL: `CREATE USER app WITH PASSWORD '…'`, `ALTER ROLE … PASSWORD '…'`, MySQL's `IDENTIFIED BY '…'`.
    Rule("sql-password", r"(?:password|identified by)\s+'(?P<v>[^'\n]{1,200})'", _password_like, lowered=True,
         generic=True),
    Rule("secret-assignment", r"(?:passwd|password|passphrase|secret|token|api[_.-]?key|apikey|access[_.-]?key"
                              r"|private[_.-]?key|credential|signing[_.-]?key)" + _NAME_TAIL
                              + r"(?P<v>[a-z0-9+/=_.~-]{16,200})(?![a-z0-9+/=_.~-])",
         random_looking, lowered=True, generic=True),
)


# ---------------------------------------------------------------- plain values under a secret's name
#
# gitbot: allow-secret (the examples below are what this rule finds)
# `DB_PASS=plainpassword123`, `ADMIN_PIN=4417-9921-velvet`, `"password": "hunter2hunter2"`: no shape and
# little entropy, only the name says it is a secret. detect-secrets' KeywordDetector is the reference
# (its keyword list, its list of values that are not secrets, its assignment forms per language); this
# rule judges the whole name rather than any text around the keyword (`password_hash`, `token_url`,
# `max_tokens` and `compass` are not secret names), and a value that reads as code (a call, an
# attribute, a variable, a type, a template) is not a value. Both are what keeps `password =
# os.environ[...]`, `token = get_token()` and `secret: str` out.
# Where it differs from KeywordDetector (red team finding 11 listed what that one finds and this missed):
# - a name may go on after the keyword (its `password\w*`) only with words of _QUALIFIERS (`PASSWORD_DB`,
#   `TOKEN_PROD`), never any word: `password_hash = "…"` and `token_type = "bearer"` stay out;
# - a quoted value may hold spaces (its secret is anything up to the quote) only as a passphrase (3 to 8
#   plain words, no word of a sentence): a message under a secret's name is not one;
# - a backslash is part of a `.env` value alone on its line, elsewhere it ends the value (`"TOKEN=x\\n"`);
# - a YAML block scalar (`password: |` and the line below) is read here, from the text, where it parses YAML
#   files; a block of more than one line is left to the shape rules (a PEM key), prose is not a value.

# The keyword, then the rest of the name, up to two closing quotes or brackets, and the assignment.
_KEYWORD = re.compile(r"(?:pass(?:word|wd|phrase|code)?|pwd|secret|token|pin|key|credentials?|contrase(?:n|ñ)a)"
                      r"[a-z0-9_.-]{0,30}?[\"'\]]{0,2}[ \t]*"
                      r"(?::[ \t]*[a-z_][a-z0-9_.\[\]|, ]{0,40}?[ \t]*(?==[^=>]))?"  # a type: `secret: str = …`
                      r"(?::=|=>|=|:)[ \t]*(?P<q>[\"'`]?)(?P<v>[^\s\"'`]{1,200})")
_NAME_CHARS = re.compile(r"[A-Za-z0-9_.-]{1,40}\Z")
_NAME_PARTS = re.compile(r"[_.-]+|(?<=[a-z0-9])(?=[A-Z])")
SECRET_WORDS = frozenset({"password", "passwd", "pwd", "pass", "passphrase", "passcode", "secret", "token", "pin",
                          "pincode", "apikey", "privatekey", "secretkey", "accesskey", "authkey", "credential",
                          "credentials", "keypass", "contrasena", "contraseña"})
# `<word>_key` and `<word>_code` are secret names after these words only (`api_key`, `pin_code`).
_KEY_OWNERS = frozenset({"api", "access", "auth", "private", "secret", "client", "app", "signing", "encryption",
                         "master", "db", "database", "service", "account", "admin"})
_CODE_OWNERS = frozenset({"pin", "pass", "secret", "access", "auth"})
_SECRET_SUFFIXES = ("password", "passwd", "passphrase", "secret", "token", "apikey")
# Words that may follow a secret's word in its name and keep it a secret's name: whose or which one it is
# (a service, an environment, a role). A closed list: a word missing here misses a secret under a rare
# name, a word wrongly here (`hash`, `url`, `type`, `field`, `name`, `count`) flags code everywhere.
_QUALIFIERS = frozenset({
    "db", "database", "sql", "mysql", "mariadb", "postgres", "postgresql", "pg", "redis", "mongo", "mongodb",
    "ldap", "smtp", "imap", "mail", "email", "ftp", "sftp", "ssh", "amqp", "rabbitmq", "kafka", "vault",
    "registry", "docker", "npm", "pypi", "github", "gitlab", "aws", "gcp", "azure", "slack", "stripe", "s3",
    "prod", "production", "dev", "development", "staging", "stage", "test", "qa", "uat", "local", "live",
    "admin", "root", "master", "primary", "replica", "service", "svc", "app", "bot", "ci", "deploy", "backup",
})
_DIGITS_ALLOWED = frozenset({"pin", "pincode", "pass", "password", "passwd", "pwd", "passcode"})
# Values that are a word of the language, a type or a stand-in (detect-secrets' FALSE_POSITIVES, and more).
_NOT_VALUES = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "undef", "str", "string", "bytes", "int", "bool", "any",
    "optional", "required", "object", "dict", "list", "secret", "secrets", "password", "passwords", "passwd",
    "token", "tokens", "prompt", "todo", "test", "testing", "string?", "disable", "disabled", "enabled", "default",
    "not_real_key", "thisisnottherealsecret", "dummy_value", "dummy_secret", "some_key", "str_to_sign", "nopasswd",
    "login_password", "account_password", "test-access-key", "unknown", "missing", "hidden", "masked", "notset",
})
_CODE_START = tuple("$%{<[(@&*=:#/\\!?~|^+")
_DOTTED_NAME = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w-]*")
_BLANKS = re.compile(r"[ \t\r\f\v]*")
_ENUM_WORDS = re.compile(r"[A-Z]+(?:[_-][A-Z]+)+")
_PLAIN_PATH = re.compile(r"[a-z][a-z0-9_.-]*(?:/[a-z][a-z0-9_.-]*)+/?")


def _name_before(text: str, kw_start: int) -> tuple[str, int]:
    """The name the keyword at `kw_start` ends (or is inside), and where that name starts."""
    left = _NAME_CHARS.search(text, max(0, kw_start - 40), kw_start)
    start = left.start() if left else kw_start
    return text[start:kw_start], start


def secret_name(name: str) -> bool:
    """Does the whole name (`DB_PASS`, `adminPin`, `client_secret`, `API-KEY`, `PASSWORD_DB`) name a secret?"""
    parts = [p.lower() for p in _NAME_PARTS.split(name.strip("\"'[]")) if p]
    # `PASSWORD_DB`, `TOKEN_PROD`, `PASSWORD2`: after the secret's word, only words that say whose or which
    # one it is. Any other word after it (`password_hash`, `token_url`, `secret_name`) says what the
    # value is about instead, and is not a secret.
    qualified = False
    while len(parts) > 1 and (parts[-1] in _QUALIFIERS or parts[-1].isdigit()):
        parts.pop()
        qualified = True
    if not parts:
        return False
    last, before = parts[-1], parts[-2] if len(parts) > 1 else ""
    last = last.rstrip("0123456789") or last  # `password2`, `token1`
    if qualified and last in ("pass", "pin"):
        return False  # `PASS_CI`, `PIN_TEST`: a verb, a board's pin, as often as a password
    return (last in SECRET_WORDS or (last == "key" and before in _KEY_OWNERS)
            or (last in ("code", "phrase") and before in _CODE_OWNERS)
            or last.endswith(_SECRET_SUFFIXES)  # PGPASSWORD, csrftoken, dbsecret
            or parts[-3:] == ["secret", "key", "base"])  # Rails' SECRET_KEY_BASE


def plain_secret_value(value: str, *, quoted: bool, parts: list[str], env_line: bool) -> bool:
    """Is `value`, assigned to a secret's name, a literal secret rather than code or a stand-in?"""
    if len(value) < 6 or value.startswith(_CODE_START) or value.lower() in _NOT_VALUES or _PLACEHOLDER.search(value):
        return False
    if "..." in value or "…" in value or _NAME_PARTS.sub("", value).lower() == "".join(parts):
        return False  # `sk-ant-...` in documentation; `KNOWN_SECRET = "known-secret"`, a constant's own name
    if len(set(value)) < 3:  # `aaaaaaaa`, `--------`
        return False
    if _ENUM_WORDS.fullmatch(value) and parts and parts[-1] in value.lower().replace("_", "-").split("-"):
        return False  # `PASS=PASS-FAIL-SKIP`: the name's own word among constants, a status, not a secret
    if not quoted and _PLAIN_PATH.fullmatch(value):
        return False  # `secret: kv/data/app`, `pass: tests/unit/ok`: a path to a secret or a test, not one
    qualified = bool(parts) and (parts[-1] in _QUALIFIERS or parts[-1].isdigit())  # `PASSWORD_DB`
    if qualified and ("/" in value or _DOTTED_NAME.fullmatch(value)):
        return False  # `TOKEN_DB = "tokens.sqlite3"`: there the name may say a file of them, not one
    if value.isdigit():
        return quoted or bool(_DIGITS_ALLOWED & set(parts))
    if quoted:
        return True
    if any(c in value for c in "()[]{}") or _DOTTED_NAME.fullmatch(value):
        return False  # a call, an index, an attribute: code
    if _IDENTIFIER.fullmatch(value) and not env_line:
        # A bare word after `password = ` is a variable in code, unless it reads like a password.
        return any(c.isdigit() for c in value)
    return True


# A quoted value with spaces is a secret only as a passphrase: 3 to 8 words, none of them English glue or
# the words of a message about a password (`"Enter your password"`, `"must be at least 8 characters"`).
_PHRASE_WORD = re.compile(r"[A-Za-z0-9]{2,}(?:[-'][A-Za-z0-9]+)*")
_PROSE_WORDS = frozenset({
    "a", "an", "the", "and", "or", "but", "not", "no", "nor", "is", "are", "was", "were", "be", "been",
    "am", "do", "does", "did", "has", "have", "had", "will", "would", "can", "could", "cannot", "should",
    "must", "may", "might", "of", "to", "in", "on", "at", "by", "for", "from", "with", "without", "into",
    "about", "as", "if", "then", "than", "this", "that", "these", "those", "it", "its", "you", "your", "my",
    "me", "we", "our", "they", "their", "there", "here", "what", "which", "who", "when", "where", "why",
    "how", "all", "any", "each", "every", "some", "none", "please", "enter", "type", "use", "used", "using",
    "set", "new", "old", "see", "required", "invalid", "missing", "incorrect", "wrong", "empty", "expired",
    "field", "value", "values", "characters", "least", "most", "long", "short", "match", "matches",
    "confirm", "change", "reset", "forgot", "provided", "given", "too"
}) | SECRET_WORDS | {"key", "keys", "passwords", "secrets", "tokens"}


def passphrase(value: str) -> bool:
    words = value.split(" ")
    return (3 <= len(words) <= 8 and len(value) >= 12 and all(_PHRASE_WORD.fullmatch(w) for w in words)
            and not any(w.lower() in _PROSE_WORDS for w in words))


_BLOCK_INDICATOR = re.compile(r"[|>][1-9]?[+-]?[1-9]?")


def _block_scalar(text: str, lines: _Lines, key_start: int, key_end: int) -> tuple[int, int] | None:
    """The span of a YAML block scalar's only line (the line below `key_start…key_end`, indented deeper),
    or None when there is none or it goes on over more lines (prose, a certificate: the other rules')."""
    if key_end >= len(text):
        return None
    indent = len(_BLANKS.match(text, key_start, key_end).group())
    first_start, first_end = lines.bounds(key_end + 1)
    content = _BLANKS.match(text, first_start, first_end).end()
    if content - first_start <= indent or content == first_end:
        return None
    if first_end < len(text):
        next_start, next_end = lines.bounds(first_end + 1)
        if _BLANKS.match(text, next_start, next_end).end() - next_start > indent and \
                text[next_start:next_end].strip():
            return None  # a second line of the same block
    return content, len(text[content:first_end].rstrip()) + content


def _keyword_spans(text: str, lowered: str | None, lines: _Lines) -> list[tuple[int, int]]:
    haystack = lowered if lowered is not None else text
    rx = _KEYWORD if lowered is not None else re.compile(_KEYWORD.pattern, re.IGNORECASE)
    spans = []
    pos = 0
    while (match := rx.search(haystack, pos)) is not None:
        pos = match.start() + 1
        kw_start = match.start()
        prefix, name_start = _name_before(text, kw_start)
        tail = re.match(r"[A-Za-z0-9_.-]*", text[kw_start:match.start("v")]).group()
        name = prefix + tail
        if not secret_name(name):
            continue
        start, end = match.span("v")
        quote = match.group("q")
        # The line's bounds come from `lines` (worked out once), not rfind/find per hit: on one long line
        # (a minified bundle) that was quadratic.
        line_start, line_end = lines.bounds(name_start)
        if quote:
            if not text.startswith(quote, end):
                # The quoted text goes on past a space: a passphrase (`"correct horse battery staple"`),
                # or far more often a sentence (`"Enter your password"`).
                close = text.find(quote, end, min(line_end, start + 200))
                if close < 0 or not passphrase(text[start:close]):
                    continue
                end = close
        else:
            while end > start and text[end - 1] in ",;)]}":
                end -= 1
        separator = text[kw_start + len(tail):start]
        if not quote and _BLOCK_INDICATOR.fullmatch(text, start, end):
            # YAML's `password: |` (or `>-`, …): the value is the indented line below.
            if separator.strip(" \t\"'") != ":" or _BLANKS.match(text, end, line_end).end() != line_end:
                continue
            block = _block_scalar(text, lines, line_start, line_end)
            if block is None:
                continue
            start, end = block
            if " " in text[start:end] and not passphrase(text[start:end]):
                continue  # prose: a block scalar is a quoted value without the quotes
            quote = "|"  # a block scalar is literal text, never code
        # `NAME=value` alone on its line (a .env file, a shell's `export`): a bare word there is the value,
        # backslashes included (`DB_PASS=Velv\\et…`). Elsewhere (`"TOKEN=x\\n"` in source code) the value
        # ends at an escape.
        lead = text[line_start:name_start].strip() if name_start - line_start <= 100 else "(code)"
        env_line = False
        if lead in ("", "export") and separator == "=" and not quote:
            rest = _BLANKS.match(text, end, line_end).end()  # where the rest of the line starts
            env_line = rest == line_end or text[rest] == "#"
        escape = -1 if env_line else text.find("\\", start, end)
        end = escape if escape >= 0 else end
        parts = [p.lower() for p in _NAME_PARTS.split(name) if p]
        if plain_secret_value(text[start:end], quoted=bool(quote), parts=parts, env_line=env_line):
            spans.append((start, end))
            pos = match.end()
    return spans


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
        self._markers: list[int] | None = None

    def number(self, offset: int) -> int:
        if self._starts is None:
            self._starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        return bisect.bisect_right(self._starts, offset)

    def bounds(self, offset: int, above: int = 0) -> tuple[int, int]:
        """(start, end) of the line holding `offset` (or of the line `above` lines up), newline excluded."""
        index = self.number(offset) - 1 - above
        starts = self._starts
        end = starts[index + 1] - 1 if index + 1 < len(starts) else len(self.text)
        return starts[index], end

    def allowed(self, offset: int) -> bool:
        """The line holding `offset`, or the line above it, carries an allow-marker."""
        if self._markers is None:  # found once: a search per finding over a long line was quadratic
            self._markers = [m.start() for m in _ALLOW.finditer(self.text)]
        start, end = self.bounds(offset)
        return self._marked(start, end) or (start > 0 and self._marked(*self.bounds(offset, above=1)))

    def _marked(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self._markers, start)
        return i < len(self._markers) and self._markers[i] < end


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
    # On a tie (the same span), the earlier rule names the finding: a high-entropy value under a secret's
    # name stays a secret-assignment, the keyword rule names only what the others miss.
    for start, end in _private_key_spans(text):  # first on a tie, as the most specific rule
        candidates.append((start, False, -(end - start), -1, end, "private-key"))
    for order, rule in enumerate(RULES):
        for start, end in _rule_spans(rule, text, lowered):
            candidates.append((start, rule.generic, -(end - start), order, end, rule.name))
    lines = _Lines(text)
    for start, end in _keyword_spans(text, lowered, lines):
        candidates.append((start, True, -(end - start), len(RULES), end, KEYWORD_KIND))
    if not candidates:
        return []
    candidates.sort()
    findings: list[Finding] = []
    covered = -1
    for start, _generic, _length, _order, end, name in candidates:
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
