"""`gitbot eval`: measure how often gitbot resolves instances, at what cost.

  gitbot eval mine --repo DIR [--max N] [--test-cmd CMD] [-o FILE]   instances from your own history
  gitbot eval run INSTANCES.jsonl [--repo DIR] [--replay] [--workers N] [--shard i/n] [--max-cost USD]
                  [--check-from-tests] -o OUTDIR                      predictions.jsonl, report.json, report.md
  gitbot eval compare OUTDIR_A OUTDIR_B                               flipped instances, difference in rate
  gitbot eval merge OUTDIR… -o OUTDIR                                 the shards' reports joined

Exit codes: 0 done (whatever the resolve rate); 2 bad input (no instances file, a bad --shard); 3 interrupted
(run again with the same -o to resume).
"""

from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from pathlib import Path

BUNDLED = Path(__file__).resolve().parent.parent / "data" / "eval" / "instances.jsonl"


def register(subparsers) -> None:
    p = subparsers.add_parser("eval", help="measure the resolve rate and cost on SWE-bench-format instances",
                              description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="eval_command", metavar="SUBCOMMAND")

    mine = sub.add_parser("mine", help="instances from commits of your history that fix a failing test")
    mine.add_argument("--repo", type=Path, default=Path("."), help="the repository (default: .)")
    mine.add_argument("--max", type=int, default=50, metavar="N", help="newest N first-parent commits to look at")
    mine.add_argument("--test-cmd", default=None, metavar="CMD",
                      help="the test command test ids are appended to (default: python3 -m pytest -q -rA)")
    mine.add_argument("--policy", type=Path, default=None, help="policy file the tests run under")
    mine.add_argument("-o", "--output", type=Path, default=None, help="write here instead of stdout")
    mine.set_defaults(func=main_mine)

    run = sub.add_parser("run", help="run gitbot on each instance and judge it with the held-back tests")
    run.add_argument("instances", type=Path, nargs="?", default=None,
                     help=f"SWE-bench JSON Lines (default: the bundled offline set, {BUNDLED.parent.name}/)")
    run.add_argument("--repo", type=Path, default=None, help="a local checkout that has the base commits")
    run.add_argument("--replay", action="store_true",
                     help="recorded replies from replays/<instance_id>.json beside the instances file (no key)")
    run.add_argument("--workers", type=int, default=1, metavar="N", help="instances run at once (default: 1)")
    run.add_argument("--shard", default=None, metavar="i/n", help="run only shard i of n (by instance_id hash)")
    run.add_argument("--max-cost", type=float, default=None, metavar="USD",
                     help="budget for the whole evaluation: no instance starts that could pass it")
    run.add_argument("--check-from-tests", action="store_true",
                     help="the task is the failing FAIL_TO_PASS tests (as fix-check), not the problem statement")
    run.add_argument("--provider", default=None, choices=("anthropic", "bedrock", "vertex", "openai"))
    run.add_argument("--model", default=None)
    run.add_argument("--base-url", default=None, metavar="URL")
    run.add_argument("--max-steps", type=int, default=None, help="most model requests per instance")
    run.add_argument("--policy", type=Path, default=None, help="policy file for every instance")
    run.add_argument("-o", "--output", type=Path, required=True, metavar="OUTDIR")
    run.set_defaults(func=main_run)

    compare = sub.add_parser("compare", help="instances that flipped between two runs, difference in rate")
    compare.add_argument("a", type=Path, metavar="OUTDIR_A")
    compare.add_argument("b", type=Path, metavar="OUTDIR_B")
    compare.add_argument("--json", action="store_true")
    compare.set_defaults(func=main_compare)

    merge = sub.add_parser("merge", help="join the reports of shards into one")
    merge.add_argument("outdirs", type=Path, nargs="+", metavar="OUTDIR")
    merge.add_argument("-o", "--output", type=Path, required=True, metavar="OUTDIR")
    merge.set_defaults(func=main_merge)
    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), 2)[1])


def main_run(args) -> int:
    from gitbot.eval.attempt import Settings
    from gitbot.eval.batch import in_shard, parse_shard, run_batch
    from gitbot.eval.instances import read_instances
    from gitbot.eval.report import write_outputs

    path = args.instances or BUNDLED
    try:
        instances, errors = read_instances(path)
        shard = parse_shard(args.shard) if args.shard else None
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    if args.workers < 1:
        return _fail("--workers must be at least 1")
    if shard:
        instances = [i for i in instances if in_shard(i.instance_id, *shard)]
        errors = [e for e in errors if e.instance_id is None or in_shard(e.instance_id, *shard)]
    for error in errors:
        print(f"gitbot eval: skipped: {error.why}", file=sys.stderr)
    out = args.output
    out.mkdir(parents=True, exist_ok=True)
    settings = Settings(out=out.resolve(), instances_dir=path.resolve().parent,
                        local_repo=args.repo.resolve() if args.repo else None, model=args.model,
                        provider=args.provider, base_url=args.base_url, policy_file=args.policy,
                        replay=args.replay, max_steps=args.max_steps, check_from_tests=args.check_from_tests)
    print(f"gitbot eval: {len(instances)} instance(s){f' in shard {args.shard}' if shard else ''}, "
          f"{args.workers} worker(s), results in {out}", file=sys.stderr)
    not_run = {f"line-{e.line}" if e.instance_id is None else e.instance_id: e.why for e in errors}
    try:
        with _sigterm_interrupts():
            rows, budget_stopped = run_batch(instances, settings, workers=args.workers, max_cost=args.max_cost)
    except KeyboardInterrupt:
        print(f"gitbot eval: interrupted; run the same command again to finish what is left ({out})",
              file=sys.stderr)
        return 3
    not_run.update(budget_stopped)
    ids = [i.instance_id for i in instances]
    report = write_outputs(out, rows, ids + sorted(set(not_run) - set(ids)), not_run)
    numbers = report["overall"]
    low, high = numbers["resolve_rate_95ci"]
    print(f"gitbot eval: {numbers['resolved']}/{numbers['total']} resolved ({numbers['resolve_rate']:.1%}, "
          f"95% CI {low:.1%}–{high:.1%}), ${numbers['cost_usd']:.4f}; {out / 'report.md'}", file=sys.stderr)
    return 0


@contextmanager
def _sigterm_interrupts():
    """SIGTERM (a cancelled CI job) stops the batch like Ctrl-C: the running instance's worktrees are removed
    and nothing is kept for it, so a resume runs it again."""
    def interrupt(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main_mine(args) -> int:
    from gitbot.errors import ConfigError, GitError, NotAGitRepository
    from gitbot.eval.instances import dumps
    from gitbot.eval.mine import mine

    try:
        instances = mine(args.repo, max_commits=args.max, test_cmd=args.test_cmd, policy_file=args.policy,
                         say=lambda text: print(f"gitbot eval mine: {text}", file=sys.stderr))
    except (ConfigError, GitError, NotAGitRepository) as exc:
        return _fail(str(exc))
    if args.output:
        args.output.write_text(dumps(instances), encoding="utf-8")
    else:
        sys.stdout.write(dumps(instances))
    return 0


def main_compare(args) -> int:
    import json

    from gitbot.eval.compare import compare, load_report, render

    try:
        result = compare(load_report(args.a), load_report(args.b))
    except ValueError as exc:
        return _fail(str(exc))
    sys.stdout.write(json.dumps(result, indent=2) + "\n" if args.json else render(result, str(args.a), str(args.b)))
    return 0


def main_merge(args) -> int:
    from gitbot.eval.report import merge

    report = merge(list(args.outdirs), args.output)
    numbers = report["overall"]
    print(f"gitbot eval merge: {numbers['resolved']}/{numbers['total']} resolved; {args.output / 'report.md'}",
          file=sys.stderr)
    return 0


def _fail(message: str) -> int:
    print(f"gitbot eval: {message}", file=sys.stderr)
    return 2
