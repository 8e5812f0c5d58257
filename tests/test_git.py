"""git facts a passing fix-check needs, read in one git process."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitbot import git
from gitbot.errors import NotAGitRepository
from tests.conftest import git as run_git
from tests.conftest import make_repo

pytestmark = pytest.mark.slow  # runs git


def count_git_runs(monkeypatch) -> list[tuple[str, ...]]:
    calls: list[tuple[str, ...]] = []
    real = git.run
    monkeypatch.setattr(git, "run", lambda args, **kw: calls.append(tuple(args)) or real(args, **kw))
    return calls


def test_the_root_and_an_unfinished_operation_come_from_one_git_process(tmp_path: Path, monkeypatch):
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n", "sub/b.txt": "b\n"})
    calls = count_git_runs(monkeypatch)
    assert git.root_and_operation(repo / "sub") == (repo, None)
    assert len(calls) == 1
    run_git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.txt").write_text("other\n")
    run_git(repo, "commit", "-q", "-am", "other")
    run_git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("main\n")
    run_git(repo, "commit", "-q", "-am", "main")
    with pytest.raises(Exception):  # noqa: B017 - the merge stops on the conflict
        run_git(repo, "merge", "-q", "other")
    root, unfinished = git.root_and_operation(repo / "sub")
    assert root == repo and "in the middle of a merge" in unfinished
    assert unfinished == git.operation_in_progress(repo)


def test_a_linked_worktree_has_its_own_unfinished_operations(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    run_git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    (repo / ".git" / "worktrees" / "side" / "CHERRY_PICK_HEAD").write_text("0" * 40 + "\n")
    assert git.root_and_operation(tmp_path / "side") == (tmp_path / "side", git.operation_in_progress(tmp_path / "side"))
    assert "cherry-pick" in git.operation_in_progress(tmp_path / "side")
    assert git.root_and_operation(repo) == (repo, None)


def test_outside_a_work_tree_it_says_so(tmp_path: Path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotAGitRepository, match="not inside a git work tree"):
        git.root_and_operation(plain)
    with pytest.raises(NotAGitRepository):
        git.root_and_operation(tmp_path / "missing")
