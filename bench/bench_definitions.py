"""list_code_definition_names with a cold cache (every file parsed) against a warm one, in one run.

Trees: a copy of the installed Python standard library in a temporary git repository, and a
generated repository (bench/gen_repo.py, 5,000 files in 9 languages). For each tree the tool
is called on every directory holding source files (top level only, as the tool works):
  - cold: the cache file deleted first, so every file is parsed (the fresh-parse baseline);
  - warm: the same calls again, median of N passes; nothing is parsed (checked by the counter).
Goal: warm at least 10x faster than cold.

Run: .venv/bin/python bench/bench_definitions.py [--files 5000] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_search import copy_stdlib
from bench.gen_repo import make_repo
from gitbot.policy import Policy
from gitbot.secrets import Secrets
from gitbot.tools.base import ToolContext
from gitbot.tools.definitions import STATS, list_code_definition_names, supports
from gitbot.tools.tag_cache import CACHE_PATH_IN_GIT_DIR


def source_directories(repo: Path) -> list[str]:
    """Directories holding supported source files, skipping tests, build output and hidden trees."""
    found = {path.parent.relative_to(repo).as_posix() for path in repo.rglob("*")
             if path.is_file() and supports(path) and ".git" not in path.parts
             and not any(part in ("test", "tests", "build", "node_modules") or part.startswith(".")
                         for part in path.relative_to(repo).parts[:-1])}
    return sorted(found)


def one_pass(ctx: ToolContext, directories: list[str]) -> tuple[float, int, int]:
    """Seconds, files parsed and definition lines shown for one call per directory."""
    parsed = STATS.files_parsed
    shown = 0
    began = time.perf_counter()
    for directory in directories:
        output = list_code_definition_names(ctx, {"path": directory})
        shown += sum(1 for line in output.splitlines() if " | " in line)
    return time.perf_counter() - began, STATS.files_parsed - parsed, shown


def bench_tree(name: str, repo: Path, runs: int) -> float:
    ctx = ToolContext(repo, Policy(), Secrets())
    directories = source_directories(repo)
    (repo / ".git" / CACHE_PATH_IN_GIT_DIR).unlink(missing_ok=True)
    cold, parsed, shown = one_pass(ctx, directories)
    warm_passes = [one_pass(ctx, directories) for _ in range(runs)]
    warm = statistics.median(seconds for seconds, _, _ in warm_passes)
    reparsed = sum(count for _, count, _ in warm_passes)
    speedup = cold / warm
    print(f"{name:<10} {len(directories):>5} dirs {parsed:>6} files parsed {shown:>7} definitions | "
          f"cold {cold * 1000:>8.1f} ms  warm {warm * 1000:>7.1f} ms "
          f"({warm * 1000 / len(directories):.2f} ms/call, {reparsed} re-parsed) | speedup {speedup:>5.1f}x")
    return speedup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000, help="source files in the generated repository")
    parser.add_argument("--runs", type=int, default=5, help="warm passes (the median is shown)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitbot-bench-definitions-") as tmp:
        began = time.perf_counter()
        stdlib = copy_stdlib(Path(tmp) / "stdlib")
        generated = make_repo(Path(tmp) / "generated", options.files)
        print(f"setup: stdlib copy + {options.files} generated files in {time.perf_counter() - began:.1f} s; "
              f"warm = median of {options.runs} passes")
        speedups = [bench_tree("stdlib", stdlib, options.runs),
                    bench_tree("generated", generated, options.runs)]
    print(f"\nwarm vs cold: {min(speedups):.1f}x to {max(speedups):.1f}x faster (goal >= 10x)")


if __name__ == "__main__":
    main()
