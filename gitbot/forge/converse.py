"""A request made in a comment (`@gitbot …`): heard at once, taken once, and either answered or worked on.

    👀 on the comment → is it taken already? (gitbot's reply to it, or its row in the pull request's
    ledger, from another workflow run: then nothing at all) → on an issue: the issue flow, replying
    to the comment → on a pull request: same repository? within the pull request's total budget and
    its number of iterations? → "working on it" reply → plan (threads, checks, history) → iterate.py
    (one more commit on the branch, or an answer) → iteration_report.py

A re-run of the same workflow run is not a second request: it finds its own reply and row and updates
them. Nothing here reaches the model before the permission check in action.py has passed.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitbot.agent.result import ExitCode
from gitbot.forge.interface import ForgeError, PullInfo
from gitbot.forge.job import Job
from gitbot.forge.ledger import Ledger
from gitbot.forge.mdsafe import code_span, md_cell
from gitbot.forge.pr_task import PullContext, failed
from gitbot.forge.report import Report, outputs
from gitbot.forge.triggers import CommentTrigger
from gitbot.markdown_text import plain_title, visible_text
from gitbot.receipt import money

MAX_CHECK_LOGS = 3


@dataclass
class PullPlan:
    trigger: CommentTrigger
    pull: PullInfo
    ledger: Ledger  # as the pull request's body holds it now (empty for a pull request gitbot did not make)
    context: PullContext
    default_branch: str


class Declined(Exception):
    """gitbot will not work on this request; `reply` (when set) tells the person why and what to do."""

    def __init__(self, status: str, reason: str, reply: str | None = None):
        super().__init__(reason)
        self.status, self.reason, self.reply = status, reason, reply


def begin(job: Job, report: Report) -> int | None:
    """The part every comment request shares. Returns the exit code when the request is done with
    here (a pull request's, or one taken already); None when the issue flow takes it from here."""
    trigger, terms = job.trigger, job.forge.terms
    assert isinstance(trigger, CommentTrigger)
    try:
        job.forge.react(trigger)
    except ForgeError as exc:
        job.io.warning(f"could not react to the comment: {exc}", title="gitbot")
    try:
        report.reply = job.forge.find_reply(trigger)
    except ForgeError as exc:
        job.io.error(
            f"cannot tell whether this request was handled already: {exc}", title=f"gitbot: {terms.forge} API"
        )
        job.io.set_outputs(outputs("error"))
        return ExitCode.INFRA
    if report.reply is not None and report.reply.run != job.ctx.run_id:
        return duplicate(job, f"{terms.run} {report.reply.run} replied to it already")
    if not trigger.on_pull:
        return None
    try:
        plan = plan_pull(job)
    except Declined as exc:
        return declined(job, report, exc)
    except ForgeError as exc:
        return report.fail(f"reading the {terms.change} from {terms.forge} failed: {exc}", ExitCode.INFRA)
    from gitbot.forge.iteration_report import run_iteration

    return run_iteration(job, report, plan)


def duplicate(job: Job, why: str) -> int:
    t = job.trigger
    message = f"gitbot has handled this request ({t.kind} {t.comment_id}) before: {why}. Nothing was done."
    job.io.notice(message, title="gitbot: already handled")
    job.io.write_summary(f"## gitbot: already handled\n\n{md_cell(message)}\n")
    job.io.set_outputs(outputs("duplicate"))
    return ExitCode.OK


def declined(job: Job, report: Report, exc: Declined) -> int:
    job.io.notice(f"gitbot will not work on this request: {exc.reason}", title="gitbot")
    if exc.reply:
        report.comment(exc.reply)
    job.io.write_summary(f"## gitbot: not run\n\n{md_cell(exc.reason)}\n")
    job.io.set_outputs(outputs(exc.status))
    return ExitCode.OK


# ---------------------------------------------------------------- planning a pull request's iteration


def plan_pull(job: Job) -> PullPlan:
    t, forge, inputs, ctx = job.trigger, job.forge, job.inputs, job.ctx
    terms = forge.terms
    pull = forge.get_pull(t.number)
    if pull.state != "open":
        raise Declined("refused", f"{terms.change} {terms.change_prefix}{pull.number} is {pull.state}")
    if pull.head_repository != ctx.repository:
        raise Declined(
            "refused",
            f"the {terms.change}'s branch is in {pull.head_repository!r}, a fork",
            fork_reply(job, pull),
        )
    ledger = Ledger.parse(pull.body) or Ledger()
    done = ledger.find(t.key)
    if done is not None and done.actions_run != ctx.run_id:
        raise Declined(
            "duplicate", f"iteration {done.n} ({terms.run} {done.actions_run}) answered it already"
        )
    rerun = done is not None
    spent = ledger.total_cost
    if not rerun and spent >= inputs.max_total_cost_usd:
        raise Declined(
            "over_budget",
            f"the {terms.change} has cost {money(spent)}, {terms.max_total_cost_setting.strip('`')} is "
            f"{money(inputs.max_total_cost_usd)}",
            f"💸 gitbot did not start: the work on this {terms.change} has cost {money(spent)} so far, over "
            f"{len(ledger.iterations)} run(s), and its budget ({terms.max_total_cost_setting}) is "
            f"{money(inputs.max_total_cost_usd)}. A maintainer can raise {terms.settings_place} to continue.",
        )
    if not rerun and ledger.follow_ups >= inputs.max_iterations:
        raise Declined(
            "iteration_limit",
            f"the {terms.change} had {ledger.follow_ups} iterations, {terms.max_iterations_setting.strip('`')} is "
            f"{inputs.max_iterations}",
            f"✋ gitbot did not start: it has worked on this {terms.change} {ledger.follow_ups} time(s) on "
            f"request, the most {terms.max_iterations_setting} allows. So far it cost {money(spent)}. A "
            f"maintainer can raise {terms.settings_place}, or take it from here.",
        )
    context = PullContext(trigger=t, pull=pull, repository=ctx.repository, ledger=ledger, terms=terms)
    context.threads = forge.review_threads(pull.number)
    context.checks = forge.check_runs(pull.head_sha) if pull.head_sha else []
    for check in [c for c in context.checks if failed(c) and c.job_id is not None][:MAX_CHECK_LOGS]:
        from gitbot.forge.workflow import failure_excerpt

        try:
            context.check_logs[check.name] = failure_excerpt(forge.job_log(check.job_id))
        except ForgeError as exc:
            job.io.warning(f"could not read the log of {check.name}: {exc}", title="gitbot")
    if ledger.issue:
        try:
            issue = forge.issue(ledger.issue)
            context.origin = (
                f"Issue {terms.issue_prefix}{issue.number}: {plain_title(issue.title)}\n\n{visible_text(issue.body)}"
            )
        except ForgeError as exc:
            job.io.warning(f"could not read issue {terms.issue_prefix}{ledger.issue}: {exc}", title="gitbot")
    return PullPlan(t, pull, ledger, context, forge.default_branch)


def fork_reply(job: Job, pull: PullInfo) -> str:
    """What a maintainer can do instead: gitbot never runs with this repository's secrets on a fork's code."""
    server, repo, terms = job.ctx.server_url, job.ctx.repository, job.forge.terms
    head = code_span(f"{pull.head_repository or 'a deleted fork'}:{pull.head_ref}")
    ref = terms.change_ref.format(number=pull.number)
    return (
        f"🍴 This {terms.change}'s branch is in a fork ({head}). gitbot does not run on code from a fork: "
        "it would run it with this repository's secrets and a token that can push here.\n\n"
        "What a maintainer can do instead:\n"
        f"- review the change, then push it to a branch of {code_span(repo)} (for example `git fetch origin "
        f"{ref}:pr-{pull.number} && git push origin pr-{pull.number}`) and open a {terms.change} from that "
        "branch: gitbot works there when asked;\n"
        f'- or run gitbot on your own machine in a checkout of the branch: `gitbot run "…"` '
        f"([README]({server}/{repo}#readme))."
    )
