"""The sandbox made ready while the model thinks (sandbox/warm.py): a command handed to it runs exactly
as a cold start would, and it is not used once a path its mounts were made on is another file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from gitbot.policy import Policy
from gitbot.sandbox import warm
from gitbot.sandbox.processes import live_processes
from gitbot.sandbox.runner import Runner
from tests.sandbox.support import require_bwrap, warm_hand_overs

pytestmark = pytest.mark.slow


@pytest.fixture
def repo(tmp_path):
    # No protected path present (the usual case): missing ones get no mount point, so nothing stops a
    # sandbox being made ready.
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README").write_text("hello\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@pytest.fixture
def handed(monkeypatch):
    """The commands a warm sandbox ran."""
    return warm_hand_overs(monkeypatch)


@pytest.fixture
def runner(repo):
    require_bwrap()
    made = Runner(Policy(sandbox_mode="required"), repo)
    yield made
    made.close()


def ready(runner: Runner):
    """The runner's warm sandbox, once prepared (the model's thinking, shortened)."""
    runner._prepared()
    assert runner._warm is not None, "no sandbox was made ready"
    return runner._warm


def in_repo(repo) -> list[int]:
    """Processes whose working directory is `repo` (a sandbox's, seen from the host)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{entry}/cwd") == str(repo):
                found.append(int(entry))
        except OSError:
            continue
    return live_processes(found)


def waiting_in(repo) -> list[int]:
    """`in_repo`, once the sandbox's waiter runs there: bubblewrap has made its mounts by then (it sets
    up after the launcher answered)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = in_repo(repo)
        if any(_cmdline(pid).split(b"\0")[1:3] == [b"-c", warm.WAITER.encode()] for pid in found):  # not bwrap's
            return found
        time.sleep(0.02)
    return []


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


PROBE = ('echo "$0 $#"; readlink /proc/self/fd/0; pwd; env | sort; id; ulimit -f; '
         'grep -E "^(Cap|NoNewPrivs|Seccomp)" /proc/self/status; echo err >&2; exit 7')


def test_a_warm_start_runs_the_command_as_a_cold_one(runner, handed):
    cold = runner.run_shell(PROBE, 30)
    ready(runner)
    hot = runner.run_shell(PROBE, 30)
    assert handed == [PROBE]
    assert (hot.exit_code, hot.output, hot.notes) == (cold.exit_code, cold.output, cold.notes)
    assert cold.exit_code == 7 and "/dev/null" in cold.output and "err" in cold.output


def test_a_read_deny_file_made_before_the_command_is_hidden(runner, repo):
    runner.run_shell("true", 30)
    ready(runner)
    assert waiting_in(repo)
    (repo / ".env").write_text("TOKEN=made-while-the-model-thinks\n")  # as a file tool would, without a word
    assert "made-while" not in runner.run_shell("cat .env; echo end", 30).output


def test_a_read_deny_file_replaced_before_the_command_is_still_hidden(runner, repo, handed):
    (repo / ".env").write_text("TOKEN=first\n")
    runner.run_shell("true", 30)
    ready(runner)
    assert waiting_in(repo)  # its mounts are made
    # Renamed over: the path is another file, which the warm sandbox's mount (made on the first) does not cover.
    (repo / "x.tmp").write_text("TOKEN=second\n")
    os.rename(repo / "x.tmp", repo / ".env")
    run = runner.run_shell("cat .env; echo end", 30)
    assert "TOKEN" not in run.output and run.output.strip() == "end"
    assert handed == []  # started cold: the warm sandbox's mount was made on the first file


def test_a_file_tool_discards_the_warm_sandbox(runner, repo):
    from gitbot.secrets import Secrets
    from gitbot.tools.base import ToolContext

    ctx = ToolContext(repo=repo, policy=runner.policy, secrets=Secrets(), state={"runner": (runner.policy, runner)})
    runner.run_shell("true", 30)
    pid = ready(runner).process.pid
    assert waiting_in(repo)
    ctx.files_changing()
    assert runner._warm is None and not live_processes([pid]) and not in_repo(repo)
    assert not runner._launch_lock.locked()  # the next command gets the launcher


def test_the_timeout_counts_from_the_hand_over(runner, handed):
    runner.run_shell("true", 30)
    ready(runner)
    time.sleep(1.2)  # the model thinks longer than the timeout
    run = runner.run_shell("sleep 0.3; echo done", 1)
    assert handed and not run.timed_out and run.output.strip() == "done"
    ready(runner)
    run = runner.run_shell("sleep 30", 1)
    assert run.timed_out and run.duration < 10


def test_the_process_limit_holds(runner, handed):
    runner.run_shell("true", 30, max_processes=8)
    ready(runner)
    run = runner.run_shell("for i in $(seq 20); do sleep 2 & done 2>&1 | head -1; echo end", 30, max_processes=8)
    assert handed and "fork" in run.output.lower(), run.output


def test_closing_the_runner_leaves_nothing_of_it(runner, repo):
    runner.run_shell("true", 30)
    pid = ready(runner).process.pid
    assert waiting_in(repo)
    runner.close()
    assert not live_processes([pid]) and not in_repo(repo)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT])
def test_gitbot_killed_or_interrupted_while_the_model_thinks_leaves_nothing(repo, signum):
    require_bwrap()
    script = textwrap.dedent("""
        import sys, time
        from gitbot.policy import Policy
        from gitbot.sandbox.runner import Runner
        runner = Runner(Policy(sandbox_mode="required"), sys.argv[1])
        runner.run_shell("true", 30)
        runner._prepared()
        print(runner._warm.process.pid, runner._launcher.pid, flush=True)
        time.sleep(120)  # the model thinks
    """)
    parent = subprocess.Popen([sys.executable, "-c", script, str(repo)], stdout=subprocess.PIPE, text=True)
    pids = [int(word) for word in parent.stdout.readline().split()]
    assert live_processes(pids) and waiting_in(repo)
    parent.send_signal(signum)
    parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while (live_processes(pids) or in_repo(repo)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not live_processes(pids) and not in_repo(repo)


def _children() -> set[int]:
    found = set()
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as handle:
            found.update(int(pid) for pid in handle.read().split())
    return found


def test_a_run_closes_its_runner_when_it_ends(repo, monkeypatch):
    # An in-process caller (gitbot/eval/attempt.py runs many tasks) must not keep a launcher and a warm
    # sandbox per run for as long as anything still refers to its runner (a traceback, a cycle the
    # collector has not got to): here, a list that keeps every runner made.
    from gitbot.agent.run import RunOptions, run_task
    from gitbot.secrets import Secrets
    from gitbot.task import Task
    from tests.agent.test_loop import MODEL, provider_for
    from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

    require_bwrap()
    kept = []
    made = Runner.__init__

    def keeping(self, *args, **kwargs):
        made(self, *args, **kwargs)
        kept.append(self)

    monkeypatch.setattr(Runner, "__init__", keeping)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init",
                    "--allow-empty"], check=True)
    script = [tool_turn(("execute_command", {"command": "true"})), tool_turn(("attempt_completion", {"result": "done"}))]
    before = _children()
    with FakeMessagesAPI(script, think_seconds=0.2) as api:
        result = run_task(Task(text="Look."), repo, policy=Policy(sandbox_mode="required"),
                          options=RunOptions(model=MODEL, review_on_submit=False),
                          provider=provider_for(api, MODEL), secrets=Secrets())
        left = _children() - before  # before anything is collected
    assert kept and result.status.value == "completed", result.summary
    assert not live_processes(left) and not in_repo(repo), f"left running: {left}"
