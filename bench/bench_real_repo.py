"""Real-repository mode: what each step of a run costs on one local work tree, as ratios to floors
measured in the same run.

    .venv/bin/python bench/bench_real_repo.py --repo /path/to/linux            # any git work tree
    .venv/bin/python bench/bench_real_repo.py --generate 30000                # bench/gen_repo.py tree
    .venv/bin/python bench/bench_real_repo.py --repo R --only search,definitions --runs 7

Sections (each figure is the median of --runs interleaved runs, printed as `tool / floor`):
  list_files   list_files(".", recursive) and (".") against `git ls-files` and against
               `git ls-files --cached --others --exclude-standard` (what the tool has to know)
  search       search_files against raw `rg -e PATTERN -- .` (output read from a pipe), for patterns
               calibrated on the tree: no match, few, under the 50-match cap, over it, one whose old
               `--json --context 1` stream is just over the 512 KB drain budget, and a common word
  checkpoints  the first checkpoint of a run (Checkpointer() + take(0)) and per-step ones after a
               file edit (touched=[path]), after a command (full scan) and after a command with the
               change watcher (checkpoints/watch.py) and its start, against `git status`
  definitions  list_code_definition_names cold (cache deleted) and warm on the directories with the
               most source files (or --definition-dir), against `ctags` over the same files; with
               --definition-tree, one call per directory of a whole tree against one ctags run
  fixcheck     `gitbot fix-check -- true` against `git status` and against `python -c pass`
  harness      harness overhead per step of an agent run on the loopback Messages API (wall time
               minus server time, minus the command's own run time), for execute_command steps (with a
               model that answers at once, and with one that takes --model-seconds, behind which a
               command's checkpoint is taken), for a command that writes a file, and for list_files
               steps, against `git status`

The repository is left as it was: per-step checkpoints write one scratch file (removed after),
gitbot's state under .git/gitbot is removed when this bench created it, otherwise its bench-* runs
stay for `gitbot checkpoints prune`. The definitions cache is deleted for cold runs (it is a cache).
Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitbot.policy import load_policy
from gitbot.secrets import Secrets
from gitbot.tools.base import ToolContext
from gitbot.tools.search import rg_binary

SECTIONS = ("list_files", "search", "checkpoints", "definitions", "fixcheck", "harness")
DRAIN_BUDGET_BYTES = 512_000  # search.py's old drain budget, kept here to find the pattern that hit it


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def run_quiet(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> bytes:
    return subprocess.run(command, cwd=cwd, env=env or clean_env(), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False).stdout


def interleaved(subjects: dict[str, Callable[[], object]], runs: int, warm: bool = True) -> dict[str, float]:
    """Median seconds per subject; runs alternate so background load hits all alike."""
    if warm:
        for fn in subjects.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in subjects}
    for _ in range(runs):
        for name, fn in subjects.items():
            began = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - began)
    return {name: statistics.median(values) for name, values in times.items()}


def line(label: str, seconds: float, floors: dict[str, float]) -> str:
    ratios = "  ".join(f"{seconds / floor:5.2f}x {name}" for name, floor in floors.items())
    return f"  {label:<46} {seconds * 1000:9.1f} ms   {ratios}"


def tracked(repo: Path) -> list[str]:
    return [os.fsdecode(p) for p in run_quiet(["git", "ls-files", "-z"], repo).split(b"\0") if p]


def git_status(repo: Path) -> Callable[[], object]:
    return lambda: run_quiet(["git", "status"], repo)


# ---------------------------------------------------------------- list_files

def bench_list_files(repo: Path, runs: int, status: float) -> None:
    from gitbot.tools import listing
    from gitbot.tools.files import list_files

    ctx = ToolContext(repo, load_policy(repo), Secrets())

    def first_call() -> None:
        listing.forget()
        list_files(ctx, {"path": ".", "recursive": True})

    times = interleaved({
        "ls-files": lambda: run_quiet(["git", "ls-files", "-z"], repo),
        "ls-files-co": lambda: run_quiet(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                         repo),
        "recursive": lambda: list_files(ctx, {"path": ".", "recursive": True}),
        "top": lambda: list_files(ctx, {"path": "."}),
        "first": first_call,
    }, runs)
    floors = {"git ls-files": times["ls-files"], "ls-files -co": times["ls-files-co"]}
    print("\nlist_files")
    print(line("floor: git ls-files", times["ls-files"], {}))
    print(line("floor: git ls-files --cached --others", times["ls-files-co"], {}))
    print(line("list_files('.', recursive=true)", times["recursive"], floors | {"git status": status}))
    print(line("  the same, first call of a process", times["first"], floors | {"git status": status}))
    print(line("list_files('.')", times["top"], floors))


# ---------------------------------------------------------------- search

WORD = re.compile(rb"\b[A-Za-z_][A-Za-z0-9_]{5,40}\b")


def word_lines(repo: Path, files: list[str], sample: int = 1500) -> tuple[Counter[bytes], float]:
    """Matching lines per word in a sample of the tracked files, and the factor to scale them to the tree."""
    step = max(1, len(files) // sample)
    counts: Counter[bytes] = Counter()
    read = 0
    for rel in files[::step]:
        try:
            data = (repo / rel).read_bytes()[:300_000]
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue
        read += 1
        for text in data.splitlines():
            counts.update(set(WORD.findall(text)))
    return counts, len(files) / max(read, 1)


def rg_lines(repo: Path, regex: str) -> int:
    out = run_quiet([rg_binary(), "--no-config", "--count", "--no-filename", "-e", regex, "--", "."], repo)
    return sum(int(n) for n in out.split())


def rg_json_bytes(repo: Path, regex: str) -> int:
    return len(run_quiet([rg_binary(), "--no-config", "--json", "--context", "1", "-e", regex, "--", "."], repo))


def calibrate_patterns(repo: Path) -> list[tuple[str, str]]:
    """(label, regex) spread over the cases search_files treats differently, chosen on this tree."""
    counts, scale = word_lines(repo, tracked(repo))
    estimated = sorted(((n * scale, w.decode()) for w, n in counts.items()), reverse=True)

    def near(target: float, low: int, high: int, tries: int = 8) -> str | None:
        """A word whose matching lines (counted by rg) fall in [low, high], or the closest tried."""
        pool = sorted(estimated, key=lambda item: (abs(math.log(item[0] / target)), item[1]))
        best: tuple[float, str] | None = None
        for _, word in pool[:tries * 7:7]:
            regex = rf"\b{word}\b"
            actual = rg_lines(repo, regex)
            if low <= actual <= high:
                return regex
            distance = abs(math.log(max(actual, 1) / target))
            if actual and (best is None or distance < best[0]):
                best = (distance, regex)
        return best[1] if best else None

    patterns = [("no match", "zz_no_such_identifier_qq")]
    for label, target, low, high in (("few matches", 6, 1, 20), ("under cap", 30, 15, 50),
                                     ("over cap", 250, 100, 1000)):
        found = near(target, low, high)
        if found:
            patterns.append((label, found))
    # The old stream's weak spot: JSON with context a little over the drain budget (rg was killed
    # near its end and a --count pass followed). 450-900 bytes of JSON per matching line with context.
    best: tuple[int, str] | None = None
    tried = [min(estimated, key=lambda item: abs(math.log(item[0] / lines)))[1]
             for lines in (450, 600, 800, 1000, 1300, 1700, 2200, 3000)] if estimated else []
    for word in dict.fromkeys(tried):
        size = rg_json_bytes(repo, rf"\b{word}\b")
        if DRAIN_BUDGET_BYTES < size and (best is None or size < best[0]):
            best = (size, rf"\b{word}\b")
    if best:
        patterns.append((f"drain+{(best[0] - DRAIN_BUDGET_BYTES) // 1024}K", best[1]))
    if estimated:
        patterns.append(("common word", rf"\b{estimated[0][1]}\b"))
    return patterns


def bench_search(repo: Path, runs: int) -> None:
    from gitbot.tools.search import search_files

    ctx = ToolContext(repo, load_policy(repo), Secrets())
    began = time.perf_counter()
    patterns = calibrate_patterns(repo)
    print(f"\nsearch (patterns calibrated in {time.perf_counter() - began:.1f} s; default policy)")
    worst = 0.0
    for label, regex in patterns:
        raw = [rg_binary(), "--no-config", "-e", regex, "--", "."]
        result: list[str] = []
        times = interleaved({"rg": lambda cmd=raw: run_quiet(cmd, repo),
                             "tool": lambda r=regex, out=result: out.append(search_files(ctx, {"path": ".",
                                                                                             "regex": r}))},
                            runs)
        summary = result[-1].splitlines()[0].removeprefix("Too many results: ").split(" for ")[0][:34]
        print(line(f"{label:<12} {regex[:30]:<30}", times["tool"], {"rg": times["rg"]}) + f"   [{summary}]")
        worst = max(worst, times["tool"] / times["rg"])
    print(f"  worst search_files / rg: {worst:.2f}x (goal <= 1.3)")


# ---------------------------------------------------------------- checkpoints

def bench_checkpoints(repo: Path, runs: int, status: float, tag: str) -> None:
    from gitbot.checkpoints import Checkpointer

    scratch = repo / f"gitbot-bench-scratch-{os.getpid()}.txt"
    firsts, touched, full, statuses, watching, watched = [], [], [], [], [], []
    try:
        for run in range(runs):
            began = time.perf_counter()
            cp = Checkpointer(repo, f"bench-{tag}-{run}")
            cp.take(0)
            firsts.append(time.perf_counter() - began)
            for step in range(1, 4):
                scratch.write_text(f"run {run} step {step}\n")
                began = time.perf_counter()
                cp.take(step, touched=[scratch.name])
                touched.append(time.perf_counter() - began)
            for step in range(4, 7):
                scratch.write_text(f"run {run} step {step}\n")
                began = time.perf_counter()
                cp.take(step)
                full.append(time.perf_counter() - began)
            # After a sandboxed command: what inotify says it changed (here: the scratch file), once the
            # watcher has walked the tree (in the background, while a run's first request is out) and the
            # next checkpoint took its baseline.
            began = time.perf_counter()
            cp.watch()
            cp._watcher.wait_ready()
            watching.append(time.perf_counter() - began)
            cp.take(7)  # the baseline
            for step in range(8, 11):
                scratch.write_text(f"run {run} step {step}\n")
                began = time.perf_counter()
                cp.take(step)
                watched.append(time.perf_counter() - began)
            cp.stop_watching()
            scratch.unlink()  # every run's first checkpoint sees the tree as it was, not this run's scratch file
            began = time.perf_counter()
            git_status(repo)()
            statuses.append(time.perf_counter() - began)
    finally:
        scratch.unlink(missing_ok=True)
    status = statistics.median(statuses + [status])
    print("\ncheckpoints")
    print(line("floor: git status", status, {}))
    print(line("first checkpoint (Checkpointer() + take(0))", statistics.median(firsts), {"git status": status}))
    print(line("per step after an edit (touched=[path])", statistics.median(touched), {"git status": status}))
    print(line("per step after a command (full scan)", statistics.median(full), {"git status": status}))
    print(line("the same, from inotify (one file changed)", statistics.median(watched), {"git status": status}))
    print(line("  the watcher's start, once per run", statistics.median(watching), {"git status": status}))


# ---------------------------------------------------------------- definitions

def definition_dirs(repo: Path, count: int) -> list[str]:
    from gitbot.tools.definitions import supports

    per_dir = Counter(os.path.dirname(rel) or "." for rel in tracked(repo) if supports(rel)
                      and not any(part.startswith(".") for part in rel.split("/")[:-1]))
    return [directory for directory, _ in per_dir.most_common(count)]


def bench_definitions(repo: Path, runs: int, directories: list[str]) -> None:
    from gitbot.tools.definitions import STATS, find_git_dir, list_code_definition_names, supports
    from gitbot.tools.tag_cache import CACHE_PATH_IN_GIT_DIR

    ctx = ToolContext(repo, load_policy(repo), Secrets())
    located = find_git_dir(repo)
    cache = located[1] / CACHE_PATH_IN_GIT_DIR if located else None
    print("\ndefinitions (cold: cache deleted before each call)")
    for directory in directories:
        files = sorted(os.path.join(directory, e.name) if directory != "." else e.name
                       for e in os.scandir(repo / directory) if e.is_file() and supports(e.name))

        def cold(d=directory) -> None:
            if cache is not None:
                cache.unlink(missing_ok=True)
            list_code_definition_names(ctx, {"path": d})

        def ctags(names=files) -> None:
            run_quiet(["ctags", "-f", "-", "--sort=no", *names], repo)

        parsed = STATS.files_parsed
        cold_times = interleaved({"ctags": ctags, "cold": cold}, runs)
        parsed = (STATS.files_parsed - parsed) // (runs + 1)
        warm = interleaved({"warm": lambda d=directory: list_code_definition_names(ctx, {"path": d})}, runs)["warm"]
        floors = {"ctags": cold_times["ctags"]}
        print(f"  {directory}: {len(files)} source files, {parsed} parsed per cold call")
        print(line("  floor: ctags over the same files", cold_times["ctags"], {}))
        print(line("  cold", cold_times["cold"], floors))
        print(line("  warm", warm, floors))


def bench_definitions_tree(repo: Path, runs: int, top: str) -> None:
    """One call per directory holding source files under `top` (the tool is one level deep), cold
    then warm, against one ctags run over every one of those files."""
    from gitbot.tools.definitions import STATS, list_code_definition_names, supports
    from gitbot.tools.tag_cache import CACHE_PATH_IN_GIT_DIR

    ctx = ToolContext(repo, load_policy(repo), Secrets())
    prefix = "" if top == "." else top.rstrip("/") + "/"
    files = [rel for rel in tracked(repo) if rel.startswith(prefix) and supports(rel)
             and not any(part.startswith(".") for part in rel.split("/")[:-1])]
    directories = sorted({os.path.dirname(rel) or "." for rel in files})
    cache = repo / ".git" / CACHE_PATH_IN_GIT_DIR
    names = "\n".join(files).encode()

    def one_pass() -> None:
        for directory in directories:
            list_code_definition_names(ctx, {"path": directory})

    def cold() -> None:
        cache.unlink(missing_ok=True)
        one_pass()

    def ctags() -> None:
        subprocess.run(["ctags", "-f", "-", "--sort=no", "-L", "-"], cwd=repo, input=names, capture_output=True,
                       check=False)

    parsed = STATS.files_parsed
    times = interleaved({"ctags": ctags, "cold": cold}, runs)
    parsed = (STATS.files_parsed - parsed) // (runs + 1)
    warm = interleaved({"warm": one_pass}, runs)["warm"]
    print(f"  {top} as a tree: {len(directories)} directories, {len(files)} source files, {parsed} parsed per "
          f"cold pass")
    print(line("  floor: ctags over all of them", times["ctags"], {}))
    print(line("  cold, one call per directory", times["cold"], {"ctags": times["ctags"]}))
    print(line("  warm, one call per directory", warm, {"ctags": times["ctags"]}))


# ---------------------------------------------------------------- fix-check

def installed_from(gitbot: str, repo: Path) -> str:
    """Where the gitbot executable's package comes from: "editable" (the source tree) or "installed"."""
    try:
        interpreter = Path(gitbot).read_bytes().split(b"\n", 1)[0].removeprefix(b"#!").strip().decode()
    except OSError:
        return "unknown"
    where = run_quiet([interpreter, "-c", "import gitbot; print(gitbot.__file__)"], repo).decode().strip()
    return "installed" if "site-packages" in where else f"editable ({where})"


def bench_fixcheck(repo: Path, runs: int, gitbot: str) -> None:
    editable = installed_from(gitbot, repo)
    times = interleaved({
        "status": git_status(repo),
        "python": lambda: run_quiet([sys.executable, "-c", "pass"], repo),
        "fixcheck": lambda: run_quiet([gitbot, "fix-check", "--", "true"], repo),
    }, runs)
    print(f"\nfix-check ({gitbot}, {editable})")
    print(line("floor: git status", times["status"], {}))
    print(line("floor: python -c pass", times["python"], {}))
    print(line("gitbot fix-check -- true", times["fixcheck"],
               {"git status": times["status"], "python -c pass": times["python"]}))


# ---------------------------------------------------------------- harness overhead

def run_overhead(repo: Path, calls: list[tuple[str, dict]], think: float = 0.0, check: str = "true") -> float:
    """Seconds of one scripted run not spent waiting on the model server."""
    import anthropic

    from gitbot.agent.run import RunOptions, run_task, with_limits
    from gitbot.llm.anthropic import AnthropicProvider
    from gitbot.record import load_events, runs_dir
    from gitbot.task import Task
    from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

    script = [tool_turn(call) for call in calls] + [tool_turn(("attempt_completion", {"result": "done"}))]
    with FakeMessagesAPI(script, think_seconds=think) as api:
        client = anthropic.Anthropic(base_url=api.url, api_key=api.api_key, max_retries=0)
        provider = AnthropicProvider("claude-sonnet-5-5", client=client)
        began = time.perf_counter()
        result = run_task(Task(text="Benchmark.", check_command=check), repo,
                          policy=with_limits(load_policy(repo), max_steps=len(calls) + 5), provider=provider,
                          secrets=Secrets(), options=RunOptions(max_tokens=4096, review_on_submit=False))
        wall = time.perf_counter() - began
    events = list(load_events(runs_dir(repo) / result.run_id))
    failed = [e for e in events if e["event"] == "tool_end" and e.get("is_error")]
    if failed or result.tool_calls != len(calls) + 1:
        raise RuntimeError(f"the scripted run did not run its steps ({result.status}): {failed[:1]}")
    return wall - sum(e["wait_seconds"] for e in events if e["event"] == "reply")


# Both runs of a pair start with these steps: what a run pays once (the first checkpoint, the change
# watcher's walk of the tree and its baseline scan, taken by the first command checkpoint after it) is in
# both, and the difference is what a step costs from then on.
WARM_UP_STEPS = 6


HARNESS_CASES = ("true", "true-think", "write", "list")


def bench_harness(repo: Path, runs: int, status: float, steps: int, think: float,
                  chosen: tuple[str, ...] = HARNESS_CASES) -> None:
    command = ("execute_command", {"command": "true"})
    listing = ("list_files", {"path": ".", "recursive": True})
    own = interleaved({"true": lambda: subprocess.run(["true"], check=False)}, runs)["true"]
    print(f"\nharness overhead per step ({steps} extra steps after {WARM_UP_STEPS}; difference of two runs, "
          f"fixed costs cancel)")
    print(line("floor: git status", status, {}))
    # A command's checkpoint is taken while the next request is out: with a model that answers at once it
    # is all overhead, with one that takes as long as a real one it is hidden behind the wait.
    # A command that changes a file: its checkpoint has one path to look at (the run's check command, so
    # that the default policy allows it).
    scratch = repo / "gitbot-bench-written.txt"
    writing = f"sh -c 'date +%N > {scratch.name}'"
    write_own = interleaved({"write": lambda: subprocess.run(["sh", "-c", f"date +%N > {scratch}"], check=False)},
                            runs)["write"]
    cases = [("execute_command `true`, model at once", command, own, 0.0, "true"),
             (f"execute_command `true`, model {think:g} s", command, own, think, "true"),
             ("execute_command writing a file, model at once", ("execute_command", {"command": writing}),
              write_own, 0.0, writing),
             ("list_files recursive step", listing, 0.0, 0.0, "true")]
    cases = [case for name, case in zip(HARNESS_CASES, cases) if name in chosen]
    try:
        for label, call, subtract, seconds, check in cases:
            short, long = [], []
            for _ in range(runs):
                short.append(run_overhead(repo, [call] * WARM_UP_STEPS, seconds, check))
                long.append(run_overhead(repo, [call] * (WARM_UP_STEPS + steps), seconds, check))
            per_step = (statistics.median(long) - statistics.median(short)) / steps - subtract
            print(line(label, per_step, {"git status": status}))
    finally:
        scratch.unlink(missing_ok=True)


# ---------------------------------------------------------------- main

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--repo", type=Path, help="a local git work tree")
    where.add_argument("--generate", type=int, metavar="FILES", help="generate a tree with bench/gen_repo.py")
    parser.add_argument("--runs", type=int, default=5, help="interleaved runs per figure (median shown)")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated subset of {SECTIONS}")
    parser.add_argument("--definition-dir", action="append", default=[],
                        help="a directory for the definitions figures (repeatable; default: the two with the most "
                             "source files)")
    parser.add_argument("--definition-tree", action="append", default=[],
                        help="a directory whose every subdirectory gets a call, cold and warm (repeatable)")
    parser.add_argument("--steps", type=int, default=4, help="extra steps for the harness figure")
    parser.add_argument("--harness-cases", default=",".join(HARNESS_CASES),
                        help=f"comma-separated subset of the harness figure's cases {HARNESS_CASES}")
    parser.add_argument("--model-seconds", type=float, default=1.0,
                        help="how long the loopback model takes per reply in the harness figure's second case")
    parser.add_argument("--gitbot", default=str(Path(sys.executable).with_name("gitbot")),
                        help="the gitbot executable for fix-check (measure a `pip install .`, not editable)")
    options = parser.parse_args()
    chosen = [s.strip() for s in options.only.split(",") if s.strip()]
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    with tempfile.TemporaryDirectory(prefix="gitbot-bench-real-") as tmp:
        if options.generate:
            from bench.gen_repo import make_repo

            repo = make_repo(Path(tmp) / "repo", options.generate)
        else:
            repo = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=options.repo, env=clean_env(),
                                       capture_output=True, text=True, check=True).stdout.strip())
        run(repo, chosen, options)


def run(repo: Path, chosen: list[str], options: argparse.Namespace) -> None:
    git_dir = Path(subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=repo, env=clean_env(),
                                  capture_output=True, text=True, check=True).stdout.strip())
    ours = not (git_dir / "gitbot").exists()
    version = run_quiet(["git", "version"], repo).decode().split()[-1]
    print(f"{repo}: {len(tracked(repo)):,} tracked files; git {version}; {os.cpu_count()} CPUs; "
          f"load {os.getloadavg()[0]:.1f}; median of {options.runs} interleaved runs")
    status = interleaved({"status": git_status(repo)}, options.runs)["status"]
    print(line("git status", status, {}))
    try:
        if "list_files" in chosen:
            bench_list_files(repo, options.runs, status)
        if "search" in chosen:
            bench_search(repo, options.runs)
        if "checkpoints" in chosen:
            bench_checkpoints(repo, options.runs, status, str(os.getpid()))
        if "definitions" in chosen:
            bench_definitions(repo, options.runs, options.definition_dir or definition_dirs(repo, 2))
            for top in options.definition_tree:
                bench_definitions_tree(repo, min(options.runs, 3), top)
        if "fixcheck" in chosen:
            bench_fixcheck(repo, options.runs, options.gitbot)
        if "harness" in chosen:
            bench_harness(repo, options.runs, status, options.steps, options.model_seconds,
                          tuple(c.strip() for c in options.harness_cases.split(",")))
    finally:
        if ours and (git_dir / "gitbot").is_dir():
            shutil.rmtree(git_dir / "gitbot")  # only gitbot's own state, and only when this bench created it
        elif not ours:
            print("\n(.git/gitbot existed before: this bench's runs are left for `gitbot checkpoints prune`)")


if __name__ == "__main__":
    main()
