"""The hook at commit or push time: run the configured checks; when one fails, maybe fix it.

Running is on every commit's path, so the fast path (all checks pass) imports only the standard
library pieces it needs; the agent is imported only when a check fails and may be fixed. The hook
never stages anything and never stashes: the checks see the work tree as it is (a warning says so
when tracked files have unstaged changes), and a fix is left unstaged for the user to review. The
checks run as the user configured them, in the user's environment minus gitbot's credentials
(ANTHROPIC_*, GITHUB_TOKEN), git's repository-locating variables (GIT_INDEX_FILE, …) and the
pre-commit framework's private virtualenv; the re-runs around a fix run in the agent's sandbox.
"""

from __future__ import annotations

import os
import sys

from gitbot.hooks.config import (
    CONFIG_RELPATH,
    STATE_DIR,
    ConfigFileError,
    HookError,
    check_stage,
    example_stage_table,
    load_config,
)

TYPE_CHECKING = False  # importing typing for TYPE_CHECKING costs milliseconds on every commit
if TYPE_CHECKING:
    from pathlib import Path

# Imports stay inside functions below: `run_hook` with passing checks must start in tens of ms, so the
# fast path loads only os, sys, the check runner and, when the configuration changed, tomllib.

SHOWN_OUTPUT_CHARS = 6_000  # of a failing check's output, printed when it is not fixed


def find_repo(start: str | os.PathLike | None = None):
    from gitbot.hooks.install import find_repo as find  # off the fast path: pathlib, git

    return find(start)


def _config_cache_dir(root: str) -> str | None:
    """Where the parsed configuration is cached: gitbot's own state directory in .git, when it exists."""
    path = os.path.join(root, ".git", STATE_DIR)
    return path if os.path.isdir(path) else None


def _hook_work_tree() -> str:
    """The work tree a running hook is for. git runs hooks from the work tree's root, so a `.git` here
    answers without starting `git rev-parse` (a few ms on every commit); anything unusual asks git."""
    work_tree = os.environ.get("GIT_WORK_TREE")
    if work_tree:
        return os.path.abspath(work_tree)
    if not os.environ.get("GIT_DIR") and os.path.exists(".git"):
        return os.getcwd()
    return os.fspath(find_repo())


def infer_stage() -> str:
    """Under the pre-commit framework no stage is passed; pre-push exports the refs it pushes."""
    return "pre-push" if os.environ.get("PRE_COMMIT_FROM_REF") or os.environ.get("PRE_COMMIT_REMOTE_NAME") \
        else "pre-commit"


def run_hook(stage: str | None = None, *, checks: list[str] | None = None, fix: bool | None = None,
             repo: Path | None = None, stream=None) -> int:
    stream = stream or sys.stderr
    if os.environ.get("GITBOT_SKIP") == "1":
        print("gitbot: skipped (GITBOT_SKIP=1)", file=stream)
        return 0
    stage = stage or infer_stage()
    try:
        check_stage(stage)
        root = os.fspath(find_repo(repo)) if repo is not None else _hook_work_tree()
        config = load_config(root, cache_dir=_config_cache_dir(root))
    except (HookError, ConfigFileError) as exc:
        print(f"gitbot: {exc}", file=stream)
        return 2
    stage_config = config.stage(stage)
    # Checks from the configuration come already split into arguments; --check ones are split when run.
    commands = list(zip(checks, checks)) if checks else list(zip(stage_config.checks, stage_config.argv))
    allow_fix = stage_config.fix if fix is None else fix
    if not commands:
        if config.exists:
            where = f"{CONFIG_RELPATH} has no [hooks.{stage}] checks"
        else:
            where = f"there is no {CONFIG_RELPATH}"
        print(f"gitbot: nothing to check at {stage}: {where}. Add for example:\n\n"
              f"{example_stage_table(stage)}\n(or pass --check CMD)", file=stream)
        return 0

    from gitbot.sandbox.command import CannotStart, run_check
    from gitbot.sandbox.env import user_check_env

    # Started now, read after the checks: it runs alongside them instead of adding to every commit.
    unstaged = _start_unstaged_probe(root) if stage == "pre-commit" else None
    # The user's own command on the user's own code, as configured: the user's environment, minus
    # gitbot's credentials, git's pointers at the commit in progress and pre-commit's private venv.
    env = user_check_env()
    failed = []
    try:
        for command, argv in commands:
            try:
                run = run_check(argv, root, timeout=stage_config.check_timeout_seconds, display=command, env=env)
            except CannotStart as exc:
                print(f"gitbot: {stage} check `{command}`: {exc}", file=stream)
                return 2
            if not run.passed:
                failed.append((command, run))
    finally:
        _warn_about_unstaged_changes(unstaged, stream)
    if not failed:
        return 0

    for command, run in failed:
        print(f"gitbot: {stage} check `{command}` {run.describe()}:", file=stream)
        print(_shown_output(run), file=stream)
    command, run = failed[0]
    return _fix_in_hook(stage, root, command, run, stage_config, allow_fix, others=len(failed) - 1,
                        stream=stream)


def _start_unstaged_probe(root: str):
    """`git diff --quiet` against the index git is committing (GIT_INDEX_FILE as the hook got it: under
    `git commit -a` or `git commit FILE` that is git's temporary index), writing nothing; None if git
    cannot start."""
    import subprocess

    from gitbot.host_programs import host_env, program

    env = host_env(dict(os.environ))
    env["GIT_OPTIONAL_LOCKS"] = "0"
    try:
        return subprocess.Popen([program("git"), "diff", "--quiet", "--no-ext-diff", "--no-textconv", "--ignore-submodules"],
                                cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    except OSError:
        return None


def _warn_about_unstaged_changes(probe, stream) -> None:
    """The checks run on the work tree, not on what is being committed: say so when tracked files have
    changes that are not staged."""
    if probe is not None and probe.wait() == 1:
        print("gitbot: warning: tracked files have unstaged changes. The checks run on your work tree, so they "
              "see those changes too, not only what this commit holds (stage them, or `git stash --keep-index` "
              "before committing, to check exactly the commit).", file=stream)


def _shown_output(run) -> str:
    text = run.output.rstrip()
    if len(text) > SHOWN_OUTPUT_CHARS:
        hidden = len(text) - SHOWN_OUTPUT_CHARS
        text = f"[… {hidden:,} characters above not shown …]\n" + text[-SHOWN_OUTPUT_CHARS:]
    return text


def _fix_in_hook(stage, root, command, run, stage_config, allow_fix, *, others, stream) -> int:
    from pathlib import Path

    verb = "commit" if stage == "pre-commit" else "push"
    if not allow_fix:
        print(f"gitbot: the {verb} is stopped; fixing is off for {stage} (fix = false). To let gitbot try to fix "
              f"a failing check, set fix = true under [hooks.{stage}] in {CONFIG_RELPATH}.", file=stream)
        return 1
    # From here on nothing should see the index of the commit in progress, only the repository itself.
    from gitbot.agent.prepare import prepare_run
    from gitbot.checkpoints import CheckpointError
    from gitbot.errors import ConfigError, GitError
    from gitbot.fixcheck.flow import FixRequest, fix_failing_check
    from gitbot.fixcheck.report import print_report
    from gitbot.git import GIT_LOCAL_ENV

    for name in GIT_LOCAL_ENV:
        os.environ.pop(name, None)
    # The provider the policy names, with its credentials, before anything else runs: without them there
    # is nothing to try (the check is not even re-run).
    try:
        prepared = prepare_run(Path(root), model=stage_config.model)
    except ConfigError as exc:
        print(f"gitbot: the {verb} is stopped; gitbot cannot try to fix it ({exc}). Fix it yourself, or give "
              f"gitbot what it needs (budget ${stage_config.max_cost_usd:.2f}).", file=stream)
        return 1
    print(f"gitbot: asking the agent to fix `{command}` (budget ${stage_config.max_cost_usd:.2f}) …",
          file=stream)
    # The re-runs (confirmation, verification) run in the agent's sandbox, like the agent's commands.
    request = FixRequest(repo=Path(root), command=command, display=command,
                         timeout=stage_config.check_timeout_seconds, model=stage_config.model,
                         max_cost_usd=stage_config.max_cost_usd,
                         max_steps=stage_config.max_steps, source="hook", first_run_in_user_environment=True,
                         progress=lambda text: print(f"gitbot: {text}", file=stream))
    from gitbot.progress import ConsoleReporter

    try:
        fix = fix_failing_check(request, run, reporter=ConsoleReporter(), provider=prepared.provider,
                                policy=prepared.policy)
    except (CheckpointError, GitError) as exc:
        print(f"gitbot: the {verb} is stopped; gitbot could not try a fix: {exc}", file=stream)
        return 2
    print_report(fix, stream)
    if fix.verified:
        print(f"gitbot: the fix is in your work tree, NOT staged. Review it (git diff), stage what you want "
              f"(git add -p), then {verb} again.", file=stream)
    if others:
        print(f"gitbot: {others} more check(s) failed; they were not fixed this time", file=stream)
    return 2 if fix.outcome == "cannot_fix" else 1  # 2: nothing the model could fix (a missing tool, …)


def main(argv: list[str]) -> int:
    """`run STAGE`: the installed hook script's entry (see SCRIPT_PYTHON_CODE)."""
    if len(argv) < 2 or argv[0] != "run":
        print("usage: python -c '…gitbot.hooks.main…' run STAGE", file=sys.stderr)
        return 2
    try:
        return run_hook(argv[1])
    except KeyboardInterrupt:
        print("gitbot: interrupted", file=sys.stderr)
        return 3
