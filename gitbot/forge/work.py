"""Stage two of an action job: the work, with the checkout's credential out of `.git/config`.

    fetch the base (and the failed run's branch) → refuse a bot branch holding other people's commits
    → check out the bot branch → policy (from the starting commit; sandbox required) → provider →
    check before, agent, check after → verdict → commit what the policy allows → scan the diff for
    secrets → push

The result is a WorkOutcome for report.py; nothing here writes to the forge but the push.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from gitbot.agent.result import RunResult, Status
from gitbot.fixcheck.changes import RunChanges
from gitbot.fixcheck.gate import GateClosed, Stopped, ignored_untracked
from gitbot.forge import pull_request as prmod
from gitbot.forge.job import Job
from gitbot.forge.leaks import Leak, scan_diff
from gitbot.forge.plan import Plan
from gitbot.forge.pr_body import Verification
from gitbot.forge.triggers import WorkflowTrigger
from gitbot.receipt import money
from gitbot.sandbox.bwrap import probe
from gitbot.sandbox.runner import Runner

CHECK_TIMEOUT_SECONDS = 900.0


class SandboxUnavailable(Exception):
    """The sandbox the action requires does not work on this runner."""


@dataclass
class Verdict:
    verification: Verification
    tests_modified: list[str] = field(default_factory=list)


@dataclass
class WorkOutcome:
    result: RunResult
    verdict: Verdict | None = None
    commit: prmod.Commit | None = None
    pushed_to: str | None = None  # the branch the commit went to (None: nothing pushed)
    diff_base: str = ""  # what the PR's change list is measured from
    left_out: list[prmod.LeftOut] = field(default_factory=list)
    leaks: list[Leak] = field(default_factory=list)  # non-empty: nothing was pushed
    stopped: list[Stopped] = field(default_factory=list)  # non-empty: the commit gate refused; nothing pushed
    sandbox_off: bool = False  # the repository's policy turned the sandbox off: said loudly everywhere


def work(job: Job, plan: Plan) -> WorkOutcome:
    # Every git command that talks to origin runs with the checkout's credential out of .git/config,
    # so exactly one Authorization header (gitbot's, for that command) is ever sent.
    with prmod.checkout_credential_removed(job.repo):
        return _work(job, plan)


def _work(job: Job, plan: Plan) -> WorkOutcome:

    repo, auth = job.repo, job.auth
    base_tip = prmod.fetch(repo, plan.base, auth=auth)
    if base_tip is None:
        raise prmod.GitError(f"origin has no branch {plan.base!r} to start from")
    if plan.fetch_also:
        prmod.fetch(repo, plan.fetch_also, auth=auth)
    start = plan.start_sha or base_tip
    existing_tip = prmod.fetch(repo, plan.branch, auth=auth)
    if existing_tip:
        foreign = prmod.foreign_commits(repo, existing_tip, base_tip)
        if foreign:
            raise prmod.BranchNotOurs(
                f"the branch {plan.branch} has {len(foreign)} commit(s) gitbot did not make (the newest "
                f"is {foreign[0][:12]}); gitbot does not overwrite other people's work. Merge or delete "
                "the branch, then add the label again."
            )
    prmod.start_branch(repo, plan.branch, start)

    # The policy as the base branch has it (the default branch for a failed run): neither the agent
    # nor the branch under test can loosen it.
    policy_tip = base_tip
    if plan.policy_branch and plan.policy_branch != plan.base:
        policy_tip = prmod.fetch(repo, plan.policy_branch, auth=auth)
        if policy_tip is None:
            raise prmod.GitError(f"origin has no branch {plan.policy_branch!r} to read the policy from")
    prepared, policy, sandbox_off = prepare(job, policy_tip, answer_only=plan.mode == "answer")
    open_pr = job.forge.open_pull(plan.branch)

    # The check runs where the agent's commands run: sandboxed, allow-listed environment. After the
    # agent it executes code the agent wrote, so it must never see the tokens.
    runner = Runner(policy, repo)
    with job.io.commands_stopped():
        # An answer changes nothing, so there is nothing to verify.
        before = run_check(job, runner, "before the agent") if plan.mode != "answer" else None
        ignored_before = ignored_untracked(repo)  # what the run did not make: never committed
        result = run_agent(job, plan.task, repo, policy, prepared)
        changed = result.files_changed if plan.mode != "answer" else []
        after = run_check(job, runner, "after the agent") if before is not None and changed else None
    keep_artifact(job)  # the record is complete: its scanned copy, and what the scan stopped, go in the report
    verdict = judge(job, result, before, after)
    commit = None
    left_out: list[prmod.LeftOut] = []
    if changed:
        # The run's policy judges every changed path again: the agent's commands can write files its
        # file tools could not. The names come from the checkpoints as git has them (bytes), not from
        # the result's printable copy.
        changes = RunChanges(repo, result.run_id)
        keep, left_out = prmod.partition_changes(
            changes.paths(), policy.check_edit, ignored_before, job.forge.unpushable
        )
        try:
            commit = prmod.commit_changes(
                repo,
                keep,
                changes=changes,
                policy=policy,
                subject=plan.title,
                body=commit_body(job, plan),
                run_id=result.run_id,
                model=result.model,
                unpushable=job.forge.unpushable,
            )
        except GateClosed as closed:
            return WorkOutcome(result, verdict, stopped=closed.stopped, sandbox_off=sandbox_off)
    if commit is not None:
        leaks = scan_diff(prmod.added_text(repo, f"{commit.sha}^", commit.sha), job.secrets)
        if leaks:
            return WorkOutcome(result, verdict, commit, leaks=leaks, sandbox_off=sandbox_off)
    pushed_to = None
    if commit is not None:
        pushed_to, lease = plan.branch, existing_tip
        if result.status is not Status.COMPLETED and open_pr is not None:
            # A failed attempt must not replace the open PR's content: it goes next to it.
            pushed_to, lease = f"{plan.branch}-attempt-{result.run_id}", None
        prmod.push(repo, pushed_to, commit.sha, expected_tip=lease, auth=auth)
    if result.max_cost_usd is None:
        result.max_cost_usd = policy.limits.max_cost_usd
    # The receipt (job summary, comments) shows these keys when present.
    result.extra["verified"] = verdict.verification.verified
    if before is not None:
        result.extra.update(
            check_command=before.command,
            check_exit_before=exit_of(before),
            check_exit_after=exit_of(after) if after is not None else "not run",
        )
    if verdict.tests_modified:
        result.extra["tests_modified"] = ", ".join(verdict.tests_modified)
    job.io.untrusted(result.summary or "(no summary)", heading="The model's summary of its work:")
    if pushed_to == plan.branch and result.status is Status.COMPLETED:
        # Only a run that opens or updates a pull request: its ledger is what later prunes the record, so
        # a record of any other run would stay on origin for good.
        keep_record(job, result.run_id)
    diff_base = base_tip if plan.start_sha is None else start
    return WorkOutcome(result, verdict, commit, pushed_to, diff_base, left_out, sandbox_off=sandbox_off)


def keep_artifact(job: Job) -> list[str]:
    """Prepare the one directory action.yml uploads: the run records and checkpoint store, scanned
    (forge/artifact.py). Once per job; what it stopped is said in the log and kept for the report."""
    from gitbot.forge.artifact import ARTIFACT_DIR_NAME, prepare_artifact

    if job.artifact_notes is None:
        job.artifact_notes = []
        if job.ctx.runner_temp is not None:
            try:
                job.artifact_notes = prepare_artifact(job.repo, job.ctx.runner_temp / ARTIFACT_DIR_NAME,
                                                      job.secrets).notes()
            except Exception as exc:  # noqa: BLE001 - no artifact is better than a crash or an unscanned one
                job.artifact_notes = [f"The run record was not uploaded: preparing it failed ({exc})."]
        for note in job.artifact_notes:
            job.io.warning(note, title="gitbot: artifact")
    return job.artifact_notes


# ---------------------------------------------------------------- what the agent runs with


def prepare(job: Job, policy_ref: str, *, answer_only: bool = False, max_cost_usd: float | None = None):
    """The run's policy (read at `policy_ref`, which the work cannot change), provider and options:
    prepare_run with the action's inputs, the sandbox required. Returns (prepared, policy, sandbox_off).

    answer_only: no file may be edited (`@gitbot answer`). max_cost_usd: a budget lower than the input's
    (what is left of a pull request's total)."""
    from gitbot.agent.prepare import prepare_run

    # The key goes to the client and nowhere else: never into os.environ, where child processes (git, the
    # check command) would inherit it. Cloud credentials come from the job's environment as it was when
    # gitbot started (they are out of os.environ too).
    inputs = job.inputs
    prepared = prepare_run(job.repo, policy_file=Path(inputs.policy) if inputs.policy else None,
                           base_ref=policy_ref, max_steps=inputs.max_steps, max_cost_usd=inputs.max_cost_usd,
                           model=inputs.model, provider_name=inputs.provider, base_url=inputs.base_url,
                           api_key=inputs.model_api_key, environ=job.io.environ)
    policy = prepared.policy
    if max_cost_usd is not None and policy.limits.max_cost_usd > max_cost_usd:
        policy = dataclasses.replace(policy, limits=dataclasses.replace(policy.limits, max_cost_usd=max_cost_usd))
    if answer_only:
        policy = dataclasses.replace(policy, edit_allow=())
    policy, sandbox_off = sandboxed(job, policy)
    return prepared, policy, sandbox_off


def keep_record(job: Job, run_id: str, *, earlier: list[str] | None = None, keep: int = 1) -> str | None:
    """Push the run's record, for a later request on the pull request to continue its conversation
    (run_records.py); a failure only costs that continuation. `earlier`: the pull request's runs before
    this one, oldest first, of which the records beyond the last `keep` (this one counted) are deleted."""
    from gitbot.forge import run_records

    try:
        ref = run_records.publish(job.repo, run_id, auth=job.auth, secrets=job.secrets)
    except prmod.GitError as exc:
        job.io.warning(f"could not keep the run's record on {job.forge.terms.forge}: {exc}", title="gitbot")
        return None
    if ref is not None and earlier:
        try:
            deleted = run_records.prune(job.repo, [*earlier, run_id], keep=keep, auth=job.auth)
        except prmod.GitError as exc:
            job.io.warning(f"could not delete older run records: {exc}", title="gitbot")
        else:
            if deleted:
                job.io.info(f"deleted {len(deleted)} older run record(s) (keep_run_records = {keep})")
    return ref


def sandboxed(job: Job, policy):
    """The run's policy with sandbox mode "required", unless the repository's policy turns the sandbox
    off explicitly (then every report says so loudly). "auto" would run the agent's commands without a
    sandbox, with network, wherever bubblewrap does not work — on GitHub's Ubuntu 24.04 runners unless
    action.yml's sandbox setup step ran. Returns (policy, sandbox_off)."""
    if policy.sandbox_mode == "off":
        from gitbot.sandbox.confine import environ_protection

        if not environ_protection():
            # The step's environment holds the API key and the token: unsandboxed commands must not
            # be able to read it from /proc, and without Landlock nothing stops them.
            raise SandboxUnavailable(
                'the policy sets [sandbox] mode = "off", and this runner cannot keep unsandboxed commands from '
                "reading the environment of gitbot and the step that started it (no Landlock in this kernel), "
                "where the API key and token are. Use the sandbox (remove mode = \"off\"). No model was called.")
        job.io.warning(
            'the policy sets [sandbox] mode = "off": the agent\'s commands run without a sandbox',
            title="gitbot: no sandbox",
        )
        return policy, True
    policy = dataclasses.replace(policy, sandbox_mode="required")
    status = probe()
    if not status.available:
        raise SandboxUnavailable(
            f"gitbot runs the agent's commands only inside the bubblewrap sandbox, and {status.description}. "
            f"{job.forge.terms.sandbox_setup}, or set `[sandbox] mode = \"off\"` in the repository's "
            "policy to run them without a sandbox. No model was called."
        )
    return policy, False


# ---------------------------------------------------------------- checking and judging


def run_check(job: Job, runner: Runner, when: str):
    if not job.inputs.check_command:
        return None
    run = runner.run_check(job.inputs.check_command, CHECK_TIMEOUT_SECONDS)
    job.io.info(f"check {when}: {run.describe()}")
    return run


def judge(job: Job, result: RunResult, before, after) -> Verdict:
    from gitbot.fixcheck.tampering import is_test_or_check_config

    tests_modified = [p for p in result.files_changed if is_test_or_check_config(p)]
    command = job.inputs.check_command
    workflow = isinstance(job.trigger, WorkflowTrigger)
    terms = job.forge.terms
    before_text = before.describe() if before else None
    after_text = after.describe() if after else None
    if result.status is not Status.COMPLETED:
        why = f"the agent stopped before finishing ({result.status.value})."
        v = Verification(command, before_text, None, False, why)
    elif not result.files_changed:
        v = Verification(command, before_text, None, False, "no file was changed.")
    elif before is None:
        why = (
            f"no {terms.check_command_setting} was given, so gitbot could not re-run the failing {terms.ci} "
            f"here; the {terms.ci}'s own run on this branch will tell."
            if workflow
            else f"no {terms.check_command_setting} was given, so nothing was re-run: review the change carefully."
        )
        v = Verification(None, None, None, False, why)
    elif workflow and before.passed:
        why = (
            "the check command passed before the change too, so it does not reproduce the failure and "
            "cannot prove the fix."
        )
        v = Verification(command, before_text, after_text, False, why)
    elif after is not None and after.passed:
        v = Verification(command, before_text, after_text, True, "the check passes")
    else:
        v = Verification(
            command, before_text, after_text, False, "the check command still fails after the change."
        )
    return Verdict(v, tests_modified)


def commit_body(job: Job, plan: Plan) -> str:
    """gitbot's own words only: the model's could close other issues on merge (`fixes #12`) or add
    trailers (`Co-authored-by:`, `Signed-off-by:`). The subject is the cleaned title."""
    terms = job.forge.terms
    if plan.issue:
        what = f"gitbot's change for issue {terms.issue_prefix}{plan.issue}"
    else:
        what = f"gitbot's change for the failed {terms.run} {job.trigger.html_url}"
    return (
        f"{what}, made by an AI agent in {terms.run} {job.ctx.run_url}. The {terms.change} has the "
        "agent's summary, the verification and the cost."
    )


def exit_of(run) -> int | str | None:
    return "timeout" if run.timed_out else run.exit_code


class ToolLog:
    """One log line per tool call; printed inside the stop-commands block, so nothing in it is obeyed."""

    def __init__(self, io):
        self.io = io

    def waiting(self, request: int) -> None: ...

    def done_waiting(self) -> None: ...

    def tool(self, step: int, name: str, target: str, outcome: str, cost: float | None) -> None:
        self.io.info(f"step {step:>3}  {name:<24} {target[:70]:<70} {outcome:<8} total {money(cost)}")

    def note(self, text: str) -> None:
        self.io.info(text)


def run_agent(job: Job, task, repo: Path, policy, prepared, history=None) -> RunResult:
    """The agent on `task` with the job's secrets (for redaction only) and a log line per tool call."""
    from gitbot.agent.run import run_task

    return run_task(task, repo, policy=policy, options=prepared.options, provider=prepared.provider,
                    secrets=job.secrets, reporter=ToolLog(job.io), history=history)
