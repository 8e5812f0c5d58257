"""`gitbot policy check` and `gitbot policy init`: test the policy file, or write a starting one.

`check` prints `allowed` or `denied` with the reason, using the same functions as a run; exit 0 when
allowed, 1 when denied, 2 when the policy file is bad.
"""

from __future__ import annotations

import sys
from pathlib import Path

EXIT_ALLOWED = 0
EXIT_DENIED = 1
EXIT_BAD_POLICY = 2


def register(subparsers) -> None:
    parser = subparsers.add_parser("policy", help="check a command or path against the policy, or write one",
                                   description="Test the auto-approval policy, or write a starting policy file.")
    actions = parser.add_subparsers(dest="policy_action", metavar="ACTION")

    check = actions.add_parser("check", help="is a command, read or edit allowed?",
                               description="Print `allowed` or `denied` with the reason. Exit status: 0 allowed, "
                                           "1 denied, 2 bad policy file.")
    check.add_argument("--policy", type=Path, default=None,
                       help="policy file (default: .gitbot/policy.toml in the repository)")
    check.add_argument("--repo", type=Path, default=Path("."), help="the repository (default: .)")
    check.add_argument("--base-ref", default=None,
                       help="read the repository's policy file from this git revision")
    check.add_argument("--allow-check", action="append", default=[], metavar="CMD",
                       help="treat CMD as the run's check command (as fix-check does)")
    what = check.add_mutually_exclusive_group(required=True)
    what.add_argument("--command", help="a shell command line")
    what.add_argument("--read", metavar="PATH", help="a path to read")
    what.add_argument("--edit", metavar="PATH", help="a path to edit")

    init = actions.add_parser("init", help="write a commented .gitbot/policy.toml",
                              description="Write .gitbot/policy.toml with the defaults and the test/lint commands "
                                          "detected in the repository.")
    init.add_argument("--repo", type=Path, default=Path("."), help="the repository (default: .)")
    init.add_argument("--force", action="store_true", help="overwrite an existing policy file")
    parser.set_defaults(func=main, policy_parser=parser)


def main(args) -> int:
    if args.policy_action == "check":
        return main_check(args)
    if args.policy_action == "init":
        return main_init(args)
    args.policy_parser.print_help(sys.stderr)
    return 2


def main_check(args) -> int:
    from gitbot.policy import PolicyError, load_policy

    try:
        policy = load_policy(args.repo, args.policy, base_ref=args.base_ref)
    except PolicyError as exc:
        print(exc, file=sys.stderr)
        return EXIT_BAD_POLICY
    if args.command is not None:
        decision = policy.check_command(args.command, tuple(args.allow_check))
    elif args.read is not None:
        decision = policy.check_read(args.read)
    else:
        decision = policy.check_edit(args.edit)
    reason = decision.reason.removeprefix("allowed: ")
    print(f"{'allowed' if decision.allowed else 'denied'}: {reason}")
    if decision.instead:
        print(f"instead: {decision.instead}")
    print(f"(policy: {policy.source})", file=sys.stderr)
    return EXIT_ALLOWED if decision.allowed else EXIT_DENIED


def main_init(args) -> int:
    from gitbot.policy import PolicyError, parse_policy
    from gitbot.policy.defaults import DEFAULT_POLICY_PATH
    from gitbot.policy.init import detect_commands, render_policy

    repo = Path(args.repo)
    if not repo.is_dir():
        print(f"gitbot policy init: {repo} is not a directory", file=sys.stderr)
        return 2
    target = repo / DEFAULT_POLICY_PATH
    if target.exists() and not args.force:
        print(f"gitbot policy init: {target} already exists; use --force to overwrite it", file=sys.stderr)
        return 1
    text = render_policy(repo)
    try:
        parse_policy(text, source=str(target), repo=repo)  # never write a file gitbot would reject
    except PolicyError as exc:  # pragma: no cover - a bug in the template
        print(f"gitbot policy init: internal error, the generated policy is invalid: {exc}", file=sys.stderr)
        return 2
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    detected = detect_commands(repo)
    print(f"wrote {target}")
    for pattern, why in detected:
        print(f"  allowed `{pattern}` ({why})")
    if not detected:
        print("  no test or lint commands detected; add yours to [commands] allow")
    return 0
