"""What a command leaves running does not outlive it, also without a pids cgroup and without the launcher:
the helper started for the command (helper.py `supervise`) waits for it as a child subreaper, kills what it
left, and exits as the command did. Real helper, real processes, throwaway repositories."""

from __future__ import annotations

import os
import time

import pytest

from gitbot.policy import Policy
from gitbot.sandbox import contain, processes
from gitbot.sandbox.runner import Runner
from tests.conftest import make_repo
from tests.sandbox.support import processes_with

pytestmark = pytest.mark.slow


@pytest.fixture
def runner(tmp_path, monkeypatch):
    """Unsandboxed, each command behind a helper of its own, no pids cgroup (an ordinary desktop user's)."""
    repo = make_repo(tmp_path / "repo", {"README.md": "# project\n"})
    monkeypatch.setattr(processes.ProcessLimit, "_make_cgroup", lambda self: None)
    made = Runner(Policy(repo=repo, sandbox_mode="off"), repo)
    monkeypatch.setattr(made, "_launcher_for_command", lambda: None)
    return made


def marked(name: str) -> tuple[str, str]:
    """A process name unique to this test, and the shell that spells it without holding it (`$M`)."""
    number = f"{os.getpid()}-{time.monotonic_ns()}"
    return f"gitbot-{name}-{number}", f"M=gitbot-{name[:2]}''{name[2:]}-{number}; "


@pytest.mark.parametrize(("command", "code"), [("exit 3", 3), ("kill -USR1 $$", -10), ("true", 0)])
def test_the_command_s_exit_status_comes_through_the_helper_unchanged(runner, command, code):
    assert runner.run_shell(command, 30).exit_code == code


def test_a_timed_out_command_that_ignores_sigterm_is_killed_with_what_it_left(runner):
    marker, define = marked("ignorer")
    started = time.monotonic()
    run = runner.run_shell(define + "setsid bash -c \"exec -a $M sleep 100\" >/dev/null 2>&1 < /dev/null & "
                           "trap '' TERM; sleep 100", 1)
    assert run.timed_out and time.monotonic() - started < 8
    assert not processes_with(marker)


@pytest.mark.skipif(contain.landlock_abi() < 6, reason="Landlock scopes signals from ABI 6 (Linux 6.12)")
def test_a_command_cannot_kill_the_helper_to_leave_a_process_running(runner):
    marker, define = marked("orphan")
    run = runner.run_shell(define + "setsid bash -c \"exec -a $M sleep 100\" >/dev/null 2>&1 < /dev/null & "
                           "kill -KILL $PPID; echo $?", 30)
    assert run.output.split()[-1] == "1", run.output  # refused (EPERM)
    assert not processes_with(marker)


@pytest.mark.skipif(contain.landlock_abi() < 6, reason="Landlock scopes signals from ABI 6 (Linux 6.12)")
def test_a_command_cannot_kill_the_launcher_to_leave_a_process_running(tmp_path):
    repo = make_repo(tmp_path / "repo", {"README.md": "# project\n"})
    runner = Runner(Policy(repo=repo, sandbox_mode="off"), repo)
    try:
        marker, define = marked("orphan")
        run = runner.run_shell(define + "setsid bash -c \"exec -a $M sleep 100\" >/dev/null 2>&1 < /dev/null & "
                               "kill -KILL $PPID; echo $?", 30)
        assert runner._launcher is not None and runner._launcher.alive()
        assert run.output.split()[-1] == "1", run.output
        assert not processes_with(marker)
    finally:
        runner.close()
