"""The PR body: every section, in order, within GitHub's limit, never losing the cost."""

from __future__ import annotations

from gitbot.agent.result import RunResult, Status, StepRecord
from gitbot.forge.pr_body import (
    BODY_LIMIT,
    BodyParts,
    FileChange,
    StepCost,
    Verification,
    parse_changes,
    render,
)
from gitbot.llm.usage import Usage

SECTIONS = [
    "## What was done",
    "## Verification",
    "## Changes",
    "## Cost",
    "<details><summary>Steps",
    "Closes #7",
    "gitbot 0.1.0",
]


def result(steps: int = 3, summary: str = "Fixed mean() for @everyone") -> RunResult:
    log = [
        StepRecord(
            step=i + 1,
            tool="read_file",
            target=f"src/module_{i}.py",
            outcome="ok",
            checkpoint=f"{i:040x}",
            request=i // 2 + 1,
        )
        for i in range(steps)
    ]
    return RunResult(
        status=Status.COMPLETED,
        run_id="20261101-120000-abcdef",
        model="claude-sonnet-5-5",
        summary=summary,
        steps=2,
        tool_calls=steps,
        usage=Usage(1200, 340, 2000, 15000),
        cost_usd=0.0421,
        step_log=log,
        price_table_date="2026-10-01",
        max_cost_usd=3.0,
    )


def parts(res: RunResult, changes=None, verified=True) -> BodyParts:
    reason = "the check passes" if verified else "the check command still fails after the change."
    v = Verification("python -m unittest", "exited 1 after 0.1 s", "exited 0 after 0.1 s", verified, reason)
    return BodyParts(
        result=res,
        verification=v,
        changes=changes or [FileChange("stats.py", "modified", 1, 1)],
        footer_links=["[workflow run](https://gh/run/1)"],
        version="0.1.0",
        closes=7,
        request_costs={1: StepCost(18540, 0.03), 2: StepCost(900, 0.0121)},
        restore_hint="gitbot checkpoints restore RUN STEP",
    )


def test_every_section_appears_in_order():
    body = render(parts(result()))
    positions = [body.index(marker) for marker in SECTIONS]
    assert positions == sorted(positions)
    assert "@\u200beveryone" in body and "@everyone" not in body  # the model cannot ping people
    assert "$0.0421 (prices of 2026-10-01)" in body and "1% of $3.00" in body
    assert "| 1 | `read_file` | `src/module_0.py` | ok | 18,540 | $0.0300 | `0000000000` |" in body
    assert "| 2 | `read_file` | `src/module_1.py` | ok | 〃 | 〃 |" in body
    assert "✅ **Verified:**" in body and "| before the change | exited 1 after 0.1 s |" in body
    assert "gitbot checkpoints restore" in body
    assert "GITHUB_TOKEN" in body  # PRs by the workflow token start no CI: said in the body


def test_unverified_says_why():
    body = render(parts(result(), verified=False))
    assert "⚠️ **Not verified:** the check command still fails" in body


def test_a_huge_run_is_cut_to_the_limit_keeping_cost_and_verification():
    many_files = [FileChange(f"pkg/{'d' * 60}/file_{i}.py", "modified", i, i) for i in range(3000)]
    body = render(parts(result(steps=5000, summary="s" * 50_000), changes=many_files))
    assert len(body) <= BODY_LIMIT
    for marker in SECTIONS:
        assert marker in body
    assert "more steps are in the run record" in body
    assert "**$0.0421 (prices of 2026-10-01)**" in body


def test_changes_come_from_the_diff():
    diff = (
        "diff --git a/stats.py b/stats.py\nindex 1..2 100644\n--- a/stats.py\n+++ b/stats.py\n"
        "@@ -1,2 +1,2 @@\n a\n-b\n+c\ndiff --git a/new.py b/new.py\nnew file mode 100644\nindex 0..1\n"
        "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x\n+y\n"
    )
    assert parse_changes(diff) == [
        FileChange("stats.py", "modified", 1, 1),
        FileChange("new.py", "added", 2, 0),
    ]
