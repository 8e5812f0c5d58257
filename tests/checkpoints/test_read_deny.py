"""The checkpoint store never holds a file the policy's read_deny rules match, and restoring never
deletes or overwrites one because no checkpoint holds it (issue 12: an untracked `.env` was captured,
and the store is uploaded as the Action's artifact)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gitbot.checkpoints import Checkpointer, restore
from gitbot.policy.defaults import DEFAULT_READ_DENY
from tests.checkpoints.test_checkpoints import _quiet_git_config, tree_files  # noqa: F401  (autouse fixture)
from tests.conftest import git, make_repo

SECRET = "AKIA" + "Q7RZ3M5XW2KD9PLT"  # the shape of an AWS key id; no real key


def store_text(repo: Path, tmp_path: Path) -> bytes:
    """Every object the shadow stores itself (not those it borrows from the user's store), as one
    blob of bytes: what an uploaded copy of `.git/gitbot` would hold."""
    copy = tmp_path / "store-copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(repo / ".git" / "gitbot" / "shadow", copy)
    (copy / "objects" / "info" / "alternates").unlink(missing_ok=True)
    return subprocess.run(["git", f"--git-dir={copy}", "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"app.py": "print('v1')\n", ".gitignore": "*.log\n"})


def test_an_untracked_denied_file_is_never_stored_and_restore_leaves_it(repo: Path, tmp_path: Path) -> None:
    (repo / ".env").write_text(f"AWS_ACCESS_KEY_ID={SECRET}\n")
    (repo / "deploy").mkdir()
    (repo / "deploy" / "server.KEY").write_text(f"{SECRET} key\n")  # case does not dodge `**/*.key`
    cp = Checkpointer(repo, "run-a", read_deny=DEFAULT_READ_DENY)
    first = cp.take(0)
    (repo / "app.py").write_text("print('v2')\n")
    (repo / ".env").write_text(f"AWS_ACCESS_KEY_ID={SECRET}\nEDITED=1\n")
    (repo / ".env.local").write_text(f"LOCAL={SECRET}\n")  # created during the run
    (repo / "new.py").write_text("x = 1\n")
    second = cp.take(1)

    for checkpoint in (first, second):
        files = tree_files(repo, checkpoint.commit)
        assert "app.py" in files and not {".env", ".env.local", "deploy/server.KEY"} & set(files)
    assert ".env" in second.not_captured and ".env.local" in second.not_captured
    assert second.files_changed == ["app.py", "new.py"]
    assert SECRET.encode() not in store_text(repo, tmp_path)

    # Restored without being told the rules (as `gitbot checkpoints restore` does): the run's manifests
    # carry them, so the denied files are neither reverted nor deleted, and the rest is restored.
    report = restore(repo, "run-a", 0)
    assert (repo / "app.py").read_text() == "print('v1')\n" and not (repo / "new.py").exists()
    assert (repo / ".env").read_text() == f"AWS_ACCESS_KEY_ID={SECRET}\nEDITED=1\n"
    assert (repo / ".env.local").read_text() == f"LOCAL={SECRET}\n"
    assert (repo / "deploy" / "server.KEY").exists()
    assert ".env" not in report.removed and ".env.local" not in report.removed
    assert SECRET.encode() not in store_text(repo, tmp_path)


def test_a_tracked_denied_file_and_its_staged_edit_stay_out_of_the_store(repo: Path, tmp_path: Path) -> None:
    (repo / ".env").write_text("OLD=1\n")
    git(repo, "add", ".env")
    git(repo, "commit", "-q", "-m", "committed by mistake")
    (repo / ".env").write_text(f"AWS_ACCESS_KEY_ID={SECRET}\n")
    git(repo, "add", ".env")  # staged only: a blob no commit holds, which seeding would copy in
    cp = Checkpointer(repo, "run-b", read_deny=DEFAULT_READ_DENY)
    first = cp.take(0)
    (repo / "app.py").write_text("print('v2')\n")
    second = cp.take(1, touched=["app.py"])
    third = cp.take(2, touched=[".env"])  # a file tool named it: the fast path must not add it either

    for checkpoint in (first, second, third):
        assert ".env" not in tree_files(repo, checkpoint.commit)
    assert SECRET.encode() not in store_text(repo, tmp_path)
    restore(repo, "run-b", 0)
    assert (repo / ".env").read_text() == f"AWS_ACCESS_KEY_ID={SECRET}\n"  # neither deleted nor reverted
    assert (repo / "app.py").read_text() == "print('v1')\n"
    assert git(repo, "diff", "--cached", "--name-only").strip() == ".env"  # the user's index untouched


def test_a_reopened_run_keeps_its_rules_and_other_runs_are_unaffected(repo: Path) -> None:
    (repo / ".env").write_text(f"KEY={SECRET}\n")
    Checkpointer(repo, "run-c", read_deny=("**/.env",)).take(0)
    reopened = Checkpointer(repo, "run-c")
    assert reopened.read_deny == ("**/.env",)
    (repo / "app.py").write_text("print('v3')\n")
    assert ".env" not in tree_files(repo, reopened.take(1).commit)
    # A run without read_deny rules captures what git shows, as before.
    assert ".env" in tree_files(repo, Checkpointer(repo, "run-d").take(0).commit)


@pytest.mark.parametrize("path", [".env", "a/.ENV", "a/b/.env.local", "x.pem", "a/id_rsa.pub", "secrets",
                                  "secrets/a/b", "config/x.secret", "config/a/x.secret", "src/envfile", "a.env",
                                  "deep/.netrc", ".envrc", "key.py", "a/b.KEY"])
def test_the_store_excludes_exactly_what_the_policy_denies_reading(path: str) -> None:
    from gitbot.policy.files import FileRules
    from gitbot.policy.files import path_matcher as _deny_matcher

    rules = (*DEFAULT_READ_DENY, "secrets/**", "config/*.secret")
    assert _deny_matcher(rules)(path) == (not FileRules(rules, (), ()).check_read(path))
