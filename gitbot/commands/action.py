"""`gitbot action`: what the GitHub Action runs. Reads INPUT_* and GITHUB_* variables, no arguments."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "action",
        help="run as the GitHub Action (inputs in INPUT_* variables, the event in GITHUB_EVENT_PATH)",
        description="Fix a labelled issue or a failed workflow run and open a pull request. Meant to be "
        "run by gitbot's action.yml inside GitHub Actions; see the README, 'Use it on GitHub'.",
    )
    p.set_defaults(func=main)


def main(args) -> int:
    from gitbot.forge.github.action import run_action

    return run_action()
