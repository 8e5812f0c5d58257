"""The loop scrubs what reaches the model and the record: every tool's output, and the model's own
words and tool inputs when they go back to it, and says where it replaced something."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitbot.record import load_events, runs_dir
from tests.agent.test_loop import run
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn
from tests.secret_corpus import planted

SECRETS = planted()
AWS_KEY = SECRETS["aws access key id"][1]
JWT = SECRETS["jwt"][1]


@pytest.mark.slow
def test_tool_output_and_the_models_own_secret_never_reach_a_request_or_the_record(buggy_repo: Path):
    (buggy_repo / "notes.txt").write_text(f"first line\nkey {AWS_KEY}\n")
    script = [
        tool_turn(("execute_command", {"command": "cat notes.txt"})),
        tool_turn(("read_file", {"path": "notes.txt"})),
        tool_turn(("write_to_file", {"path": "token.txt", "content": f"session={JWT}\n"}), text=f"I'll store {JWT}"),
        tool_turn(("attempt_completion", {"result": "done"})),
        tool_turn(("attempt_completion", {"result": "done"})),
    ]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api)
    assert api.errors == []
    sent = json.dumps([r["body"] for r in api.requests])
    [run_dir] = runs_dir(buggy_repo).iterdir()
    record = (run_dir / "trajectory.jsonl").read_text() + (run_dir / "result.json").read_text()
    for value in (AWS_KEY, JWT):
        assert value not in sent and value not in record
    assert (buggy_repo / "token.txt").read_text() == f"session={JWT}\n"  # the tool ran with the real input
    stops = [e for e in load_events(run_dir) if e["event"] == "secrets_stopped"]
    assert [(s["where"], s["findings"]) for s in stops[:2]] == [
        ("step 1 (execute_command output)", [{"kind": "aws-access-key-id", "line": 4}]),
        ("step 2 (read_file output)", [{"kind": "aws-access-key-id", "line": 3}]),  # under its header
    ]
    assert any(s["where"].startswith("the reply event of request 3") for s in stops)
    assert any("step 1 (execute_command output): line 4 (aws-access-key-id)" in w for w in result.warnings)
