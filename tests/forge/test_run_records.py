"""A run's record on GitHub (refs/gitbot/runs/<id>) and the conversation rebuilt from it."""

from __future__ import annotations

import pytest

from gitbot.agent.history import messages_of_run
from gitbot.errors import GitError
from gitbot.forge import pull_request as prmod
from gitbot.forge import run_records
from gitbot.record import RunRecord, runs_dir
from gitbot.secrets import Secrets
from tests.forge.conftest import actions_checkout

RUN = "20261101-101010-abcdef"


def write_record(repo, run_id=RUN, *, token="", history=None):
    record = RunRecord(repo, run_id)
    record.event("run_start", run_id=run_id, first_message="Fix the bug")
    if history:
        record.event("history", messages=history)
        record.event("user", n=0, content=[{"type": "text", "text": "And now this"}])
    record.event(
        "reply", n=1, content=[{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}]
    )
    record.event("user", n=1, content=[{"type": "tool_result", "tool_use_id": "t1", "content": f"a {token}"}])
    record.write_result({"status": "completed"})
    record.close()


@pytest.mark.slow
def test_a_record_goes_to_github_and_comes_back_on_another_machine(seeded_github, tmp_path):
    fake = seeded_github
    first = actions_checkout(fake, tmp_path / "first")
    write_record(first, token=fake.token)
    auth = prmod.auth_env(fake.token, fake.server_url)
    secrets = Secrets()
    secrets.add(fake.token)
    assert run_records.publish(first, RUN, auth=auth, secrets=secrets) == f"refs/gitbot/runs/{RUN}"
    assert fake.branch_sha(f"gitbot/runs/{RUN}") is None  # not a branch

    second = actions_checkout(fake, tmp_path / "second")
    run_dir = run_records.fetch(second, RUN, auth=auth)
    text = (run_dir / "trajectory.jsonl").read_text()
    assert fake.token not in text and "[REDACTED]" in text  # redacted once more on the way out
    messages = messages_of_run(run_dir)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"][0]["text"] == "Fix the bug"
    assert run_records.fetch(second, "20261101-101010-000000", auth=auth) is None


def test_a_continued_runs_record_rebuilds_the_whole_conversation(tmp_path, buggy_repo):
    history = [
        {"role": "user", "content": [{"type": "text", "text": "Fix the bug"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        {"role": "user", "content": [{"type": "text", "text": "ok"}]},
    ]
    write_record(buggy_repo, history=history)
    messages = messages_of_run(runs_dir(buggy_repo) / RUN)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert [b.get("text") for b in messages[2]["content"]] == ["ok", "And now this"]


def test_a_run_cut_off_after_a_reply_cannot_be_continued(buggy_repo):
    record = RunRecord(buggy_repo, RUN)
    record.event("run_start", first_message="x")
    record.event("reply", n=1, content=[{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}])
    record.close()
    assert messages_of_run(runs_dir(buggy_repo) / RUN) is None


@pytest.mark.parametrize("run_id", ["../../etc", "main", "20261101-101010-ABCDEF", "x" * 22])
def test_only_run_ids_name_a_ref(run_id):
    with pytest.raises(GitError):
        run_records.ref_of(run_id)
