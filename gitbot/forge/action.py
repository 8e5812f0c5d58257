"""`gitbot action`: one GitHub Actions job, from the event to a pull request with its proof and receipt.

    protect /proc/self/environ → mask secrets → secrets out of os.environ → read inputs and the
    event → decide → check who triggered → build the task → status comment → [checkout credential
    removed: prepare the bot branch → policy, sandbox required → check before, agent, check after →
    commit what the policy allows → scan the diff for secrets → push] → PR created or updated →
    status comment edited → outputs, summary

Nothing reaches the model before the permission check has passed. The agent never holds a
credential: the checkout's token is out of `.git/config`, every secret is out of the process
environment (the API key goes to the SDK client directly), gitbot's process is not dumpable (so no
child can read its original environment in /proc), its commands run in the bubblewrap sandbox unless
the repository's policy says `mode = "off"`, and its tools' output is redacted. What it wrote is
published only after the policy's edit rules and a secret scan; its words are rendered so that
nothing in them can render (see mdsafe.py). Exit codes follow the README: 0 done (or nothing to do,
or a refused trigger), 1 gave up (also: a secret in the change), 2 configuration, 3 infrastructure.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from gitbot import __version__
from gitbot.agent.result import ExitCode, RunResult, Status, exit_code_for
from gitbot.forge import pull_request as prmod
from gitbot.forge.actions_io import ActionsIO
from gitbot.forge.event import (
    ActionsContext,
    ContextError,
    Ignore,
    IssueTrigger,
    WorkflowTrigger,
    decide,
    read_context,
)
from gitbot.forge.github import ForgeError, GitHubRepo, PullData, connect
from gitbot.forge.inputs import ActionInputs, InputError, read_inputs
from gitbot.forge.issue_task import STATUS_MARKER, IssueText, build_issue_task, clean_title, select_comments
from gitbot.forge.leaks import Leak, PublishSecrets, scan_diff
from gitbot.forge.mdsafe import code_span, fenced, md_cell
from gitbot.forge.permissions import check_actors
from gitbot.forge.pr_body import (
    BodyParts,
    StepCost,
    Verification,
    left_out_notes,
    parse_changes,
    receipt_markdown,
    render,
)
from gitbot.receipt import money
from gitbot.secrets import SECRET_ENV_NAMES, SECRET_NAME_HINTS, Secrets
from gitbot.task import Task

CHECK_TIMEOUT_SECONDS = 900.0
COMMENT_SUMMARY_CHARS = 3_000
SANDBOX_OFF_WARNING = (
    "**The agent's commands ran WITHOUT a sandbox**: this repository's policy sets `[sandbox] mode = "
    '"off"`, so they could read and write anything the runner user can and reach the network. Review '
    "this change, and the job's log, with that in mind."
)


class SandboxUnavailable(Exception):
    """The sandbox the action requires does not work on this runner."""


class Refused(Exception):
    """Not an error: gitbot will not act on this trigger (a notice, exit 0)."""


@dataclass
class Plan:
    task: Task
    base: str  # the branch the PR targets
    branch: str  # gitbot's branch
    title: str  # the PR title and commit subject
    start_sha: str | None = None  # the commit to start from (a failed run's head); None: the base's tip
    fetch_also: str | None = None  # the branch holding start_sha, when it is not the base
    issue: int | None = None
    context_line: str = ""


@dataclass
class Verdict:
    verification: Verification
    tests_modified: list[str] = field(default_factory=list)


def run_action(environ: dict[str, str] | None = None, *, stdout: TextIO | None = None) -> int:
    from gitbot.sandbox import protect_process_environ

    # The runner started this process with the key and the token in its environment, and
    # /proc/<pid>/environ keeps showing that original block whatever os.environ becomes: a
    # non-dumpable process's /proc files are readable by root only, not by its children.
    protect_process_environ()
    environ = dict(os.environ if environ is None else environ)
    secrets = known_secrets(environ)
    io = ActionsIO(secrets, stdout=stdout, environ=environ)
    io.mask_secrets()  # before anything else is printed
    # Nothing gitbot starts (git, the check command, the agent's tools) inherits a secret: they are out
    # of this process's environment for the whole run.
    with secrets_out_of_environment(secrets):
        return _run_action(environ, io, secrets)


def known_secrets(environ: dict[str, str]) -> PublishSecrets:
    """Every secret gitbot can know: secret-named variables, the token and key inputs and any other
    secret-named input (Secrets also covers the base64 form the token takes in an extraheader)."""
    secrets = PublishSecrets.from_environment(environ)
    secrets.add(environ.get("INPUT_GITHUB-TOKEN", "").strip())
    secrets.add(environ.get("INPUT_ANTHROPIC-API-KEY", "").strip())
    for name, value in environ.items():
        if name.upper().startswith("INPUT_") and _secret_name(name.replace("-", "_")):
            secrets.add(value.strip())
    return secrets


def _secret_name(name: str) -> bool:
    upper = name.upper()
    return upper in SECRET_ENV_NAMES or any(hint in upper for hint in SECRET_NAME_HINTS)


@contextmanager
def secrets_out_of_environment(secrets: Secrets) -> Iterator[None]:
    """No secret stays in this process's environment while inside, whatever a child process inherits."""
    removed = {}
    for name, value in list(os.environ.items()):
        if _secret_name(name) or value in secrets.values or name.upper().startswith("INPUT_"):
            removed[name] = os.environ.pop(name)
    try:
        yield
    finally:
        os.environ.update(removed)


def _run_action(environ: dict[str, str], io: ActionsIO, secrets: PublishSecrets) -> int:
    try:
        inputs = read_inputs(environ)
        ctx = read_context(environ)
    except (InputError, ContextError) as exc:
        problems = exc.problems if isinstance(exc, InputError) else [str(exc)]
        for problem in problems:
            io.error(problem, title="gitbot: configuration")
        io.set_outputs(_outputs("error"))
        return ExitCode.CONFIG

    decision = decide(ctx, label=inputs.label)
    if isinstance(decision, Ignore):
        io.notice(f"gitbot has nothing to do: {decision.reason}", title="gitbot")
        io.write_summary(f"## gitbot: nothing to do\n\n{md_cell(decision.reason)}\n")
        io.set_outputs(_outputs("skipped"))
        return ExitCode.OK

    try:
        forge = GitHubRepo(connect(inputs.github_token, ctx.api_url), ctx.repository)
        verdict = check_actors(decision.actors, allowed_bots=inputs.allowed_bots, lookup=forge.permission)
    except ForgeError as exc:
        io.error(f"cannot check who triggered gitbot: {exc}", title="gitbot: GitHub API")
        io.set_outputs(_outputs("error"))
        return ExitCode.INFRA
    if not verdict:
        io.notice(f"gitbot will not run: {verdict.reason}", title="gitbot: trigger refused")
        io.write_summary(f"## gitbot: trigger refused\n\n{md_cell(verdict.reason)}. No model was called.\n")
        io.set_outputs(_outputs("refused"))
        return ExitCode.OK
    io.info(f"gitbot {__version__}: {verdict.reason}")
    return ActionRun(io, inputs, ctx, forge, decision, secrets).execute()


def _outputs(
    status: str, *, pr: PullData | None = None, verified: bool = False, result: RunResult | None = None
) -> dict[str, str]:
    cost = result.cost_usd if result is not None else 0.0
    return {
        "status": status,
        "pr-url": pr.html_url if pr else "",
        "pr-number": str(pr.number) if pr else "",
        "verified": "true" if verified else "false",
        "cost-usd": "" if cost is None else f"{cost:.4f}",
        "run-id": result.run_id if result is not None else "",
    }


class ActionRun:
    def __init__(
        self,
        io: ActionsIO,
        inputs: ActionInputs,
        ctx: ActionsContext,
        forge: GitHubRepo,
        trigger: IssueTrigger | WorkflowTrigger,
        secrets: Secrets,
    ):
        self.io, self.inputs, self.ctx, self.forge = io, inputs, ctx, forge
        self.trigger, self.secrets = trigger, secrets
        self.repo = ctx.workspace.resolve()
        self.auth = prmod.auth_env(inputs.github_token, ctx.server_url)
        self.issue_comments: list[Any] | None = None
        self.plan: Plan | None = None
        self.sandbox_off = False  # the repository's policy turned the sandbox off: said loudly everywhere

    # ---------------------------------------------------------------- the whole job

    def execute(self) -> int:
        from gitbot.checks import CheckCommandError
        from gitbot.errors import ConfigError

        try:
            self.plan = self.make_plan()
        except Refused as exc:
            self.io.notice(f"gitbot will not run: {exc}", title="gitbot")
            self.io.write_summary(f"## gitbot: not run\n\n{md_cell(str(exc))}\n")
            self.io.set_outputs(_outputs("refused"))
            return ExitCode.OK
        except ForgeError as exc:
            return self.fail(f"reading the task from GitHub failed: {exc}", ExitCode.INFRA)
        self.comment(
            f"🤖 gitbot is working on this issue. Follow along in the [workflow run]({self.ctx.run_url}); "
            "this comment will say how it went."
        )
        try:
            return self.work()
        except prmod.BranchNotOurs as exc:
            return self.fail(str(exc), ExitCode.GAVE_UP)
        except SandboxUnavailable as exc:
            return self.fail(str(exc), ExitCode.CONFIG)
        except (ConfigError, CheckCommandError) as exc:
            return self.fail(f"configuration: {exc}", ExitCode.CONFIG)
        except (ForgeError, prmod.GitError) as exc:
            return self.fail(str(exc), ExitCode.INFRA)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the issue and the log must say so
            import traceback

            self.io.untrusted(traceback.format_exc(), heading="gitbot crashed:")
            return self.fail(f"internal error: {type(exc).__name__}: {exc}", ExitCode.INFRA)

    def make_plan(self) -> Plan:
        t = self.trigger
        check = self.inputs.check_command
        if isinstance(t, IssueTrigger):
            if t.snapshot is not None:
                author = (t.snapshot.get("user") or {}).get("login", "")
                issue = IssueText(
                    t.number, t.snapshot.get("title") or "", t.snapshot.get("body") or "", author
                )
                # The payload's issue snapshot was taken when this run's label was added: no label event
                # after it is this run's (a queued run must not take a later labelling's time).
                snapshot_time = _parse_time(t.snapshot.get("updated_at"))
                approved_at = (
                    self.forge.label_added_at(
                        t.number, t.label or "", t.sender.login, not_after=snapshot_time
                    )
                    or snapshot_time
                )
            else:
                data = self.forge.issue(t.number)
                if data.is_pull_request:
                    raise Refused(f"#{t.number} is a pull request; gitbot fixes issues")
                if data.state != "open":
                    raise Refused(f"issue #{t.number} is closed")
                issue = IssueText(data.number, data.title, data.body, data.author)
                approved_at = dt.datetime.now(dt.UTC)
            self.issue_comments = self.forge.comments(t.number)
            task = build_issue_task(
                issue,
                select_comments(self.issue_comments, approved_at),
                repository=self.ctx.repository,
                check_command=check,
            )
            how = (
                f"after `{md_cell(t.sender.login)}` added the `{md_cell(t.label)}` label"
                if t.label
                else f"started by `{md_cell(t.sender.login)}`"
            )
            return Plan(
                task=self._redacted(task),
                base=self.inputs.base_branch or self.forge.default_branch,
                branch=t.branch,
                title=f"Fix #{t.number}: {clean_title(issue.title, 80)}",
                issue=t.number,
                context_line=f"gitbot worked on #{t.number} {how}.",
            )
        from gitbot.forge.workflow import build_workflow_task, collect_failures

        try:
            prmod.validate_branch(t.head_branch)
        except prmod.GitError as exc:
            raise Refused(str(exc)) from None
        jobs, notes = collect_failures(self.forge, t.run_id)
        task = build_workflow_task(
            workflow=t.name,
            branch=t.head_branch,
            sha=t.head_sha,
            run_url=t.html_url,
            jobs=jobs,
            notes=notes,
            check_command=check,
        )
        base = self.inputs.base_branch or t.head_branch
        return Plan(
            task=self._redacted(task),
            base=base,
            branch=t.branch,
            title=clean_title(f"Fix failing {t.name} on {t.head_branch}", 80),
            start_sha=t.head_sha,
            fetch_also=t.head_branch if t.head_branch != base else None,
            context_line=f"gitbot worked on the failure of the workflow run [{md_cell(t.name)}]"
            f"({t.html_url}) on `{md_cell(t.head_branch)}`.",
        )

    def _redacted(self, task: Task) -> Task:
        return Task(
            text=self.secrets.redact(task.text),
            source=task.source,
            title=self.secrets.redact(task.title),
            check_command=task.check_command,
        )

    def work(self) -> int:
        # Every git command that talks to origin runs with the checkout's credential out of .git/config,
        # so exactly one Authorization header (gitbot's, for that command) is ever sent.
        with prmod.checkout_credential_removed(self.repo):
            return self._work()

    def _work(self) -> int:
        from gitbot.agent.run import RunOptions, run_task, with_limits
        from gitbot.llm.providers import make_provider
        from gitbot.policy import load_policy

        plan = self.plan
        assert plan is not None
        base_tip = prmod.fetch(self.repo, plan.base, auth=self.auth)
        if base_tip is None:
            raise prmod.GitError(f"origin has no branch {plan.base!r} to start from")
        if plan.fetch_also:
            prmod.fetch(self.repo, plan.fetch_also, auth=self.auth)
        start = plan.start_sha or base_tip
        existing_tip = prmod.fetch(self.repo, plan.branch, auth=self.auth)
        if existing_tip:
            foreign = prmod.foreign_commits(self.repo, existing_tip, base_tip)
            if foreign:
                raise prmod.BranchNotOurs(
                    f"the branch {plan.branch} has {len(foreign)} commit(s) gitbot did not make (the newest "
                    f"is {foreign[0][:12]}); gitbot does not overwrite other people's work. Merge or delete "
                    "the branch, then add the label again."
                )
        prmod.start_branch(self.repo, plan.branch, start)

        # The policy as the starting commit has it: nothing the agent writes can loosen it.
        policy_file = Path(self.inputs.policy) if self.inputs.policy else None
        policy = load_policy(self.repo, policy_file, base_ref=start)
        policy = with_limits(policy, max_steps=self.inputs.max_steps, max_cost_usd=self.inputs.max_cost_usd)
        policy = self._sandboxed(policy)
        # The key goes to the client and nowhere else: never into os.environ, where child processes
        # (git, the check command) would inherit it. Cloud credentials are read from the job's environment
        # as it was when gitbot started (they are out of os.environ too).
        key = {"anthropic": self.inputs.anthropic_api_key, "openai": self.inputs.openai_api_key}
        provider = make_provider(self.inputs.model, provider=self.inputs.provider, base_url=self.inputs.base_url,
                                 settings=policy.model, api_key=key.get(self.inputs.provider) or None,
                                 environ=self.io.environ)
        open_pr = self.forge.open_pull(plan.branch)

        from gitbot.checks.sandboxed import CheckSandbox

        # The check runs where the agent's commands run: sandboxed, allow-listed environment. After the
        # agent it executes code the agent wrote, so it must never see the tokens.
        self._checks = CheckSandbox(policy, self.repo)
        with self.io.commands_stopped():
            before = self._check("before the agent")
            result = run_task(
                plan.task,
                self.repo,
                policy=policy,
                options=RunOptions(model=provider.model),
                provider=provider,
                secrets=self.secrets,
                reporter=_Reporter(self.io),
            )
            after = self._check("after the agent") if before is not None and result.files_changed else None
        verdict = self._verdict(result, before, after)
        commit = None
        left_out: list[prmod.LeftOut] = []
        if result.files_changed:
            # The run's policy judges every changed path again: the agent's commands can write files its
            # file tools could not.
            keep, left_out = prmod.partition_changes(result.files_changed, policy.check_edit)
            commit = prmod.commit_changes(
                self.repo,
                keep,
                subject=plan.title,
                body=self._commit_body(),
                run_id=result.run_id,
                model=result.model,
            )
        if commit is not None:
            leaks = scan_diff(prmod.added_text(self.repo, f"{commit.sha}^", commit.sha), self.secrets)
            if leaks:
                return self.refuse_leaks(result, leaks)
        pushed_to = None
        if commit is not None:
            pushed_to, lease = plan.branch, existing_tip
            if result.status is not Status.COMPLETED and open_pr is not None:
                # A failed attempt must not replace the open PR's content: it goes next to it.
                pushed_to, lease = f"{plan.branch}-attempt-{result.run_id}", None
            prmod.push(self.repo, pushed_to, commit.sha, expected_tip=lease, auth=self.auth)
        if result.max_cost_usd is None:
            result.max_cost_usd = policy.limits.max_cost_usd
        # The receipt (job summary, comments) shows these keys when present.
        result.extra["verified"] = verdict.verification.verified
        if before is not None:
            result.extra.update(
                check_command=before.command,
                check_exit_before=_exit(before),
                check_exit_after=_exit(after) if after is not None else "not run",
            )
        if verdict.tests_modified:
            result.extra["tests_modified"] = ", ".join(verdict.tests_modified)
        self.io.untrusted(result.summary or "(no summary)", heading="The model's summary of its work:")
        diff_base = base_tip if plan.start_sha is None else start
        return self.report(result, verdict, commit, pushed_to, diff_base, left_out)

    def _sandboxed(self, policy):
        """The run's policy with sandbox mode "required", unless the repository's policy turns the sandbox
        off explicitly (then every report says so loudly). "auto" would run the agent's commands without a
        sandbox, with network, wherever bubblewrap does not work — on GitHub's Ubuntu 24.04 runners unless
        action.yml's sandbox setup step ran."""
        from gitbot import sandbox

        if policy.sandbox_mode == "off":
            self.sandbox_off = True
            self.io.warning(
                'the policy sets [sandbox] mode = "off": the agent\'s commands run without a sandbox',
                title="gitbot: no sandbox",
            )
            return policy
        policy = dataclasses.replace(policy, sandbox_mode="required")
        status = sandbox.probe()
        if not status.available:
            raise SandboxUnavailable(
                f"gitbot runs the agent's commands only inside the bubblewrap sandbox, and {status.description}. "
                "Leave the action's `sandbox-setup` input at `true` (it installs bubblewrap and lifts Ubuntu "
                "24.04's AppArmor restriction on unprivileged user namespaces), install bubblewrap on the "
                'runner yourself, or set `[sandbox] mode = "off"` in the repository\'s policy to run them '
                "without a sandbox. No model was called."
            )
        return policy

    # ---------------------------------------------------------------- pieces of work

    def _check(self, when: str):
        if not self.inputs.check_command:
            return None
        run = self._checks.run(self.inputs.check_command, CHECK_TIMEOUT_SECONDS)
        self.io.info(f"check {when}: {run.describe()}")
        return run

    def _verdict(self, result: RunResult, before, after) -> Verdict:
        from gitbot.verify import is_test_or_check_config

        tests_modified = [p for p in result.files_changed if is_test_or_check_config(p)]
        command = self.inputs.check_command
        workflow = isinstance(self.trigger, WorkflowTrigger)
        before_text = before.describe() if before else None
        after_text = after.describe() if after else None
        if result.status is not Status.COMPLETED:
            why = f"the agent stopped before finishing ({result.status.value})."
            v = Verification(command, before_text, None, False, why)
        elif not result.files_changed:
            v = Verification(command, before_text, None, False, "no file was changed.")
        elif before is None:
            why = (
                "no `check-command` input was given, so gitbot could not re-run the failing workflow "
                "here; the workflow's own run on this branch will tell."
                if workflow
                else "no `check-command` input was given, so nothing was re-run: review the change carefully."
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

    def _commit_body(self) -> str:
        """gitbot's own words only: the model's could close other issues on merge (`fixes #12`) or add
        trailers (`Co-authored-by:`, `Signed-off-by:`). The subject is the cleaned title."""
        if self.plan.issue:
            what = f"gitbot's change for issue #{self.plan.issue}"
        else:
            what = f"gitbot's change for the failed workflow run {self.trigger.html_url}"
        return (
            f"{what}, made by an AI agent in workflow run {self.ctx.run_url}. The pull request has the "
            "agent's summary, the verification and the cost."
        )

    # ---------------------------------------------------------------- telling people

    def report(
        self,
        result: RunResult,
        verdict: Verdict,
        commit,
        pushed_to: str | None,
        diff_base: str,
        left_out: list[prmod.LeftOut],
    ) -> int:
        plan = self.plan
        v = verdict.verification
        notes = []
        if self.sandbox_off:
            notes.append(SANDBOX_OFF_WARNING)
        if verdict.tests_modified:
            files = ", ".join(code_span(p) for p in verdict.tests_modified)
            notes.append(
                f"The agent changed tests or check configuration ({files}): make sure the fix is in the "
                "code, not in the test."
            )
        notes += left_out_notes(left_out)
        pr = None
        status = result.status.value
        receipt = receipt_markdown(result)
        if result.status is Status.COMPLETED and commit is not None:
            changes = parse_changes(prmod.diff_text(self.repo, diff_base, commit.sha))
            draft = self.inputs.draft or not v.verified or bool(verdict.tests_modified) or self.sandbox_off
            body = render(
                BodyParts(
                    result=result,
                    verification=v,
                    changes=changes,
                    version=__version__,
                    closes=plan.issue,
                    footer_links=[f"[workflow run]({self.ctx.run_url})", f"run `{result.run_id}`"],
                    context_line=plan.context_line,
                    request_costs=request_costs(self.repo, result.run_id),
                    restore_hint=restore_hint(result.run_id, self.ctx.run_id),
                    notes=notes,
                    workflow_token=self.inputs.workflow_token,
                )
            )
            try:
                pr, created = prmod.open_or_update_pull(
                    self.forge,
                    branch=pushed_to,
                    base=plan.base,
                    title=self.secrets.redact(plan.title),
                    body=self.secrets.redact(body),
                    draft=draft,
                )
            except ForgeError as exc:
                self.io.error(str(exc), title="gitbot: pull request")
                self.comment(
                    f"⚠️ gitbot made a change but could not open the pull request: {md_cell(str(exc))}\n\n"
                    f"The change is on the branch {self._branch_link(pushed_to)}.\n\n"
                    f"{receipt}"
                )
                self.io.set_outputs(_outputs("error", verified=v.verified, result=result))
                return ExitCode.INFRA
            kind = "draft pull request" if pr.draft else "pull request"
            headline = f"{'opened' if created else 'updated'} {kind} [#{pr.number}]({pr.html_url})"
            proof = (
                f"✅ verified: {code_span(v.command or '')} {v.before} before the change, {v.after} after it."
                if v.verified
                else f"⚠️ not verified: {v.reason}"
            )
            self.comment(
                f"✅ gitbot {headline}.\n\n{proof}\n\n{_warnings(notes)}Cost: {money(result.cost_usd)} for "
                f"{result.steps} model request(s) · [workflow run]({self.ctx.run_url})"
            )
            exit_code = ExitCode.OK
        else:
            if result.status is Status.COMPLETED:
                status = "no_changes"
                headline = "finished without changing any file"
                if left_out:
                    headline = "finished without a change it may push"
            else:
                headline = f"stopped: {result.status.value.replace('_', ' ')}"
            where = (
                f"The work so far is on the branch {self._branch_link(pushed_to)}, so a person can continue "
                "from it."
                if pushed_to
                else "No change was pushed."
            )
            summary = fenced(self.secrets.redact(result.summary or "(none)")[:COMMENT_SUMMARY_CHARS])
            self.comment(
                f"❌ gitbot {headline}. {where}\n\n{_warnings(notes)}The model's last words (its own, "
                f"unchecked):\n\n{summary}\n\n{receipt}\n\n[workflow run]({self.ctx.run_url})"
            )
            self.io.error(f"gitbot {headline}. {where}", title="gitbot")
            exit_code = (
                ExitCode.GAVE_UP if result.status is Status.COMPLETED else exit_code_for(result.status)
            )
        verification = "✅ verified" if v.verified else f"⚠️ not verified — {v.reason}"
        self.io.write_summary(
            f"## gitbot {headline}\n\n{plan.context_line}\n\nVerification: {verification}\n\n"
            f"{_warnings(notes)}{receipt}\n"
        )
        self.io.set_outputs(_outputs(status, pr=pr, verified=v.verified and pr is not None, result=result))
        return exit_code

    def refuse_leaks(self, result: RunResult, leaks: list[Leak]) -> int:
        """The change holds something that looks like a secret: nothing is pushed, and nobody is shown it."""
        where = ", ".join(f"{code_span(leak.path)} ({leak.kind})" for leak in leaks[:10])
        more = f" and {len(leaks) - 10} more" if len(leaks) > 10 else ""
        message = (
            f"gitbot did not push its change: the diff adds what looks like a secret in {where}{more}. "
            "Nothing was pushed and no pull request was opened; the value is not shown anywhere. Check "
            "whether a credential reached the repository's files, and rotate it if it is real."
        )
        self.io.error(
            "the change contains a secret-like value; nothing was pushed",
            title="gitbot: secret in the change",
        )
        self.comment(f"⛔ {message}\n\n{receipt_markdown(result)}\n\n[workflow run]({self.ctx.run_url})")
        self.io.write_summary(f"## gitbot refused to push\n\n{message}\n\n{receipt_markdown(result)}\n")
        self.io.set_outputs(_outputs("secret_found", result=result))
        return ExitCode.GAVE_UP

    def comment(self, text: str) -> None:
        """Create or edit the one status comment on the issue (workflow runs have no issue to comment on)."""
        if self.plan is None or self.plan.issue is None:
            return
        body = f"{STATUS_MARKER}\n{self.secrets.redact(text)}"
        try:
            self.forge.upsert_comment(
                self.plan.issue, body, marker=STATUS_MARKER, existing=self.issue_comments
            )
            self.issue_comments = None  # the next edit re-reads, so it finds the comment just made
        except ForgeError as exc:
            self.io.warning(f"could not write the status comment: {exc}", title="gitbot")

    def fail(self, message: str, code: int) -> int:
        self.io.error(message, title="gitbot")
        self.comment(f"⚠️ gitbot could not finish: {md_cell(message)}\n\n[workflow run]({self.ctx.run_url})")
        self.io.write_summary(f"## gitbot could not finish\n\n{md_cell(message)}\n")
        self.io.set_outputs(_outputs("error"))
        return code

    def _branch_link(self, branch: str | None) -> str:
        return f"[`{branch}`]({self.ctx.server_url}/{self.ctx.repository}/tree/{branch})" if branch else ""


class _Reporter:
    """One log line per tool call; printed inside the stop-commands block, so nothing in it is obeyed."""

    def __init__(self, io: ActionsIO):
        self.io = io

    def waiting(self, request: int) -> None: ...

    def done_waiting(self) -> None: ...

    def tool(self, step: int, name: str, target: str, outcome: str, cost: float | None) -> None:
        self.io.info(f"step {step:>3}  {name:<24} {target[:70]:<70} {outcome:<8} total {money(cost)}")

    def note(self, text: str) -> None:
        self.io.info(text)


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


def restore_hint(run_id: str, actions_run_id: str) -> str:
    return (
        f"Every step is a checkpoint. The run record is in this workflow run's `gitbot-run-{actions_run_id}` "
        "artifact: unpack it into `.git/gitbot/` of a clone of this branch, then `gitbot checkpoints list "
        f"{run_id}` and `gitbot checkpoints restore {run_id} STEP` put the work tree back as it was after "
        "that step."
    )


def _exit(run) -> int | str | None:
    return "timeout" if run.timed_out else run.exit_code


def _warnings(notes: list[str]) -> str:
    return "".join(f"> [!WARNING]\n> {note}\n\n" for note in notes)


def _parse_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        return None
