"""The commit gate's rule for one path (fixcheck/gate.py): what may leave, and why not."""

from __future__ import annotations

import pytest

from gitbot.fixcheck.gate import GateClosed, Stopped, shown, why_not
from gitbot.policy import Policy

POLICY = Policy(edit_deny=(".git/**", ".github/workflows/**", ".gitbot/**", "ci.cfg"))
BLOB = b"100644"


@pytest.mark.parametrize("path,mode,reason", [
    (b"stats.py", BLOB, None),
    (b":(glob)*", BLOB, None),
    (b"-rf", BLOB, None),
    (b"caf\xe9.txt", BLOB, None),
    (b"sub/.git/config", BLOB, "a .git path is never committed"),
    (b"sub/.GIT./hooks/pre-commit", BLOB, "a .git path is never committed"),
    (b"AGENTS.md", BLOB, "gitbot's policy and instruction files are changed only by people"),
    (b".gitbot/policy.toml", BLOB, "gitbot's policy and instruction files are changed only by people"),
    (b"vendor/lib", b"160000", "a submodule or nested repository, not a file"),
    (b".env", BLOB, "it matches files.read_deny"),
    (b"keys/deploy.pem", BLOB, "it matches files.read_deny"),
    (b"ci.cfg", BLOB, "the policy does not allow editing it"),
    (b"removed.py", b"000000", None),
])
def test_each_path_is_judged_by_name_mode_and_policy(path, mode, reason):
    assert why_not(path, mode, {path}, POLICY) == reason


def test_a_path_the_run_did_not_change_never_leaves():
    assert why_not(b"gha-creds-5f2e.json", BLOB, {b"stats.py"}, POLICY) == "the run did not change it"


def test_a_refusal_names_paths_safely_and_never_content():
    assert shown(b"a\nb\x1b[31m\xff") == "a\\nb\\x1b[31m\\xff"
    closed = GateClosed([Stopped(shown(b".env"), "it matches files.read_deny")] * 12)
    assert str(closed).count(".env (it matches files.read_deny)") == 10 and "and 2 more" in str(closed)
