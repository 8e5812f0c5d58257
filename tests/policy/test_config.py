"""The policy file: loading, the base revision, and errors with file, line and what was expected."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitbot.policy import Limits, Policy, PolicyError, load_policy, parse_policy

FULL = """\
[files]
read_deny  = [".env", ".env.*", "**/*.pem", "**/*.key", "**/id_rsa*", "**/.netrc"]
edit_allow = ["**"]
edit_deny  = [".git/**", ".github/workflows/**", ".gitbot/**"]

[commands]
allow = ["python -m pytest *", "pytest *", "ruff check *", "git diff *", "git status *", "ls *", "cat *", "grep *"]
deny  = ["git push *", "curl *", "wget *", "sudo *"]

[sandbox]
mode = "required"
network = true

[limits]
max_steps = 20
max_cost_usd = 1.5
max_consecutive_mistakes = 4
max_wall_seconds = 600
command_timeout_seconds = 30
"""


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid")
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def test_the_issue_example_loads_with_every_value(tmp_path: Path):
    policy = parse_policy(FULL, source="policy.toml", repo=tmp_path)
    assert policy.sandbox_mode == "required" and policy.network is True
    assert policy.limits == Limits(max_steps=20, max_cost_usd=1.5, max_consecutive_mistakes=4,
                                   max_wall_seconds=600, command_timeout_seconds=30)
    assert policy.command_deny == ("git push *", "curl *", "wget *", "sudo *")
    assert not policy.check_command("git push").allowed
    assert "commands.allow" in policy.check_command("pytest -q").reason


def test_missing_keys_take_the_defaults(tmp_path: Path):
    policy = parse_policy("[limits]\nmax_steps = 7\n", source="p.toml", repo=tmp_path)
    assert policy.limits.max_steps == 7 and policy.limits.max_cost_usd == Limits().max_cost_usd
    assert policy.command_allow == Policy().command_allow
    assert policy.sandbox_mode == "auto" and policy.network is False


ERRORS = {
    "unknown-key": ("[files]\nread_deny = []\nread_deni = ['x']\n", 3,
                    "unknown key 'read_deni' in [files] (did you mean 'read_deny'?)"),
    "unknown-table": ("[limits]\nmax_steps = 3\n\n[sandboxx]\nmode = 'off'\n", 4, "did you mean [sandbox]?"),
    "unknown-top-level-key": ("network = false\n", 1, "unknown table or key 'network'"),
    "wrong-type-list": ("[commands]\nallow = \"pytest *\"\n", 2, "must be a list of command patterns"),
    "wrong-type-item": ("[files]\nedit_deny = [\n  '.git/**',\n  3,\n]\n", 2, "contains an integer"),
    "wrong-type-bool": ("[sandbox]\nnetwork = 'false'\n", 2, "must be true or false, got a string"),
    "wrong-mode": ("[sandbox]\n\nmode = 'sometimes'\n", 3, 'one of "required", "auto", "off"'),
    "bool-as-number": ("[limits]\nmax_steps = true\n", 2, "a whole number greater than 0"),
    "float-steps": ("[limits]\nmax_steps = 2.5\n", 2, "a whole number"),
    "negative-cost": ("[limits]\nmax_cost_usd = -1\n", 2, "greater than 0"),
    "zero-timeout": ("[limits]\ncommand_timeout_seconds = 0\n", 2, "greater than 0"),
    "invalid-glob": ("[files]\nread_deny = [\n  '.env',\n  'secrets/[abc',\n]\n", 4, "unclosed '['"),
    "absolute-glob": ("[files]\nedit_deny = ['/etc/**']\n", 2, "relative to the repository root"),
    "empty-pattern": ("[commands]\ndeny = ['curl *', '']\n", 2, "empty pattern"),
    "unbalanced-quote": ("[commands]\nallow = [\"pytest 'x\"]\n", 2, "cannot split pattern"),
    "invalid-command-glob": ("# comment\n[commands]\nallow = ['ls [a']\n", 3, "invalid glob"),
    "table-is-not-table": ("files = 3\n", 1, "must be a table"),
    "bad-toml": ("[files]\nread_deny = [\n", 2, "not valid TOML"),
    "dotted-key": ("files.edit_denyy = []\n", 1, "unknown key 'edit_denyy'"),
    "relative-read-only": ("[sandbox]\nread_only = [\n  '/opt/tools',\n  'tools',\n]\n", 4,
                           "a list of absolute paths (or ~/…)"),
    "read-only-not-a-list": ("[sandbox]\nread_only = '/opt'\n", 2, "a list of absolute paths"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_policy_errors_name_file_line_and_expectation(tmp_path: Path, name: str):
    text, line, message = ERRORS[name]
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path, path)
    error = caught.value
    assert error.file == str(path)
    assert error.line == line, str(error)
    assert message in str(error)
    assert str(error).startswith(f"bad policy file: {path}:{line}: ")


def test_sandbox_read_only_paths(tmp_path: Path):
    path = tmp_path / "policy.toml"
    path.write_text("[sandbox]\nread_only = ['/opt/tools', '~/.config/mise']\n")
    assert load_policy(tmp_path, path).sandbox_read_only == ("/opt/tools", "~/.config/mise")
    assert Policy().sandbox_read_only == ()


def test_no_policy_file_means_defaults(tmp_path: Path):
    policy = load_policy(tmp_path)
    assert policy.command_allow == Policy().command_allow
    assert "built-in defaults" in policy.source


def test_the_repository_policy_file_is_read_by_default(tmp_path: Path):
    (tmp_path / ".gitbot").mkdir()
    (tmp_path / ".gitbot" / "policy.toml").write_text("[commands]\nallow = ['make *']\n")
    policy = load_policy(tmp_path)
    assert policy.check_command("make test").allowed
    assert not policy.check_command("ls").allowed


def test_an_explicit_missing_policy_file_is_an_error(tmp_path: Path):
    with pytest.raises(PolicyError, match="does not exist"):
        load_policy(tmp_path, tmp_path / "nope.toml")


def test_base_ref_keeps_a_change_from_loosening_its_own_policy(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitbot").mkdir()
    (repo / ".gitbot" / "policy.toml").write_text("[commands]\nallow = ['ls *']\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "policy")
    # The change under review rewrites the policy in the working tree.
    (repo / ".gitbot" / "policy.toml").write_text("[commands]\nallow = ['*']\n")
    assert load_policy(repo).check_command("curl evil").allowed
    from_base = load_policy(repo, base_ref="main")
    assert not from_base.check_command("curl evil").allowed
    assert from_base.check_command("ls").allowed
    assert from_base.source == "main:.gitbot/policy.toml"
    # An explicit file inside the repository is also read from the base revision.
    assert not load_policy(repo, repo / ".gitbot" / "policy.toml", base_ref="main").check_command("curl x").allowed


def test_base_ref_without_a_policy_file_gives_defaults_and_bad_revisions_fail(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a")
    (repo / ".gitbot").mkdir()
    (repo / ".gitbot" / "policy.toml").write_text("[commands]\nallow = ['*']\n")
    assert not load_policy(repo, base_ref="main").check_command("curl x").allowed
    with pytest.raises(PolicyError, match="does not exist"):
        load_policy(repo, base_ref="no-such-branch")
    with pytest.raises(PolicyError, match="does not exist"):
        load_policy(repo, base_ref="--upload-pack=touch /tmp/pwned")
    (repo / ".gitbot" / "policy.toml").write_text("[files]\nbogus = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bad policy")
    with pytest.raises(PolicyError) as caught:
        load_policy(repo, base_ref="main")
    assert caught.value.file == "main:.gitbot/policy.toml" and caught.value.line == 2
