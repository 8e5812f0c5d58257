"""SIGKILL a real `gitbot run` at each slow step, `gitbot resume` it, and get the same result."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitbot.record import load_events, runs_dir
from tests.conftest import BUGGY_MODULE, FIX_DIFF, TEST_MODULE, gitbot_env, make_repo, run_gitbot
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

SLOW = "python3 slow.py"
# Writes half a file, then waits: killed in the middle, it leaves a half-written file behind.
WRITER = "python3 writer.py"
CHECK = "python3 -m unittest"
WRITER_SOURCE = """import time
with open("notes.txt", "w") as f:
    f.write("first half\\n")
    f.flush()
    time.sleep(0.6)
    f.write("second half\\n")
"""


def script() -> list[dict]:
    return [
        tool_turn(("execute_command", {"command": SLOW})),
        tool_turn(("read_file", {"path": "stats.py"})),
        tool_turn(("execute_command", {"command": WRITER})),
        tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})),
        tool_turn(("execute_command", {"command": SLOW})),
        tool_turn(("execute_command", {"command": CHECK})),
        tool_turn(("attempt_completion", {"result": "fixed"})),
        tool_turn(("attempt_completion", {"result": "fixed mean()"})),
    ]


def repo_and_policy(root: Path) -> tuple[Path, Path]:
    repo = make_repo(root / "repo", {"stats.py": BUGGY_MODULE, "test_stats.py": TEST_MODULE,
                                     "slow.py": "import time\ntime.sleep(0.6)\n", "writer.py": WRITER_SOURCE})
    policy = root / "policy.toml"
    policy.write_text(f'[commands]\nallow = ["{SLOW}", "{WRITER}", "{CHECK}"]\n')
    return repo, policy


def work_tree_diff(repo: Path) -> str:
    return subprocess.run(["git", "diff"], cwd=repo, capture_output=True, text=True, check=True).stdout


def events_of(repo: Path) -> list[dict]:
    base = runs_dir(repo)
    paths = list(base.glob("*/trajectory.jsonl")) if base.exists() else []
    return list(load_events(paths[0].parent)) if paths else []


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[str, int]:
    """The diff and tool-call count of the same run, never interrupted."""
    repo, policy = repo_and_policy(tmp_path_factory.mktemp("reference"))
    with FakeMessagesAPI(script()) as api:
        done = run_gitbot(["run", "--task", "fix it", "--repo", str(repo), "--policy", str(policy), "--json"],
                          env=api.env())
    assert done.returncode == 0, done.stderr
    diff = work_tree_diff(repo)
    assert "/ len(values)" in diff and "second half" in (repo / "notes.txt").read_text()
    return diff, json.loads(done.stdout)["tool_calls"]


# Every slow step, including the one that is killed halfway through writing a file. (A fourth case drawn at
# random from the same three only repeated one of them: the kill is triggered by the step's record, not by time.)
@pytest.mark.slow
@pytest.mark.parametrize("kill_at", [1, 3, 5])
def test_sigkill_then_resume_ends_with_the_same_diff(tmp_path: Path, kill_at: int, reference, gitbot_in_process):
    expected_diff, reference_calls = reference
    repo, policy = repo_and_policy(tmp_path / "killed")
    with FakeMessagesAPI(script()) as api:
        proc = subprocess.Popen([sys.executable, "-m", "gitbot", "run", "--task", "fix it", "--repo", str(repo),
                                 "--policy", str(policy), "--json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=gitbot_env(api.env()))
        deadline = time.monotonic() + 60
        notes = repo / "notes.txt"

        def reached() -> bool:
            started = any(e["event"] == "tool_start" and e["step"] == kill_at for e in events_of(repo))
            # The writer is killed only once its first half is on disk, mid-way through the step.
            return started and (kill_at != 3 or (notes.exists() and notes.read_text() == "first half\n"))

        while time.monotonic() < deadline and not reached():
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)  # no chance to flush anything: the record must already be usable
        proc.communicate(timeout=30)
        first_usage = [r["usage"] for r in api.requests if r["usage"]]
    events = events_of(repo)
    run_id = events[0]["run_id"]
    replies_before = sum(1 for e in events if e["event"] == "reply")
    assert replies_before == kill_at and not any(e["event"] == "run_end" for e in events)
    if kill_at == 3:
        assert (repo / "notes.txt").read_text() == "first half\n"  # the kill left a half-written file

    # The model, told its last call was interrupted, issues it again: the script resumes at that turn.
    # (The killed run is the real process; the resume is what gitbot decides from its record, asked here.)
    with FakeMessagesAPI(script()[replies_before - 1:]) as api:
        resumed = gitbot_in_process(["resume", run_id, "--repo", str(repo), "--policy", str(policy), "--json"],
                                    env=api.env())
        assert api.errors == []
        second_usage = [r["usage"] for r in api.requests if r["usage"]]
        told = api.requests[0]["body"]["messages"][-1]["content"][0]
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["status"] == "completed" and result["run_id"] == run_id
    assert work_tree_diff(repo) == expected_diff
    assert (repo / "notes.txt").read_text() == "first half\nsecond half\n"
    assert result["tool_calls"] == reference_calls + 1  # the interrupted call, and its retry
    steps = [e["step"] for e in events_of(repo) if e["event"] == "tool_start"]
    assert steps == sorted(set(steps))  # every tool call has its own checkpoint step
    # The command that was cut off is reported, not silently run again.
    assert told["is_error"] is True and "interrupted" in told["content"]
    # Spend is carried over and never counted twice: the run's total is what the servers reported for
    # the replies it received (a request lost with the kill was never recorded, so never counted).
    recorded = [e["usage"] for e in events_of(repo) if e["event"] == "reply"]
    assert result["steps"] == len(recorded) == replies_before + len(second_usage)
    assert recorded[:replies_before] == first_usage[:replies_before]
    if kill_at == 3:  # the half-written file was removed before the model was told
        restored = [e for e in events_of(repo) if e["event"] == "resume_restore"]
        assert len(restored) == 1 and restored[0]["removed"] == 1
    total = {k: sum(u[k] for u in recorded) for k in recorded[0]}
    assert result["usage"] == total


@pytest.mark.slow
def test_resume_refuses_unknown_and_completed_runs(buggy_repo: Path, gitbot_in_process):
    proc = gitbot_in_process(["resume", "20990101-000000-abcdef", "--repo", str(buggy_repo)],
                             env={"ANTHROPIC_API_KEY": "sk-unused-000"})
    assert proc.returncode == 2 and "no run" in proc.stderr
    with FakeMessagesAPI([tool_turn(("attempt_completion", {"result": "ok"}))] * 2) as api:
        done = gitbot_in_process(["run", "--task", "x", "--repo", str(buggy_repo), "--json"], env=api.env())
    run_id = json.loads(done.stdout)["run_id"]
    proc = gitbot_in_process(["resume", run_id, "--repo", str(buggy_repo)], env={"ANTHROPIC_API_KEY": "sk-unused-000"})
    assert proc.returncode == 2 and "already completed" in proc.stderr
