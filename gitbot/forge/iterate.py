"""Stage two for a request on a pull request: one more commit on its branch, or an answer.

    fetch the branch (its current head: a person may have pushed since gitbot's last change) and the
    default branch → check out the head → policy from the default branch (the pull request cannot
    loosen it; read-only for `@gitbot answer`; the budget is what the pull request has left) →
    continue the previous run's conversation when its record is on the forge (run_records.py), or
    start afresh with the whole context → agent → check after a change → commit on top of the head
    → scan the diff for secrets → push, only if the branch is still where gitbot found it (never over
    someone's commit: a branch that moved meanwhile gets the change next to it) → keep the record

The result is an IterationOutcome for iteration_report.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitbot.agent.result import RunResult, Status
from gitbot.errors import GitError
from gitbot.fixcheck.changes import RunChanges
from gitbot.fixcheck.gate import GateClosed, ignored_untracked
from gitbot.forge import pull_request as prmod
from gitbot.forge import run_records
from gitbot.forge.issue_task import clean_title
from gitbot.forge.job import Job
from gitbot.forge.leaks import scan_diff
from gitbot.forge.pr_body import Verification
from gitbot.forge.pr_task import build_pull_task, request_label
from gitbot.forge.work import Verdict, WorkOutcome, keep_record, prepare, run_agent, run_check

MAX_LISTED_COMMITS = 20


@dataclass
class IterationOutcome(WorkOutcome):
    head: str = ""  # the branch's tip the work started from
    continued: bool = False  # the run continued the previous run's conversation
    # Why the change went to `pushed_to` beside the pull request's branch instead of onto it: "moved" (someone
    # pushed while gitbot worked) or "default" (the branch is the repository's default branch); "" when on it.
    beside: str = ""
    record_ref: str | None = None


def iterate(job: Job, plan) -> IterationOutcome:
    with prmod.checkout_credential_removed(job.repo):
        return _iterate(job, plan)


def _iterate(job: Job, plan) -> IterationOutcome:
    from gitbot.agent.history import messages_of_run
    from gitbot.forge.plan import redacted
    from gitbot.sandbox.runner import Runner

    repo, auth, inputs, terms = job.repo, job.auth, job.inputs, job.forge.terms
    trigger, pull, ledger = plan.trigger, plan.pull, plan.ledger
    branch = prmod.validate_branch(pull.head_ref)
    default = prmod.validate_branch(plan.default_branch)
    prior = ledger.last_run_id
    record_ref = run_records.ref_of(prior) if prior else None
    # One round trip for the branch, the default branch (the policy's source) and the record to continue.
    wanted = {f"refs/heads/{b}": f"refs/remotes/origin/{b}" for b in (branch, default)}
    if record_ref:
        wanted[record_ref] = record_ref
    tips = prmod.fetch_refs(repo, wanted, auth=auth)
    head = tips[f"refs/heads/{branch}"]
    if head is None:
        raise GitError(f"the {job.forge.terms.change}'s branch {branch!r} is gone from origin")
    default_tip = tips[f"refs/heads/{default}"] or head
    prmod.start_branch(repo, branch, head)
    plan.context.commits = commits_since(repo, ledger, head)

    remaining = inputs.max_total_cost_usd - ledger.total_cost
    # The policy as the default branch has it: the pull request's branch cannot loosen it.
    prepared, policy, sandbox_off = prepare(
        job, default_tip, answer_only=trigger.mode == "answer", max_cost_usd=max(0.01, remaining)
    )
    history = None
    if prior:
        try:
            run_dir = run_records.unpack(repo, prior)
        except GitError as exc:
            job.io.warning(f"could not read the record of run {prior}: {exc}", title="gitbot")
            run_dir = None
        history = messages_of_run(run_dir) if run_dir is not None else None
        job.io.info(
            f"continuing the conversation of run {prior}"
            if history
            else f"run {prior} has no record to continue"
        )
    task = redacted(
        job, build_pull_task(plan.context, continued=history is not None, check_command=inputs.check_command)
    )
    runner = Runner(policy, repo)
    with job.io.commands_stopped():
        ignored_before = ignored_untracked(repo)  # what the run did not make: never committed
        result = run_agent(job, task, repo, policy, prepared, history=history)
        changed = result.files_changed if trigger.mode != "answer" else []
        after = run_check(job, runner, "after the agent") if changed else None
    verdict = judge_iteration(job, result, changed, after)
    outcome = IterationOutcome(
        result, verdict, head=head, continued=history is not None, sandbox_off=sandbox_off
    )
    outcome.diff_base = head
    if changed:
        changes = RunChanges(repo, result.run_id)
        keep, outcome.left_out = prmod.partition_changes(
            changes.paths(), policy.check_edit, ignored_before, job.forge.unpushable
        )
        try:
            outcome.commit = prmod.commit_changes(
                repo,
                keep,
                changes=changes,
                policy=policy,
                subject=clean_title(f"Follow-up on {terms.change_prefix}{pull.number}: {request_label(trigger)}", 100),
                body=(
                    f"gitbot's change for {trigger.html_url}, made by an AI agent in {terms.run} {job.ctx.run_url}. "
                    "The reply to the request has the agent's summary, the check and the cost."
                ),
                run_id=result.run_id,
                model=result.model,
                unpushable=job.forge.unpushable,
            )
        except GateClosed as closed:
            outcome.stopped = closed.stopped
    if outcome.commit is not None:
        outcome.leaks = scan_diff(prmod.added_text(repo, head, outcome.commit.sha), job.secrets)
    beside_branch = f"gitbot/pr-{pull.number}-{result.run_id}"
    if outcome.commit is not None and not outcome.leaks and result.status is Status.COMPLETED:
        outcome.pushed_to = branch
        try:
            if branch == plan.default_branch:
                raise GitError("gitbot never pushes to the default branch")
            # Only if the branch is still at `head`: the commit is a fast-forward from it, so nothing
            # anyone pushed is ever overwritten.
            prmod.push(repo, branch, outcome.commit.sha, expected_tip=head, auth=auth)
        except GitError:
            outcome.beside = "default" if branch == plan.default_branch else "moved"
            outcome.pushed_to = beside_branch
            prmod.push(repo, outcome.pushed_to, outcome.commit.sha, expected_tip=None, auth=auth)
    elif outcome.commit is not None and not outcome.leaks:
        # A stopped attempt goes next to the pull request, never onto it.
        outcome.pushed_to = beside_branch
        prmod.push(repo, outcome.pushed_to, outcome.commit.sha, expected_tip=None, auth=auth)
    if result.max_cost_usd is None:
        result.max_cost_usd = policy.limits.max_cost_usd
    result.extra["verified"] = verdict.verification.verified
    if after is not None:
        result.extra.update(
            check_command=after.command, check_exit_after="timeout" if after.timed_out else after.exit_code
        )
    if not outcome.leaks and not outcome.stopped:  # a record holding a secret-like value stays on the runner too
        outcome.record_ref = keep_record(job, result.run_id, earlier=[it.run_id for it in ledger.iterations],
                                         keep=policy.limits.keep_run_records)
    job.io.untrusted(result.summary or "(no summary)", heading="The model's summary of its work:")
    return outcome


def judge_iteration(job: Job, result: RunResult, changed: list[str], after) -> Verdict:
    """Verified when the check passes after the change (the check runs once, after the agent)."""
    from gitbot.fixcheck.tampering import is_test_or_check_config

    command = job.inputs.check_command
    after_text = after.describe() if after else None
    tests_modified = [p for p in changed if is_test_or_check_config(p)]
    if result.status is not Status.COMPLETED:
        v = Verification(
            command, None, None, False, f"the agent stopped before finishing ({result.status.value})."
        )
    elif not changed:
        v = Verification(command, None, None, False, "no file was changed.")
    elif after is None:
        v = Verification(
            None, None, None, False, f"no {job.forge.terms.check_command_setting} was given, so nothing was re-run."
        )
    elif after.passed:
        v = Verification(command, None, after_text, True, "the check passes")
    else:
        v = Verification(command, None, after_text, False, "the check command fails after the change.")
    return Verdict(v, tests_modified)


def commits_since(repo, ledger, head: str) -> list[str]:
    """Commits on the branch since gitbot's last change that gitbot did not make: what a person pushed
    in between, for the model to read before it edits."""
    last = next((it.commit for it in reversed(ledger.iterations) if it.commit), None)
    if not last:
        return []
    try:
        out = prmod.git(
            repo, "log", f"--max-count={MAX_LISTED_COMMITS}", "--format=%h %s (%an)", f"{last}..{head}"
        )
    except GitError:
        return []  # gitbot's commit is not in this history any more (the branch was rewritten)
    return [line for line in out.splitlines() if line.strip()]
