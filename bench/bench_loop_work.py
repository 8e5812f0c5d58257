"""The agent loop's own work per step, outside the sandbox: a scripted run of execute_command `true` steps on
the loopback Messages API, minus the command (Runner.run_shell) and minus the wait for the server.

    .venv/bin/python bench/bench_loop_work.py --repo /path/to/repo [--runs 5] [--steps 30]

Two figures per step, each the difference of a run of 6 steps and one of 6 + --steps (fixed costs cancel),
median of --runs interleaved pairs:
  wall  the run's wall time minus run_shell's, minus the replies' wait_seconds
  cpu   the loop thread's CPU time minus run_shell's (the fake server's thread is not counted); on a
        loaded machine it swings much less than wall time
No profiler: its overhead on many small calls would dwarf what is measured. Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_real_repo as B

from gitbot.sandbox.runner import Runner

WARM_UP_STEPS = 6


class ShellClock:
    """Wall and CPU time spent inside Runner.run_shell (the command, not the loop)."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0
        self._original = Runner.run_shell

    def __enter__(self):
        clock, original = self, self._original

        def timed(runner, *args, **kwargs):
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return original(runner, *args, **kwargs)
            finally:
                clock.wall += time.perf_counter() - wall
                clock.cpu += time.thread_time() - cpu

        Runner.run_shell = timed
        return self

    def __exit__(self, *exc) -> None:
        Runner.run_shell = self._original


def own_work(repo: Path, steps: int) -> tuple[float, float]:
    """(wall, cpu) seconds of one run not spent in the command or waiting on the server."""
    call = ("execute_command", {"command": "true"})
    with ShellClock() as shell:
        cpu = time.thread_time()
        off_server = B.run_overhead(repo, [call] * steps)  # wall time minus the replies' wait_seconds
        cpu = time.thread_time() - cpu
    return off_server - shell.wall, cpu - shell.cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    options = parser.parse_args()
    own_work(options.repo, WARM_UP_STEPS)  # imports, caches
    short, long = [], []
    for _ in range(options.runs):
        short.append(own_work(options.repo, WARM_UP_STEPS))
        long.append(own_work(options.repo, WARM_UP_STEPS + options.steps))
    for i, name in enumerate(("wall", "cpu")):
        per_step = (statistics.median(r[i] for r in long) - statistics.median(r[i] for r in short)) / options.steps
        print(f"  loop's own work per step ({name}): {per_step * 1000:6.2f} ms")


if __name__ == "__main__":
    main()
