"""Fixtures for the GitLab side: a fake GitLab on loopback holding a real bare repository."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import GIT_IDENTITY
from tests.fakes.gitlab_api import FakeGitLab


def run_git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_IDENTITY, "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def auth_config(fake: FakeGitLab, user: str = "oauth2", token: str | None = None) -> list[str]:
    """`-c` arguments that authenticate one git command against the fake (test side only)."""
    return ["-c", f"http.{fake.url}/.extraheader=Authorization: {fake.basic_auth(user, token)}"]


def push_files(fake: FakeGitLab, work: Path, files: dict[str, str], *, branch: str) -> str:
    """Commit `files` on top of whatever `work` holds and push them as `branch`; returns the commit."""
    if not (work / ".git").exists():
        work.mkdir(parents=True, exist_ok=True)
        run_git(work, "init", "-q", "-b", branch)
    else:
        run_git(work, "checkout", "-q", "-B", branch)
    for name, content in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(content)
    run_git(work, "add", "-A")
    run_git(work, "commit", "-q", "-m", f"on {branch}")
    run_git(work, *auth_config(fake), "push", "-q", fake.clone_url, f"HEAD:refs/heads/{branch}")
    return run_git(work, "rev-parse", "HEAD").strip()
