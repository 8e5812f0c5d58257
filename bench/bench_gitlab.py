"""GitLab against GitHub, in the same run: how long from the event to gitbot's first sign (👀 on the note)
and to the change request (the merge request, the pull request), excluding the model.

Both sides run the real entry point (`gitbot gitlab`, `gitbot action`) as a subprocess on a fresh clone,
against their loopback fakes (GitLab: python-gitlab's REST calls; GitHub: PyGithub's, and GraphQL), with
the same repository, the same fake model replies and the same check:

  mention → 👀   a Developer's (GitHub: a maintainer's) `@gitbot` note on a merge request: process start
                 to the award emoji (the reaction); nothing before it waits for the model
  label → MR     a labelled issue: process start to the request creating the merge request (pull
                 request), minus the time the run waited for the model (from its trajectory)

Prints the median of each and the ratio GitLab / GitHub. Run: .venv/bin/python bench/bench_gitlab.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.github_api import FakeGitHub
from tests.fakes.gitlab_api import FakeGitLab
from tests.fakes.messages_api import FakeMessagesAPI
from tests.forge.conftest import seed
from tests.forge.gitlab.conftest import push_files
from tests.forge.gitlab.test_gitlab_e2e import FILES, GitLabJob
from tests.forge.test_action_e2e import CHECK, Harness, fix_script
from tests.forge.test_conversation_e2e import answer_script


def model_wait(workspace: Path, run_id: str) -> float:
    record = workspace / ".git" / "gitbot" / "runs" / run_id / "trajectory.jsonl"
    return sum(e.get("wait_seconds", 0.0) for e in map(json.loads, record.read_text().splitlines())
               if e.get("event") == "reply")


def gitlab_sample(tmp: Path) -> dict[str, float]:
    with FakeGitLab(tmp / "gitlab") as gl:
        maria = gl.add_user("maria")
        gl.add_member(maria, gl.DEVELOPER)
        push_files(gl, tmp / "seed", FILES, branch="main")
        job = GitLabJob(gl, tmp)
        issue = gl.add_issue("mean() is wrong", "mean([1, 2, 3]) returns 3.0", author=maria)
        payload = gl.label_issue(issue.iid, "gitbot", by=maria)
        with FakeMessagesAPI(fix_script()) as api:
            before, started = len(gl.requests), time.monotonic()
            ran = job.run(api, source="trigger", user=gl.bot, payload=payload)
        assert ran.exit_code == 0, ran.log
        created = next(r.at for r in gl.requests[before:] if r.method == "POST" and r.path.endswith("/merge_requests"))
        to_mr = created - started - model_wait(ran.workspace, ran.outputs["GITBOT_RUN_ID"])
        [mr] = gl.merge_requests.values()
        note = gl.add_note("MergeRequest", mr.iid, "@gitbot answer why divide by len?", author=maria)
        with FakeMessagesAPI(answer_script("Because it is the mean.")) as api:
            before, started = len(gl.requests), time.monotonic()
            ran = job.run(api, source="trigger", user=gl.bot, payload=gl.note_hook(note))
        assert ran.exit_code == 0, ran.log
        eyes = next(r.at for r in gl.requests[before:] if r.method == "POST" and r.path.endswith("/award_emoji"))
        return {"to_eyes": eyes - started, "to_change": to_mr}


def github_sample(tmp: Path) -> dict[str, float]:
    with FakeGitHub(tmp / "github") as fake:
        seed(fake, tmp, FILES)
        fake.set_permission("maria", "maintain")
        harness = Harness(fake, tmp)
        fake.add_issue(7, "mean() is wrong", "mean([1, 2, 3]) returns 3.0")
        with FakeMessagesAPI(fix_script()) as api:
            before, started = len(fake.requests), time.monotonic()
            ran = harness.run(api, "issues", fake.label_issue(7, "gitbot", sender="maria"), check_command=CHECK)
        assert ran.exit_code == 0, ran.log
        created = next(r.at for r in fake.requests[before:] if r.method == "POST" and r.path.endswith("/pulls"))
        to_pr = created - started - model_wait(harness.workspace, ran.outputs["run-id"])
        [pr] = fake.pulls
        event = fake.comment_event(pr.number, "@gitbot answer why divide by len?", author="maria")
        with FakeMessagesAPI(answer_script("Because it is the mean.")) as api:
            before, started = len(fake.requests), time.monotonic()
            ran = harness.run(api, "issue_comment", event, check_command=CHECK)
        assert ran.exit_code == 0, ran.log
        eyes = next(r.at for r in fake.requests[before:] if r.path.endswith("/reactions"))
        return {"to_eyes": eyes - started, "to_change": to_pr}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    samples: dict[str, list[dict[str, float]]] = {"GitLab": [], "GitHub": []}
    for _ in range(args.repeat):  # interleaved, so machine noise falls on both alike
        for name, sample in (("GitLab", gitlab_sample), ("GitHub", github_sample)):
            with tempfile.TemporaryDirectory(prefix=f"gitbot-bench-{name.lower()}-") as tmp:
                samples[name].append(sample(Path(tmp)))
    median = {name: {k: statistics.median(s[k] for s in rows) for k in rows[0]} for name, rows in samples.items()}
    print(f"event to first sign and to change request, excluding the model; median of {args.repeat}")
    print(f"{'':<8} {'mention → 👀':>12} {'label → MR/PR':>14}")
    for name in ("GitLab", "GitHub"):
        print(f"{name:<8} {median[name]['to_eyes']:>10.2f} s {median[name]['to_change']:>12.2f} s")
    print(f"{'ratio':<8} {median['GitLab']['to_eyes'] / median['GitHub']['to_eyes']:>12.2f}"
          f" {median['GitLab']['to_change'] / median['GitHub']['to_change']:>14.2f}   (GitLab / GitHub)")


if __name__ == "__main__":
    main()
