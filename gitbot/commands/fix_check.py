"""`gitbot fix-check [options] -- CMD [ARGS…]`: run a check; if it fails, fix it and prove it by re-running.

The check runs the way the agent's commands run (the policy's sandbox, an allow-listed environment
without API keys or tokens), each time: before, on the confirmation re-run, and for the verification.

Exit codes: 0 the check passes (as it was, or verified after a fix); 1 not fixed, flaky, passed
without changes, or --commit made a commit on which the check fails; 2 bad input (no command,
command not found, no API key, bad policy, a merge or rebase in progress, not a git repository,
another gitbot run holds the repository, a git error); 3 the run itself failed (provider,
interruption).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitbot.agent.result import ExitCode


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "fix-check", help="run a check command; if it fails, let the agent fix it and verify by re-running",
        description="Run CMD in the repository. If it fails, the agent fixes the code, and CMD is run "
                    "again: the fix is verified only if CMD then exits 0. Changes are left in the work tree, "
                    "unstaged.")
    from gitbot.commands.run import add_run_options

    add_run_options(p)
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="seconds a single run of the check may take (default: 600)")
    p.add_argument("--commit", action="store_true",
                   help="commit a verified fix on a new branch gitbot/fix-<name> (your branch, index and work "
                        "tree untouched), then re-run the check on that commit alone; exit 1 if it fails there")
    p.add_argument("--no-confirm", dest="confirm", action="store_false",
                   help="do not re-run a failing check once before calling the model (the flakiness guard)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS…]", help="the check command")
    p.set_defaults(func=main)


@dataclass
class FlowOutcome:
    exit_code: int
    run_id: str | None = None  # set when the agent ran (for `gitbot checkpoints`)
    fix: Any = None  # the verify.FixOutcome, when the check ran


def main(args) -> int:
    argv = list(args.cmd)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        return _config_error("no check command given: gitbot fix-check [options] -- CMD [ARGS…]")
    if args.timeout is not None and args.timeout <= 0:
        return _config_error("--timeout must be a positive number of seconds")
    outcome = fix_check_flow(args.repo, argv, model=args.model, provider=args.provider, base_url=args.base_url,
                             max_cost=args.max_cost,
                             max_steps=args.max_steps, policy_file=args.policy, replay=args.replay,
                             timeout=args.timeout, commit=args.commit, confirm=args.confirm,
                             json_output=args.json, progress_label="[replay] " if args.replay else "")
    return outcome.exit_code


def fix_check_flow(repo: Path, command: list[str] | str, *, model: str | None = None,
                   provider: str | None = None, base_url: str | None = None, max_cost: float | None = None, max_steps: int | None = None,
                   policy_file: Path | None = None, replay: Path | None = None,
                   timeout: float | None = None, commit: bool = False, confirm: bool = True,
                   json_output: bool = False, progress_label: str = "") -> FlowOutcome:
    """All of `gitbot fix-check`, reporting on stderr (and stdout with json_output); the demo uses it too."""
    from gitbot.checkpoints import CheckpointError, GitCommandError
    from gitbot.checks.worktree import GitError

    try:
        return _flow(repo, command, model=model, provider=provider, base_url=base_url, max_cost=max_cost,
                     max_steps=max_steps, policy_file=policy_file, replay=replay, timeout=timeout, commit=commit,
                     confirm=confirm, json_output=json_output, progress_label=progress_label)
    except (CheckpointError, GitCommandError, GitError) as exc:
        # Another run holds the repository, or git refused something: say so, no traceback.
        return FlowOutcome(_config_error(f"cannot continue: {exc}"))


def _flow(repo, command, *, model, provider, base_url, max_cost, max_steps, policy_file, replay, timeout, commit,
          confirm, json_output, progress_label) -> FlowOutcome:
    from gitbot.checks import DEFAULT_TIMEOUT_SECONDS, CheckCommandError
    from gitbot.checks.runner import display_command
    from gitbot.checks.worktree import NotAGitRepository, operation_in_progress, repo_root

    timeout = timeout if timeout is not None else DEFAULT_TIMEOUT_SECONDS
    try:
        repo = repo_root(Path(repo))
    except NotAGitRepository as exc:
        return FlowOutcome(_config_error(f"{exc} (run it inside a repository or pass --repo)"))
    in_progress = operation_in_progress(repo)
    if in_progress:
        return FlowOutcome(_config_error(f"refusing to run: {in_progress}"))

    from gitbot.checks.sandboxed import CheckSandbox
    from gitbot.errors import ConfigError
    from gitbot.verify import FixOutcome, FixRequest, fix_failing_check, load_check_policy, print_report

    # The check runs as the agent's commands do (the policy's sandbox, an allow-listed environment),
    # every time: before, on the confirmation re-run and for the verification.
    try:
        policy = load_check_policy(repo, policy_file)
    except ConfigError as exc:
        return FlowOutcome(_config_error(str(exc)))
    checks = CheckSandbox(policy, repo)
    display = display_command(command)
    echo = sys.stderr  # the check's own output, live, as in any CI log
    print(f"gitbot: running `{display}` in {repo} ({checks.description})", file=sys.stderr)
    try:
        first = checks.run(command, timeout, echo=echo)
    except CheckCommandError as exc:
        return FlowOutcome(_config_error(str(exc)))

    if first.passed:
        fix = FixOutcome("check_passed", ExitCode.OK,
                         f"`{display}` passes ({first.describe()}): nothing to fix", first,
                         check_environment=checks.description)
        print(f"gitbot: {fix.message}", file=sys.stderr)
    else:
        print(f"gitbot: `{display}` {first.describe()}", file=sys.stderr)
        from gitbot.progress import ConsoleReporter

        request = FixRequest(repo=repo, command=command, display=display, timeout=timeout, model=model,
                             provider=provider, base_url=base_url,
                             max_cost_usd=max_cost, max_steps=max_steps, policy_file=policy_file,
                             replay=replay, confirm_failure=confirm, echo=echo,
                             progress=lambda text: print(f"gitbot: {text}", file=sys.stderr))
        fix = fix_failing_check(request, first, reporter=ConsoleReporter(label=progress_label), policy=policy,
                                checks=checks)
        if commit and fix.outcome == "fixed":
            if not _commit(repo, fix, checks, command, timeout):
                fix.exit_code = ExitCode.GAVE_UP if fix.exit_code == ExitCode.OK else fix.exit_code
        elif commit and fix.result is not None:
            print("gitbot: not committing: the fix is not verified", file=sys.stderr)
        print_report(fix)
    _write_step_summary(fix)
    if json_output:
        print(json.dumps(fix.to_dict(), ensure_ascii=False, default=str))
    return FlowOutcome(fix.exit_code, run_id=fix.result.run_id if fix.result is not None else None, fix=fix)


def _commit(repo: Path, fix, checks, command, timeout: float) -> bool:
    """Commit the agent's change on top of HEAD on a new branch, then re-run the check on a checkout of
    exactly that commit. True only when the commit was made and the check passes on it."""
    from gitbot.checks import CheckCommandError
    from gitbot.checks.worktree import (
        GitError,
        create_branch,
        temporary_worktree,
        tree_with_patch,
        write_commit,
    )
    from gitbot.verify import commit_message, short_name

    extra = fix.result.extra
    extra["commit_verified"] = False
    try:
        if not fix.patch:
            raise GitError("the run's change could not be read from its checkpoints")
        head, tree = tree_with_patch(repo, fix.patch)
        # First a commit object no branch points at, to check out and test; the branch gets the final one.
        trial = write_commit(repo, tree, head, commit_message(fix))
        print("gitbot: re-running the check on a checkout of the commit alone (without your uncommitted "
              "changes)", file=sys.stderr)
        with temporary_worktree(repo, trial) as checkout:
            try:
                run = checks.run(command, timeout, repo=checkout, echo=None)
                verified, how = run.passed, run.describe()
            except CheckCommandError as exc:
                verified, how = False, f"could not run ({exc})"
        commit = write_commit(repo, tree, head, commit_message(fix, verified=verified))
        branch = create_branch(repo, short_name(fix), commit)
    except GitError as exc:
        print(f"gitbot: could not commit the fix: {exc}", file=sys.stderr)
        extra["commit_error"] = str(exc)
        fix.message = extra["message"] = f"{fix.message}; but --commit failed: {exc}"
        return False
    extra.update({"branch": branch, "commit": commit, "commit_verified": verified,
                  "commit_check": how})
    if verified:
        print(f"gitbot: committed the fix as {commit[:12]} on new branch {branch}; the check passes on it "
              f"(your branch, index and work tree are unchanged)", file=sys.stderr)
        return True
    note = (f"the check fails on the commit alone ({how}): the fix needs changes in your work tree that "
            f"the commit does not include (uncommitted or untracked files)")
    extra["commit_message_note"] = f"committed as {commit[:12]} on {branch}, but {note}"
    extra["message"] = f"{fix.message}; but {note}"
    fix.message = extra["message"]
    print(f"gitbot: committed the fix as {commit[:12]} on new branch {branch}, but NOT VERIFIED: {note}",
          file=sys.stderr)
    return False


def _write_step_summary(fix) -> None:
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary_path:
        return
    from gitbot.verify import markdown_summary

    _append(summary_path, markdown_summary(fix))


def _append(path: str, text: str) -> None:
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        print(f"gitbot: cannot write the job summary to {path}: {exc}", file=sys.stderr)


def _config_error(message: str) -> int:
    print(f"gitbot: {message}", file=sys.stderr)
    return ExitCode.CONFIG
