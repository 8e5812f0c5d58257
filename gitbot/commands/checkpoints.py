"""`gitbot checkpoints list|diff|restore|prune`: inspect and undo a run's steps; delete old runs.

    gitbot checkpoints list [RUN] [--json]       (latest run by default)
    gitbot checkpoints diff RUN [FROM] [TO]      (default: step 0 -> last step)
    gitbot checkpoints restore RUN STEP [--force]
    gitbot checkpoints prune [--keep N] [--older-than DAYS] [--dry-run]   (default: keep the 20 newest runs)

Exit codes: 0 done; 1 restore left some paths different for an unknown reason; 2 bad input or a
refusal (unknown run or step, not a git repository, locked by a live run, changes made outside
the run, objects missing); 3 git itself failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "checkpoints", help="list, diff and restore the checkpoints of a run; prune old runs",
        description="Every step of a run is checkpointed in a shadow repository inside .git/gitbot; "
                    "list them, diff two of them, or restore the work tree to one.")
    actions = parser.add_subparsers(dest="checkpoints_action", metavar="ACTION")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--repo", type=Path, default=Path("."), help="the repository (default: current directory)")

    listing = actions.add_parser("list", parents=[common], help="the steps of a run and their checkpoints")
    listing.add_argument("run", nargs="?", help="run id (default: the latest run)")
    listing.add_argument("--json", action="store_true", help="print a JSON array instead of a table")

    diffing = actions.add_parser("diff", parents=[common], help="the diff between two steps")
    diffing.add_argument("run", help="run id")
    diffing.add_argument("from_step", nargs="?", type=int, default=0, metavar="FROM", help="default: 0")
    diffing.add_argument("to_step", nargs="?", type=int, default=None, metavar="TO", help="default: the last step")

    restoring = actions.add_parser("restore", parents=[common], help="make the work tree equal to a step")
    restoring.add_argument("run", help="run id")
    restoring.add_argument("step", type=int, help="the step to restore")
    restoring.add_argument("--force", action="store_true",
                           help="restore even if the work tree was changed outside the run (those changes are "
                                "checkpointed first)")
    restoring.add_argument("--json", action="store_true", help="print the restore report as JSON")

    pruning = actions.add_parser(
        "prune", parents=[common], help="delete old runs' checkpoints and records",
        description="Delete the checkpoints (refs, private indexes), run records and then unused objects of "
                    "runs that are not among the --keep most recently active ones and, with --older-than, were "
                    "last active more than DAYS days ago. Runs `git gc --prune=now` in the checkpoint repository "
                    "only, never in yours. Refuses while a gitbot run holds the repository lock.")
    pruning.add_argument("--keep", type=_non_negative_int, default=20, metavar="N",
                         help="keep the N most recently active runs (default: 20)")
    pruning.add_argument("--older-than", type=_non_negative_float, default=None, metavar="DAYS",
                         help="only delete runs last active more than DAYS days ago")
    pruning.add_argument("--dry-run", action="store_true", help="say what would be deleted, delete nothing")
    pruning.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=main, checkpoints_parser=parser)


def main(args: argparse.Namespace) -> int:
    from gitbot.checkpoints import CheckpointError
    from gitbot.errors import NotAGitRepository
    from gitbot.git import GitCommandError

    if not getattr(args, "checkpoints_action", None):
        args.checkpoints_parser.print_help(sys.stderr)
        return 2
    # File names may hold any bytes; never let printing one crash the command.
    sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    try:
        if args.checkpoints_action == "list":
            return _list(args)
        if args.checkpoints_action == "diff":
            return _diff(args)
        if args.checkpoints_action == "prune":
            return _prune(args)
        return _restore(args)
    except (CheckpointError, NotAGitRepository) as exc:
        print(f"gitbot checkpoints: {exc}", file=sys.stderr)
        return 2
    except GitCommandError as exc:
        print(f"gitbot checkpoints: {exc}", file=sys.stderr)
        return 3


def _list(args: argparse.Namespace) -> int:
    from gitbot.checkpoints import display_path, json_safe_path, list_checkpoints
    from gitbot.checkpoints.history import resolve_run

    _, run_id = resolve_run(args.repo, args.run)
    rows = list_checkpoints(args.repo, run_id)
    if args.json:
        for row in rows:
            row["files_changed"] = [json_safe_path(p) for p in row["files_changed"]]
            row["run_id"] = run_id
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    print(f"run {run_id}: {sum(1 for r in rows if r['checkpoint'])} checkpoint(s)")
    table = [("STEP", "TOOL", "TARGET", "FILES CHANGED", "CHECKPOINT")]
    for row in rows:
        files = [display_path(p) for p in row["files_changed"]]
        changed = f"{len(files)}: {', '.join(files)}" if files else "-"
        table.append((str(row["step"]), _clip(row["tool"] or "-", 18), _clip(display_path(row["target"] or ""), 36),
                      _clip(changed, 44), (row["checkpoint"] or "(none)")[:12]))
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    for r in table:
        print("  ".join([r[0].rjust(widths[0])] + [c.ljust(w) for c, w in zip(r[1:], widths[1:])]).rstrip())
    return 0


def _diff(args: argparse.Namespace) -> int:
    from gitbot.checkpoints import diff

    text = diff(args.repo, args.run, args.from_step, args.to_step)
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
    sys.stdout.buffer.flush()
    return 0


def _restore(args: argparse.Namespace) -> int:
    from gitbot.checkpoints import restore

    report = restore(args.repo, args.run, args.step, force=args.force)
    if report.stale_lock:
        print(f"gitbot checkpoints: cleared a stale lock left by pid {report.stale_lock.get('pid')} "
              f"(run {report.stale_lock.get('run_id') or '?'})", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.summary())
    return 1 if report.failed else 0


def _prune(args: argparse.Namespace) -> int:
    from gitbot.checkpoints import prune

    report = prune(args.repo, keep=args.keep, older_than_days=args.older_than, dry_run=args.dry_run)
    if report.stale_lock:
        print(f"gitbot checkpoints: cleared a stale lock left by pid {report.stale_lock.get('pid')} "
              f"(run {report.stale_lock.get('run_id') or '?'})", file=sys.stderr)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.summary())
    return 0


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of days, 0 or more, not {text}")
    return value


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"
