"""Stage three of an action job: telling people — the status comment on the issue, the pull request,
the job summary and the step outputs.

Everything gitbot did not write (the model's words, file names, error messages) goes through
mdsafe.py before it reaches GitHub, and every text is redacted of known secrets and token shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gitbot import __version__
from gitbot.agent.result import ExitCode, RunResult, Status, exit_code_for
from gitbot.fixcheck.gate import Stopped
from gitbot.forge import pull_request as prmod
from gitbot.forge.interface import ForgeError, PullData, Terms
from gitbot.forge.issue_task import STATUS_MARKER
from gitbot.forge.job import Job
from gitbot.forge.leaks import Leak
from gitbot.forge.ledger import Iteration, Ledger
from gitbot.forge.mdsafe import code_span, fenced, md_cell, no_quick_actions, prose
from gitbot.forge.mention import defuse
from gitbot.forge.plan import Plan
from gitbot.forge.pr_body import BodyParts, StepCost, left_out_notes, parse_changes, receipt_markdown, render
from gitbot.forge.triggers import CommentTrigger, IssueTrigger, reply_marker
from gitbot.forge.work import SandboxUnavailable, WorkOutcome, keep_artifact
from gitbot.receipt import cache_read_share, money

COMMENT_SUMMARY_CHARS = 3_000
SANDBOX_OFF_WARNING = (
    "**The agent's commands ran WITHOUT a sandbox**: this repository's policy sets `[sandbox] mode = "
    '"off"`, so they could read and write anything the runner user can and reach the network. Review '
    "this change, and the job's log, with that in mind."
)


def outputs(
    status: str, *, pr: PullData | None = None, verified: bool = False, result: RunResult | None = None
) -> dict[str, str]:
    """The action's step outputs (action.yml `outputs:`)."""
    cost = result.cost_usd if result is not None else 0.0
    return {
        "status": status,
        "pr-url": pr.html_url if pr else "",
        "pr-number": str(pr.number) if pr else "",
        "verified": "true" if verified else "false",
        "cost-usd": "" if cost is None else f"{cost:.4f}",
        "run-id": result.run_id if result is not None else "",
    }


class Report:
    """Everything one job says, to the issue, the PR, the job summary and the outputs."""

    def __init__(self, job: Job):
        self.job = job
        self.plan: Plan | None = None
        self.issue_comments = None  # the issue's comments as last read (the status comment is among them)
        # A request in a comment is answered by a reply to it (found again on a re-run of the same job),
        # not by the issue's status comment.
        self.reply = None

    def planned(self, plan: Plan) -> None:
        self.plan = plan
        self.issue_comments = plan.issue_comments

    # ---------------------------------------------------------------- the outcomes

    def refused(self, reason: str) -> int:
        io = self.job.io
        io.notice(f"gitbot will not run: {reason}", title="gitbot")
        io.write_summary(f"## gitbot: not run\n\n{md_cell(reason)}\n")
        io.set_outputs(outputs("refused"))
        return ExitCode.OK

    def report(self, outcome: WorkOutcome) -> int:
        if outcome.leaks:
            return self.refuse_leaks(outcome.result, outcome.leaks)
        if outcome.stopped:
            return self.refuse_commit(outcome.result, outcome.stopped)
        job, plan = self.job, self.plan
        io, ctx, terms = job.io, job.ctx, job.forge.terms
        result, verdict, commit, pushed_to = (
            outcome.result,
            outcome.verdict,
            outcome.commit,
            outcome.pushed_to,
        )
        v = verdict.verification
        notes = []
        if outcome.sandbox_off:
            notes.append(SANDBOX_OFF_WARNING)
        if verdict.tests_modified:
            files = ", ".join(code_span(p) for p in verdict.tests_modified)
            notes.append(
                f"The agent changed tests or check configuration ({files}): make sure the fix is in the "
                "code, not in the test."
            )
        notes += left_out_notes(outcome.left_out)
        notes += stopped_notes(result)
        notes += job.artifact_notes or []
        pr = None
        status = result.status.value
        receipt = receipt_markdown(result)
        if (
            plan.mode != "fix"
            and result.status is Status.COMPLETED
            and commit is None
            and not outcome.left_out
        ):
            return self.answered(outcome)
        if result.status is Status.COMPLETED and commit is not None:
            changes = parse_changes(prmod.diff_text(job.repo, outcome.diff_base, commit.sha))
            draft = job.inputs.draft or not v.verified or bool(verdict.tests_modified) or outcome.sandbox_off
            body = render(
                BodyParts(
                    result=result,
                    verification=v,
                    changes=changes,
                    version=__version__,
                    closes=plan.issue,
                    footer_links=[f"[{terms.run}]({ctx.run_url})", f"run `{result.run_id}`"],
                    context_line=plan.context_line,
                    request_costs=request_costs(job.repo, result.run_id),
                    restore_hint=restore_hint(result.run_id, ctx.run_id, terms),
                    notes=notes,
                    workflow_token=job.inputs.workflow_token,
                    iterations=self.first_iteration(outcome).section(),
                )
            )
            try:
                pr, created = prmod.open_or_update_pull(
                    job.forge,
                    branch=pushed_to,
                    base=plan.base,
                    title=self.safe(plan.title),
                    body=self.safe(body),
                    draft=draft,
                )
            except ForgeError as exc:
                io.error(str(exc), title=f"gitbot: {terms.change}")
                self.comment(
                    f"⚠️ gitbot made a change but could not open the {terms.change}: {md_cell(str(exc))}\n\n"
                    f"The change is on the branch {self.branch_link(pushed_to)}.\n\n"
                    f"{receipt}"
                )
                io.set_outputs(outputs("error", verified=v.verified, result=result))
                return ExitCode.INFRA
            kind = f"draft {terms.change}" if pr.draft else terms.change
            headline = f"{'opened' if created else 'updated'} {kind} [{terms.change_prefix}{pr.number}]({pr.html_url})"
            proof = (
                f"✅ verified: {code_span(v.command or '')} {v.before} before the change, {v.after} after it."
                if v.verified
                else f"⚠️ not verified: {v.reason}"
            )
            self.comment(
                f"✅ gitbot {headline}.\n\n{proof}\n\n{warnings(notes)}Cost: {money(result.cost_usd)} for "
                f"{result.steps} model request(s) · [{terms.run}]({ctx.run_url})"
            )
            exit_code = ExitCode.OK
        else:
            if result.status is Status.COMPLETED:
                status = "no_changes"
                headline = "finished without changing any file"
                if outcome.left_out:
                    headline = "finished without a change it may push"
            else:
                headline = f"stopped: {result.status.value.replace('_', ' ')}"
            where = (
                f"The work so far is on the branch {self.branch_link(pushed_to)}, so a person can continue "
                "from it."
                if pushed_to
                else "No change was pushed."
            )
            summary = fenced(job.secrets.redact(result.summary or "(none)")[:COMMENT_SUMMARY_CHARS])
            self.comment(
                f"❌ gitbot {headline}. {where}\n\n{warnings(notes)}The model's last words (its own, "
                f"unchecked):\n\n{summary}\n\n{receipt}\n\n[{terms.run}]({ctx.run_url})"
            )
            io.error(f"gitbot {headline}. {where}", title="gitbot")
            exit_code = (
                ExitCode.GAVE_UP if result.status is Status.COMPLETED else exit_code_for(result.status)
            )
        verification = "✅ verified" if v.verified else f"⚠️ not verified — {v.reason}"
        io.write_summary(
            f"## gitbot {headline}\n\n{plan.context_line}\n\nVerification: {verification}\n\n"
            f"{warnings(notes)}{receipt}\n"
        )
        io.set_outputs(outputs(status, pr=pr, verified=v.verified and pr is not None, result=result))
        return exit_code

    def answered(self, outcome: WorkOutcome) -> int:
        """The agent answered (or was asked only to answer): the reply holds the answer, nothing changed."""
        job, result = self.job, outcome.result
        answer = prose(job.secrets.redact(result.summary or "(no answer)"))
        self.comment(
            f"💬 gitbot's answer (the model's words, not checked by gitbot):\n\n{answer}\n\n"
            f"No file was changed. Cost: {money(result.cost_usd)} for {result.steps} model request(s)"
            f"{cache_note(result)} · [{job.forge.terms.run}]({job.ctx.run_url})"
        )
        job.io.write_summary(
            f"## gitbot answered\n\n{self.plan.context_line}\n\n{receipt_markdown(result)}\n"
        )
        job.io.set_outputs(outputs("answered", result=result))
        return ExitCode.OK

    def first_iteration(self, outcome: WorkOutcome) -> Ledger:
        """The ledger a new pull request starts with: its first row is this run, the one to continue."""
        job, plan, result = self.job, self.plan, outcome.result
        t = job.trigger
        if isinstance(t, CommentTrigger):
            by = t.author.login
        elif isinstance(t, IssueTrigger):
            by = t.sender.login
        else:
            by = t.actors[0].login if t.actors else job.ctx.actor
        terms = job.forge.terms
        link = t.html_url if isinstance(t, CommentTrigger) else ""
        if plan.issue and not link:
            link = job.forge.issue_url(plan.issue)
        request = f"issue {terms.issue_prefix}{plan.issue}" if plan.issue else f"the failed {terms.run}"
        ledger = Ledger(issue=plan.issue)
        ledger.record(
            iteration_of(
                result,
                outcome,
                trigger=None,
                request=request,
                by=by,
                link=link,
                actions_run=job.ctx.run_id,
                redact=job.secrets.redact,
            )
        )
        return ledger

    def refuse_leaks(self, result: RunResult, leaks: list[Leak]) -> int:
        """The change holds something that looks like a secret: nothing is pushed, and nobody is shown it."""
        io = self.job.io
        where = ", ".join(code_span(leak.where()) for leak in leaks[:10])
        more = f" and {len(leaks) - 10} more" if len(leaks) > 10 else ""
        message = (
            f"gitbot did not push its change: the diff adds what looks like a secret in {where}{more}. "
            f"Nothing was pushed and no {self.job.forge.terms.change} was opened; the value is not shown anywhere. Check "
            "whether a credential reached the repository's files, and rotate it if it is real. (A false "
            "positive, such as a test fixture, can be marked with `gitbot: allow-secret` on its line in the "
            "repository; gitbot does not accept the marker on a line its own change adds.)"
        )
        io.error(
            f"the change contains a secret-like value ({', '.join(leak.where() for leak in leaks[:10])}); "
            "nothing was pushed",
            title="gitbot: secret in the change",
        )
        notes = warnings(self.job.artifact_notes or [])
        self.comment(f"⛔ {message}\n\n{notes}{receipt_markdown(result)}\n\n[{self.job.forge.terms.run}]({self.job.ctx.run_url})")
        io.write_summary(f"## gitbot refused to push\n\n{message}\n\n{notes}{receipt_markdown(result)}\n")
        io.set_outputs(outputs("secret_found", result=result))
        return ExitCode.GAVE_UP

    def refuse_commit(self, result: RunResult, stopped: list[Stopped]) -> int:
        """The commit gate refused the tree: nothing is committed or pushed, and the paths are named."""
        io = self.job.io
        where = "; ".join(f"{code_span(item.path)} ({md_cell(item.reason)})" for item in stopped[:10])
        more = f"; and {len(stopped) - 10} more" if len(stopped) > 10 else ""
        message = (
            f"gitbot did not commit or push its change: it would have included {where}{more}. Only paths "
            "the run itself changed, that the policy lets it edit and that are outside `read_deny` are ever "
            f"committed. Nothing was pushed and no {self.job.forge.terms.change} was opened."
        )
        io.error(f"the commit gate refused the change ({'; '.join(item.where() for item in stopped[:10])}); "
                 "nothing was pushed", title="gitbot: commit refused")
        notes = warnings(self.job.artifact_notes or [])
        self.comment(f"⛔ {message}\n\n{notes}{receipt_markdown(result)}\n\n[{self.job.forge.terms.run}]({self.job.ctx.run_url})")
        io.write_summary(f"## gitbot refused to commit\n\n{message}\n\n{notes}{receipt_markdown(result)}\n")
        io.set_outputs(outputs("commit_refused", result=result))
        return ExitCode.GAVE_UP

    def guarded(self, step: Callable[[], int]) -> int:
        """Run a job's work and report step; whatever stops it becomes a reported failure with its exit
        code, and the scanned artifact is kept either way (once: the step may have made it)."""
        from gitbot.errors import ConfigError

        try:
            return step()
        except prmod.BranchNotOurs as exc:
            return self.fail(str(exc), ExitCode.GAVE_UP)
        except SandboxUnavailable as exc:
            return self.fail(str(exc), ExitCode.CONFIG)
        except ConfigError as exc:
            return self.fail(f"configuration: {exc}", ExitCode.CONFIG)
        except (ForgeError, prmod.GitError) as exc:
            return self.fail(str(exc), ExitCode.INFRA)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the issue or the reply and the log must say so
            import traceback

            self.job.io.untrusted(traceback.format_exc(), heading="gitbot crashed:")
            return self.fail(f"internal error: {type(exc).__name__}: {exc}", ExitCode.INFRA)
        finally:
            keep_artifact(self.job)

    def fail(self, message: str, code: int) -> int:
        io = self.job.io
        io.error(message, title="gitbot")
        self.comment(
            f"⚠️ gitbot could not finish: {md_cell(message)}\n\n[{self.job.forge.terms.run}]({self.job.ctx.run_url})"
        )
        io.write_summary(f"## gitbot could not finish\n\n{md_cell(message)}\n")
        io.set_outputs(outputs("error"))
        return code

    # ---------------------------------------------------------------- the status comment

    def safe(self, text: str) -> str:
        """What gitbot posts: no known secret or token shape, no live trigger phrase (gitbot never
        starts itself) and no line a forge runs as a command (GitLab's quick actions)."""
        return no_quick_actions(defuse(self.job.secrets.redact(text), self.job.inputs.trigger_phrase))

    def comment(self, text: str) -> None:
        """Create or edit the one status comment on the issue (workflow runs have no issue to comment on),
        or, for a request made in a comment, gitbot's reply to it."""
        trigger = self.job.trigger
        if isinstance(trigger, CommentTrigger):
            body = f"{reply_marker(trigger, self.job.ctx.run_id)}\n{self.safe(text)}"
            try:
                self.reply = self.job.forge.write_reply(trigger, body, self.reply)
            except ForgeError as exc:
                self.job.io.warning(f"could not write the reply: {exc}", title="gitbot")
            return
        if self.plan is None or self.plan.issue is None:
            return
        body = f"{STATUS_MARKER}\n{self.safe(text)}"
        try:
            self.job.forge.upsert_comment(
                self.plan.issue, body, marker=STATUS_MARKER, existing=self.issue_comments
            )
            self.issue_comments = None  # the next edit re-reads, so it finds the comment just made
        except ForgeError as exc:
            self.job.io.warning(f"could not write the status comment: {exc}", title="gitbot")

    def branch_link(self, branch: str | None) -> str:
        return f"[`{branch}`]({self.job.forge.branch_url(branch)})" if branch else ""


def request_costs(repo: Path, run_id: str) -> dict[int, StepCost]:
    """Tokens and cost of each model request, from the run record's `reply` events."""
    from gitbot.llm.usage import Usage
    from gitbot.record import load_events, runs_dir

    costs: dict[int, StepCost] = {}
    try:
        for event in load_events(runs_dir(repo) / run_id):
            if event.get("event") == "reply" and isinstance(event.get("n"), int):
                usage = Usage.from_api(event.get("usage") or {})
                costs[event["n"]] = StepCost(usage.prompt_tokens + usage.output_tokens, event.get("cost_usd"))
    except (OSError, ValueError):
        return {}
    return costs


def stopped_notes(result: RunResult) -> list[str]:
    """Where the secret scanner stopped values on their way to the model or the record (record.py)."""
    stops = result.extra.get("secrets_stopped") or []
    if not stops:
        return []
    shown = "; ".join(md_cell(str(stop)) for stop in stops[:10])
    more = f"; and {len(stops) - 10} more" if len(stops) > 10 else ""
    note = (
        f"The secret scanner replaced secret-like values before they reached the model or the run record: "
        f"{shown}{more}. Check where they came from, and rotate them if they are real."
    )
    return [note]


def restore_hint(run_id: str, ci_run_id: str, terms: Terms) -> str:
    return (
        f"Every step is a checkpoint. {terms.record_place.format(run=ci_run_id)}, then `gitbot checkpoints list "
        f"{run_id}` and `gitbot checkpoints restore {run_id} STEP` put the work tree back as it was after "
        "that step."
    )


def cache_note(result: RunResult) -> str:
    """ ", 85% of the input read from the cache" (nothing when no input was counted)."""
    share = cache_read_share(result)
    return f", {share} read from the cache" if share != "none" else ""


def iteration_of(
    result: RunResult,
    outcome: WorkOutcome,
    *,
    trigger: str | None,
    request: str,
    by: str,
    link: str,
    actions_run: str,
    redact,
    continued: bool = False,
) -> Iteration:
    """One ledger row for a run; `redact` cleans the strings a person or the model wrote, which the
    ledger's encoding would hide from the redaction of the body."""
    u = result.usage
    verification = outcome.verdict.verification if outcome.verdict else None
    checked = verification is not None and verification.after is not None
    if outcome.commit is not None and outcome.pushed_to:
        what = "changed"
    elif result.status is Status.COMPLETED:
        what = "answered" if not result.files_changed else "no change"
    else:
        what = result.status.value
    return Iteration(
        n=0,
        trigger=trigger,
        request=redact(request),
        by=by,
        link=link,
        actions_run=actions_run,
        run_id=result.run_id,
        outcome=what,
        verified=verification.verified if checked else None,
        commit=outcome.commit.sha if outcome.commit is not None and outcome.pushed_to else None,
        cost_usd=result.cost_usd,
        input_tokens=u.input_tokens,
        cache_write_tokens=u.cache_creation_input_tokens,
        cache_read_tokens=u.cache_read_input_tokens,
        output_tokens=u.output_tokens,
        continued=continued,
        summary=redact(result.summary or ""),
    )


def warnings(notes: list[str]) -> str:
    return "".join(f"> [!WARNING]\n> {note}\n\n" for note in notes)
