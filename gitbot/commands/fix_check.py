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
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS…]",
                   help="the check command (default: the project's own test runner, as `gitbot policy init` finds "
                        "it: ./tests/runtests.py, bin/test, pytest, make test, npm test, cargo test, go test, nox, tox)")
    p.set_defaults(func=main)


def detected_check(repo) -> list[str]:
    """The project's first test runner as argv, said on stderr; [] when there is none."""
    import shlex
    import sys

    from gitbot import git
    from gitbot.errors import GitError
    from gitbot.policy.test_runners import detect_test_runners

    try:
        root = git.repo_root(repo)
    except GitError:
        return []  # the flow says what is wrong with the repository
    runners = detect_test_runners(root)
    if not runners:
        return []
    print(f"gitbot fix-check: no check command given; running `{runners[0].command}` ({runners[0].why})",
          file=sys.stderr)
    return shlex.split(runners[0].command)


def main(args) -> int:
    from gitbot.fixcheck.flow import config_error, fix_check_flow

    argv = list(args.cmd)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        argv = detected_check(args.repo)
        if not argv:
            return config_error("no check command given, and no test runner found in the repository: "
                                "gitbot fix-check [options] -- CMD [ARGS…]")
    if args.timeout is not None and args.timeout <= 0:
        return config_error("--timeout must be a positive number of seconds")
    outcome = fix_check_flow(args.repo, argv, model=args.model, provider=args.provider, base_url=args.base_url,
                             max_cost=args.max_cost,
                             max_steps=args.max_steps, policy_file=args.policy, replay=args.replay,
                             timeout=args.timeout, commit=args.commit, confirm=args.confirm,
                             json_output=args.json, progress_label="[replay] " if args.replay else "")
    return outcome.exit_code

