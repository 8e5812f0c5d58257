"""`gitbot eval run` end to end: real worktrees, the real agent loop and sandbox, the real anthropic SDK
against the loopback Messages API (or the bundled replays), and the verdict from the held-back tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import git, make_repo
from tests.eval import demo_set
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

STATS = ('def mean(values):\n    return sum(values) / (len(values) - 1)\n\n\n'
         'def total(values):\n    return sum(values)\n')
TESTS = ("import unittest\n\nfrom stats import mean, total\n\n\nclass StatsTest(unittest.TestCase):\n"
         "    def test_total(self):\n        self.assertEqual(total([1, 2]), 3)\n")
HELD_BACK = "\n    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n"
FIX = "<<<<<<< SEARCH\n    return sum(values) / (len(values) - 1)\n=======\n    return sum(values) / len(values)\n>>>>>>> REPLACE"
WRONG = "<<<<<<< SEARCH\n    return sum(values) / (len(values) - 1)\n=======\n    return sum(values) / (len(values) + 1)\n>>>>>>> REPLACE"
# The agent "fixes" mean() inside the tests: the held-back test patch still applies on top of this edit
# (another hunk), and in this module mean() is then right. Only putting the test files back defeats it.
TEST_EDIT = TESTS.replace("from stats import mean, total\n",
                          "from stats import mean, total\n\nmean = lambda values: sum(values) / len(values)  # noqa\n")
F2P, P2P = "test_stats.StatsTest.test_mean", "test_stats.StatsTest.test_total"


def completion() -> list[dict]:
    return [tool_turn(("attempt_completion", {"result": "fixed mean()"})) for _ in range(2)]


def instance(instance_id: str, base: str, test_patch: str, **more) -> str:
    data = {"instance_id": instance_id, "repo": "local/stats", "base_commit": base,
            "problem_statement": "mean([1, 2, 3]) returns 3 instead of 2.", "test_patch": test_patch,
            "FAIL_TO_PASS": json.dumps([F2P]), "PASS_TO_PASS": json.dumps([P2P]),
            "test_cmd": "python3 -m unittest -v", **more}
    return json.dumps(data)


def read_report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def rows(out: Path) -> dict[str, dict]:
    return {row["instance_id"]: row for row in read_report(out)["instances"]}


@pytest.mark.slow
def test_gitbot_judges_resolution_not_the_agent(tmp_path, gitbot_in_process):
    repo = make_repo(tmp_path / "stats", {"stats.py": STATS, "test_stats.py": TESTS, ".gitignore": "__pycache__/\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "test_stats.py").write_text(TESTS + HELD_BACK)
    test_patch = git(repo, "diff")
    git(repo, "checkout", "--", "test_stats.py")
    lines = [instance("correct", base, test_patch), instance("wrong", base, test_patch),
             instance("edits-tests", base, test_patch),
             instance("missing-commit", "0" * 40, test_patch), '{"instance_id": "broken", ',
             instance("passes-before", base, test_patch, FAIL_TO_PASS=json.dumps([P2P]), PASS_TO_PASS="[]")]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("\n".join(lines) + "\n")
    script = [tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX})), *completion(),
              tool_turn(("replace_in_file", {"path": "stats.py", "diff": WRONG})), *completion(),
              tool_turn(("write_to_file", {"path": "test_stats.py", "content": TEST_EDIT})), *completion()]
    before = (git(repo, "status", "--porcelain", "--ignored"), git(repo, "worktree", "list"),
              git(repo, "for-each-ref"))
    out = tmp_path / "out"
    with FakeMessagesAPI(script) as api:
        proc = gitbot_in_process(["eval", "run", str(instances), "--repo", str(repo), "-o", str(out)],
                                 env={"ANTHROPIC_API_KEY": api.api_key, "ANTHROPIC_BASE_URL": api.url})
    assert proc.returncode == 0, proc.stderr
    assert api.errors == [] and len(api.requests) == len(script)  # no model call for the bad instances
    found = rows(out)
    assert {i for i, row in found.items() if row["resolved"]} == {"correct"}
    assert found["wrong"]["error"] is None and "1 of 1 FAIL_TO_PASS still fail" in found["wrong"]["why"]
    # Its own test_mean passed in its tree; the held-back one, applied fresh, fails.
    assert found["edits-tests"]["error"] is None and F2P in found["edits-tests"]["why"]
    assert found["missing-commit"]["error"] == "instance" and "is not in" in found["missing-commit"]["why"]
    assert found["passes-before"]["error"] == "instance"
    assert "pass before any fix" in found["passes-before"]["why"]
    report = read_report(out)
    assert report["not_run"] == [{"instance_id": "line-5", "why": "line 5: not JSON (Expecting property name "
                                  "enclosed in double quotes)"}]
    assert report["overall"]["resolved"] == 1 and report["overall"]["total"] == 6
    correct = found["correct"]
    assert correct["steps"] == 3 and correct["cost_usd"] > 0 and correct["tokens"]["output_tokens"] > 0
    assert correct["wall_seconds"] > 0 and correct["refusals"] == 0 and correct["status"] == "completed"
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [p["instance_id"] for p in predictions] == ["correct", "edits-tests", "wrong"]
    patches = {p["instance_id"]: p["model_patch"] for p in predictions}
    assert "+    return sum(values) / len(values)" in patches["correct"]
    assert patches["edits-tests"] == ""  # the tests it edited are the held-back ones' files: not its patch
    assert set(predictions[0]) == {"instance_id", "model_name_or_path", "model_patch"}
    assert (out / "instances" / "correct" / "record" / "trajectory.jsonl").is_file()
    assert "| edits-tests |" in (out / "report.md").read_text()
    # The user's checkout: no worktree left, no branch or ref added, nothing changed.
    assert (git(repo, "status", "--porcelain", "--ignored"), git(repo, "worktree", "list"),
            git(repo, "for-each-ref")) == before


@pytest.fixture
def small_set(tmp_path) -> Path:
    """Three of the bundled instances (with their replays), to keep these tests short."""
    where = tmp_path / "set"
    shutil.copytree(demo_set.TARGET / "replays", where / "replays")
    lines = (demo_set.TARGET / "instances.jsonl").read_text().splitlines()[:3]
    bundle = str(demo_set.TARGET / "demo.bundle")
    (where / "instances.jsonl").write_text("".join(json.dumps(json.loads(line) | {"repo": bundle}) + "\n"
                                                   for line in lines))
    return where / "instances.jsonl"


def replay_run(gitbot_in_process, instances: Path, out: Path, *more: str) -> None:
    proc = gitbot_in_process(["eval", "run", str(instances), "--replay", "-o", str(out), *more])
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_the_bundled_set_runs_offline_without_a_key(tmp_path, gitbot_in_process):
    out = tmp_path / "out"
    proc = gitbot_in_process(["eval", "run", "--replay", "-o", str(out)])  # the default: the bundled set
    assert proc.returncode == 0, proc.stderr
    report = read_report(out)
    assert report["overall"]["total"] == report["overall"]["resolved"] >= 5
    assert "5/5 resolved" in proc.stderr and all(row["replay"] for row in report["instances"])


@pytest.mark.slow
def test_the_budget_stops_new_instances_and_resume_finishes_only_what_was_left(tmp_path, small_set, gitbot_in_process):
    out = tmp_path / "out"
    replay_run(gitbot_in_process, small_set, out, "--max-cost", "0.02")
    first = read_report(out)
    done = {row["instance_id"]: row for row in first["instances"]}
    cost = max(row["cost_usd"] for row in done.values())
    assert len(done) == int(0.02 // cost) >= 1 and len(first["not_run"]) == 3 - len(done) >= 1
    assert first["overall"]["cost_usd"] <= 0.02 < first["overall"]["cost_usd"] + cost
    kept = {i: (out / "instances" / i / "result.json").read_bytes() for i in done}
    stopped_at_budget = shutil.copytree(out, tmp_path / "budget")
    # An instance interrupted mid-run leaves its directory but no result: it runs again.
    interrupted = first["not_run"][0]["instance_id"]
    (out / "instances" / interrupted / "record").mkdir(parents=True)

    replay_run(gitbot_in_process, small_set, out)
    second = read_report(out)
    assert second["overall"]["resolved"] == second["overall"]["total"] == 3 and second["not_run"] == []
    assert {i: (out / "instances" / i / "result.json").read_bytes() for i in done} == kept

    proc = gitbot_in_process(["eval", "compare", str(stopped_at_budget), str(out), "--json"])
    compared = json.loads(proc.stdout)
    assert compared["gained"] == sorted(set(first["instance_ids"]) - set(done)) and compared["lost"] == []
    assert compared["method"] == "paired (Newcombe)"
    low, high = compared["difference_95ci"]
    assert compared["difference"] == pytest.approx((3 - len(done)) / 3, abs=1e-3)
    assert low < compared["difference"] <= high


@pytest.mark.slow
def test_shards_split_without_overlap_and_merge_joins_them(tmp_path, small_set, gitbot_in_process):
    ids = [json.loads(line)["instance_id"] for line in small_set.read_text().splitlines()]
    one, two, merged = tmp_path / "1", tmp_path / "2", tmp_path / "all"
    replay_run(gitbot_in_process, small_set, one, "--shard", "1/2", "--workers", "2")
    replay_run(gitbot_in_process, small_set, two, "--shard", "2/2")
    ran = [set(read_report(out)["instance_ids"]) for out in (one, two)]
    assert not ran[0] & ran[1] and ran[0] | ran[1] == set(ids)
    proc = gitbot_in_process(["eval", "merge", str(one), str(two), "-o", str(merged)])
    assert proc.returncode == 0, proc.stderr
    report = read_report(merged)
    assert report["overall"]["total"] == report["overall"]["resolved"] == len(ids)
    assert len((merged / "predictions.jsonl").read_text().splitlines()) == len(ids)
    assert "| claude-sonnet-5-5 | 3/3 |" in (merged / "report.md").read_text()


@pytest.mark.slow
def test_with_check_from_tests_the_task_is_the_failing_check(tmp_path, small_set, gitbot_in_process):
    small_set.write_text(small_set.read_text().splitlines()[0] + "\n")
    chosen = json.loads(small_set.read_text())
    out = tmp_path / "out"
    replay_run(gitbot_in_process, small_set, out, "--check-from-tests")
    row = rows(out)[chosen["instance_id"]]
    assert row["resolved"], row
    start = next(json.loads(line) for line in
                 (out / "instances" / chosen["instance_id"] / "record" / "trajectory.jsonl").read_text().splitlines()
                 if json.loads(line)["event"] == "run_start")
    f2p = json.loads(chosen["FAIL_TO_PASS"])
    assert start["source"] == "eval" and all(test_id in start["check_command"] for test_id in f2p)
    assert f"The check `{start['check_command']}` fails" in start["first_message"]
    assert chosen["problem_statement"].splitlines()[0] not in start["first_message"]
    # The held-back tests were in its tree (committed there), not in its patch.
    patch = json.loads((out / "predictions.jsonl").read_text())["model_patch"]
    assert "stats.py" in patch and "test_stats.py" not in patch


@pytest.mark.slow
def test_without_a_key_nothing_is_kept_as_done_and_a_resume_runs_it(tmp_path, small_set, gitbot_in_process):
    out = tmp_path / "out"
    proc = gitbot_in_process(["eval", "run", str(small_set), "-o", str(out), "--shard", "1/2"])
    assert proc.returncode == 0, proc.stderr
    report = read_report(out)
    assert report["instances"] == [] and report["not_run"]
    assert all("ANTHROPIC_API_KEY is not set" in item["why"] for item in report["not_run"])
    assert not (out / "instances").exists()


@pytest.mark.slow
def test_a_cancelled_evaluation_keeps_what_finished_and_resumes_the_rest(tmp_path, small_set, gitbot_in_process):
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import gitbot_env

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "gitbot", "eval", "run", str(small_set), "--replay", "-o", str(out)],
                            env=gitbot_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not list(out.glob("instances/*/result.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)  # a cancelled CI job
    _, stderr = proc.communicate(timeout=120)
    finished = {path.parent.name for path in out.glob("instances/*/result.json")}
    if len(finished) == 3:
        pytest.skip("every instance finished before the signal arrived")
    assert proc.returncode == 3 and "interrupted; run the same command again" in stderr
    source = next((out / "repos").iterdir())
    assert git(source, "worktree", "list").count("\n") == 1  # the clone itself; no worktree left behind
    replay_run(gitbot_in_process, small_set, out)
    report = read_report(out)
    assert report["overall"]["resolved"] == report["overall"]["total"] == 3
