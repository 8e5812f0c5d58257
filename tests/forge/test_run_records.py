"""A run's record on GitHub (refs/gitbot/runs/<id>) and the conversation rebuilt from it."""

from __future__ import annotations

import pytest

from gitbot.agent.history import messages_of_run
from gitbot.errors import GitError
from gitbot.forge import pull_request as prmod
from gitbot.forge import run_records
from gitbot.record import RunRecord, runs_dir
from gitbot.secrets import Secrets
from tests.forge.conftest import actions_checkout, run_git

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


@pytest.mark.slow
def test_only_the_last_records_of_a_pull_requests_runs_are_kept(seeded_github, tmp_path):
    fake = seeded_github
    work = actions_checkout(fake, tmp_path / "work")
    auth = prmod.auth_env(fake.token, fake.server_url)
    runs = [f"20261101-10101{i}-abcde{i}" for i in range(4)]
    for run_id in runs:
        write_record(work, run_id)
        run_records.publish(work, run_id, auth=auth, secrets=Secrets())
    other = "20261101-999999-ffffff"  # another pull request's run: not in this one's list
    write_record(work, other)
    run_records.publish(work, other, auth=auth, secrets=Secrets())

    # The ledger can name a run twice, a run whose record never reached origin, and junk.
    ledger = [runs[0], "not-a-run", runs[1], "20261101-000000-000000", runs[0], runs[2], runs[3]]
    deleted = run_records.prune(work, ledger, keep=2, auth=auth)
    on_origin = run_git(fake.bare_repo, "for-each-ref", "--format=%(refname)", "refs/gitbot/runs/").split()
    assert sorted(deleted) == [run_records.ref_of(r) for r in runs[:2]]
    assert sorted(on_origin) == sorted(run_records.ref_of(r) for r in [*runs[2:], other])
    assert run_records.prune(work, ledger, keep=2, auth=auth) == []  # nothing left to delete
    assert run_records.prune(work, runs, keep=0, auth=auth) == [run_records.ref_of(runs[2])]  # the last stays


@pytest.mark.parametrize("value", ["0", "-1", "2.5", '"5"'])
def test_keep_run_records_is_validated_like_every_policy_key(value):
    from gitbot.policy.base import PolicyError
    from gitbot.policy.config import parse_policy

    with pytest.raises(PolicyError, match=r"policy.toml:2: \[limits\] keep_run_records must be a whole number"):
        parse_policy(f"[limits]\nkeep_run_records = {value}\n", source="policy.toml")
    assert parse_policy("[limits]\nkeep_run_records = 3\n", source="p").limits.keep_run_records == 3
