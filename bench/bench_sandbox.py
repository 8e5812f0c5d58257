"""What running one command through the sandbox costs, and building the toolchain view.

In one temporary repository, measured in the same run and interleaved so machine noise hits every
variant alike:
  direct      `true` started with subprocess (the floor)
  sandboxed   Runner.run_shell("true") with [sandbox] mode "required" (bubblewrap, the user's
              toolchain mounted, and as root the privilege-dropping helper)
  contained   Runner.run_shell("true") confined without namespaces (Landlock and seccomp, contain.py: what
              a container without user namespaces gets), forced here beside a working bubblewrap
  unsandboxed Runner.run_shell("true") with mode "off" (the Landlock helper)
  view        building the toolchain view from this process's environment (once per run)
Prints the median of each and the ratios against `direct`, and contained against sandboxed.

Run: .venv/bin/python bench/bench_sandbox.py [--runs 30]
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

from gitbot.policy import Policy
from gitbot.sandbox.runner import Runner
from gitbot.sandbox.toolchain import build_view


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="gitbot-bench-sandbox-") as scratch:
        repo = Path(scratch) / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
        sandboxed = Runner(Policy(repo=repo, sandbox_mode="required"), repo)
        unsandboxed = Runner(Policy(repo=repo, sandbox_mode="off"), repo)
        contained = Runner(Policy(repo=repo, sandbox_mode="required"), repo)
        contained.sandboxed, contained.contained = False, True  # what the Runner picks where bwrap cannot start
        variants = {
            "direct": lambda: subprocess.run(["true"], check=True),
            "sandboxed": lambda: sandboxed.run_shell("true", 30),
            "contained": lambda: contained.run_shell("true", 30),
            "unsandboxed": lambda: unsandboxed.run_shell("true", 30),
            "view": lambda: build_view(repo=repo),
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(runs):
            for name, action in variants.items():
                times[name].append(timed(action))
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    for name, ms in medians.items():
        print(f"{name:12s} {ms:8.1f} ms   ({ms / medians['direct']:.1f}x direct)")
    print(f"contained / sandboxed: {medians['contained'] / medians['sandboxed']:.2f}x")


if __name__ == "__main__":
    main()
