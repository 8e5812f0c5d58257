"""The command judge against running the command it judges, measured in one run.

Tree: a generated repository (bench/gen_repo.py, 5,000+ files) with a read-denied `.env` planted in
the work tree and a read-denied file committed and then deleted (so git's history holds it). For
each command, the median wall time of N runs of:
  - the command: `bash -c COMMAND` in the repository, output read from a pipe (what the agent pays
    to run it, sandbox aside), and
  - the judge: Policy.check_command(COMMAND) with the default policy, which parses the line, walks
    it, and, when a command needs them, lists the repository's read-denied files (a recursive or
    run-time read) or asks git which read-denied paths its history holds (cached until a ref moves);
  - the judge as a sandboxed run asks it (sandboxed=True: deny rules and git's history only).
The ratio is judge / command: the judge should cost a small part of what running the command does.

Run: .venv/bin/python bench/bench_judge.py [--files 5000] [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_repo import make_repo
from gitbot.policy import Policy

COMMANDS = [
    ("plain", "ls -la"),
    ("pipeline", "git status --short | head -n 20"),
    ("wrapper", "timeout 5 git log --oneline -5"),
    ("named read", "head -n 5 README.md"),
    ("recursive read", "grep -rn TODO . | head -n 5"),
    ("ripgrep", "rg -n TODO | head -n 5"),
    ("run-time read", "for f in README.md; do cat \"$f\"; done"),
    ("history, patch", "git log -p -3 -- . ':(exclude)deploy'"),
    ("history, show", "git show --stat HEAD"),
    # What real agents typed most (issue 22): refused without the sandbox, run in it.
    ("sed range", "sed -n '1,20p' README.md"),
    ("python -c", "python3 -c 'print(1)'"),
    ("find | xargs", "find . -name '*.py' | xargs grep -l TODO | head -n 5"),
    ("grep --include", "grep -rn TODO --include='*.py' . | head -n 5"),
]


def _plant_secrets(repo: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                       env={"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
                            "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid",
                            "PATH": "/usr/bin:/bin"})

    (repo / "deploy").mkdir(exist_ok=True)
    (repo / "deploy" / ".env.production").write_text("TOKEN=bench\n")
    git("add", "-A")
    git("commit", "-qm", "a secret")
    git("rm", "-q", "deploy/.env.production")
    git("commit", "-qm", "no secret")
    (repo / ".env").write_text("TOKEN=bench\n")
    if not (repo / "README.md").exists():
        (repo / "README.md").write_text("# bench\n")


def _median(function, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        repo = Path(directory) / "repo"
        make_repo(repo, options.files)
        _plant_secrets(repo)
        policy = Policy(repo=repo)
        print(f"{'command':<16} {'run ms':>8} {'judge ms':>9} {'ratio':>6} {'sandboxed ms':>13}  decision "
              f"(unsandboxed / sandboxed)")
        for label, command in COMMANDS:
            decision = policy.check_command(command)  # warms git's cached history answer
            inside = policy.check_command(command, sandboxed=True)
            run = _median(lambda c=command: subprocess.run(["bash", "-c", c], cwd=repo, capture_output=True,
                                                            check=False), options.runs)
            judge = _median(lambda c=command: policy.check_command(c), options.runs)
            sandboxed = _median(lambda c=command: policy.check_command(c, sandboxed=True), options.runs)
            verdict = "allowed" if decision.allowed else "denied: " + decision.reason[:50]
            verdict += " / " + ("allowed" if inside.allowed else "denied")
            print(f"{label:<16} {run * 1000:>8.1f} {judge * 1000:>9.2f} {judge / run:>6.2f} {sandboxed * 1000:>13.2f}"
                  f"  {verdict}")


if __name__ == "__main__":
    main()
