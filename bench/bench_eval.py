"""`gitbot eval`: what mining and the harness cost, as figures and ratios to `git worktree add` measured in
the same run.

    .venv/bin/python bench/bench_eval.py --repo /path/to/a/python/checkout     # e.g. a clone of pallets/click
    .venv/bin/python bench/bench_eval.py --repo R --instances 10 --runs 5

Sections:
  scan     mining's walk of the history (history.first_parent_commits over every first-parent commit and
           the code-and-tests filter): commits scanned per second and the candidates found. The tests
           that validate a candidate are not run here: they need the project's own environment.
  harness  the harness's own work per instance on --instances candidates of --repo, excluding the model and
           the tests: the worktree at the base commit, the held-back tests put in and taken out again for the
           check before (resolve.check_before without its test run), the change read back as a patch
           (workspace.changes_since; here the commit's own fix plays the agent's edit), the judge's reset of
           the tree with that patch and the tests put back (resolve.judge without its test run), and the
           worktree removed; against `git worktree add` + remove of the same commit.
  validate mining with the tests: `gitbot eval mine` (in process) on the demo history the bundled set is built
           from (tests/eval/demo_set.py): seconds per candidate (three runs of its suite in the sandbox), and
           the same suite run once with plain `python3 -m unittest` outside any sandbox, for scale
  replay   the bundled offline set run for real (`gitbot eval run --replay`, in process): per instance, the
           wall time minus the agent's and the tests' time, against `git worktree add` + remove of the
           demo repository in the same run.
Prints; asserts nothing. The repository is left as it was (worktrees are removed and pruned).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitbot.eval.history import first_parent_commits
from gitbot.eval.instances import Instance
from gitbot.eval.resolve import put_back_tests
from gitbot.eval.workspace import (
    add_worktree,
    apply_patch,
    changes_since,
    patch_paths,
    remove_worktree,
    reset_tree,
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def plain_worktree(repo: Path, commit: str, where: Path) -> float:
    start = time.perf_counter()
    git(repo, "worktree", "add", "--detach", "--quiet", str(where), commit)
    git(repo, "worktree", "remove", "--force", str(where))
    return time.perf_counter() - start


def scan(repo: Path, runs: int) -> list:
    times, commits = [], []
    for _ in range(runs):
        start = time.perf_counter()
        commits = first_parent_commits(repo, 10_000_000)
        candidates = [c for c in commits if c.is_candidate]
        times.append(time.perf_counter() - start)
    best = statistics.median(times)
    print(f"scan     {len(commits)} first-parent commits in {best:.3f} s (median of {runs}): "
          f"{len(commits) / best:,.0f} commits/s; {len(candidates)} candidates change code and tests")
    return candidates


def diff(repo: Path, a: str, b: str, paths: list[str]) -> str:
    return subprocess.run(["git", "diff", "--binary", "--no-renames", a, b, "--", *paths], cwd=repo,
                          capture_output=True, text=True, check=True).stdout


def harness(repo: Path, candidates: list, count: int, runs: int) -> None:
    ratios, ours, floors = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
        for commit in candidates[:count]:
            base = commit.parents[0]
            code = diff(repo, base, commit.sha, commit.code_files)
            test_patch = diff(repo, base, commit.sha, commit.test_files)
            instance = Instance(commit.sha[:12], "bench", base, "", test_patch, ["x"])
            for run in range(runs):
                floor = plain_worktree(repo, base, Path(tmp) / f"floor-{run}")
                start = time.perf_counter()
                agent = Path(tmp) / f"agent-{run}"
                add_worktree(repo, base, agent)
                put_back_tests(agent, instance, base)
                reset_tree(agent, base)
                subprocess.run(["git", "apply", "--binary", "-"], cwd=agent, input=code, text=True, check=True)
                patch = changes_since(agent, base, leave_out=patch_paths(test_patch))
                reset_tree(agent, base)
                apply_patch(agent, patch, "the patch")
                put_back_tests(agent, instance, base)
                remove_worktree(repo, agent)
                took = time.perf_counter() - start
                ours.append(took)
                floors.append(floor)
                ratios.append(took / floor)
    print(f"harness  {len(ratios) // runs} instances × {runs}: {statistics.median(ours) * 1000:.0f} ms per instance "
          f"(median) against {statistics.median(floors) * 1000:.0f} ms for `git worktree add` + remove: "
          f"ratio {statistics.median(ratios):.2f} (median of per-run ratios)")


def replay() -> None:
    from gitbot.eval.attempt import Settings
    from gitbot.eval.batch import run_batch
    from gitbot.eval.instances import read_instances

    bundled = Path(__file__).resolve().parent.parent / "gitbot" / "data" / "eval" / "instances.jsonl"
    instances, _ = read_instances(bundled)
    with tempfile.TemporaryDirectory(prefix="bench-eval-replay-") as tmp:
        out = Path(tmp) / "out"
        rows, _ = run_batch(instances, Settings(out=out, instances_dir=bundled.parent, replay=True))
        demo = next((out / "repos").iterdir())
        floors = [plain_worktree(demo, instance.base_commit, Path(tmp) / f"floor-{n}")
                  for n, instance in enumerate(instances)]
    own = [row["timings"]["total"] - row["timings"].get("agent", 0) - row["timings"].get("tests_before", 0)
           - row["timings"].get("tests_after", 0) for row in rows]
    tests = [row["timings"].get("tests_before", 0) + row["timings"].get("tests_after", 0) for row in rows]
    print(f"replay   {len(rows)} bundled instances: harness {statistics.median(own) * 1000:.0f} ms per instance "
          f"(median; wall minus agent minus tests), `git worktree add` + remove {statistics.median(floors) * 1000:.0f} "
          f"ms: ratio {statistics.median(own) / statistics.median(floors):.2f}; tests {statistics.median(tests):.2f} s, "
          f"agent {statistics.median(row['timings']['agent'] for row in rows):.2f} s per instance")


def validate() -> None:
    from gitbot.eval.mine import mine
    from tests.eval.demo_set import TEST_CMD, make_history

    with tempfile.TemporaryDirectory(prefix="bench-eval-mine-") as tmp:
        repo = Path(tmp) / "demo"
        make_history(repo)
        candidates = [c for c in first_parent_commits(repo, 1000) if c.is_candidate]
        start = time.perf_counter()
        found = mine(repo, max_commits=1000, test_cmd=TEST_CMD)
        took = time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run(TEST_CMD.split(), cwd=repo, capture_output=True, check=False)
        plain = time.perf_counter() - start
    print(f"validate {len(candidates)} candidates of the demo history → {len(found)} instances in {took:.2f} s: "
          f"{took / len(candidates):.2f} s per candidate; one plain run of its suite {plain * 1000:.0f} ms "
          f"(ratio {took / len(candidates) / plain:.1f} for three sandboxed runs and the checkouts)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a git work tree with a long history")
    parser.add_argument("--instances", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    repo = args.repo.resolve()
    print(f"repository {repo} at {git(repo, 'rev-parse', '--short', 'HEAD').strip()}, "
          f"{git(repo, 'rev-list', '--count', 'HEAD').strip()} commits; git {git(repo, '--version').split()[-1]}")
    candidates = scan(repo, args.runs)
    harness(repo, candidates, args.instances, args.runs)
    validate()
    replay()
    git(repo, "worktree", "prune")


if __name__ == "__main__":
    shutil.which("git") or sys.exit("git is not installed")
    main()
