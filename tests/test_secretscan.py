"""gitbot.secretscan: every kind of planted secret is found and replaced, ordinary text is not, the
allow-marker works, and a finding tells where and what, never the value."""

from __future__ import annotations

import pytest

from gitbot import secretscan
from gitbot.secretscan import REDACTED, redact, scan
from tests.secret_corpus import NOT_SECRETS, planted

PLANTED = planted()


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_planted_kind_is_found_and_replaced(name):
    text, value = PLANTED[name]
    cleaned, findings = redact(text)
    assert findings, f"{name} was not found"
    assert value not in cleaned and REDACTED in cleaned
    # Nothing long of the value survives either (a prefix such as `ghp_` may stay).
    assert not any(value[i:i + 12] in cleaned for i in range(4, max(5, len(value) - 12)))


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_is_left_alone(text):
    assert scan(text) == []


def test_a_finding_says_where_and_what_but_not_the_value():
    token = PLANTED["github classic pat"][1]
    key = PLANTED["aws access key id"][1]
    text = f"line one\nconfig = 1\nTOKEN={token}\n\n  aws = {key}\n"
    findings = scan(text)
    assert [(f.kind, f.line) for f in findings] == [("github-token", 3), ("aws-access-key-id", 5)]
    report = secretscan.describe(findings) + repr(findings[0].where("app/settings.py"))
    assert report.startswith("line 3 (github-token), line 5 (aws-access-key-id)")
    assert "app/settings.py:3 (github-token)" in report
    assert token not in report and key not in report


def test_a_specific_kind_names_a_token_assigned_to_a_secret_name():
    token = PLANTED["stripe live key"][1]
    [finding] = scan(f'STRIPE_SECRET = "{token}"')
    assert finding.kind == "stripe-key"


@pytest.mark.parametrize("marker", ["# gitbot: allow-secret", "# pragma: allowlist secret"])
def test_the_allow_marker_on_the_line_or_the_line_above_keeps_a_false_positive(marker):
    key = PLANTED["aws access key id"][1]
    assert scan(f"FIXTURE = '{key}'  {marker}\n") == []
    assert scan(f"{marker}\nFIXTURE = '{key}'\n") == []
    assert scan(f"{marker}\n\nFIXTURE = '{key}'\n") != []  # two lines above: not covered
    assert scan(f"FIXTURE = '{key}'  {marker}\n", honour_markers=False) != []


def test_a_private_key_is_replaced_as_a_whole_block_even_without_its_end():
    text, _ = PLANTED["rsa private key"]
    cut = text[: len(text) // 2]
    cleaned, [finding] = redact(cut)
    assert finding.kind == "private-key" and cleaned.strip() == f"key:\n{REDACTED}"


def test_undecodable_and_wide_text_is_scanned_too():
    token = PLANTED["github app installation token"][1]
    # `İ`.lower() is two characters: the case-insensitive rules must not shift their spans.
    text = f"İİİ password = 'Zq8{token[4:30]}' \udcff {token}"
    cleaned, findings = redact(text)
    assert token not in cleaned and token[4:30] not in cleaned
    assert {f.kind for f in findings} == {"secret-assignment", "github-token"}
