"""`gitbot run`: a task in text, run on a repository, with a receipt."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gitbot.agent.result import ExitCode


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run the agent on a task described in text")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--task", help="the task, as text")
    source.add_argument("--task-file", type=Path, help="a file holding the task")
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
    from gitbot.agent.prepare import prepare_run
    from gitbot.agent.result import exit_code_for
    from gitbot.agent.run import run_task
    from gitbot.progress import ConsoleReporter
    from gitbot.receipt import print_receipt, render_json

    run = prepare_run(args.repo, policy_file=args.policy, model=args.model, replay=args.replay,
                      provider_name=args.provider, base_url=args.base_url, max_steps=args.max_steps,
                      max_cost_usd=args.max_cost)
    reporter = ConsoleReporter(label="[replay] " if run.provider.is_replay else "")
    result = run_task(task, run.repo, policy=run.policy, options=run.options, provider=run.provider,
                      reporter=reporter)
    print_receipt(result)
    if args.json:
        print(render_json(result))
    return exit_code_for(result.status)
