"""The sandbox's filtered object store (gitbot/sandbox/filtered_store.py) on a real repository, as ratios
to `git rev-list --objects --all --reflog` (the walk any repack starts with) measured in the same run.

    .venv/bin/python bench/bench_history_store.py --repo /tmp/gitgit      # a clone of git/git
    .venv/bin/python bench/bench_history_store.py --repo R --skip-prepare  # judging only

Figures:
  baseline     rev-list --objects: seconds and peak memory (largest process, /usr/bin/time)
  prepare      a cold preparation (store removed first): seconds and peak memory of the largest process
               of the tree (python, git log, rev-list, pack-objects), the hidden blobs, the pack's size
  cached       asking again with nothing changed (stats only, no git)
  catch-up     after one new commit on a new branch (removed again): the incremental preparation
  judge        check_command for `git diff`, `git log -p -1`, `git show HEAD` under the default policy as a
               sandboxed run judges them (history left to the store): median and worst of --runs
  per command  what a sandboxed command's setup spends on the store (state check, refs, index copy),
               against `git status`
  sandboxed    the same commands run in the sandbox over the store: exit status, and whether the output
               shows the placeholder where a hidden file changed

The store is left in .git/gitbot/history-store/ (a cache; removed with --clean). Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitbot.policy import Policy
from gitbot.sandbox.filtered_store import FilteredStore
from gitbot.sandbox.mounts import git_directories
from gitbot.sandbox.objects import store_arguments

COMMANDS = ("git diff", "git log -p -1", "git show HEAD")
TIME = "/usr/bin/time"


def timed(argv: list[str], cwd: str, stdin: bytes | None = None) -> tuple[float, int, bytes]:
    """(seconds, peak KB of the largest process, stdout) of argv under /usr/bin/time."""
    started = time.perf_counter()
    done = subprocess.run([TIME, "-f", "MAXRSS %M", *argv], cwd=cwd, input=stdin, capture_output=True, check=True)
    elapsed = time.perf_counter() - started
    peak = int(re.findall(rb"MAXRSS (\d+)", done.stderr)[-1])
    return elapsed, peak, done.stdout


PREPARE = """
import json, sys, time
sys.path.insert(0, {root!r})
from gitbot.policy import Policy
from gitbot.sandbox.filtered_store import FilteredStore
policy = Policy(repo={repo!r})
store = FilteredStore({repo!r}, {common!r}, tuple(policy.read_deny), policy.file_rules.denies_read_by_name)
started = time.perf_counter()
state = store.prepare()
print(json.dumps({{"seconds": time.perf_counter() - started, "hidden": len(state["hidden"])}}))
"""


def prepare(repo: str, common: str) -> tuple[float, int, dict]:
    script = PREPARE.format(root=str(Path(__file__).resolve().parent.parent), repo=repo, common=common)
    elapsed, peak, out = timed([sys.executable, "-c", script], repo)
    return elapsed, peak, json.loads(out)


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", required=True)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--skip-prepare", action="store_true")
    parser.add_argument("--clean", action="store_true", help="remove the store afterwards")
    args = parser.parse_args()
    repo = os.path.realpath(args.repo)
    _git_dir, common = git_directories(repo)
    policy = Policy(repo=Path(repo))
    store = FilteredStore(repo, common, tuple(policy.read_deny), policy.file_rules.denies_read_by_name)

    if not args.skip_prepare:
        base_s, base_kb, listing = timed(["git", "rev-list", "--objects", "--all", "--reflog"], repo)
        print(f"baseline   rev-list --objects --all --reflog: {base_s:.1f} s, {base_kb / 1024:.0f} MB, "
              f"{len(listing.splitlines())} objects")
        shutil.rmtree(store.root, ignore_errors=True)
        cold_s, cold_kb, cold = prepare(repo, common)
        packs = list(Path(store.root, "objects", "pack").glob("*.pack"))
        size = sum(p.stat().st_size for p in packs) / 2**20
        print(f"prepare    cold: {cold_s:.1f} s ({cold_s / base_s:.2f}x baseline), largest process "
              f"{cold_kb / 1024:.0f} MB ({cold_kb / base_kb:.2f}x), {cold['hidden']} hidden blobs, "
              f"{len(packs)} pack(s) {size:.0f} MB")
        again = []
        for _ in range(5):
            started = time.perf_counter()
            store.view(wait=0)
            again.append(time.perf_counter() - started)
        print(f"cached     view() with nothing changed: median {statistics.median(again) * 1000:.2f} ms")
        git(repo, "branch", "-f", "bench-history-store", "HEAD")
        work = f"{repo}.bench-worktree"
        git(repo, "worktree", "add", "-q", work, "bench-history-store")
        try:
            Path(work, "bench-history-store.txt").write_text("one more commit\n")
            git(work, "add", "bench-history-store.txt")
            git(work, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "x")
            up_s, up_kb, _up = prepare(repo, common)
            print(f"catch-up   one new commit on a branch: {up_s:.1f} s ({up_s / base_s:.2f}x baseline), "
                  f"largest process {up_kb / 1024:.0f} MB")
        finally:
            git(repo, "worktree", "remove", "--force", work)
            git(repo, "branch", "-D", "bench-history-store")

    sandboxed = Policy(repo=Path(repo), history_hidden_by_sandbox=True)
    started = time.perf_counter()
    sandboxed.check_command("git status", sandboxed=True)
    print(f"judge      first judgement of the process (rules compiled, grammar loaded): "
          f"{(time.perf_counter() - started) * 1000:.1f} ms")
    for command in COMMANDS:
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            decision = sandboxed.check_command(command, sandboxed=True)
            times.append(time.perf_counter() - started)
        print(f"judge      {command!r}: allowed={decision.allowed}, median {statistics.median(times) * 1000:.2f} ms, "
              f"worst {max(times) * 1000:.2f} ms")

    from gitbot.sandbox.runner import Runner

    runner = Runner(policy, repo)
    if runner.sandboxed:
        hidden, _unreadable = runner.denied_files(Path(repo))
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            store_arguments(runner.store_view(Path(repo), hidden))
            times.append(time.perf_counter() - started)
        started = time.perf_counter()
        subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, check=True)
        status = time.perf_counter() - started
        print(f"per command  the store's part of a sandboxed command's setup: median "
              f"{statistics.median(times) * 1000:.2f} ms, worst {max(times) * 1000:.2f} ms "
              f"({statistics.median(times) / status:.3f}x `git status`, {status * 1000:.0f} ms)")
        for command in COMMANDS:
            run = runner.run_shell(command, 300)
            print(f"sandboxed  {command!r}: exit {run.exit_code}, {run.output_bytes} bytes, "
                  f"{run.duration:.2f} s, placeholder shown: {'hidden by gitbot' in run.output}")
    if args.clean:
        shutil.rmtree(store.root, ignore_errors=True)


if __name__ == "__main__":
    main()
