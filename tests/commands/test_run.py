"""`gitbot run` as a user runs it: a real subprocess, the real SDK, the loopback Messages API.

Where the outcome is only the command's decision (a limit, a config error), it runs in the worker
(gitbot_in_process); a real subprocess where the process is the point: one JSON object on stdout,
signals, what a child process can read."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitbot.record import load_result, runs_dir
from tests.conftest import FIX_DIFF, gitbot_env, make_repo, run_gitbot
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn


@pytest.mark.slow
def test_run_json_prints_exactly_one_object_and_fixes_the_bug(buggy_repo: Path):
    script = [
        tool_turn(("read_file", {"path": "stats.py"})),
        tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})),
        tool_turn(("attempt_completion", {"result": "fixed"})),
        tool_turn(("attempt_completion", {"result": "fixed mean"})),
    ]
    with FakeMessagesAPI(script) as api:
        proc = run_gitbot(["run", "--task", "Fix mean()", "--repo", str(buggy_repo), "--json"], env=api.env())
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # exactly one JSON document, nothing else on stdout
    assert result["status"] == "completed" and result["summary"] == "fixed mean"
    assert result["files_changed"] == ["stats.py"]
    assert set(result["usage"]) == {"input_tokens", "output_tokens", "cache_creation_input_tokens",
                                    "cache_read_input_tokens"}
    assert result["steps"] == 4 and result["tool_calls"] == 4 and result["model"] == "claude-sonnet-5-5"
    assert isinstance(result["cost_usd"], float) and result["duration_seconds"] > 0
    assert "gitbot receipt" in proc.stderr  # progress and receipt go to stderr
    assert load_result(runs_dir(buggy_repo) / result["run_id"])["status"] == "completed"


@pytest.mark.slow
def test_limit_exit_code_is_one(buggy_repo: Path, gitbot_in_process):
    with FakeMessagesAPI([tool_turn(("read_file", {"path": "stats.py"}))] * 3) as api:
        proc = gitbot_in_process(["run", "--task", "x", "--repo", str(buggy_repo), "--max-steps", "2", "--json"],
                                 env=api.env())
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["status"] == "step_limit"


def test_missing_api_key_is_a_clear_error_before_any_work(buggy_repo: Path, gitbot_in_process):
    proc = gitbot_in_process(["run", "--task", "x", "--repo", str(buggy_repo)])
    assert proc.returncode == 2
    assert "ANTHROPIC_API_KEY" in proc.stderr
    assert not runs_dir(buggy_repo).exists()


@pytest.mark.slow
def test_missing_task_file_and_not_a_repository(tmp_path: Path, buggy_repo: Path, gitbot_in_process):
    env = {"ANTHROPIC_API_KEY": "sk-test-unused"}
    proc = gitbot_in_process(["run", "--task-file", str(tmp_path / "nope.md"), "--repo", str(buggy_repo)], env=env)
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = gitbot_in_process(["run", "--task", "x", "--repo", str(plain)], env=env)
    assert proc.returncode == 2 and "not inside a git work tree" in proc.stderr


@pytest.mark.slow
def test_unknown_model_warns_and_reports_unknown_cost(buggy_repo: Path, gitbot_in_process):
    with FakeMessagesAPI([tool_turn(("attempt_completion", {"result": "ok"}))] * 2) as api:
        proc = gitbot_in_process(["run", "--task", "x", "--repo", str(buggy_repo), "--model", "claude-nope-1",
                                  "--json"], env=api.env())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cost_usd"] is None
    assert "not in the price table" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("sandbox_mode", ["auto", "off"])
def test_sigterm_flushes_the_record_and_reports_interrupted(tmp_path: Path, sandbox_mode: str):
    repo = make_repo(tmp_path / "repo", {"slow.py": "import time\ntime.sleep(2)\nopen('late.txt', 'w').write('x')\n"})
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[commands]\nallow = ["python3 slow.py"]\n[sandbox]\nmode = "{sandbox_mode}"\n')
    script = [tool_turn(("execute_command", {"command": "python3 slow.py"}))] * 2
    with FakeMessagesAPI(script) as api:
        proc = subprocess.Popen([sys.executable, "-m", "gitbot", "run", "--task", "x", "--repo", str(repo),
                                 "--policy", str(policy), "--json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=gitbot_env(api.env()))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(e.get("event") == "tool_start" for e in _events(repo)):
            time.sleep(0.1)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    result = json.loads(out)
    assert result["status"] == "error" and "interrupted" in result["summary"]
    assert load_result(runs_dir(repo) / result["run_id"])["status"] == "error"
    time.sleep(2.5)  # the command would have finished by now, had it outlived the run
    assert not (repo / "late.txt").exists()


def _events(repo: Path) -> list[dict]:
    base = runs_dir(repo)
    if not base.exists():
        return []
    events = []
    for path in base.glob("*/trajectory.jsonl"):
        events += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return events


@pytest.mark.slow
def test_secrets_in_the_environment_never_reach_the_model(tmp_path: Path):
    token = "ghp_planted0secret0value0for0tests"
    api_key_probe = "env | sort; cat /proc/self/environ; cat /proc/$PPID/environ; echo $GITHUB_TOKEN"
    repo = make_repo(tmp_path / "repo", {"notes.txt": f"the deploy token is {token}\n"})
    policy = tmp_path / "policy.toml"
    policy.write_text('[commands]\nallow = ["env *", "sort *", "cat *", "echo *"]\n')
    script = [
        tool_turn(("execute_command", {"command": api_key_probe})),
        tool_turn(("read_file", {"path": "notes.txt"})),
        tool_turn(("search_files", {"path": ".", "regex": "ghp_"})),
        tool_turn(("attempt_completion", {"result": "looked around"})),
        tool_turn(("attempt_completion", {"result": "looked around"})),
    ]
    with FakeMessagesAPI(script) as api:
        proc = run_gitbot(["run", "--task", "inspect", "--repo", str(repo), "--policy", str(policy), "--json"],
                          env={**api.env(), "GITHUB_TOKEN": token, "MY_SERVICE_PASSWORD": "hunter2-hunter2"})
        bodies = json.dumps([r["body"] for r in api.requests])
    assert proc.returncode == 0, proc.stderr
    assert "env" in bodies and "notes.txt" in bodies  # the tools really ran and reported back
    assert token not in bodies and "hunter2-hunter2" not in bodies
    assert api.api_key not in bodies  # the model's own key never shows up in its context either
    record = (runs_dir(repo) / json.loads(proc.stdout)["run_id"] / "trajectory.jsonl").read_text()
    assert token not in record and api.api_key not in record and token not in proc.stderr
