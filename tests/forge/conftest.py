"""Fixtures for the GitHub side: a fake github.com on loopback holding a real bare repository, and a
work tree checked out from it the way actions/checkout leaves one (credential persisted)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BUGGY_MODULE, GIT_IDENTITY, TEST_MODULE
from tests.fakes.github_api import FakeGitHub

PROJECT_FILES = {"stats.py": BUGGY_MODULE, "test_stats.py": TEST_MODULE, "README.md": "# widgets\n"}


def run_git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, **GIT_IDENTITY, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    done = subprocess.run(["git", *args], cwd=cwd, env=full_env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def header_config(fake: FakeGitHub) -> list[str]:
    """`-c` arguments that authenticate one git command against the fake server (test side only)."""
    return ["-c", f"http.{fake.server_url}/.extraheader={fake.basic_auth_header()}"]


def seed(fake: FakeGitHub, tmp_path: Path, files: dict[str, str], *, branch: str | None = None) -> str:
    """Commit `files` as the first commit of `branch` on the fake's repository; returns the commit."""
    branch = branch or fake.default_branch
    work = tmp_path / "seed"
    work.mkdir()
    run_git(work, "init", "-q", "-b", branch)
    for name, content in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(content)
    run_git(work, "add", "-A")
    run_git(work, "commit", "-q", "-m", "initial")
    run_git(work, *header_config(fake), "push", "-q", fake.clone_url, f"HEAD:refs/heads/{branch}")
    return run_git(work, "rev-parse", "HEAD").strip()


def actions_checkout(fake: FakeGitHub, dest: Path, ref: str | None = None) -> Path:
    """What actions/checkout leaves: a clone whose .git/config keeps the token as an extraheader."""
    run_git(dest.parent, *header_config(fake), "clone", "-q", fake.clone_url, str(dest))
    if ref:
        run_git(dest, "checkout", "-q", ref)
    run_git(dest, "config", "--local", f"http.{fake.server_url}/.extraheader", fake.basic_auth_header())
    return dest


@pytest.fixture
def fake_github(tmp_path: Path):
    with FakeGitHub(tmp_path / "github") as fake:
        yield fake


@pytest.fixture
def seeded_github(fake_github: FakeGitHub, tmp_path: Path) -> FakeGitHub:
    seed(fake_github, tmp_path, PROJECT_FILES)
    return fake_github
