"""Plain values under a secret's name (issue 20, finding 7): `DB_PASS=plainpassword123` and
`ADMIN_PIN=4417-9921-velvet` are found, named by kind and line, never shown; code, types and stand-ins
assigned to such a name are not. bench/bench_secret_recall.py compares the same set with detect-secrets."""

from __future__ import annotations

import pytest

from gitbot.secrets import Secrets
from gitbot.secretscan import KEYWORD_KIND, REDACTED, scan, secret_name
from tests.keyword_corpus import NOT_SECRETS, planted

PLANTED = planted()


def test_the_planted_set_is_large_and_varied():
    assert len(PLANTED) >= 40 and len({kind for kind, *_ in PLANTED}) >= 10


@pytest.mark.parametrize("kind,name,line,value", PLANTED, ids=[f"{k}:{n}:{i}" for i, (k, n, *_)
                                                                 in enumerate(PLANTED)])
def test_every_planted_secret_is_found_and_replaced(kind, name, line, value):
    text, findings = Secrets().scrub(f"{name}\n{line}\n")
    assert value not in text and REDACTED in text
    # A value random enough for the older high-entropy rule keeps that rule's name, as does a URL's password.
    value_line = 2 + line[:line.index(value)].count("\n")  # a YAML block scalar's is the line below its key
    assert [f.line for f in findings] == [value_line]
    assert findings[0].kind in (KEYWORD_KIND, "secret-assignment", "url-credentials")


@pytest.mark.parametrize("name,line", NOT_SECRETS)
def test_code_types_and_stand_ins_are_not_secrets(name, line):
    assert scan(line) == []


@pytest.mark.parametrize("text", [
    "DB_PASS=plainpassword123",
    "ADMIN_PIN=4417-9921-velvet",
    'conn = connect(user="app", password="Tr0ub4dor&3")',
    "  mysql_root_password: s3cret-sauce-99",
])
def test_the_issues_examples_and_friends(text):
    [finding] = scan(text)
    assert finding.kind == KEYWORD_KIND and finding.where("cfg") == f"cfg:1 ({KEYWORD_KIND})"


def test_a_high_entropy_value_keeps_its_kind():
    # The keyword rule names only what the older rules miss.
    assert [f.kind for f in scan('password = "Zq8vR2mK9xT4wL7nB3cY6pH1"')] == ["secret-assignment"]


def test_the_allow_marker_keeps_a_false_positive():
    text = "FIXTURE_PASSWORD=hunter2hunter2  # gitbot: allow-secret\n# pragma: allowlist secret\nPIN=99887766\n"
    assert scan(text) == []
    assert [f.line for f in scan(text, honour_markers=False)] == [1, 3]


def test_the_scanners_own_source_has_no_finding():
    from pathlib import Path

    import gitbot

    for path in sorted(Path(gitbot.__file__).parent.rglob("*.py")):
        assert scan(path.read_text(encoding="utf-8")) == [], path  # nor of any other rule (its examples)


@pytest.mark.parametrize("name,secret", [
    ("PASSWORD_DB", True), ("TOKEN_PROD", True), ("DB_PASSWORD_PROD", True), ("PASSWORD2", True),
    ("API_KEY_PROD", True), ("secretAdmin", True),
    ("password_hash", False), ("token_url", False), ("token_type", False), ("secret_name", False),
    ("PASS_CI", False), ("PIN_TEST", False), ("DB_ADMIN", False),
])
def test_a_name_may_go_on_after_its_secret_word_only_to_say_whose(name, secret):
    assert secret_name(name) is secret


def test_a_yaml_block_scalar_of_one_line_is_a_value_and_of_more_lines_is_not():
    one = "db:\n  password: |-\n    plainvelvet1234\n  user: app\n"
    [finding] = scan(one)
    assert finding.line == 3 and one[finding.start:finding.end] == "plainvelvet1234"
    # Two lines read as text (a certificate's is found by its own rule): no keyword finding.
    assert scan("password: |\n  plainvelvet1234\n  second line\n") == []
