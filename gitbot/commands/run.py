"""`gitbot run`: a task in text, run on a repository, with a receipt."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gitbot.errors import ExitCode


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run the agent on a task described in text")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--task", help="the task, as text")
    source.add_argument("--task-file", type=Path, help="a file holding the task")
    p.add_argument("--check", metavar="CMD", default=None,
                   help="a command that exits 0 when the task is done: the agent may run it, it is run before "
                        "(a missing program or tool stops the run before any model request) and after (verified)")
    add_run_options(p)
    p.set_defaults(func=main)


def add_run_options(p) -> None:
    """Options shared by every command that runs the agent."""
    p.add_argument("--repo", type=Path, default=Path("."), help="the git work tree (default: .)")
    p.add_argument("--provider", default=None, choices=("anthropic", "bedrock", "vertex", "openai"),
                   help="who serves the model (default: the policy's [model] provider, else anthropic)")
    p.add_argument("--model", default=None,
                   help="model id in the provider's form (default on anthropic: claude-sonnet-5-5)")
    p.add_argument("--base-url", default=None, metavar="URL",
                   help="the provider's endpoint (an OpenAI-compatible server: http://localhost:8000/v1)")
    p.add_argument("--max-steps", type=int, default=None, help="most model requests")
    p.add_argument("--max-cost", type=float, default=None, metavar="USD", help="budget in US dollars")
    p.add_argument("--policy", type=Path, default=None, help="policy file (default: .gitbot/policy.toml)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout; progress on stderr")
    # A recorded trajectory to play instead of calling the model (demos, tests). Labelled as a replay.
    p.add_argument("--replay", type=Path, default=None, help=argparse.SUPPRESS)


def main(args) -> int:
    from gitbot.checkpoints import CheckpointError
    from gitbot.errors import ConfigError
    from gitbot.task import Task

    try:
        text = args.task if args.task is not None else read_task_file(args.task_file)
        if not text.strip():
            raise ConfigError("the task is empty")
        title = text.strip().splitlines()[0][:80]
        return execute(Task(text=text, source="cli", title=title), args)
    except (ConfigError, CheckpointError) as exc:  # CheckpointError: e.g. another run holds the lock
        print(f"gitbot: {exc}", file=sys.stderr)
        return ExitCode.CONFIG


def read_task_file(path: Path) -> str:
    from gitbot.errors import ConfigError

    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"task file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read task file {path}: {exc}") from None


def execute(task, args) -> int:
    from dataclasses import replace

    from gitbot.agent.prepare import prepare_run
    from gitbot.agent.result import Status, exit_code_for
    from gitbot.agent.run import run_task
    from gitbot.progress import ConsoleReporter
    from gitbot.receipt import print_receipt, render_json
    from gitbot.sandbox.command import DEFAULT_TIMEOUT_SECONDS

    check = getattr(args, "check", None)
    run = prepare_run(args.repo, policy_file=args.policy, model=args.model, replay=args.replay,
                      provider_name=args.provider, base_url=args.base_url, max_steps=args.max_steps,
                      max_cost_usd=args.max_cost, min_command_timeout=DEFAULT_TIMEOUT_SECONDS if check else None)
    from gitbot.policy.init import newcomer_policy

    policy, allowed = newcomer_policy(run.repo, run.policy)
    before = runner = None
    if check:
        runner, before = check_before(run.repo, policy, check)
        task = replace(task, check_command=check)
    reporter = ConsoleReporter(label="[replay] " if run.provider.is_replay else "")
    result = run_task(task, run.repo, policy=policy, options=run.options, provider=run.provider,
                      reporter=reporter)
    if allowed:
        result.extra["allowed_for_this_run"] = "; ".join(f"{pattern} ({why})" for pattern, why in allowed)
    code = exit_code_for(result.status)
    if check:
        print(f"gitbot: re-running `{check}` to verify", file=sys.stderr)
        after = runner.run_check(check, DEFAULT_TIMEOUT_SECONDS, echo=sys.stderr)
        result.extra.update({"verified": after.passed, "check_command": check,
                             "check_exit_before": _exit_of(before), "check_exit_after": _exit_of(after)})
        if result.status is Status.COMPLETED and not after.passed:
            code = ExitCode.GAVE_UP
    print_receipt(result)
    if args.json:
        print(render_json(result))
    return code


def check_before(repo: Path, policy, check: str):
    """Run the check once before the agent, as the agent's commands run: a check that cannot start, or
    fails because its program or tool is missing, is a configuration error (exit 2, no model request)."""
    from gitbot.errors import ConfigError
    from gitbot.sandbox.command import DEFAULT_TIMEOUT_SECONDS
    from gitbot.sandbox.runner import Runner

    runner = Runner(policy, repo)
    print(f"gitbot: running `{check}` in {repo} ({runner.description})", file=sys.stderr)
    before = runner.run_check(check, DEFAULT_TIMEOUT_SECONDS, echo=sys.stderr)
    problem = runner.environment_problem(check, before)
    if problem is not None:
        raise ConfigError(problem)
    return runner, before


def _exit_of(run) -> int | str:
    return "timeout" if run.timed_out else run.exit_code
