"""Argument parsing only. Each subcommand lives in gitbot/commands/<module>.py and exposes
`register(subparsers)`, which adds its parser and sets `func` to a `main(args) -> int`.

Only the module of the subcommand being run is imported (all of them for --help), and command
modules import heavy dependencies (the anthropic SDK, PyGithub) inside their
functions: `gitbot hook run` must start in tens of milliseconds.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from gitbot import __version__

# subcommand name -> module in gitbot/commands/
COMMANDS = {"run": "run", "demo": "demo", "resume": "resume", "checkpoints": "checkpoints", "policy": "policy",
            "fix-check": "fix_check", "hook": "hook", "action": "action", "sandbox": "sandbox",
            "eval": "eval", "gitlab": "gitlab"}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gitbot", description="A Git-native coding bot.")
    parser.add_argument("--version", action="version", version=f"gitbot {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"gitbot.commands.{module_name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(chosen)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("gitbot: interrupted", file=sys.stderr)
        return 3
    except Exception as exc:  # a documented exit code and one line, not a traceback
        print(f"gitbot: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        if os.environ.get("GITBOT_DEBUG"):
            raise
        return 3
