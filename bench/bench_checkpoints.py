"""Checkpoint cost on generated repositories, as ratios against baselines measured in the same run.

    .venv/bin/python bench/bench_checkpoints.py                 # 5,000 and 50,000 files
    .venv/bin/python bench/bench_checkpoints.py --files 20000 --steps 15

For each size: a committed repository from bench/gen_repo.py; then, with one file changed per
step (median over --steps steps):
- `git status` in the user's repository (the baseline the issue budgets against);
- gitbot's Checkpointer: its first checkpoint (seeding the private index from the user's), then
  per-step checkpoints with touched=[path] (after a file tool) and touched=None (after a command);
- the naive design: a separate shadow repository with its own index and object store, running
  `git add -A && git commit` on every step, including its first (which hashes every file).
Goals from issue 4: median per-step checkpoint <= 2x git status; >= 5x faster than naive at 50,000 files.
Then (issue 22) the start of a run with an ignored `.venv` of --venv-files files added: the first
checkpoint, which now also captures the ignored files within caps and names the `.venv` as kept
read-only instead, and that capture alone. Per-step checkpoints do not change: the capture is once.
Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_repo import make_repo
from gitbot.checkpoints import Checkpointer
from gitbot.policy.defaults import DEFAULT_READ_DENY

ISOLATED = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid", "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(ISOLATED)
    env.update(extra)
    return env


def timed(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def tracked_files(repo: Path, count: int) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True, env=clean_env()).stdout
    files = [os.fsdecode(p) for p in out.split(b"\0") if p and not p.endswith(b".png")]
    stride = max(1, len(files) // (count + 1))
    return files[::stride][:count]


def touch(repo: Path, rel: str, step: int) -> None:
    with open(repo / rel, "a", encoding="utf-8") as f:
        f.write(f"# edited at step {step}\n")


def bench_start_with_venv(repo: Path, venv_files: int, status: float, first: float) -> dict[str, float]:
    """The first checkpoint once the tree also has an ignored `.venv` of `venv_files` files (in 100-file
    directories, as site-packages has), and the ignored files' capture alone (median of three)."""
    from gitbot.checkpoints.ignored import capture_ignored

    venv = repo / ".venv" / "lib" / "site-packages"
    for i in range(venv_files):
        package = venv / f"pkg_{i // 100}"
        if i % 100 == 0:
            package.mkdir(parents=True, exist_ok=True)
        (package / f"mod_{i % 100}.py").write_text(f"X = {i}\n")
    exclude = repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text(".venv/\n")
    starts, captures = [], []
    for k in range(3):
        cp = Checkpointer(repo, f"bench-venv-{k}")
        starts.append(timed(lambda cp=cp: cp.take(0)))
        captures.append(timed(lambda cp=cp, k=k: capture_ignored(cp.shadow, cp.index, f"bench-venv-again-{k}",
                                                                  size_cap_bytes=cp.size_cap_bytes, denied=None)))
    kept = cp.unrestorable()
    result = {"venv_first": statistics.median(starts), "venv_capture": statistics.median(captures)}
    print(f"with an ignored .venv of {venv_files} files (kept read-only: {sorted(kept)}):")
    print(f"  gitbot first checkpoint (step 0)                  {result['venv_first'] * 1000:8.1f} ms"
          f"   = {result['venv_first'] / status:.2f}x git status, {result['venv_first'] / first:.2f}x without the .venv")
    print(f"  of which the ignored files' capture               {result['venv_capture'] * 1000:8.1f} ms"
          f"   = {result['venv_capture'] / status:.2f}x git status")
    shutil.rmtree(repo / ".venv")
    exclude.write_text("")
    return result


def bench_size(n_files: int, steps: int, workdir: Path, venv_files: int = 50_000) -> dict[str, float]:
    repo = workdir / f"repo-{n_files}"
    began = time.perf_counter()
    make_repo(repo, n_files)
    print(f"\n== {n_files} files (generated and committed in {time.perf_counter() - began:.1f} s)")
    env = clean_env()
    targets = tracked_files(repo, 5 * steps + 4)
    cursor = iter(range(len(targets)))

    def status() -> None:
        subprocess.run(["git", "status"], cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)

    for _ in range(2):  # warm the page cache and refresh the user's index once, as a real user's would be
        status()
    status_times = []
    for step in range(steps):
        touch(repo, targets[next(cursor)], step)
        status_times.append(timed(status))

    cp = Checkpointer(repo, "bench-run")
    first = timed(lambda: cp.take(0))
    touched_times, full_times = [], []
    for step in range(1, steps + 1):
        rel = targets[next(cursor)]
        touch(repo, rel, step)
        began = time.perf_counter()
        cp.take(step, touched=[rel])
        touched_times.append(time.perf_counter() - began)
    for step in range(steps + 1, 2 * steps + 1):
        touch(repo, targets[next(cursor)], step)
        began = time.perf_counter()
        cp.take(step)
        full_times.append(time.perf_counter() - began)
    assert cp.stats()["mode"] == "per_step", cp.stats()

    # The same with the default read_deny rules, as a run builds it (issue 12): every path is matched
    # against them when the index is seeded, and each scanned path again.
    denying = Checkpointer(repo, "bench-run-read-deny", read_deny=DEFAULT_READ_DENY)
    first_denying = timed(lambda: denying.take(0))
    denying_times = []
    for step in range(1, steps + 1):
        touch(repo, targets[next(cursor)], 1000 + step)
        began = time.perf_counter()
        denying.take(step)
        denying_times.append(time.perf_counter() - began)

    start = bench_start_with_venv(repo, venv_files, statistics.median(status_times), first)

    naive_dir = workdir / f"naive-{n_files}.git"
    subprocess.run(["git", "init", "-q", "--bare", "--template=", str(naive_dir)], check=True, env=clean_env())
    naive_env = clean_env(GIT_DIR=str(naive_dir), GIT_WORK_TREE=str(repo), GIT_INDEX_FILE=str(naive_dir / "index"))

    def naive_checkpoint() -> None:
        subprocess.run(["git", "add", "-A"], cwd=repo, env=naive_env, check=True)
        subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "--no-verify", "--allow-empty",
                        "-m", "checkpoint"], cwd=repo, env=naive_env, check=True, stdout=subprocess.DEVNULL)

    naive_first = timed(naive_checkpoint)
    naive_times = []
    for step in range(steps):
        touch(repo, targets[next(cursor)], 100 + step)
        naive_times.append(timed(naive_checkpoint))

    result = {"status": statistics.median(status_times), "first": first,
              "touched": statistics.median(touched_times), "full": statistics.median(full_times),
              "naive_first": naive_first, "naive": statistics.median(naive_times),
              "first_read_deny": first_denying, "full_read_deny": statistics.median(denying_times), **start}
    ms = {k: v * 1000 for k, v in result.items()}
    print(f"git status (user repo, one file changed)     median {ms['status']:8.1f} ms")
    print(f"gitbot first checkpoint (step 0)                    {ms['first']:8.1f} ms"
          f"   = {result['first'] / result['status']:.2f}x git status")
    print(f"gitbot per step, touched=[path] (file tool)  median {ms['touched']:8.1f} ms"
          f"   = {result['touched'] / result['status']:.2f}x git status")
    print(f"gitbot per step, touched=None (command ran)  median {ms['full']:8.1f} ms"
          f"   = {result['full'] / result['status']:.2f}x git status")
    print(f"  with the default read_deny rules: first          {ms['first_read_deny']:8.1f} ms"
          f"   = {result['first_read_deny'] / result['first']:.2f}x without")
    print(f"  with the default read_deny rules: touched=None median {ms['full_read_deny']:8.1f} ms"
          f"   = {result['full_read_deny'] / result['full']:.2f}x without")
    print(f"naive first checkpoint (add -A && commit)           {ms['naive_first']:8.1f} ms"
          f"   = {result['naive_first'] / result['first']:.1f}x gitbot's first")
    print(f"naive per step                               median {ms['naive']:8.1f} ms"
          f"   = {result['naive'] / result['touched']:.1f}x gitbot touched, "
          f"{result['naive'] / result['full']:.1f}x gitbot full scan")
    run_ours = result["first"] + steps * result["full"]
    run_naive = result["naive_first"] + steps * result["naive"]
    print(f"a {steps}-step run incl. the first checkpoint: gitbot {run_ours * 1000:.0f} ms (full scans) vs naive "
          f"{run_naive * 1000:.0f} ms = {run_naive / run_ours:.1f}x")
    shutil.rmtree(repo, ignore_errors=True)
    shutil.rmtree(naive_dir, ignore_errors=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, action="append", help="repository size (repeatable); "
                                                                   "default 5000 and 50000")
    parser.add_argument("--steps", type=int, default=10, help="steps per measurement (default 10)")
    parser.add_argument("--venv-files", type=int, default=50_000, help="files in the ignored .venv (default 50000)")
    args = parser.parse_args()
    sizes = args.files or [5000, 50000]
    version = subprocess.run(["git", "version"], capture_output=True, text=True, check=True).stdout.split()[-1]
    print(f"git {version}, {os.cpu_count()} CPUs, {args.steps} steps per median")
    with tempfile.TemporaryDirectory(prefix="gitbot-bench-ckpt-") as tmp:
        for n in sizes:
            bench_size(n, args.steps, Path(tmp), args.venv_files)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
