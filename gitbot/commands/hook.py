"""`gitbot hook install|uninstall|run`: git hooks that run the project's checks and may fix them.

Kept free of heavy imports: `gitbot hook run` is on every commit's path.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("hook", help="install, remove or run gitbot's git hooks")
    actions = p.add_subparsers(dest="hook_action", metavar="ACTION", required=True)

    install = actions.add_parser("install", help="install the hook for a stage (an existing hook is chained)")
    install.add_argument("--stage", choices=("pre-commit", "pre-push"), default="pre-commit")
    install.add_argument("--check", action="append", dest="checks", metavar="CMD",
                         help="a check command for this stage (repeat for several); saved in "
                              ".gitbot/config.toml")
    fixing = install.add_mutually_exclusive_group()
    fixing.add_argument("--no-fix", dest="fix", action="store_const", const=False, default=None,
                        help="only run the checks, never ask the agent to fix (writes fix = false)")
    fixing.add_argument("--fix", dest="fix", action="store_const", const=True,
                        help="let the agent fix a failing check (writes fix = true; the default when the "
                             "stage has no fix setting yet)")
    install.add_argument("--force", action="store_true",
                         help="install even into a core.hooksPath directory outside this repository's .git "
                              "(a global or committed hooks directory)")
    install.add_argument("--repo", type=Path, default=None,
                         help="the git work tree (default: the current one)")
    install.set_defaults(func=main_install)

    uninstall = actions.add_parser("uninstall", help="remove the hook and restore what was there before")
    uninstall.add_argument("--stage", choices=("pre-commit", "pre-push"), default="pre-commit")
    uninstall.add_argument("--repo", type=Path, default=None,
                         help="the git work tree (default: the current one)")
    uninstall.set_defaults(func=main_uninstall)

    run = actions.add_parser("run", help="run the checks for a stage (what the installed hook calls)")
    run.add_argument("stage", nargs="?", choices=("pre-commit", "pre-push"), default=None,
                     help="default: pre-commit, or pre-push when the pre-commit framework runs a push")
    run.add_argument("--check", action="append", dest="checks", metavar="CMD",
                     help="check commands to run instead of the configured ones (for the pre-commit "
                          "framework)")
    fixing = run.add_mutually_exclusive_group()
    fixing.add_argument("--no-fix", dest="fix", action="store_const", const=False, default=None,
                        help="do not ask the agent to fix a failing check")
    fixing.add_argument("--fix", dest="fix", action="store_const", const=True,
                        help="let the agent fix a failing check even if the configuration does not say fix = true")
    run.add_argument("--repo", type=Path, default=None, help=argparse.SUPPRESS)
    # git passes the remote name and URL to pre-push hooks; they are not needed.
    run.add_argument("git_args", nargs="*", help=argparse.SUPPRESS)
    run.set_defaults(func=main_run)


def main_run(args) -> int:
    from gitbot.hooks.run import run_hook

    return run_hook(args.stage, checks=args.checks, fix=args.fix, repo=args.repo)


def main_install(args) -> int:
    from gitbot.errors import ConfigError, GitError
    from gitbot.hooks.config import CONFIG_RELPATH, example_stage_table
    from gitbot.hooks.install import find_repo, install

    try:
        repo = find_repo(args.repo)
        report = install(repo, args.stage, checks=args.checks, fix=args.fix, force=args.force)
    except (ConfigError, GitError) as exc:
        print(f"gitbot: {exc}", file=sys.stderr)
        return 2
    verb = "reinstalled" if report.reinstalled else "installed"
    print(f"gitbot: {verb} the {args.stage} hook at {report.hook_path}", file=sys.stderr)
    if report.chained:
        print(f"gitbot: the hook that was there runs first (renamed to {report.chained}; uninstall renames it "
              f"back)", file=sys.stderr)
    if report.config_changed:
        print(f"gitbot: saved the checks in {CONFIG_RELPATH} (commit it to share them)", file=sys.stderr)
    if report.checks:
        fix = "fix on failure, fix = true" if report.fix else "no fixing, fix = false"
        print(f"gitbot: checks: {', '.join(report.checks)} ({fix})", file=sys.stderr)
    else:
        print(f"gitbot: no checks configured yet; add them with --check CMD or in {CONFIG_RELPATH}:\n\n"
              f"{example_stage_table(args.stage)}", file=sys.stderr)
    return 0


def main_uninstall(args) -> int:
    from gitbot.errors import ConfigError, GitError
    from gitbot.hooks.install import find_repo, uninstall

    try:
        repo = find_repo(args.repo)
        report = uninstall(repo, args.stage)
    except (ConfigError, GitError) as exc:
        print(f"gitbot: {exc}", file=sys.stderr)
        return 2
    if report.restored_previous:
        print(f"gitbot: restored the previous {args.stage} hook at {report.hook_path}", file=sys.stderr)
    elif report.removed:
        print(f"gitbot: removed the {args.stage} hook at {report.hook_path}", file=sys.stderr)
    if report.config_restored:
        print("gitbot: restored the configuration file as it was before install", file=sys.stderr)
    for note in report.notes:
        print(f"gitbot: {note}", file=sys.stderr)
    return 0
