"""Red team, issue 22: in the sandbox commands run unless commands.deny refuses them, so the sandbox must
hold on its own. (Its other attacks live by what they test: test_setid.py, test_hardening.py,
test_history_store.py, tests/checkpoints/test_data_loss.py, tests/tools/test_delete_file.py.)"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox.runner import Runner
from tests.conftest import git, make_repo
from tests.sandbox.support import processes_with, require_bwrap

pytestmark = pytest.mark.slow


def test_protected_paths_network_environ_and_leftover_processes_hold_against_one_command(tmp_path: Path):
    require_bwrap()
    repo = make_repo(tmp_path / "repo", {"app.py": "print('hi')\n", "sub/mod.py": "x = 1\n",
                                         ".github/workflows/ci.yml": "on: push\n", "AGENTS.md": "be nice\n"})
    (repo / ".env").write_text("SECRET=envsecret-0451\n")
    git(repo, "add", "-f", ".env")
    git(repo, "commit", "-q", "-m", "a committed .env")
    runner = Runner(Policy(repo=repo), repo)
    assert runner.sandboxed, runner.receipt_line
    marker = "gitbot-redteam-leftover-7731"
    run = runner.run_shell(
        "echo x > AGENTS.md; echo x >> .github/workflows/ci.yml; echo x > .git/hooks/pre-commit;"
        "echo x >> .git/config; mv .github gh2; mv sub sub2; ln .env hard; ln -s .env soft;"
        "cat .env hard soft sub2/.env /proc/self/fd/0 < .env;"
        "cat /proc/1/environ | tr '\\0' '\\n' | grep -c -i -e anthropic -e api_key;"
        "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), 2)\" 2>&1 | tail -1;"
        f"(setsid sh -c 'exec -a {marker} sleep 60' >/dev/null 2>&1 &); ls /root /home 2>&1", 30)
    assert "envsecret-0451" not in run.output
    assert (repo / "AGENTS.md").read_text() == "be nice\n"
    assert (repo / ".github" / "workflows" / "ci.yml").read_text() == "on: push\n"
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()  # (a missing .gitbot: test_created_protected.py)
    assert not (repo / "gh2").exists()
    assert "Network is unreachable" in run.output
    assert processes_with(marker) == []


def test_a_symlinked_git_dir_cannot_be_swapped_for_one_whose_config_runs_on_the_host(tmp_path: Path):
    # The command replaces the `.git` link with a copy whose core.fsmonitor the user's git would run.
    require_bwrap()
    path = make_repo(tmp_path / "repo", {"app.py": "x\n"})
    real_git = tmp_path / "elsewhere.git"
    os.rename(path / ".git", real_git)
    os.symlink(real_git, path / ".git")
    pwned = tmp_path / "PWNED"
    runner = Runner(Policy(repo=path), path)
    if runner.refusal:
        return  # refusing to run there is a fix
    with contextlib.suppress(Exception):  # refusing the command is a fix too
        runner.run_shell(
            f"rm .git && mkdir .git && cp -r {real_git}/. .git/ && "
            f"printf '[core]\\n\\tfsmonitor = \"touch {pwned}; false\"\\n' >> .git/config", 30)
    subprocess.run(["git", "status", "--short"], cwd=path, capture_output=True, check=False)
    assert not pwned.exists(), "the host's git ran a core.fsmonitor a sandboxed command planted"
    assert os.path.islink(path / ".git"), ".git was replaced by a sandboxed command"
