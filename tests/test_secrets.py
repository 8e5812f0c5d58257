"""gitbot.secrets: which values are secrets, and every form of them that `redact` removes."""

from __future__ import annotations

import base64
import json
import re
import time
import urllib.parse
import uuid

import pytest

from gitbot.secrets import REDACTED, Secrets

TOKEN = "ghs_" + "Ab1/+Cd2" * 5  # `/` and `+`: URL-encoding and the URL-safe base64 alphabet differ


@pytest.fixture
def secrets() -> Secrets:
    return Secrets({TOKEN})


def test_secrets_come_from_secret_looking_variables():
    found = Secrets.from_environment({"GITHUB_TOKEN": "ghs_value123456", "MY_API_KEY": "abcdefgh12",
                                      "DEPLOY_PASSWORD": "hunter2-hunter2", "PATH": "/usr/bin:/bin",
                                      "SHORT_TOKEN": "abc"})
    assert found.values == {"ghs_value123456", "abcdefgh12", "hunter2-hunter2"}


@pytest.mark.parametrize("prefix", ["", "x-access-token:", "x:", "user:"])
@pytest.mark.parametrize("shift", [b"", b"a", b"ab", b"abc", b"abcd"])
@pytest.mark.parametrize("urlsafe", [False, True])
def test_base64_at_every_alignment_and_in_pairs_is_redacted(secrets, prefix, shift, urlsafe):
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    blob = encode(shift + f"{prefix}{TOKEN}".encode() + b"\n trailing bytes").decode()
    redacted = secrets.redact(f"header: basic {blob}")
    assert REDACTED in redacted
    # No run of the encoded token survives: every character that encodes only the token is gone.
    for start in range(len(blob) - 12):
        window = blob[start:start + 12]
        if window in redacted:
            assert not set(range(start, start + 12)) & _token_chars(shift, prefix, blob), (window, redacted)


def _token_chars(shift: bytes, prefix: str, blob: str) -> set[int]:
    """Indexes of base64 characters whose six bits all come from the token's bytes."""
    first = len(shift) + len(prefix.encode())
    last = first + len(TOKEN.encode())
    return {i for i in range(len(blob)) if first * 8 <= i * 6 and (i + 1) * 6 <= last * 8}


def test_the_actions_checkout_extraheader_is_redacted_whole(secrets):
    header = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert secrets.redact(f"AUTHORIZATION: basic {header}") == f"AUTHORIZATION: basic {REDACTED}"


def test_url_encoded_and_hex_forms_are_redacted(secrets):
    for form in (urllib.parse.quote(TOKEN, safe=""), urllib.parse.quote_plus(TOKEN),
                 re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote(TOKEN, safe="")), TOKEN.encode().hex(),
                 TOKEN.encode().hex().upper()):
        assert secrets.redact(f"before {form} after") == f"before {REDACTED} after", form
    assert secrets.redact(json.dumps({"token": TOKEN})) == json.dumps({"token": REDACTED})


@pytest.mark.parametrize("token", [
    "ghp_" + "a1B2c3D4e5" * 3, "gho_" + "Z" * 36, "ghs_" + "9" * 36, "ghu_" + "x1Y2z" * 7,
    "github_pat_11ABCDEFG0" + "q" * 60, "sk-ant-api03-" + "K" * 80,
])
def test_well_known_token_shapes_are_redacted_even_when_unknown(token):
    text = f"found in a file: {token} (end)"
    assert Secrets().redact(text) == f"found in a file: {REDACTED} (end)"


@pytest.mark.parametrize("text", ["ghp_short", "the ghp_ prefix", "sk-ant-planted-0123", "github_pat_",
                                  "a normal sentence about tokens"])
def test_ordinary_text_is_left_alone(text):
    assert Secrets().redact(text) == text


def test_a_secret_containing_another_is_redacted_whole():
    secrets = Secrets({"abcdefgh", "abcdefghijkl"})
    assert secrets.redact("abcdefghijkl abcdefgh abcdefghi") == f"{REDACTED} {REDACTED} {REDACTED}i"


def test_added_values_are_redacted_and_short_ones_ignored():
    secrets = Secrets()
    value = "added-" + uuid.uuid4().hex
    assert secrets.redact(value) == value
    secrets.add(value)
    secrets.add("short")
    secrets.add(None)
    assert secrets.values == {value}
    assert secrets.redact(f"x {value} {base64.b64encode(value.encode()).decode()} short") == \
        f"x {REDACTED} {REDACTED} short"


def test_a_text_found_clean_is_scanned_again_once_a_value_is_added():
    # Clean texts are remembered so that history is not rescanned at every step; a value added later (the
    # GitLab job token, read after the run's Secrets exist) may be in one of them.
    secrets = Secrets()
    value = "added-" + uuid.uuid4().hex
    text = f"output: {value}"
    assert secrets.scrub(text) == (text, [])
    secrets.add(value)
    redacted, found = secrets.scrub(text)
    assert redacted == f"output: {REDACTED}" and [f.kind for f in found] == ["known-secret"]
    # The same when the set itself is changed rather than through add().
    other = "other-" + uuid.uuid4().hex
    assert secrets.scrub(other) == (other, [])
    secrets.values.add(other)
    assert secrets.scrub(other)[0] == REDACTED


def test_a_text_with_findings_reports_them_every_time_it_is_scrubbed():
    secrets = Secrets({TOKEN})
    text = f"line one\ntoken {TOKEN} and ghp_{'a1B2' * 9}"
    first, second = secrets.scrub(text), secrets.scrub(text)
    assert first == second and len(first[1]) == 2 and TOKEN not in first[0]


def test_the_clean_memory_starts_over_past_its_size(monkeypatch):
    import gitbot.secrets as module

    monkeypatch.setattr(module, "CLEAN_MEMORY_CHARS", 100)
    secrets = Secrets()
    texts = [f"{n} " + "plain words " * 3 for n in range(20)]
    for text in texts:
        assert secrets.scrub(text) == (text, [])
    assert secrets._clean_chars <= 100 and len(secrets._clean) < len(texts)


@pytest.mark.slow
def test_multi_line_secrets_are_redacted():
    key = "-----BEGIN PRIVATE KEY-----\n" + "MIIEv" * 300 + "\n-----END PRIVATE KEY-----"
    secrets = Secrets({key})
    assert secrets.redact(f"key:\n{key}\ndone") == f"key:\n{REDACTED}\ndone"


def test_redact_is_fast_with_many_secrets():
    secrets = Secrets({f"secret-{uuid.uuid4().hex}" for _ in range(50)})
    secrets.redact("warm up: builds the regex once")
    text = uuid.uuid4().hex * 5_000  # 160 kB with no secret in it
    started = time.perf_counter()
    for n in range(10):  # ten different texts: one seen before is not scanned again
        assert secrets.redact(f"{n} {text}") == f"{n} {text}"
    assert time.perf_counter() - started < 2
