"""`gitbot sandbox explain [--repo DIR] [--policy FILE] -- CMD [ARGS…]`: how CMD resolves in your shell
and in the sandbox, and what the sandbox shows, masks, protects and hides.

Exit codes: 0 CMD can start where gitbot runs checks and the agent's commands; 2 it cannot (or bad
input: no command, a bad policy file, not a git work tree).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("sandbox", help="show what the sandbox shows and hides for a command",
                                   description="Inspect the sandbox the agent's commands and checks run in.")
    actions = parser.add_subparsers(dest="sandbox_action", metavar="ACTION")
    explain = actions.add_parser(
        "explain", help="how CMD resolves in your shell and in the sandbox, and what is shown and hidden",
        description="Show how CMD resolves in your shell and inside the sandbox, what the sandbox mounts "
                    "read-only (your toolchain), what it masks, protects and hides. Exit 0 when CMD can start "
                    "there, 2 when it cannot.")
    explain.add_argument("--repo", type=Path, default=Path("."), help="the git work tree (default: .)")
    explain.add_argument("--policy", type=Path, default=None,
                         help="policy file (default: .gitbot/policy.toml in the repository)")
    explain.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS…]", help="the command")
    parser.set_defaults(func=main, sandbox_parser=parser)


def main(args) -> int:
    from gitbot import git
    from gitbot.errors import ConfigError

    if args.sandbox_action != "explain":
        args.sandbox_parser.print_help(sys.stderr)
        return 2
    argv = list(args.cmd)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("gitbot: no command given: gitbot sandbox explain [--policy FILE] -- CMD [ARGS…]", file=sys.stderr)
        return 2
    try:
        from gitbot.policy import load_policy
        from gitbot.sandbox.explain import explain

        repo = git.repo_root(args.repo)
        report, startable = explain(argv, repo, load_policy(repo, args.policy))
    except ConfigError as exc:
        print(f"gitbot: {exc}", file=sys.stderr)
        return 2
    print(report)
    return 0 if startable else 2
