"""A two-iteration conversation through `gitbot action`: is continuing the first run's conversation worth it?

Iteration one: issue #7 is labelled; the agent explores a repository of 14 files (lists, searches, reads
several modules), fixes stats.py and opens a pull request, and gitbot pushes the run's record to
refs/gitbot/runs/<id>. Iteration two: a line comment asks for one more change. It runs twice from the
same state, each on a fresh checkout (as a new runner has):

  continued  the record is on GitHub: the run continues the first conversation (its prefix is read from
             the prompt cache the first run wrote)
  fresh      the record ref is gone: the run starts over with the whole context in its task

and three ways for the model to work in iteration two (the continued agent always edits at once, since
the file and the check's state are in its conversation; the fresh one):
  same       replies exactly as the continued one (edit, complete, complete): the prompt's cost alone;
             no real fresh agent edits a file it has not read
  re-read    first reads the file it is asked to change (one more request)
  re-orient  reads the file and runs the check first, to learn where things stand (two more requests);
             the first run took six requests to get there

Prints the cost of iteration two (fresh = the baseline, measured in the same run), the cache-read share
of its first request, and the wall time from the event to gitbot's reply excluding the model (process
start to the reply's final edit, minus the time spent waiting for the model), plus the time to the 👀.

Run: .venv/bin/python bench/bench_conversation.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import BUGGY_MODULE, FIX_DIFF, TEST_MODULE
from tests.fakes.github_api import FakeGitHub
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn
from tests.forge.conftest import seed
from tests.forge.test_action_e2e import Harness
from tests.forge.test_conversation_e2e import EMPTY_DIFF, Runner

CHECK = "python3 -m unittest -q"


def files() -> dict[str, str]:
    out = {"stats.py": BUGGY_MODULE, "test_stats.py": TEST_MODULE, "README.md": "# widgets\n"}
    for i in range(12):
        body = "\n\n".join(f"def helper_{j}(x):\n    return x * {j} + {i}\n" for j in range(40))
        out[f"pkg/module_{i}.py"] = f'"""Module {i}."""\n\n{body}'
    return out


def first_script() -> list[dict]:
    done = "Fixed mean(): it divided by len - 1."
    return [
        tool_turn(("list_files", {"path": ".", "recursive": True})),
        tool_turn(("search_files", {"path": ".", "regex": "def mean"})),
        tool_turn(("read_file", {"path": "pkg/module_3.py"})),
        tool_turn(("read_file", {"path": "pkg/module_7.py"})),
        tool_turn(("read_file", {"path": "stats.py"})),
        tool_turn(("execute_command", {"command": CHECK})),
        tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})),
        tool_turn(("attempt_completion", {"result": done})),
        tool_turn(("attempt_completion", {"result": done})),
    ]


FRESH_EXTRA = {
    "same": [],
    "re-read": [tool_turn(("read_file", {"path": "stats.py"}))],
    "re-orient": [
        tool_turn(("read_file", {"path": "stats.py"})),
        tool_turn(("execute_command", {"command": CHECK})),
    ],
}


def second_script(extra: list[dict]) -> list[dict]:
    done = "mean([]) now returns 0.0."
    return extra + [
        tool_turn(("replace_in_file", {"path": "stats.py", "diff": EMPTY_DIFF})),
        tool_turn(("attempt_completion", {"result": done})),
        tool_turn(("attempt_completion", {"result": done})),
    ]


def iteration_two(continued: bool, variant: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="gitbot-bench-conv-") as tmp_name:
        tmp = Path(tmp_name)
        with FakeGitHub(tmp / "github") as fake:
            seed(fake, tmp, files())
            fake.set_permission("maria", "maintain")
            runner = Runner(fake, tmp)
            script = first_script() + second_script([] if continued else FRESH_EXTRA[variant])
            with FakeMessagesAPI(script) as api:
                fake.add_issue(7, "mean() is wrong", "mean([1, 2, 3]) returns 3.0")
                first = runner.run(
                    api, "issues", fake.label_issue(7, "gitbot", sender="maria"), check_command=CHECK
                )
                assert first.exit_code == 0, first.log
                [pr] = fake.pulls
                if not continued:  # the record is not available: the run must start over
                    for ref in subprocess.run(
                        [
                            "git",
                            "-C",
                            str(fake.bare_repo),
                            "for-each-ref",
                            "--format=%(refname)",
                            "refs/gitbot/",
                        ],
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout.split():
                        subprocess.run(
                            ["git", "-C", str(fake.bare_repo), "update-ref", "-d", ref], check=True
                        )
                n_first = len(api.requests)
                event = fake.review_comment_event(
                    pr.number,
                    "@gitbot an empty list should give 0.0",
                    author="maria",
                    path="stats.py",
                    line=7,
                )
                runner.new_machine()
                requests_before = len(fake.requests)
                started = time.monotonic()
                ran = Harness.run(runner, api, "pull_request_review_comment", event, check_command=CHECK)
                assert ran.exit_code == 0, ran.log
                assert ("continuing the conversation" in ran.log) is continued
            later = fake.requests[requests_before:]
            eyes = next(r.at for r in later if r.path.endswith("/reactions"))
            reply_done = max(r.at for r in later if r.method in ("POST", "PATCH") and "/comments" in r.path)
            record = (
                runner.workspace / ".git" / "gitbot" / "runs" / ran.outputs["run-id"] / "trajectory.jsonl"
            )
            waited = sum(
                e.get("wait_seconds", 0.0)
                for e in map(json.loads, record.read_text().splitlines())
                if e.get("event") == "reply"
            )
            usage = api.requests[n_first]["usage"]
            prompt = (
                usage["input_tokens"]
                + usage["cache_creation_input_tokens"]
                + usage["cache_read_input_tokens"]
            )
            return {
                "cost": float(ran.outputs["cost-usd"]),
                "first_share": usage["cache_read_input_tokens"] / prompt,
                "requests": len(api.requests) - n_first,
                "to_reply": reply_done - started - waited,
                "model": waited,
                "to_eyes": eyes - started,
            }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    continued = [iteration_two(True, "same") for _ in range(args.repeat)]
    rows = {"continued": {k: statistics.median(s[k] for s in continued) for k in continued[0]}}
    for variant in FRESH_EXTRA:
        samples = [iteration_two(False, variant) for _ in range(args.repeat)]
        rows[f"fresh, {variant}"] = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
    print(
        f"iteration two of a two-iteration conversation, median of {args.repeat}; ratio = continued / fresh"
    )
    print(
        f"{'mode':<20} {'requests':>8} {'cost $':>8} {'continued/this':>14} {'1st req cache-read':>18}"
        f" {'event→reply excl. model':>23} {'(model)':>8} {'event→👀':>8}"
    )
    cost = rows["continued"]["cost"]
    for name, r in rows.items():
        print(
            f"{name:<20} {r['requests']:>8.0f} {r['cost']:>8.4f} {cost / r['cost']:>14.2f} {r['first_share']:>18.0%}"
            f" {r['to_reply']:>21.2f} s {r['model']:>6.2f} s {r['to_eyes']:>6.2f} s"
        )


if __name__ == "__main__":
    main()
