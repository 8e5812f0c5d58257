"""Conversations with gitbot through `python -m gitbot action`, end to end: the fake github.com (REST,
GraphQL, git over HTTP into a bare repository), the fake Messages API with prompt caching, the real
anthropic SDK, PyGithub, git and the agent loop. One test per scenario the issue lists; every job
runs on a fresh checkout, as every GitHub Actions job runs on a fresh machine. The first job most
scenarios start from (issue 7 labelled, a pull request opened) runs once per module: each of those tests
starts from what it left (`resumed`)."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import pytest

from gitbot.forge.mention import find_request
from tests.fakes.github_api import FakeGitHub
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn
from tests.forge.conftest import PROJECT_FILES, actions_checkout, header_config, run_git, seed
from tests.forge.test_action_e2e import CHECK, Harness, Ran, fix_script, model_text

pytestmark = pytest.mark.slow

EMPTY_DIFF = (
    '<<<<<<< SEARCH\n    if not values:\n        raise ValueError("mean() of an empty sequence")\n=======\n'
    "    if not values:\n        return 0.0\n>>>>>>> REPLACE"
)
DOC_DIFF = '<<<<<<< SEARCH\ndef mean(values):\n=======\ndef mean(values):\n    """The arithmetic mean."""\n>>>>>>> REPLACE'


def follow_up_script(summary: str = "mean([]) now returns 0.0.", diff: str = EMPTY_DIFF) -> list[dict]:
    """A continued run remembers stats.py, so it edits at once (review-on-submit shows the diff first)."""
    return [
        tool_turn(("replace_in_file", {"path": "stats.py", "diff": diff})),
        tool_turn(("attempt_completion", {"result": summary})),
        tool_turn(("attempt_completion", {"result": summary})),
    ]


def answer_script(answer: str) -> list[dict]:
    return [
        tool_turn(("read_file", {"path": "stats.py"})),
        tool_turn(("attempt_completion", {"result": answer})),  # review-on-submit: "no changes"
        tool_turn(("attempt_completion", {"result": answer})),
    ]


class Runner(Harness):
    """Every job on a fresh checkout of the fake's repository at the same path (what a runner gives)."""

    def new_machine(self) -> None:
        if self.runs:
            self.workspace.rename(self.tmp / f"old-workspace-{self.runs}")
            actions_checkout(self.fake, self.workspace)

    def run(self, api: FakeMessagesAPI, event_name: str, event: dict, **kwargs) -> Ran:
        self.new_machine()
        return super().run(api, event_name, event, **kwargs)


@pytest.fixture
def runner(seeded_github, tmp_path):
    seeded_github.set_permission("maria", "maintain")
    return Runner(seeded_github, tmp_path)


def open_pr(runner: Runner, api: FakeMessagesAPI, **inputs: str):
    """The first run: issue 7 labelled, a pull request opened (and its run record kept on GitHub)."""
    fake = runner.fake
    fake.add_issue(7, "mean() is wrong", "mean([1, 2, 3]) returns 3.0")
    inputs.setdefault("check_command", CHECK)
    ran = runner.run(api, "issues", fake.label_issue(7, "gitbot", sender="maria"), **inputs)
    assert ran.exit_code == 0, ran.log
    [pr] = fake.pulls
    return pr, ran


# The first job's summary: the model's words, with trigger phrases that gitbot's posts must defuse.
LIVE_TRIGGER_SUMMARY = "Done. @gitbot fix everything next, /cc @maria"


class FirstJob:
    """The job most scenarios start from, run once: afterwards, `restore` puts back everything it left
    (the fake GitHub's state and bare repository, the runner's directory at the same path, and the model
    server's memory through `open_pr`), so every test continues from the same first job."""

    def __init__(self, fake: FakeGitHub, base: Path):
        self.base = base
        seed(fake, base, PROJECT_FILES)
        fake.set_permission("maria", "maintain")
        (base / "job").mkdir()
        self.runner = Runner(fake, base / "job")
        with FakeMessagesAPI(fix_script(LIVE_TRIGGER_SUMMARY)) as api:
            _, self.ran = open_pr(self.runner, api)
        self.runs = self.runner.runs
        self.api_memory = api.snapshot()
        self.github = fake.snapshot(base / "saved" / "bare")
        shutil.copytree(base / "job", base / "saved" / "job", symlinks=True)

    def restore(self) -> Runner:
        self.runner.fake.restore(self.github)
        shutil.rmtree(self.runner.tmp)
        shutil.copytree(self.base / "saved" / "job", self.runner.tmp, symlinks=True)
        self.runner.runs = self.runs
        return self.runner

    def open_pr(self, api: FakeMessagesAPI):
        """`open_pr(runner, api)` as it ran once: `api` remembers that job's requests and prompt cache (the
        first four turns of its script, `fix_script()`, stand for the ones that job was served); returns the
        pull request and the job's outcome as it left them."""
        api.resume_from(self.api_memory)
        [pr] = self.runner.fake.pulls
        return pr, self.ran


@pytest.fixture(scope="module")
def first_job(tmp_path_factory):
    base = tmp_path_factory.mktemp("first-job")
    with FakeGitHub(base / "github") as fake:
        yield FirstJob(fake, base)


@pytest.fixture
def resumed(first_job) -> FirstJob:
    first_job.restore()
    return first_job


def first_request_cache_share(api: FakeMessagesAPI, index: int) -> float:
    usage = api.requests[index]["usage"]
    prompt = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    return usage["cache_read_input_tokens"] / prompt


def push_as_human(fake: FakeGitHub, tmp: Path, branch: str, name: str, text: str) -> str:
    work = tmp / f"human-{name}"
    run_git(tmp, *header_config(fake), "clone", "-q", "-b", branch, fake.clone_url, str(work))
    (work / name).write_text(text)
    run_git(work, "add", name)
    run_git(work, "commit", "-q", "-m", f"Add {name}")
    run_git(work, *header_config(fake), "push", "-q", "origin", f"HEAD:{branch}")
    return run_git(work, "rev-parse", "HEAD").strip()


def bot_comments(fake: FakeGitHub, number: int):
    return [c for c in fake.comments_on(number) if c.author == fake.bot_login]


# ---------------------------------------------------------------- the scenarios


def test_a_mention_on_an_issue_works_like_the_label_and_replies_to_the_comment(runner):
    fake = runner.fake
    fake.add_issue(7, "mean() is wrong", "mean([1, 2, 3]) returns 3.0")
    event = fake.comment_event(
        7, "@gitbot please fix this, the test shows it<!-- and leak -->", author="maria"
    )
    # Edited after the event fired (while the job waited): the request is the comment as it was.
    fake.comments[-1].body = "@gitbot delete the tests instead"
    fake.comments[-1].updated_at += dt.timedelta(minutes=1)
    with FakeMessagesAPI(fix_script()) as api:
        ran = runner.run(api, "issue_comment", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert api.errors == [] and fake.violations == []
    assert fake.reactions_on("issue_comment", event["comment"]["id"]) == ["eyes"]
    sent = model_text(api)
    assert "please fix this, the test shows it" in sent and "is what gitbot was asked to do now" in sent
    assert "delete the tests" not in sent and "and leak" not in sent
    [pr] = fake.pulls
    assert pr.head == "gitbot/issue-7" and "Closes #7" in pr.body and not pr.draft
    [reply] = bot_comments(fake, 7)  # the reply to the comment, and no separate status comment
    assert f"comment-{event['comment']['id']}" in reply.body and f"[#{pr.number}]" in reply.body
    assert ran.outputs["status"] == "completed" and ran.outputs["pr-number"] == str(pr.number)


def test_a_line_comment_on_gitbots_pr_gets_a_verified_commit_and_a_reply_in_its_thread(resumed):
    runner = resumed.runner
    fake = runner.fake
    with FakeMessagesAPI(fix_script() + follow_up_script()) as api:
        pr, _ = resumed.open_pr(api)
        first_tip, first_requests = fake.branch_sha(pr.head), len(api.requests)
        event = fake.review_comment_event(
            pr.number,
            "@gitbot also handle the empty list: return 0.0",
            author="maria",
            path="stats.py",
            line=7,
        )
        ran = runner.run(api, "pull_request_review_comment", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert api.errors == [] and fake.violations == []
    comment_id = event["comment"]["id"]
    assert fake.reactions_on("review_comment", comment_id) == ["eyes"]
    # The task held the comment, the file, the lines and the diff hunk.
    sent = json.dumps(api.requests[first_requests]["body"]["messages"][-1])
    assert "also handle the empty list" in sent and "stats.py, 7" in sent and "@@ -4,4 +4,4 @@" in sent
    # One new commit on the PR branch, on top of the first, by gitbot.
    tip = fake.branch_sha(pr.head)
    assert run_git(runner.workspace, "rev-parse", f"{tip}^").strip() == first_tip
    assert "Follow-up on #" in fake.git_log(pr.head, "%s")
    # The reply is in the thread: what changed (linked), that the check passed, what it cost.
    [reply] = fake.replies_in_thread(comment_id)
    assert reply.author == fake.bot_login
    assert f"/blob/{tip}/stats.py" in reply.body and "✅ Check passed" in reply.body
    assert re.search(
        r"This step: \$\d+\.\d{4} for 3 model request\(s\), \d+% of the input read from the cache", reply.body
    )
    # The PR body: a row per iteration and the totals by token class.
    assert "## Iterations" in pr.body and "| 2 | [line comment on stats.py:7]" in pr.body
    assert re.search(
        r"\*\*All 2 iterations:\*\* \$\d+\.\d{4} · input [\d,]+ · cache writes [\d,]+ · cache reads", pr.body
    )
    # The second job, on a fresh checkout, fetched the first run's record and continued its
    # conversation: its first request read most of its input from the cache the first run wrote.
    assert "continuing the conversation of run" in ran.log
    assert first_request_cache_share(api, first_requests) >= 0.8
    assert ran.outputs["status"] == "completed" and ran.outputs["verified"] == "true"


def test_a_review_with_two_comments_is_one_iteration_replied_on_the_pr(resumed):
    runner = resumed.runner
    fake = runner.fake
    with FakeMessagesAPI(fix_script() + follow_up_script("Handled both review comments.")) as api:
        pr, _ = resumed.open_pr(api)
        first_requests = len(api.requests)
        event = fake.review_event(
            pr.number,
            "@gitbot fix the two things below",
            author="maria",
            comments=[
                ("stats.py", 5, "An empty list should give 0.0"),
                ("stats.py", 7, "Keep this division"),
            ],
        )
        ran = runner.run(api, "pull_request_review", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert api.errors == [] and fake.violations == []
    sent = json.dumps(api.requests[first_requests]["body"]["messages"][-1])
    assert "fix the two things below" in sent
    assert "An empty list should give 0.0" in sent and "Keep this division" in sent  # the unresolved threads
    review_id = event["review"]["id"]
    assert fake.reactions_on("review", review_id) == ["eyes"]  # GraphQL addReaction
    [reply] = [c for c in bot_comments(fake, pr.number) if f"review-{review_id}" in c.body]
    assert "✅ gitbot pushed" in reply.body
    assert len(fake.api_requests(r"POST /api/graphql")) >= 2  # threads and the reaction, validated


def test_a_human_commit_between_iterations_is_built_on_never_overwritten(runner):
    fake = runner.fake
    # The first run opens a draft (no check command), the second verifies: the draft becomes ready.
    with FakeMessagesAPI(fix_script() + follow_up_script()) as api:
        pr, _ = open_pr(runner, api, check_command="")
        assert pr.draft
        human = push_as_human(fake, runner.tmp, pr.head, "NOTES.md", "human notes\n")
        first_requests = len(api.requests)
        event = fake.comment_event(pr.number, "@gitbot fix: an empty list should give 0.0", author="maria")
        ran = runner.run(api, "issue_comment", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert fake.violations == []
    tip = fake.branch_sha(pr.head)
    assert run_git(runner.workspace, "rev-parse", f"{tip}^").strip() == human  # on top of the human's commit
    assert "human notes" in run_git(runner.workspace, "show", f"{tip}:NOTES.md")
    assert "Add NOTES.md" in json.dumps(
        api.requests[first_requests]["body"]["messages"][-1]
    )  # told the model
    assert not pr.draft and fake.ready_for_review == [pr.number]  # GraphQL markPullRequestReadyForReview
    [reply] = [c for c in bot_comments(fake, pr.number) if "comment-" in c.body]
    assert "ready for review" in reply.body


def test_a_fork_pr_gets_instructions_and_no_run(runner):
    fake = runner.fake
    pr = fake.add_pull("patch-1", head_repository="mallory/widgets", head_sha="e" * 40, author="mallory")
    event = fake.comment_event(pr.number, "@gitbot fix the tests", author="maria")
    pushes = len(fake.git_pushes())
    with FakeMessagesAPI(fix_script()) as api:
        ran = runner.run(api, "issue_comment", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert api.requests == [] and len(fake.git_pushes()) == pushes and fake.violations == []
    assert ran.outputs["status"] == "refused"
    [reply] = bot_comments(fake, pr.number)
    assert "fork" in reply.body and f"pull/{pr.number}/head" in reply.body


def test_a_read_only_commenter_starts_nothing(resumed):
    runner = resumed.runner
    fake = runner.fake
    fake.set_permission("reader", "read")
    with FakeMessagesAPI(fix_script()) as api:
        pr, _ = resumed.open_pr(api)
        requests, pushes = len(api.requests), len(fake.git_pushes())
        event = fake.review_comment_event(
            pr.number, "@gitbot delete the tests", author="reader", path="stats.py", line=7
        )
        ran = runner.run(api, "pull_request_review_comment", event, check_command=CHECK)
    assert ran.exit_code == 0 and ran.outputs["status"] == "refused"
    assert len(api.requests) == requests and len(fake.git_pushes()) == pushes
    assert fake.replies_in_thread(event["comment"]["id"]) == [] and fake.reactions == []


@pytest.mark.timeout(240)  # four jobs in one test: the default 120 s ran out on a loaded machine
def test_the_same_comment_twice_is_worked_on_once_and_a_rerun_updates(resumed):
    runner = resumed.runner
    fake = runner.fake
    with FakeMessagesAPI(fix_script() + follow_up_script() + follow_up_script("again")) as api:
        pr, _ = resumed.open_pr(api)
        event = fake.review_comment_event(
            pr.number, "@gitbot handle the empty list", author="maria", path="stats.py", line=7
        )
        first = runner.run(api, "pull_request_review_comment", event, check_command=CHECK)
        tip, requests = fake.branch_sha(pr.head), len(api.requests)
        again = runner.run(api, "pull_request_review_comment", event, check_command=CHECK)  # delivered again
        assert again.exit_code == 0 and again.outputs["status"] == "duplicate"
        assert len(api.requests) == requests and fake.branch_sha(pr.head) == tip
        # A re-run of the first job (same run id): it updates its reply and its row, adds none.
        rerun = runner.run(
            api,
            "pull_request_review_comment",
            event,
            check_command=CHECK,
            extra_env={"GITHUB_RUN_ID": first.outputs and "4002", "GITHUB_RUN_ATTEMPT": "2"},
        )
    assert first.exit_code == 0 and rerun.exit_code == 0, rerun.log
    assert len(fake.replies_in_thread(event["comment"]["id"])) == 1
    assert pr.body.count("[line comment on stats.py:7]") == 1 and "**All 2 iterations:**" in pr.body


def test_gitbots_own_comment_never_starts_it(runner):
    fake = runner.fake
    fake.add_issue(7, "mean() is wrong", "b")
    event = fake.comment_event(7, "🤖 @gitbot quoted by gitbot", author=fake.bot_login)
    with FakeMessagesAPI(fix_script()) as api:
        ran = runner.run(api, "issue_comment", event)
    assert ran.exit_code == 0 and ran.outputs["status"] == "skipped" and "gitbot's own" in ran.log
    assert (
        api.requests == [] and fake.api_requests(r"^\w+ /(repos|api/graphql)") == [] and fake.reactions == []
    )


def test_gitbots_replies_hold_no_live_trigger_phrase(resumed):
    fake = resumed.runner.fake
    [pr] = fake.pulls
    assert "fix everything next" in pr.body  # the first job's summary (LIVE_TRIGGER_SUMMARY) is posted
    for text in [pr.body, *(c.body for c in fake.comments)]:
        assert find_request(text) is None, text


def test_a_cumulative_budget_hit_replies_with_the_spend_and_does_nothing_else(resumed):
    runner = resumed.runner
    fake = runner.fake
    with FakeMessagesAPI(fix_script() + follow_up_script()) as api:
        pr, first = resumed.open_pr(api)
        spent = float(first.outputs["cost-usd"])
        requests, pushes = len(api.requests), len(fake.git_pushes())
        event = fake.review_comment_event(
            pr.number, "@gitbot one more thing", author="maria", path="stats.py", line=7
        )
        ran = runner.run(
            api, "pull_request_review_comment", event, check_command=CHECK, max_total_cost_usd="0.01"
        )
    assert spent > 0.01
    assert ran.exit_code == 0 and ran.outputs["status"] == "over_budget"
    assert len(api.requests) == requests and len(fake.git_pushes()) == pushes
    [reply] = fake.replies_in_thread(event["comment"]["id"])
    assert f"${spent:.4f}" in reply.body and "max-total-cost-usd" in reply.body


UNITTEST_LOG = """\
2026-11-01T10:00:01.2000000Z FAIL: test_mean (test_stats.MeanTest.test_mean)
2026-11-01T10:00:01.2000000Z AssertionError: 3.0 != 2
2026-11-01T10:00:01.4000000Z ##[error]Process completed with exit code 1.
"""


def test_an_answer_only_question_gets_an_answer_from_the_code_and_the_failing_log(runner):
    fake = runner.fake
    run_git(runner.workspace, "checkout", "-q", "-b", "feature/x")
    run_git(runner.workspace, "commit", "-q", "--allow-empty", "-m", "feature")
    run_git(runner.workspace, "push", "-q", "origin", "feature/x")
    run_git(runner.workspace, "checkout", "-q", "main")
    pr = fake.add_pull("feature/x", title="Feature x")
    run = fake.add_workflow_run(head_branch="feature/x", head_sha=fake.branch_sha("feature/x"), actor="maria")
    job = fake.add_job(
        run["id"], "unit tests", conclusion="failure", steps=[("Run tests", "failure")], log=UNITTEST_LOG
    )
    fake.add_check_run(fake.branch_sha("feature/x"), "unit tests", conclusion="failure", job_id=job.id)
    event = fake.comment_event(pr.number, "@gitbot why does this fail?", author="maria")
    answer = "It fails because mean() divides by len(values) - 1 (stats.py line 7)."
    with FakeMessagesAPI(answer_script(answer)) as api:
        ran = runner.run(api, "issue_comment", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert api.errors == [] and fake.violations == []
    sent = model_text(api)
    assert (
        "why does this fail?" in sent and "AssertionError: 3.0 != 2" in sent and "unit tests: failure" in sent
    )
    assert ran.outputs["status"] == "answered" and fake.branch_sha("feature/x") == run["head_sha"]
    [reply] = bot_comments(fake, pr.number)
    assert "💬" in reply.body and "divides by len" in reply.body and "No file was changed" in reply.body
    assert re.search(r"This step: \$\d+\.\d{4}", reply.body)


def test_answer_forces_a_read_only_run(resumed):
    runner = resumed.runner
    fake = runner.fake
    with FakeMessagesAPI(fix_script()) as api:
        pr, _ = resumed.open_pr(api)
    tip = fake.branch_sha(pr.head)
    answer = "I could not edit; the answer is: raise ValueError."
    script = [
        tool_turn(("replace_in_file", {"path": "stats.py", "diff": EMPTY_DIFF})),
        tool_turn(("attempt_completion", {"result": answer})),
        tool_turn(("attempt_completion", {"result": answer})),
    ]
    event = fake.comment_event(pr.number, "@gitbot answer: what does mean([]) do?", author="maria")
    with FakeMessagesAPI(script) as api:
        ran = runner.run(api, "issue_comment", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert "Refused by policy" in model_text(api)  # the edit was refused by the run's policy
    assert ran.outputs["status"] == "answered" and fake.branch_sha(pr.head) == tip


@pytest.mark.parametrize("allowed_bots", ["", "github-actions[bot]"])
def test_gitbots_own_comment_is_ignored_even_when_its_identity_is_an_allowed_bot(runner, allowed_bots):
    fake = runner.fake
    pr = fake.add_pull("feature", title="x")
    event = fake.comment_event(
        pr.number, "<!-- gitbot:reply comment-1 run 1 -->\nAsk @gitbot again", author=fake.bot_login
    )
    with FakeMessagesAPI(fix_script()) as api:
        ran = runner.run(api, "issue_comment", event, allowed_bots=allowed_bots)
    assert ran.outputs["status"] == "skipped" and api.requests == [] and fake.reactions == []


def test_a_custom_trigger_phrase_in_the_models_answer_is_defused(runner):
    fake = runner.fake
    pr = fake.add_pull("main", title="x")
    event = fake.comment_event(pr.number, "/fixit why is mean() wrong?", author="maria")
    with FakeMessagesAPI(answer_script("It divides by len - 1. Ask /fixit to change it.")) as api:
        ran = runner.run(api, "issue_comment", event, trigger_phrase="/fixit")
    assert ran.exit_code == 0, ran.log
    [reply] = bot_comments(fake, pr.number)
    assert "Ask /\u200bfixit to change it" in reply.body
    assert find_request(reply.body, "/fixit") is None


def test_max_iterations_stops_a_pull_requests_conversation_with_a_reply(resumed):
    runner = resumed.runner
    fake = runner.fake
    with FakeMessagesAPI(fix_script() + follow_up_script() + follow_up_script()) as api:
        pr, _ = resumed.open_pr(api)
        first = fake.comment_event(pr.number, "@gitbot handle the empty list", author="maria")
        assert runner.run(api, "issue_comment", first, check_command=CHECK, max_iterations="1").exit_code == 0
        requests = len(api.requests)
        second = fake.comment_event(pr.number, "@gitbot and add a docstring", author="maria")
        ran = runner.run(api, "issue_comment", second, check_command=CHECK, max_iterations="1")
    assert ran.exit_code == 0 and ran.outputs["status"] == "iteration_limit" and len(api.requests) == requests
    [reply] = [c for c in bot_comments(fake, pr.number) if f"comment-{second['comment']['id']}" in c.body]
    assert "1 time(s)" in reply.body and "max-iterations" in reply.body


def test_a_branch_that_moves_while_gitbot_works_gets_the_change_beside_it(resumed):
    runner = resumed.runner
    fake = runner.fake
    with FakeMessagesAPI(fix_script() + follow_up_script()) as api:
        pr, _ = resumed.open_pr(api)
        pushed: list[str] = []

        def someone_pushes_first(rec) -> bool:
            if rec.query.get("service") != ["git-receive-pack"]:
                return False
            pushed.append(fake.commit_as_someone(pr.head))
            return True

        fake.git_hooks.append(someone_pushes_first)
        event = fake.comment_event(pr.number, "@gitbot handle the empty list", author="maria")
        ran = runner.run(api, "issue_comment", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert fake.branch_sha(pr.head) == pushed[0]  # the person's commit stays the tip
    beside = [b for b in fake.git_log("--all", "%D").split() if b.startswith("gitbot/pr-")]
    assert beside, "the change was pushed beside the branch"
    [reply] = [c for c in bot_comments(fake, pr.number) if "comment-" in c.body]
    assert "moved while gitbot worked" in reply.body and "gitbot/pr-" in reply.body
    assert ran.outputs["verified"] == "false" and fake.ready_for_review == []
