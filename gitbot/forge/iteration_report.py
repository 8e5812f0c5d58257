"""Stage three for a request on a pull request: the reply, the pull request's ledger, ready for review.

The reply goes where the request was (in the line comment's thread, or on the pull request) and
says what changed (the files, linked at the new commit), whether the check passed, and what this
step cost, with the share of the input read from the cache. The pull request's body gains the
iteration's row and the cumulative cost and tokens (ledger.py). A draft gitbot opened becomes ready
for review when an iteration verifies.
"""

from __future__ import annotations

from gitbot.agent.result import ExitCode, Status, exit_code_for
from gitbot.forge import pull_request as prmod
from gitbot.forge.interface import ForgeError, PullData
from gitbot.forge.iterate import IterationOutcome, iterate
from gitbot.forge.job import Job
from gitbot.forge.ledger import Ledger, with_section
from gitbot.forge.mdsafe import code_span, fenced, md_cell, prose
from gitbot.forge.pr_body import left_out_notes, parse_changes, receipt_markdown
from gitbot.forge.pr_task import request_label
from gitbot.forge.report import (
    COMMENT_SUMMARY_CHARS,
    SANDBOX_OFF_WARNING,
    Report,
    cache_note,
    iteration_of,
    outputs,
    warnings,
)
from gitbot.forge.work import keep_artifact
from gitbot.receipt import money

MAX_LISTED_FILES = 15


def run_iteration(job: Job, report: Report, plan) -> int:
    report.comment(
        f"👀 gitbot is working on this. Follow along in the [{job.forge.terms.run}]({job.ctx.run_url}); this reply will "
        "say what changed, whether the check passed and what it cost."
    )
    def step() -> int:
        outcome = iterate(job, plan)
        keep_artifact(job)  # the record is complete: its scanned copy, and what the scan stopped
        return report_iteration(job, report, plan, outcome)

    return report.guarded(step)


def report_iteration(job: Job, report: Report, plan, outcome: IterationOutcome) -> int:
    if outcome.leaks:
        return report.refuse_leaks(outcome.result, outcome.leaks)
    if outcome.stopped:
        return report.refuse_commit(outcome.result, outcome.stopped)
    io, ctx, inputs, terms = job.io, job.ctx, job.inputs, job.forge.terms
    t, result = plan.trigger, outcome.result
    v = outcome.verdict.verification
    row = iteration_of(
        result,
        outcome,
        trigger=t.key,
        request=request_label(t),
        by=t.author.login,
        link=t.html_url,
        actions_run=ctx.run_id,
        redact=job.secrets.redact,
        continued=outcome.continued,
    )
    if outcome.beside:
        row.outcome, row.commit = f"beside the branch ({outcome.beside})", None
    # The body as it is now (someone may have edited it while gitbot worked), with this iteration's row.
    try:
        current = job.forge.get_pull(plan.pull.number)
        ledger = Ledger.parse(current.body) or Ledger(issue=plan.ledger.issue)
        ledger.record(row)
        # Only the section is gitbot's: the rest of a person's pull request body stays as they wrote it.
        job.forge.update_pull_body(plan.pull.number, with_section(current.body, report.safe(ledger.section())))
    except ForgeError as exc:
        io.warning(f"could not update the {terms.change}'s body: {exc}", title="gitbot")
        ledger = plan.ledger
        ledger.record(row)
    notes = []
    if outcome.sandbox_off:
        notes.append(SANDBOX_OFF_WARNING)
    if outcome.verdict.tests_modified:
        files = ", ".join(code_span(p) for p in outcome.verdict.tests_modified)
        notes.append(
            f"The agent changed tests or check configuration ({files}): make sure the fix is in the code."
        )
    notes += left_out_notes(outcome.left_out)
    cost = (
        f"This step: {money(result.cost_usd)} for {result.steps} model request(s){cache_note(result)}"
        f"{' (continuing the earlier conversation)' if outcome.continued else ''}. On this {terms.change} so far: "
        f"{money(ledger.total_cost)} of {money(inputs.max_total_cost_usd)}, {ledger.follow_ups} of "
        f"{inputs.max_iterations} requested iteration(s). [{terms.run}]({ctx.run_url})"
    )
    pull = PullData(
        plan.pull.number, plan.pull.html_url, plan.pull.draft, plan.pull.head_ref, plan.pull.base_ref
    )
    status, exit_code = result.status.value, ExitCode.OK
    if (
        t.mode != "fix"
        and result.status is Status.COMPLETED
        and outcome.commit is None
        and not outcome.left_out
    ):
        status = "answered"
        text = (
            f"💬 gitbot's answer (the model's words, not checked by gitbot):\n\n"
            f"{prose(job.secrets.redact(result.summary or '(no answer)'))}\n\nNo file was changed. {cost}"
        )
    elif outcome.commit is not None and outcome.pushed_to and result.status is Status.COMPLETED:
        text = changed_text(job, report, plan, outcome, notes) + f"\n\n{cost}"
        if v.verified and not outcome.beside:
            ready = make_ready(job, plan, outcome)
            if ready:
                text += f"\n\n{ready}"
    else:
        if result.status is Status.COMPLETED:
            status, headline = "no_changes", "finished without a change it may push"
            exit_code = ExitCode.GAVE_UP
        else:
            headline = f"stopped: {result.status.value.replace('_', ' ')}"
            exit_code = exit_code_for(result.status)
        where = (
            f"The work so far is on {report.branch_link(outcome.pushed_to)}, beside this {terms.change}."
            if outcome.pushed_to
            else "Nothing was pushed."
        )
        words = fenced(job.secrets.redact(result.summary or "(none)")[:COMMENT_SUMMARY_CHARS])
        text = (
            f"❌ gitbot {headline}. {where}\n\n{warnings(notes)}The model's last words (its own, unchecked):"
            f"\n\n{words}\n\n{cost}"
        )
    report.comment(text)
    io.write_summary(
        f"## gitbot: {md_cell(request_label(t))} on {terms.change_prefix}{plan.pull.number}: {status}\n\n{receipt_markdown(result)}\n"
    )
    verified = v.verified and outcome.commit is not None and not outcome.beside
    io.set_outputs(outputs(status, pr=pull, verified=verified, result=result))
    return exit_code


def changed_text(job: Job, report: Report, plan, outcome: IterationOutcome, notes: list[str]) -> str:
    forge, commit = job.forge, outcome.commit
    changes = parse_changes(prmod.diff_text(job.repo, outcome.head, commit.sha))
    lines = []
    for c in changes[:MAX_LISTED_FILES]:
        name = f"{md_cell(c.path)}"
        lines.append(
            f"- [{name}]({forge.blob_url(commit.sha, c.path)}) {c.status}, +{c.added} −{c.removed}"
        )
    if len(changes) > MAX_LISTED_FILES:
        lines.append(f"- … and {len(changes) - MAX_LISTED_FILES} more file(s)")
    commit_link = f"[`{commit.sha[:10]}`]({forge.commit_url(commit.sha)})"
    if outcome.beside:
        why = (
            "moved while gitbot worked, so gitbot did not push onto it (it never pushes over someone's commit)"
            if outcome.beside == "moved"
            else "is the repository's default branch, which gitbot never pushes to"
        )
        head = (
            f"⚠️ The branch `{md_cell(plan.pull.head_ref)}` {why}: its change {commit_link} is on "
            f"{report.branch_link(outcome.pushed_to)}. Merge it into the branch, or ask again."
        )
    else:
        head = f"✅ gitbot pushed {commit_link} to `{md_cell(plan.pull.head_ref)}`:"
    v = outcome.verdict.verification
    proof = (
        f"✅ Check passed: {code_span(v.command or '')} {v.after} after the change."
        if v.verified
        else f"⚠️ Not verified: {v.reason}"
    )
    summary = fenced(job.secrets.redact(outcome.result.summary or "(none)")[:COMMENT_SUMMARY_CHARS])
    return (
        f"{head}\n\n" + "\n".join(lines) + f"\n\n{proof}\n\n{warnings(notes)}"
        f"The model's summary (its own words, unchecked):\n\n{summary}"
    )


def make_ready(job: Job, plan, outcome: IterationOutcome) -> str:
    """A draft gitbot opened becomes ready for review once an iteration verifies (GraphQL: REST cannot)."""
    ledger_first = plan.ledger.iterations[0] if plan.ledger.iterations else None
    opened_by_gitbot = ledger_first is not None and ledger_first.trigger is None
    if not plan.pull.draft or not opened_by_gitbot or job.inputs.draft:
        return ""
    if outcome.verdict.tests_modified or outcome.sandbox_off:
        return ""
    try:
        job.forge.mark_ready(plan.pull)
    except ForgeError as exc:
        job.io.warning(f"could not mark the {job.forge.terms.change} ready for review: {exc}", title="gitbot")
        return (
            f"The check passed, but gitbot could not mark the draft ready for review ({md_cell(str(exc))}); "
            "the job needs `pull-requests: write` and `contents: write`."
        )
    return f"The check passed, so this {job.forge.terms.change} is no longer a draft: it is ready for review."

