"""Argument parsing only. Each subcommand lives in gitbot/commands/<name>.py and exposes
`register(subparsers)`, which adds its parser and sets `func` to a `main(args) -> int`.

Command modules import heavy dependencies (the anthropic SDK, GitPython, PyGithub) inside
their functions: `gitbot hook run` must start in tens of milliseconds.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from gitbot import __version__

COMMAND_MODULES = ("run", "demo", "resume", "checkpoints", "policy", "fix_check", "hook", "action")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gitbot", description="A Git-native coding bot.")
    parser.add_argument("--version", action="version", version=f"gitbot {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"gitbot.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"gitbot.commands.{name}":
                continue  # not built yet
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("gitbot: interrupted", file=sys.stderr)
        return 3
