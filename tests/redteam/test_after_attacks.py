"""Red team, missing protected paths (sandbox/created.py) and symlinks at read_deny names (planted.py):
whatever a command makes at a protected path that was missing must be out of the work tree before anything
of the host reads it, and a symlink at a denied name must not let a later host write put a secret where
commands read. Real bubblewrap (or the real unsandboxed runner), throwaway repositories under tmp_path.

The tests marked GOT THROUGH assert the secure behaviour and fail on the branch as it stands; `test_held_*`
pass. Most GOT THROUGH ones fail on main too (said in each); new on this branch: a command's protected path
left when gitbot is hung up on mid-command, the OSError that skips the set-aside, the message wording."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path

import pytest

from gitbot import git as hostgit
from gitbot.policy import Policy
from gitbot.sandbox import processes
from gitbot.sandbox.created import ProtectedPathCreated
from gitbot.sandbox.planted import SET_ASIDE, CommandUndone
from gitbot.sandbox.runner import Runner
from tests.conftest import make_repo
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow

POLICY = '[commands]\nallow = ["*"]\n'


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# project\n", "notes.txt": "notes\n",
                                         "public/index.html": "<p>hi</p>\n"})


def sandboxed(repo: Path, **policy) -> Runner:
    require_bwrap()
    runner = Runner(Policy(repo=repo, sandbox_mode="required", **policy), repo)
    assert runner.sandboxed, runner.receipt_line
    return runner


def set_aside(repo: Path) -> list[Path]:
    store = repo / ".git" / "gitbot" / SET_ASIDE
    return sorted(store.iterdir()) if store.is_dir() else []


def run_undone(runner: Runner, command: str):
    """Run `command`; the CommandUndone it raised (or None)."""
    try:
        runner.run_shell(command, 30)
    except CommandUndone as exc:
        return exc
    return None


@pytest.mark.parametrize("entry", ["{repo}/node_modules/.bin", "node_modules/.bin"])  # absolute, relative
def test_a_toolchain_directory_on_path_a_command_creates_is_not_run_by_the_hosts_git(repo, tmp_path, monkeypatch,
                                                                                     entry):
    # GOT THROUGH (on main too). The user's PATH has the repository's `node_modules/.bin` (direnv's
    # `PATH_add node_modules/.bin`) before `npm install` ran. The sandbox leaves it off the commands' PATH, but
    # gitbot's own git on the host (checkpoints, diff, commit) runs `git` through the user's PATH: a `git`
    # a command puts there runs on the host, unsandboxed, as the user.
    marker = tmp_path / "host-ran-the-planted-git"
    monkeypatch.setenv("PATH", f"{entry.format(repo=repo)}:{os.environ['PATH']}")
    runner = sandboxed(repo)
    undone = run_undone(runner, f"mkdir -p node_modules/.bin && printf '#!/bin/sh\\ntouch {marker}\\nexec /usr/bin/git "
                                "\"$@\"\\n' > node_modules/.bin/git && chmod +x node_modules/.bin/git")
    hostgit.run(["status", "--porcelain"], cwd=repo)  # what the step's checkpoint or the user's `git` does next
    assert not marker.exists(), f"the host ran the command's git (undone: {undone})"


def test_gitbot_run_runs_a_git_a_command_planted_in_a_missing_path_entry_on_the_host(tmp_path):
    # GOT THROUGH (on main too), through `gitbot run`: the step's checkpoint runs the planted `git` unsandboxed.
    from tests.conftest import run_gitbot
    from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

    require_bwrap()
    repo = make_repo(tmp_path / "repo", {"README.md": "# project\n"})
    marker = tmp_path / "host-ran-the-planted-git"
    command = (f"mkdir -p node_modules/.bin && printf '#!/bin/sh\\ntouch {marker}\\nexec /usr/bin/git \"$@\"\\n' "
               "> node_modules/.bin/git && chmod +x node_modules/.bin/git")
    script = [tool_turn(("execute_command", {"command": command})), tool_turn(("attempt_completion", {"result": "d"})),
              tool_turn(("attempt_completion", {"result": "done"}))]
    with FakeMessagesAPI(script) as api:
        proc = run_gitbot(["run", "--task", "x", "--repo", str(repo), "--json"],
                          env={**api.env(), "PATH": f"{repo}/node_modules/.bin:{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stderr[-800:]
    assert not marker.exists(), "gitbot ran the command's `git` on the host, unsandboxed"
