"""The fix-check flow: run the check; if it fails, confirm, fix, and verify by running it again.


The check is the success signal, not the agent's opinion: `verified` is true only when the check,
re-run after the agent stopped, exits 0 and the agent changed something. The re-runs go through
`gitbot.sandbox.runner.Runner`: the same sandbox and allow-listed environment as the
agent's own commands, so the check never sees the API key or tokens, and the code the agent wrote
runs no more privileged in the verification than it did in the agent's hands. Shared by `gitbot
fix-check` and `gitbot hook run`; heavy modules (the agent, the SDK) are imported only once a
check has really failed.

Outcomes:
  fixed                   the re-run passes and the work tree changed   → verified, exit 0
  not_fixed               the re-run still fails                        → exit 1 (3 if the run itself broke)
  passed_without_changes  the re-run passes, nothing changed: flaky?    → exit 1, not a fix
  flaky                   failed, then passed on a confirmation re-run  → exit 1, no model call
  environment_differs     failed in the user's environment (hook), passes in the agent's → exit 1
  cannot_fix              no API key, bad policy, merge/rebase underway,
                          the repository is locked by another run, the
                          check's program or own tool is missing        → exit 2, no model call
  check_passed            passed on its first run, nothing to do        → exit 0, no model call
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitbot import git
from gitbot.errors import ConfigError, ExitCode, GitError, NotAGitRepository
from gitbot.fixcheck.outcome import FixOutcome, FixRequest
from gitbot.sandbox.command import CannotStart, CommandRun
from gitbot.sandbox.runner import SandboxRefused

# A passing check (the common case, a CI step) imports nothing of what a fix needs: the checkpoints,
# the output parsers, the tampering checks and the agent come in only once a check has failed.


def load_check_policy(repo: Path, policy_file: Path | None):
    """The run's policy (ConfigError when the file is bad): it says how the check runs, too."""
    from gitbot.policy import load_policy
    from gitbot.sandbox.crashnote import recover_after_crash

    recover_after_crash(repo)  # what a command of a gitbot that died mid-command left is not the policy
    return load_policy(repo, policy_file)


def fix_failing_check(request: FixRequest, first: CommandRun, *, provider=None, reporter=None, policy=None,
                      runner=None) -> FixOutcome:
    """`runner`: how the check runs, the same way as the agent's commands (built from `policy`, or from
    the policy file, when not given)."""
    repo = request.repo
    say = request.progress or (lambda text: None)
    from gitbot.checkpoints import CheckpointError
    from gitbot.checks import build_task, parse_output
    from gitbot.fixcheck import changes as run_changes
    from gitbot.fixcheck.tampering import (
        SUPPRESSIONS_WARNING,
        TESTS_MODIFIED_WARNING,
        listed,
        modified_check_inputs,
        suppressions_added,
    )
    from gitbot.sandbox.runner import Runner

    def cannot(message: str, **more) -> FixOutcome:
        return FixOutcome("cannot_fix", 2, message, first,
                          check_environment=runner.description if runner is not None else "", **more)

    try:
        in_progress = git.operation_in_progress(repo)
        if in_progress:
            return cannot(f"not fixing: {in_progress}")
        if policy is None:
            policy = load_check_policy(repo, request.policy_file)
        if runner is None:
            runner = Runner(policy, repo)
    except (ConfigError, GitError) as exc:
        return cannot(str(exc))

    def run_check_again() -> CommandRun:
        return runner.run_check(request.command, request.timeout, echo=request.echo, display=request.display)

    # A missing program, tool or interpreter is no task for the model: stop before the first request.
    problem = runner.environment_problem(request.command, first)
    if problem is not None:
        return cannot(problem)

    latest, confirm = first, None
    if request.confirm_failure and not first.timed_out:
        # Paying the model to "fix" a flaky check is the costliest mistake here; one re-run rules it out.
        say("re-running the check once to rule out a flaky failure")
        try:
            confirm = run_check_again()
        except (CannotStart, SandboxRefused) as exc:
            return cannot(f"cannot re-run the check: {exc}")
        problem = runner.environment_problem(request.command, confirm)
        if problem is not None:
            return cannot(problem, confirm=confirm)
        if confirm.passed:
            if request.first_run_in_user_environment:
                return FixOutcome("environment_differs", 1,
                                  f"the check failed in your environment but passes in the one the agent's "
                                  f"commands run in ({runner.description}); not asking the model to fix it. "
                                  f"Compare the two (PATH, virtual environment, network, variables), or it "
                                  f"is flaky", first, confirm=confirm, check_environment=runner.description)
            return FixOutcome("flaky", 1, "flaky check: it failed, then passed when re-run with no change; "
                              "not asking the model to fix it", first, confirm=confirm,
                              check_environment=runner.description)
        latest = confirm

    parsed = parse_output(latest.output, repo)
    task = build_task(request.display, latest, root=repo, parsed=parsed, source=request.source)
    task = _redacted(task)
    first_failure = parsed.failures[0].name if parsed.failures else ""
    first_failure_path = (parsed.failures[0].path or "") if parsed.failures else ""
    about = {"confirm": confirm, "task_title": task.title, "first_failure": first_failure,
             "first_failure_path": first_failure_path}

    from gitbot.agent.prepare import prepare_run
    from gitbot.agent.run import run_task

    try:
        run = prepare_run(repo, policy=policy, model=request.model, replay=request.replay, provider=provider,
                          provider_name=request.provider, base_url=request.base_url, max_steps=request.max_steps, max_cost_usd=request.max_cost_usd,
                          min_command_timeout=request.timeout)
    except ConfigError as exc:
        return cannot(str(exc), **about)

    say(f"asking the agent ({run.provider.model}) to fix it")
    try:
        result = run_task(task, run.repo, policy=run.policy, options=run.options, provider=run.provider,
                          reporter=reporter)
    except ConfigError as exc:
        return cannot(str(exc), **about)
    except (CheckpointError, GitError) as exc:  # another run holds the repository, a git failure
        return cannot(f"the agent could not start: {exc}", **about)

    try:
        changes = run_changes.RunChanges(repo, result.run_id)
        changed, patch = changes.paths(), changes.patch()
    except (CheckpointError, GitError) as exc:
        # The checkpoints cannot be read: the run's own account of its changes is all there is.
        changes, patch = None, b""
        changed = [p for p in result.files_changed if not run_changes.is_cache_path(p)]
        result.warnings.append(f"could not read the run's checkpoints ({exc}); --commit is not possible")
    say("re-running the check to verify")
    try:
        after = run_check_again()
    except (CannotStart, SandboxRefused) as exc:
        fix = cannot(f"cannot re-run the check to verify: {exc}", result=result, changed=changed, **about)
        result.extra.update(fix.fields())
        return fix
    tests_modified = modified_check_inputs(changes, changed, request.command, repo=repo)
    suppressions = suppressions_added(patch)

    from gitbot.agent.result import Status

    if after.passed and changed:
        outcome, code, message = "fixed", 0, f"`{request.display}` passes after the fix"
    elif after.passed:
        outcome, code = "passed_without_changes", 1
        message = (f"`{request.display}` passed without changes — flaky? The agent changed nothing, so this "
                   "is not a fix")
    else:
        outcome = "not_fixed"
        code = 3 if result.status is Status.ERROR else 1
        message = (f"not verified: `{request.display}` still fails after the agent stopped "
                   f"({after.describe()})")
    fix = FixOutcome(outcome, code, message, first, after=after, result=result, changed=changed,
                     tests_modified=tests_modified, suppressions_added=suppressions, patch=patch,
                     check_environment=runner.description, **about)
    result.files_changed = changed  # what the checkpoints saw, including what the agent's commands changed
    if suppressions:
        result.warnings.insert(0, SUPPRESSIONS_WARNING.format(items=listed(suppressions)))
    if tests_modified:
        result.warnings.insert(0, TESTS_MODIFIED_WARNING.format(files=", ".join(tests_modified)))
    result.extra.update(fix.fields())
    return fix


def _redacted(task):
    """Check output can echo the environment; secret values known to gitbot never reach the model."""
    import dataclasses

    from gitbot.secrets import Secrets

    return dataclasses.replace(task, text=Secrets.from_environment().redact(task.text))


@dataclass
class FlowOutcome:
    exit_code: int
    run_id: str | None = None  # set when the agent ran (for `gitbot checkpoints`)
    fix: Any = None  # the verify.FixOutcome, when the check ran


def fix_check_flow(repo: Path, command: list[str] | str, *, model: str | None = None,
                   provider: str | None = None, base_url: str | None = None, max_cost: float | None = None, max_steps: int | None = None,
                   policy_file: Path | None = None, replay: Path | None = None,
                   timeout: float | None = None, commit: bool = False, confirm: bool = True,
                   json_output: bool = False, progress_label: str = "") -> FlowOutcome:
    """All of `gitbot fix-check`, reporting on stderr (and stdout with json_output); the demo uses it too."""
    try:
        return _flow(repo, command, model=model, provider=provider, base_url=base_url, max_cost=max_cost,
                     max_steps=max_steps, policy_file=policy_file, replay=replay, timeout=timeout, commit=commit,
                     confirm=confirm, json_output=json_output, progress_label=progress_label)
    except Exception as exc:
        if not isinstance(exc, GitError) and not _is_checkpoint_error(exc):
            raise
        # Another run holds the repository, or git refused something: say so, no traceback.
        return FlowOutcome(config_error(f"cannot continue: {exc}"))


def _is_checkpoint_error(exc: BaseException) -> bool:
    # Only a run that got as far as the checkpoints can raise one: never import them to find out.
    errors = sys.modules.get("gitbot.checkpoints.errors")
    return errors is not None and isinstance(exc, errors.CheckpointError)


def _flow(repo, command, *, model, provider, base_url, max_cost, max_steps, policy_file, replay, timeout, commit,
          confirm, json_output, progress_label) -> FlowOutcome:
    from gitbot.sandbox.command import DEFAULT_TIMEOUT_SECONDS, display_command
    from gitbot.sandbox.runner import Runner

    timeout = timeout if timeout is not None else DEFAULT_TIMEOUT_SECONDS
    try:
        repo, in_progress = git.root_and_operation(repo)
    except NotAGitRepository as exc:
        return FlowOutcome(config_error(str(exc)))
    if in_progress:
        return FlowOutcome(config_error(f"refusing to run: {in_progress}"))

    # The check runs as the agent's commands do (the policy's sandbox, an allow-listed environment),
    # every time: before, on the confirmation re-run and for the verification.
    try:
        policy = load_check_policy(repo, policy_file)
    except ConfigError as exc:
        return FlowOutcome(config_error(str(exc)))
    runner = Runner(policy, repo)
    display = display_command(command)
    echo = sys.stderr  # the check's own output, live, as in any CI log
    print(f"gitbot: running `{display}` in {repo} ({runner.description})", file=sys.stderr)
    try:
        first = runner.run_check(command, timeout, echo=echo)
    except (CannotStart, SandboxRefused) as exc:
        return FlowOutcome(config_error(str(exc)))

    if first.passed:
        fix = FixOutcome("check_passed", ExitCode.OK,
                         f"`{display}` passes ({first.describe()}): nothing to fix", first,
                         check_environment=runner.description)
        print(f"gitbot: {fix.message}", file=sys.stderr)
    else:
        print(f"gitbot: `{display}` {first.describe()}", file=sys.stderr)
        from gitbot.progress import ConsoleReporter

        request = FixRequest(repo=repo, command=command, display=display, timeout=timeout, model=model,
                             provider=provider, base_url=base_url, max_cost_usd=max_cost, max_steps=max_steps, policy_file=policy_file,
                             replay=replay, confirm_failure=confirm, echo=echo,
                             progress=lambda text: print(f"gitbot: {text}", file=sys.stderr))
        from gitbot.fixcheck.gate import ignored_untracked

        ignored_before = ignored_untracked(repo) if commit else frozenset()
        fix = fix_failing_check(request, first, reporter=ConsoleReporter(label=progress_label), policy=policy,
                                runner=runner)
        if commit and fix.outcome == "fixed":
            from gitbot.fixcheck.commit import commit_fix

            if not commit_fix(repo, fix, runner, command, timeout, ignored_before=ignored_before):
                fix.exit_code = ExitCode.GAVE_UP if fix.exit_code == ExitCode.OK else fix.exit_code
        elif commit and fix.result is not None:
            print("gitbot: not committing: the fix is not verified", file=sys.stderr)
        from gitbot.fixcheck.report import print_report

        print_report(fix)
    _write_step_summary(fix)
    if json_output:
        print(json.dumps(fix.to_dict(), ensure_ascii=False, default=str))
    return FlowOutcome(fix.exit_code, run_id=fix.result.run_id if fix.result is not None else None, fix=fix)


def _write_step_summary(fix) -> None:
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary_path:
        return
    from gitbot.fixcheck.report import markdown_summary

    _append(summary_path, markdown_summary(fix))


def _append(path: str, text: str) -> None:
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        print(f"gitbot: cannot write the job summary to {path}: {exc}", file=sys.stderr)


def config_error(message: str) -> int:
    print(f"gitbot: {message}", file=sys.stderr)
    return ExitCode.CONFIG
