"""A command's checkpoint is taken while the next model request is out, and is in the record before the run
ends, whatever ends it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from gitbot.agent.result import Status
from gitbot.checkpoints import list_checkpoints
from gitbot.policy import Policy
from gitbot.record import load_events, runs_dir
from tests.agent.test_loop import run
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

pytestmark = pytest.mark.slow
WRITE = "echo made > made.txt"


def events_of(repo: Path, run_id: str) -> list[dict]:
    return list(load_events(runs_dir(repo) / run_id))


def run_commands(repo: Path, commands: list[str], policy: Policy):
    """A completed scripted run of `commands` (a model that takes 0.2 s: time for the change watcher's
    walk), and each recorded checkpoint's files_changed by step."""
    script = [tool_turn(("execute_command", {"command": command})) for command in commands]
    script.append(tool_turn(("attempt_completion", {"result": "ok"})))
    with FakeMessagesAPI(script, think_seconds=0.2) as api:
        result = run(repo, api, policy=policy, review=False)
    assert result.status is Status.COMPLETED, result.summary
    changed = {e["step"]: e["files_changed"] for e in events_of(repo, result.run_id) if e["event"] == "checkpoint"}
    return result, changed


def test_a_commands_checkpoint_is_recorded_after_the_next_reply_with_what_it_changed(buggy_repo: Path):
    script = [tool_turn(("execute_command", {"command": WRITE})), tool_turn(("attempt_completion", {"result": "ok"}))]
    with FakeMessagesAPI(script, think_seconds=0.3) as api:
        result = run(buggy_repo, api, policy=Policy(command_allow=("echo *",)), review=False)
    assert result.status is Status.COMPLETED, result.summary
    events = events_of(buggy_repo, result.run_id)
    kinds = [(e["event"], e.get("step", e.get("n"))) for e in events]
    # Taken while request 2 was out: it is recorded once the reply came, before the next tool starts.
    order = [kinds.index(("tool_end", 1)), kinds.index(("request", 2)), kinds.index(("reply", 2)),
             kinds.index(("checkpoint", 1)), kinds.index(("tool_start", 2))]
    assert order == sorted(order), kinds
    taken = next(e for e in events if e["event"] == "checkpoint" and e["step"] == 1)
    assert taken["files_changed"] == ["made.txt"]
    row = next(r for r in list_checkpoints(buggy_repo, result.run_id) if r["step"] == 1)
    assert row["checkpoint"] == taken["commit"] and row["files_changed"] == ["made.txt"]
    assert next(s for s in result.step_log if s.step == 1).checkpoint == taken["commit"]
    assert result.files_changed == ["made.txt"]


class InterruptedDuringRequest(FakeMessagesAPI):
    """Ctrl-C while the second request is out (the process signals itself, as a terminal would)."""

    def _decide(self, *args, **kwargs):
        action = super()._decide(*args, **kwargs)
        if self._next == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return action


def test_a_ctrl_c_during_the_next_request_still_leaves_the_commands_checkpoint(buggy_repo: Path):
    script = [tool_turn(("execute_command", {"command": WRITE})), tool_turn(("attempt_completion", {"result": "ok"}))]
    with InterruptedDuringRequest(script, think_seconds=2) as api:
        result = run(buggy_repo, api, policy=Policy(command_allow=("echo *",)), review=False)
    assert result.status is Status.ERROR and "interrupted" in result.summary
    taken = [e for e in events_of(buggy_repo, result.run_id) if e["event"] == "checkpoint" and e["step"] == 1]
    assert len(taken) == 1 and taken[0]["files_changed"] == ["made.txt"]
    row = next(r for r in list_checkpoints(buggy_repo, result.run_id) if r["step"] == 1)
    assert row["checkpoint"] == taken[0]["commit"]


def test_after_the_first_commands_a_checkpoint_looks_only_at_what_the_command_changed(buggy_repo: Path):
    # Sandboxed commands (bubblewrap works here): after the baseline scan, each command's checkpoint comes
    # from inotify's account of what it changed, and holds exactly that.
    commands = ["echo one > one.txt", "true", "mkdir -p made/deeper && echo two > made/deeper/two.txt",
                "rm one.txt", "mv made renamed", "echo three >> stats.py"]
    result, changed = run_commands(buggy_repo, commands,
                                   Policy(command_allow=("echo *", "true", "mkdir *", "rm *", "mv *")))
    assert result.checkpoints["from_changes"] >= 3, result.checkpoints
    assert changed[1] == ["one.txt"]
    assert changed[2] == []
    assert changed[3] == ["made/deeper/two.txt"]
    assert changed[4] == ["one.txt"]
    assert changed[5] == ["made/deeper/two.txt", "renamed/deeper/two.txt"]
    assert changed[6] == ["stats.py"]
    assert sorted(result.files_changed) == ["renamed/deeper/two.txt", "stats.py"]


def test_a_file_a_command_changes_through_a_hard_link_it_removes_is_in_its_checkpoint(buggy_repo: Path):
    # inotify names no path for stats.py here (the write and both link changes went through the other
    # name): the watcher must say it cannot tell, and the checkpoint scan the whole tree.
    commands = ["echo one > one.txt", "echo two >> one.txt", "ln stats.py x && echo '# changed' >> x && rm x"]
    result, changed = run_commands(buggy_repo, commands, Policy(command_allow=("echo *", "ln *", "rm *")))
    assert changed[2] == ["one.txt"] and result.checkpoints["from_changes"] >= 1  # the watcher was at work
    assert changed[3] == ["stats.py"]
    assert sorted(result.files_changed) == ["one.txt", "stats.py"]


def test_commands_run_without_the_sandbox_are_checkpointed_by_whole_scans(buggy_repo: Path):
    # Unsandboxed, a command can leave a process behind or write the repository through a hard link from
    # outside it: inotify cannot vouch for what it changed.
    commands = ["echo one > one.txt", "echo two > two.txt", "echo three > three.txt"]
    # (the 0.2 s model leaves time for a watcher's walk, were one started)
    result, changed = run_commands(buggy_repo, commands, Policy(command_allow=("echo *",), sandbox_mode="off"))
    assert result.checkpoints["from_changes"] == 0
    assert changed == {0: [], 1: ["one.txt"], 2: ["two.txt"], 3: ["three.txt"]}
