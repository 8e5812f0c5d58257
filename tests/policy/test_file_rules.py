"""File rules: globs, normalisation, and the ways a path can try to slip past them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.policy.files import GlobError, compile_glob, validate_path_glob


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".env").write_text("SECRET=1\n")
    (root / "src" / "app.py").write_text("print()\n")
    (root / "config").mkdir()
    (root / "config" / "server.pem").write_text("-----BEGIN-----\n")
    os.symlink(root / ".env", root / "innocent.txt")
    os.symlink(root / ".github" / "workflows", root / "wf")
    os.symlink(tmp_path, root / "escape")
    (tmp_path / "outside.txt").write_text("outside\n")
    return root


@pytest.fixture
def policy(repo: Path) -> Policy:
    return Policy(repo=repo)


READS = {
    # path -> (allowed, reason fragment)
    "src/app.py": (True, "allowed"),
    ".": (True, "allowed"),
    "": (True, "allowed"),
    ".env": (False, "read_deny"),
    "./.env": (False, "read_deny"),
    "src/../.env": (False, "read_deny"),
    "a/../.env": (False, "read_deny"),
    ".//.env": (False, "read_deny"),
    ".env.local": (False, "read_deny"),
    "sub/dir/.env.production": (False, "read_deny"),
    ".ENV": (False, "read_deny"),  # a case-insensitive file system opens .env
    "config/server.pem": (False, "read_deny"),
    "config/SERVER.PEM": (False, "read_deny"),
    "home/.ssh/id_rsa": (False, "read_deny"),
    "home/.ssh/id_ed25519.pub": (False, "read_deny"),
    "deep/.netrc": (False, "read_deny"),
    "innocent.txt": (False, "real path of innocent.txt"),  # a symlink to .env
    ".git/config": (False, ".git/"),
    ".GIT/config": (False, ".git/"),
    "../outside.txt": (False, "outside the repository"),
    "src/../../outside.txt": (False, "outside the repository"),
    "/etc/passwd": (False, "outside the repository"),
    "escape/outside.txt": (False, "outside the repository"),  # a symlink out of the repository
    ".env.example.txt": (False, "read_deny"),
    "environment.py": (True, "allowed"),
    "sub/.git/config": (False, ".git/"),  # a nested repository's .git counts too
    "a/b/.GIT/HEAD": (False, ".git/"),
    "vendor/lib/.git": (False, ".git/"),
    ".gitignore": (True, "allowed"),
    "sub/.gitmodules": (True, "allowed"),
    "x.git/config": (True, "allowed"),
}

EDITS = {
    "src/app.py": (True, "edit_allow"),
    "src/new/module.py": (True, "edit_allow"),
    ".git/config": (False, ".git/"),
    ".git": (False, ".git/"),
    ".GIT/hooks/pre-commit": (False, ".git/"),
    ".github/workflows/ci.yml": (False, "edit_deny"),
    "./.github/workflows/ci.yml": (False, "edit_deny"),
    ".github/../.github/workflows/x.yml": (False, "edit_deny"),
    ".GitHub/Workflows/ci.yml": (False, "edit_deny"),
    "wf/ci.yml": (False, "edit_deny"),  # a symlink into .github/workflows
    ".gitbot/policy.toml": (False, "edit_deny"),
    ".gitbot": (False, "edit_deny"),
    ".github/dependabot.yml": (True, "edit_allow"),
    "../outside.txt": (False, "outside the repository"),
    "escape/outside.txt": (False, "outside the repository"),
    "": (False, "repository root"),
    "sub/.git/config": (False, ".git/"),
    "sub/.Git/hooks/pre-commit": (False, ".git/"),
    "./vendor/x/../lib/.git": (False, ".git/"),
    "sub/.gitignore": (True, "edit_allow"),
}


@pytest.mark.parametrize("path", sorted(READS))
def test_read_rules(policy: Policy, path: str):
    allowed, fragment = READS[path]
    decision = policy.check_read(path)
    assert decision.allowed is allowed, decision.reason
    assert fragment in decision.reason


# Paths that lead through a symlink: only check_read, which resolves them, can judge those.
THROUGH_SYMLINKS = {"innocent.txt", "escape/outside.txt"}


@pytest.mark.parametrize("path", sorted(set(READS) - THROUGH_SYMLINKS))
def test_a_walked_path_is_judged_as_check_read_judges_it(policy: Policy, path: str):
    # check_read_walked serves paths found by a walk that follows no symlink (ripgrep's).
    walked, full = policy.file_rules.check_read_walked(path), policy.check_read(path)
    assert (walked.allowed, walked.reason) == (full.allowed, full.reason)


def test_a_walked_path_costs_no_lstat(policy: Policy, monkeypatch):
    policy.file_rules.check_read_walked("README.md")  # the repository's real path is looked up once
    touched: list[object] = []
    monkeypatch.setattr(os, "lstat", lambda *args, **kwargs: touched.append(args) or os.stat(*args, **kwargs))
    denied = policy.file_rules.check_read_walked("config/server.pem")
    allowed = policy.file_rules.check_read_walked("src/deep/er/app.py")
    walked_touched = list(touched)
    policy.check_read("src/deep/er/app.py")  # the full check does look at each component
    monkeypatch.undo()
    assert (denied.allowed, allowed.allowed, walked_touched) == (False, True, [])
    assert touched


@pytest.mark.parametrize("path", sorted(EDITS))
def test_edit_rules(policy: Policy, path: str):
    allowed, fragment = EDITS[path]
    decision = policy.check_edit(path)
    assert decision.allowed is allowed, decision.reason
    assert fragment in decision.reason


def test_absolute_paths_inside_the_repository_are_judged_like_relative_ones(policy: Policy, repo: Path):
    assert policy.check_read(str(repo / "src" / "app.py")).allowed
    assert not policy.check_read(str(repo / ".env")).allowed
    assert not policy.check_edit(str(repo / ".github" / "workflows" / "ci.yml")).allowed


def test_deny_wins_over_allow(repo: Path):
    policy = Policy(repo=repo, edit_allow=("src/**",), edit_deny=("src/generated/**",))
    assert policy.check_edit("src/app.py").allowed
    assert not policy.check_edit("src/generated/x.py").allowed
    assert "no files.edit_allow rule" in policy.check_edit("docs/x.md").reason


def test_allow_rules_are_case_sensitive_deny_rules_are_not(repo: Path):
    policy = Policy(repo=repo, edit_allow=("docs/**",), edit_deny=("docs/private/**",))
    assert not policy.check_edit("DOCS/readme.md").allowed  # not allowed: allow is exact
    assert not policy.check_edit("docs/PRIVATE/x.md").allowed  # denied: deny ignores case


@pytest.mark.parametrize("pattern, path, matches", [
    ("**", "a/b/c.py", True),
    ("**/*.pem", "x.pem", True),
    ("**/*.pem", "a/b/x.pem", True),
    ("*.pem", "a/x.pem", False),
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/sub/a.py", False),
    ("src/**/*.py", "src/a.py", True),
    ("src/**/*.py", "src/x/y/a.py", True),
    (".git/**", ".git", True),
    (".git/**", ".github/x", False),
    ("a?c", "abc", True),
    ("a?c", "a/c", False),
    ("[ab].txt", "a.txt", True),
    ("[!ab].txt", "c.txt", True),
    ("[!ab].txt", "/.txt", False),
    ("a\\*b", "a*b", True),
    ("a\\*b", "axb", False),
])
def test_glob_semantics(pattern: str, path: str, matches: bool):
    assert bool(compile_glob(pattern).match(path)) is matches


@pytest.mark.parametrize("pattern, message", [
    ("", "empty"),
    ("/etc/passwd", "relative to the repository root"),
    ("./src/**", "drop the leading './'"),
    ("../**", "'..'"),
    ("src/[abc", "unclosed '['"),
    ("trailing\\", "backslash"),
])
def test_invalid_globs_say_what_is_wrong(pattern: str, message: str):
    with pytest.raises(GlobError, match=re.escape(message)):
        validate_path_glob(pattern)


def test_protected_directories_for_the_sandbox(repo: Path):
    policy = Policy(repo=repo)
    protected = policy.protected_directories(repo)
    assert repo / ".github" / "workflows" in protected
    assert not any(path.name == ".git" for path in protected)  # the sandbox handles .git itself


def test_cached_decisions_follow_a_directory_replaced_by_a_symlink(repo: Path):
    policy = Policy(repo=repo)
    (repo / "docs").mkdir()
    assert policy.check_edit("docs/ci.yml").allowed
    assert policy.check_edit("docs/ci.yml").allowed  # now from the cache
    (repo / "docs").rmdir()
    os.symlink(repo / ".github" / "workflows", repo / "docs")
    decision = policy.check_edit("docs/ci.yml")
    assert not decision.allowed and "real path" in decision.reason
    (repo / ".secrets").mkdir()
    (repo / ".secrets" / ".env").write_text("x")
    os.symlink(repo / ".secrets" / ".env", repo / "notes.txt")
    assert not policy.check_read("notes.txt").allowed


@pytest.mark.parametrize("patterns", [
    ("**/.env", "**/.env.*", "**/*.pem", "config/**", "a/*/b.txt", "**/secrets/**", "x?y", "[ab]*.key"),
    ("src/**", "**"),
    ("**/*.py", "docs/**/*.md", "**/build", "Makefile"),
])
def test_combined_rules_pick_the_same_first_rule_as_one_by_one(patterns: tuple[str, ...]):
    from gitbot.policy.files import _RuleSet

    paths = [".env", "a/.env", "a/.env.local", "k.pem", "config", "config/x/y", "a/q/b.txt", "a/q/r/b.txt",
             "deep/secrets/x", "secrets", "xzy", "b1.key", "src/a.py", "docs/a/b.md", "x/build", "Makefile",
             "A/.ENV", "", "build/x"]
    for ignore_case in (True, False):
        rules = _RuleSet(patterns, ignore_case=ignore_case)
        for path in paths:
            expected = next((p for p in patterns if compile_glob(p, ignore_case=ignore_case).match(path)), None)
            assert rules.first_match(path) == expected, (path, ignore_case)


@pytest.mark.parametrize("directory, shelters", [
    (".github", True),  # above .github/workflows/**
    (".github/workflows", True),
    (".github/ISSUE_TEMPLATE", False),
    (".GITHUB", True),
    ("src", False),
    ("", True),  # the root is above everything
    ("wf", True),  # a symlink to .github/workflows
])
def test_directories_above_protected_paths(policy: Policy, directory: str, shelters: bool):
    assert bool(policy.file_rules.shelters(directory)) is shelters


def test_a_leading_double_star_does_not_make_every_directory_a_parent(repo: Path):
    policy = Policy(repo=repo, edit_deny=("**/secrets/**", "**/*.pem", "x/**/y/**"))
    assert not policy.file_rules.shelters("src")  # `**` matches anywhere, below the link's name too
    assert policy.file_rules.shelters("src/secrets")
    assert policy.file_rules.shelters("x")
    assert policy.file_rules.shelters("x/q")


def test_the_fast_shelter_matcher_says_what_the_rule_walk_says():
    # readdeny.py asks it about every symlink in a tree (node_modules/.bin holds thousands): it must agree
    # with _RuleSet.shelters, the walk over each rule's parts, on any path.
    import random

    from gitbot.policy.defaults import DEFAULT_READ_DENY
    from gitbot.policy.files import _RuleSet, shelter_matcher

    rules = (*DEFAULT_READ_DENY, "secrets/**", "a/**/b.key", "config/keys/*.json", "**/deep/**/x/*.pem", "*.cfg",
             "x/y", "**/q/**")
    fast, walk = shelter_matcher(rules), _RuleSet(rules, ignore_case=True).shelters
    names = [".docker", ".DOCKER", "a", "b", "secrets", "config", "keys", "deep", "x", "y", "public", "z.pem",
             ".env", "c.cfg", "q"]
    rng = random.Random(3)
    paths = ["/".join(rng.choice(names) for _ in range(rng.randint(1, 5))) for _ in range(800)]
    assert [bool(fast(path)) for path in paths] == [walk(path) is not None for path in paths]
    assert fast(".docker") and fast("a/.Docker") and not fast("public") and not fast(".env")
    assert shelter_matcher(("**/.env", "**/*.pem")) is None  # only leading `**`: nothing is named on the way
