"""gitbot's own per-command time around a sandboxed command, against `git status` in the same run.

A step of the agent runs one command through `Runner.run_shell`. Around the child process (the
launcher, bubblewrap and the command) gitbot does its own work in its own process: the read_deny
walk before the command and again after it, the git metadata snapshot and check (planted.py), the
bubblewrap command line (bwrap.py, layout.py), the filtered store's view, the environment. This
bench times exactly that part:

  own       all of `Runner._run` except `run_command` (the child's whole lifetime: spawn, wait, the
            process budget's cgroup write), the process budget's cgroup made and removed around it
            (`ProcessLimit`) and the launcher's rewrite of the bubblewrap argv (`confine.unprivileged`),
            which the launcher work owns; as wall time and as gitbot's CPU time
  step      the whole `run_shell("true")`, for scale
  status    `git status` in the same repository, interleaved (the figure issue 22 compares against)

Run (a git work tree, or a generated one of N files):
    .venv/bin/python bench/bench_step_overhead.py --repo /tmp/some-clone [--runs 40]
    .venv/bin/python bench/bench_step_overhead.py --generate 30000
The repository gets gitbot's state in its git directory (the read_deny index, the filtered store):
use a clone you may write to. With --profile, a cProfile of the own part's hottest functions follows.
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

from gitbot.policy import load_policy
from gitbot.sandbox import confine, processes, runner


class OwnTimer:
    """Wraps the calls that are not gitbot's own work, and adds up how long they took per step."""

    def __init__(self) -> None:
        self.excluded = 0.0
        self.excluded_cpu = 0.0  # this thread's CPU time in them
        self._patched: list[tuple[object, str, object]] = []

    def exclude(self, owner: object, name: str) -> None:
        original = getattr(owner, name, None)
        if original is None:
            return  # not in this version of the code

        def timed(*args, **kwargs):
            began, began_cpu = time.perf_counter(), time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.excluded += time.perf_counter() - began
                self.excluded_cpu += time.thread_time() - began_cpu

        self._patched.append((owner, name, original))
        setattr(owner, name, timed)

    def restore(self) -> None:
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)


def git_status(repo: Path) -> None:
    subprocess.run(["git", "status"], cwd=repo, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)


def ready_runner(repo: Path) -> runner.Runner:
    made = runner.Runner(load_policy(repo), repo)
    if not made.sandboxed:
        sys.exit(f"bubblewrap does not work here ({made.status.description}): nothing to measure")
    if made.history is not None:
        began = time.perf_counter()
        while True:  # the filtered store is prepared in the background once per repository state
            try:
                made.store_view()
                break
            except runner.SandboxRefused:
                time.sleep(1)
        print(f"filtered store ready after {time.perf_counter() - began:.1f} s")
    return made


def measure(repo: Path, runs: int, profile: bool) -> None:
    step_runner = ready_runner(repo)
    timer = OwnTimer()
    timer.exclude(runner, "run_command")
    timer.exclude(confine, "unprivileged")
    # The command's process budget (a pids cgroup made and removed around it) belongs to the launcher too.
    limit = getattr(processes, "ProcessLimit", None)
    if limit is not None:
        timer.exclude(limit, "__enter__")
        timer.exclude(limit, "__exit__")
    own: list[float] = []
    own_cpu: list[float] = []
    steps: list[float] = []
    status: list[float] = []
    try:
        for _ in range(3):  # warm: the first walk reads every directory, caches fill
            step_runner.run_shell("true", 30)
            git_status(repo)
        for _ in range(runs):
            timer.excluded = timer.excluded_cpu = 0.0
            began, began_cpu = time.perf_counter(), time.thread_time()
            step_runner.run_shell("true", 30)
            took, took_cpu = time.perf_counter() - began, time.thread_time() - began_cpu
            steps.append(took)
            own.append(took - timer.excluded)
            own_cpu.append(took_cpu - timer.excluded_cpu)
            began = time.perf_counter()
            git_status(repo)
            status.append(time.perf_counter() - began)
        if profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(runs):
                step_runner.run_shell("true", 30)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
    finally:
        timer.restore()
    own_ms = statistics.median(own) * 1000
    status_ms = statistics.median(status) * 1000
    print(f"repository: {repo} ({runs} interleaved runs, medians)")
    print(f"  gitbot's own work per command   {own_ms:7.2f} ms   {own_ms / status_ms:5.2f}x git status")
    print(f"  whole step (run_shell 'true')   {statistics.median(steps) * 1000:7.2f} ms")
    print(f"  git status                      {status_ms:7.2f} ms")
    print(f"  own work, best of the runs      {min(own) * 1000:7.2f} ms")
    print(f"  own work, CPU time (median)     {statistics.median(own_cpu) * 1000:7.2f} ms   (gitbot's thread: "
          f"not the time it waited for a CPU, which a loaded machine adds to the first figure)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--repo", type=Path, help="a git work tree gitbot may keep its state in")
    where.add_argument("--generate", type=int, metavar="FILES", help="generate a tree with bench/gen_repo.py")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--profile", action="store_true", help="then profile the steps (cProfile, by own time)")
    options = parser.parse_args()
    if options.repo:
        measure(options.repo.resolve(), options.runs, options.profile)
        return
    from bench.gen_repo import make_repo

    with tempfile.TemporaryDirectory(prefix="gitbot-bench-step-") as scratch:
        repo = make_repo(Path(scratch) / "repo", options.generate)
        measure(Path(repo).resolve(), options.runs, options.profile)


if __name__ == "__main__":
    main()
