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



@pytest.mark.parametrize("command", [
    "setsid sh -c 'sleep 0.4; mkdir .gitbot; echo x > .gitbot/policy.toml' >/dev/null 2>&1 < /dev/null &",
    "(sh -c '(sleep 0.4; echo x > AGENTS.md) &' &) >/dev/null 2>&1",  # double fork
    "nohup sh -c 'trap \"\" HUP TERM; sleep 0.4; mkdir .gitbot' >/dev/null 2>&1 &",
    "sh -c 'while :; do mkdir .gitbot 2>/dev/null; rmdir .gitbot 2>/dev/null; done' >/dev/null 2>&1 & sleep 0.05",
])
def test_held_a_sandboxed_process_that_outlives_its_command_leaves_no_protected_path(repo, command):
    runner = sandboxed(repo)
    run_undone(runner, command)  # (the loop may be caught mid-way: then it is set aside)
    time.sleep(0.8)
    assert not os.path.lexists(repo / ".gitbot") and not os.path.lexists(repo / "AGENTS.md")


def test_unsandboxed_a_detached_process_cannot_create_a_protected_path_after_the_check(repo, monkeypatch):
    # GOT THROUGH where gitbot has no pids cgroup of its own (an unprivileged user on most desktops: the
    # limit falls back to RLIMIT_NPROC). Without a sandbox created.py is the only protection, and the
    # command's process group is all that is killed: a `setsid` child is not in it.
    monkeypatch.setattr(processes.ProcessLimit, "_make_cgroup", lambda self: None)
    runner = Runner(Policy(repo=repo, sandbox_mode="off"), repo)
    assert not runner.sandboxed and not runner.contained
    monkeypatch.setattr(runner, "_launcher_for_command", lambda: None)
    run = runner.run_shell("setsid sh -c 'sleep 0.5; mkdir .gitbot; echo x > .gitbot/policy.toml' "
                           ">/dev/null 2>&1 < /dev/null &", 30)
    assert run.exit_code == 0
    time.sleep(1.2)
    assert not os.path.lexists(repo / ".gitbot")


def test_unsandboxed_a_process_that_leaves_its_pids_cgroup_cannot_create_a_protected_path_after_the_check(repo):
    # GOT THROUGH (unsandboxed; root here, or a user whose cgroup tree is delegated): with a pids cgroup the
    # command can still write its own pid into the parent's cgroup.procs (same uid, /sys writable without a
    # sandbox), then setsid: neither the cgroup nor the process group holds it, and it outlives the check.
    if not os.path.isdir("/sys/fs/cgroup/pids") or os.geteuid() != 0:
        pytest.skip("cgroup v1 pids hierarchy as root")
    runner = Runner(Policy(repo=repo, sandbox_mode="off"), repo)
    assert not runner.sandboxed and not runner.contained
    run = runner.run_shell("(echo $BASHPID > /sys/fs/cgroup/pids/cgroup.procs && exec setsid sh -c "
                           "'sleep 0.6; mkdir .gitbot; echo x > .gitbot/policy.toml') >/dev/null 2>&1 &", 30)
    assert run.exit_code == 0
    time.sleep(1.3)
    assert not os.path.lexists(repo / ".gitbot")


def in_container_without_cgroups(repo: Path, commands: dict[str, str], tmp_path: Path) -> dict:
    """tests/sandbox/test_contain.py's container, with /sys/fs/cgroup read-only as in a usual Docker job."""
    import json
    import shutil
    import subprocess
    import sys

    from gitbot.sandbox import contain
    from tests.sandbox.test_contain import ROOT, SCRIPT

    if contain.landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": str(ROOT)}
    outer = [shutil.which("bwrap"), "--unshare-user", "--disable-userns", "--bind", "/", "/", "--dev", "/dev",
             "--proc", "/proc", "--ro-bind", "/sys/fs/cgroup", "/sys/fs/cgroup", "--die-with-parent", "--",
             sys.executable, "-c", SCRIPT, str(repo), json.dumps(commands)]
    completed = subprocess.run(outer, capture_output=True, text=True, env=env, timeout=240, check=False)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_contained_a_detached_process_cannot_plant_a_denied_name_link_after_the_check(tmp_path):
    # GOT THROUGH (contained mode, in a container without a writable pids cgroup: the usual Docker job). The
    # command's `setsid` child is outside its process group, so it outlives the command (Landlock still holds
    # it: it cannot read `.env`), and makes `.env -> ../README.md` after the check. The next command's
    # `before()` takes it for the user's own link: never set aside. The host's write of the secret then lands
    # in README.md, which commands read.
    repo = make_repo(tmp_path / "repo", {"README.md": "# project\n", "app/main.py": "x = 1\n"})
    # (Made while the model thinks, between two commands: one made while another command runs is that one's.)
    results = in_container_without_cgroups(repo, {
        "plant": "setsid sh -c 'sleep 1; ln -s ../README.md app/.env' >/dev/null 2>&1 < /dev/null &",
    }, tmp_path)
    assert results["contained"] is True, results["receipt"]
    time.sleep(1.5)
    assert not os.path.islink(repo / "app" / ".env"), "the link a command's survivor made stays, adopted as the user's"
