"""`gitbot policy check` and `gitbot policy init`: test the policy file, or write a starting one.

`check` answers exactly what a run on this machine would (tools/verdicts.py: the same context and the
same functions as the tools): `allowed` or `denied` with the reason and what to do instead; exit 0
when allowed, 1 when denied, 2 when the policy file is bad. `--batch FILE` judges JSON Lines and
`--run RUN_ID` replays a past run's tool calls (gitbot/commands/policy_batch.py), one JSON line each.
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
    where = check.add_mutually_exclusive_group()
    where.add_argument("--sandbox", dest="sandboxed", action="store_const", const=True, default=None,
                       help="judge as a sandboxed run would (default: as a run on this machine would)")
    where.add_argument("--no-sandbox", dest="sandboxed", action="store_const", const=False,
                       help="judge as an unsandboxed run would")
    what = check.add_mutually_exclusive_group(required=True)
    what.add_argument("--command", help="a shell command line")
    what.add_argument("--read", metavar="PATH", help="a path to read")
    what.add_argument("--edit", metavar="PATH", help="a path to edit")
    what.add_argument("--batch", metavar="FILE", type=Path,
                      help='JSON Lines of {"command": ...}, {"read": ...} or {"edit": ...} ("-": stdin); '
                           'prints one JSON line for each, in order')
    what.add_argument("--run", metavar="RUN_ID", help="replay a past run's tool calls against the current policy")

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
    from gitbot.tools.verdicts import command_verdict, path_verdict, run_context

    repo = _repo_root(args.repo)
    try:
        policy = load_policy(repo, args.policy, base_ref=args.base_ref)
    except PolicyError as exc:
        print(exc, file=sys.stderr)
        return EXIT_BAD_POLICY
    from gitbot.policy.init import newcomer_policy

    policy, _ = newcomer_policy(repo, policy)  # what `gitbot run` allows with no policy file
    if args.batch is not None or args.run is not None:
        from gitbot.commands.policy_batch import main_batch, main_replay

        if args.batch is not None:
            return main_batch(repo, policy, args.batch, tuple(args.allow_check), args.sandboxed)
        return main_replay(repo, policy, args.run, args.sandboxed)
    ctx = run_context(repo, policy, check_command=None)
    ctx.extra_allowed_commands = tuple(args.allow_check)
    if args.command is not None:
        verdict = command_verdict(ctx, args.command, sandboxed=args.sandboxed)
    else:
        verdict = path_verdict(ctx, args.read if args.read is not None else args.edit, for_edit=args.read is None)
    reason = verdict.reason.removeprefix("allowed: ")
    print(f"{'allowed' if verdict.allowed else 'denied'}: {reason}")
    if verdict.instead:
        print(f"instead: {verdict.instead}")
    print(f"(policy: {policy.source})", file=sys.stderr)
    return EXIT_ALLOWED if verdict.allowed else EXIT_DENIED


def _repo_root(repo: Path) -> Path:
    """The work tree's root, as a run uses it; a directory outside git is judged as given."""
    from gitbot import git
    from gitbot.errors import GitError

    try:
        return git.repo_root(repo)
    except GitError:
        return Path(repo)


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
