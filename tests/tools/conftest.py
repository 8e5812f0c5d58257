"""Fixtures for the file tools: a real git repository in tmp_path and a ToolContext on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitbot.policy import load_policy
from gitbot.secrets import Secrets
from gitbot.tools.base import ToolContext, ToolResult
from tests.conftest import git


def write(repo: Path, relpath: str, content: str | bytes) -> Path:
    target = repo / relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_bytes(content.encode("utf-8"))
    return target


def text_of(output: str | ToolResult) -> str:
    return output.text if isinstance(output, ToolResult) else output


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git repository with one commit: README.md and src/app.py."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root, "README.md", "# sample\n")
    write(root, "src/app.py", "def main():\n    return 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture
def ctx(repo: Path) -> ToolContext:
    """The tools' context with the default policy (no .gitbot/policy.toml in the repository)."""
    return ToolContext(repo=repo, policy=load_policy(repo), secrets=Secrets())
