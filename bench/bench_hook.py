"""The hook fast path: what `gitbot hook run pre-commit` adds to checks that pass.

In one temporary repository whose [hooks.pre-commit] checks all pass, measured in the same run,
interleaved so that machine noise hits every variant alike:
  direct   the same check commands run one after another (what a hand-written hook costs)
  hook     the installed .git/hooks/pre-commit script, as git runs it (sh + Python + gitbot + checks)
  cli      `python -m gitbot hook run pre-commit` (what the pre-commit framework's entry runs)
  python   a bare `python -c pass` in the same interpreter, for scale
Prints the median wall time of each, the added milliseconds (hook − direct; goal < 60 ms, Python
start-up included) and the ratio hook / direct.

Run: .venv/bin/python bench/bench_hook.py [--runs 40]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitbot.hooks.install import install

CHECKS = ["true", "git diff --quiet HEAD -- README"]
GOAL_ADDED_MS = 60.0


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
    (repo / "README").write_text("bench\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    install(repo, "pre-commit", checks=CHECKS)
    return repo


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    runs = parser.parse_args().runs
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "GITBOT_"))}
    with tempfile.TemporaryDirectory(prefix="gitbot-bench-hook-") as tmp:
        repo = make_repo(Path(tmp))
        hook = str(repo / ".git" / "hooks" / "pre-commit")
        variants = {
            "direct": None,  # the checks one by one, each its own process, as a plain hook would run them
            "hook": [hook],
            "cli": [sys.executable, "-m", "gitbot", "hook", "run", "pre-commit"],
            "python": [sys.executable, "-c", "pass"],
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(3):  # warm the page cache, the .pyc files and the parsed-configuration cache
            for argv in variants.values():
                if argv:
                    timed(argv, repo, env)
        for _ in range(runs):
            for name, argv in variants.items():
                if argv is None:
                    times[name].append(sum(timed(shlex.split(c), repo, env) for c in CHECKS))
                else:
                    times[name].append(timed(argv, repo, env))
    median_ms = {name: statistics.median(values) * 1000 for name, values in times.items()}
    print(f"checks: {CHECKS}; {runs} interleaved runs of each; medians:")
    for name, value in median_ms.items():
        print(f"  {name:<7} {value:7.1f} ms")
    added = median_ms["hook"] - median_ms["direct"]
    added_cli = median_ms["cli"] - median_ms["direct"]
    verdict = "meets" if added < GOAL_ADDED_MS else "MISSES"
    print(f"added by the installed hook: {added:.1f} ms (goal < {GOAL_ADDED_MS:.0f} ms: {verdict}); "
          f"ratio hook/direct {median_ms['hook'] / median_ms['direct']:.1f}x")
    print(f"added by `python -m gitbot hook run`: {added_cli:.1f} ms; bare Python start-up: "
          f"{median_ms['python']:.1f} ms")
    # Python's own start-up swings with machine load; what gitbot itself adds on top of it is steadier.
    print(f"gitbot's own share (hook − direct − bare Python): {added - median_ms['python']:.1f} ms")


if __name__ == "__main__":
    main()
