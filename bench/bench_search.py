"""search_files against raw ripgrep (same binary, same pattern, same tree), measured in one run.

Trees: a generated repository (bench/gen_repo.py, 5,000+ files, 9 languages) and a copy of the
installed Python standard library in a temporary git repository. For each pattern, the median
wall time of N runs of:
  - raw rg:  `rg --no-config -e REGEX [--glob G] -- .` in the repository, all output read from a
             pipe (what an agent running rg through a shell would pay), and
  - the tool: search_files(ctx, {path, regex, file_pattern}) as the loop calls it, with the default
             Policy (every reported file passes check_read) and with an allow-all policy, which
             separates the tool's own overhead from the policy's per-file cost.
Runs alternate so background noise hits all alike. Goal: tool within 1.3x raw rg.

Run: .venv/bin/python bench/bench_search.py [--files 5000] [--runs 7]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_repo import make_repo
from gitbot.policy import Decision, Policy
from gitbot.secrets import Secrets
from gitbot.tools.base import ToolContext
from gitbot.tools.search import rg_binary, search_files

# (label, regex, file_pattern): a spread from nothing found to far past the cap.
PATTERNS = {
    "generated": [
        ("no match", r"zz_no_such_identifier_qq", None),
        ("few matches", r"class Token\w+:", None),
        ("under cap", r"fn \w+_webhook\(", None),
        ("over cap", r"TODO", None),
        ("over cap, glob", r"fn \w+_token\(", "*.rs"),
        ("common word", r"return", None),
    ],
    "stdlib": [
        ("no match", r"zz_no_such_identifier_qq", None),
        ("few matches", r"def __init_subclass__", None),
        ("under cap", r"class \w+Warning\(", "*.py"),
        ("over cap", r"TODO", None),
        ("over cap, glob", r"import\s+os$", "*.py"),
        ("common word", r"self", None),
    ],
}


class AllowAll(Policy):
    def check_read(self, relpath: str) -> Decision:
        return Decision(True, "benchmark: no file rules")


def copy_stdlib(target: Path) -> Path:
    """The installed standard library's sources in a fresh git repository (no compiled files)."""
    source = Path(sysconfig.get_paths()["stdlib"])
    shutil.copytree(source, target, symlinks=True,
                    ignore=shutil.ignore_patterns("site-packages", "__pycache__", "lib-dynload", "config-*",
                                                  "*.so", "*.pyc"))
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)
    return target


def raw_rg(repo: Path, regex: str, glob: str | None) -> float:
    command = [rg_binary(), "--no-config", "-e", regex] + (["--glob", glob] if glob else []) + ["--", "."]
    began = time.perf_counter()
    # stdin closed and an explicit path, as in the tool: with neither, rg would search stdin.
    subprocess.run(command, cwd=repo, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - began


def tool(ctx: ToolContext, regex: str, glob: str | None) -> tuple[float, str]:
    args = {"path": ".", "regex": regex} | ({"file_pattern": glob} if glob else {})
    began = time.perf_counter()
    text = search_files(ctx, args)
    return time.perf_counter() - began, text


def summary(text: str) -> str:
    first = text.splitlines()[0]
    return first.removeprefix("Too many results: ").split(" for ")[0][:38]


def bench_tree(name: str, repo: Path, runs: int) -> tuple[list[float], list[float]]:
    ctx = ToolContext(repo, Policy(), Secrets())
    bare = ToolContext(repo, AllowAll(), Secrets())
    ratios, bare_ratios = [], []
    print(f"\n{name}: {repo}")
    print(f"  {'pattern':<16} {'result':<40} {'raw rg ms':>9} {'tool ms':>8} {'ratio':>6} "
          f"{'allow-all ms':>12} {'ratio':>6}")
    for label, regex, glob in PATTERNS[name]:
        raw_rg(repo, regex, glob)  # warm the page cache for all
        _, text = tool(ctx, regex, glob)
        raw_times, tool_times, bare_times = [], [], []
        for _ in range(runs):
            raw_times.append(raw_rg(repo, regex, glob))
            tool_times.append(tool(ctx, regex, glob)[0])
            bare_times.append(tool(bare, regex, glob)[0])
        raw_ms, tool_ms, bare_ms = (statistics.median(times) * 1000
                                    for times in (raw_times, tool_times, bare_times))
        ratios.append(tool_ms / raw_ms)
        bare_ratios.append(bare_ms / raw_ms)
        print(f"  {label:<16} {summary(text):<40} {raw_ms:>9.1f} {tool_ms:>8.1f} {tool_ms / raw_ms:>6.2f} "
              f"{bare_ms:>12.1f} {bare_ms / raw_ms:>6.2f}")
    return ratios, bare_ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000, help="source files in the generated repository")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per pattern (the median is shown)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitbot-bench-search-") as tmp:
        began = time.perf_counter()
        generated = make_repo(Path(tmp) / "generated", options.files)
        stdlib = copy_stdlib(Path(tmp) / "stdlib")
        files = sum(1 for _ in stdlib.rglob("*.py"))
        print(f"setup: {options.files} generated files + stdlib copy ({files} .py files) in "
              f"{time.perf_counter() - began:.1f} s; rg {rg_binary()}; median of {options.runs} runs")
        results = [bench_tree("generated", generated, options.runs),
                   bench_tree("stdlib", stdlib, options.runs)]
    print()
    for label, ratios in (("default policy", results[0][0] + results[1][0]),
                          ("allow-all policy", results[0][1] + results[1][1])):
        print(f"search_files / raw rg, {label + ':':<18} median {statistics.median(ratios):.2f}, "
              f"geometric mean {statistics.geometric_mean(ratios):.2f}, worst {max(ratios):.2f} "
              f"(goal <= 1.3)")


if __name__ == "__main__":
    main()
