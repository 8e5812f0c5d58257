"""`gitbot demo`: the whole story offline — a failing test, a replayed fix, the check re-run, the receipt.

No network and no API key: the model's replies come from a recorded trajectory and everything
says so. The tools, checkpoints, policy and verification are real.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from gitbot.host_programs import program

DATA = Path(__file__).resolve().parent.parent / "data"
CHECK_COMMAND = "python3 -m unittest"


def register(subparsers) -> None:
    p = subparsers.add_parser("demo", help="fix a failing test in a sample repository, offline (a replay)")
    p.add_argument("--keep", action="store_true", help="keep the sample repository and print where it is")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    p.set_defaults(func=main)


def make_sample_repository(where: Path) -> Path:
    repo = where / "stats-demo"
    shutil.copytree(DATA / "demo_repo", repo)
    git = [program("git"), "-c", "user.name=gitbot demo", "-c", "user.email=demo@gitbot.invalid",
           "-c", "core.hooksPath=/dev/null"]
    subprocess.run(git + ["init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "stats: mean and median"], cwd=repo, check=True)
    return repo


def main(args) -> int:
    from gitbot.agent.result import ExitCode

    workdir = Path(tempfile.mkdtemp(prefix="gitbot-demo-"))
    try:
        repo = make_sample_repository(workdir)
        say(f"Sample repository with a bug: {repo if args.keep else repo.name}")
        from gitbot.fixcheck.flow import fix_check_flow

        outcome = fix_check_flow(repo, CHECK_COMMAND, replay=DATA / "demo_replay.json", json_output=args.json,
                                 progress_label="[replay] ")
        diff = subprocess.run([program("git"), "diff"], cwd=repo, capture_output=True, text=True, check=False).stdout
        say("\nThe change, left in the work tree (not staged, not committed):\n" + diff)
        show_checkpoints(repo, outcome.run_id)
        return outcome.exit_code
    except Exception as exc:  # noqa: BLE001 — the demo must explain itself rather than print a traceback
        say(f"gitbot demo failed: {type(exc).__name__}: {exc}")
        return ExitCode.INFRA
    finally:
        if args.keep:
            say(f"\nKept the sample repository at {workdir / 'stats-demo'}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def show_checkpoints(repo: Path, run_id: str) -> None:
    out = subprocess.run([sys.executable, "-m", "gitbot", "checkpoints", "list", run_id, "--repo", str(repo)],
                         capture_output=True, text=True, check=False)
    say("Checkpoints of this run (one per tool call; step 0 is before the agent did anything):")
    say(out.stdout.rstrip() or out.stderr.rstrip())
    say(f"\nSee what a step changed:   gitbot checkpoints diff {run_id} 2 3\n"
        f"Undo back to a step:       gitbot checkpoints restore {run_id} 2\n"
        "(run them with --keep to try on the sample repository)")


def say(text: str) -> None:
    print(text, file=sys.stderr)
