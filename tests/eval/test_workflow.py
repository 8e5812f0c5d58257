"""The fan-out workflow: one matrix job per shard, and a merge of what they upload. (actionlint checks it
with every workflow: tests/forge/test_action_definition.py.)"""

from __future__ import annotations

from tests.forge.test_action_definition import ROOT, WORKFLOWS, load

WORKFLOW = ROOT / ".github" / "workflows" / "gitbot-eval.yml"


def test_actionlint_checks_it():
    assert WORKFLOW in WORKFLOWS


def test_each_matrix_job_runs_its_shard_and_the_merge_joins_them_all():
    jobs = load(WORKFLOW)["jobs"]
    shard_job = jobs["eval"]
    assert shard_job["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    assert shard_job["strategy"]["fail-fast"] is False  # one shard's failure keeps the others' results
    script = next(step["run"] for step in shard_job["steps"] if "gitbot eval run" in step.get("run", ""))
    assert '--shard "$SHARD/$SHARDS"' in script and 'eval-out/shard-$SHARD' in script
    upload = next(step for step in shard_job["steps"] if "upload-artifact" in step.get("uses", ""))
    assert upload["with"]["name"] == "eval-shard-${{ matrix.shard }}"
    merge = jobs["merge"]
    download = next(step for step in merge["steps"] if "download-artifact" in step.get("uses", ""))
    assert download["with"]["pattern"] == "eval-shard-*"
    assert any("gitbot eval merge shards/eval-shard-*" in step.get("run", "") for step in merge["steps"])
    # Least privilege: only the shard jobs read the repository; the key is given to the one step that runs.
    assert load(WORKFLOW)["permissions"] == {} and merge["permissions"] == {}
    assert shard_job["permissions"] == {"contents": "read"}
    with_key = [step for step in shard_job["steps"] if "ANTHROPIC_API_KEY" in str(step.get("env", {}))]
    assert len(with_key) == 1
