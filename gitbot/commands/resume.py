"""`gitbot resume RUN`: continue an interrupted run from its last completed step."""

from __future__ import annotations

import sys
from pathlib import Path

from gitbot.agent.result import ExitCode


def register(subparsers) -> None:
    p = subparsers.add_parser("resume", help="continue an interrupted run from its record")
    p.add_argument("run_id", metavar="RUN", help="the run id (see `gitbot checkpoints list`)")
    p.add_argument("--repo", type=Path, default=Path("."), help="the git work tree (default: .)")
    p.add_argument("--policy", type=Path, default=None, help="policy file (default: .gitbot/policy.toml)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout; progress on stderr")
    p.set_defaults(func=main)


def main(args) -> int:
    from gitbot import git
    from gitbot.agent.result import exit_code_for
    from gitbot.agent.resume import resume_run
    from gitbot.checkpoints import CheckpointError
    from gitbot.errors import ConfigError
    from gitbot.policy import load_policy
    from gitbot.progress import ConsoleReporter
    from gitbot.receipt import print_receipt, render_json
    from gitbot.sandbox.crashnote import recover_after_crash

    try:
        repo = git.repo_root(args.repo)
        recover_after_crash(repo)  # what a command of a gitbot that died mid-command left is not the policy
        result = resume_run(repo, args.run_id, policy=load_policy(repo, args.policy),
                            reporter=ConsoleReporter())
    except (ConfigError, CheckpointError) as exc:
        print(f"gitbot: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    print_receipt(result)
    if args.json:
        print(render_json(result))
    return exit_code_for(result.status)
