"""The secret scanner's cost where it runs, as ratios against baselines measured in the same run.

    .venv/bin/python bench/bench_secretscan.py            # 1 MB diff, 50-step record, 5 repeats
    .venv/bin/python bench/bench_secretscan.py --repeat 9
    .venv/bin/python bench/bench_secretscan.py --against 5a48368^   # scan_diff with the scanner of a commit

- a 1 MB diff (real `git diff` of a commit touching Python files from the standard library):
  `scan_diff` (known values + every scanner rule, with line numbers) against producing the diff with
  `git diff` (what the Action does right before) and against the old scan (known values and two
  token shapes, one regex); with `--against REV`, also against scan_diff using gitbot/secretscan.py as it
  was at REV (a rule change must keep within 2x), the two timed in turn;
- the record of a 50-step run (tool outputs of a few kB each, replies, checkpoints): `RunRecord.event`
  with scrubbing against the same events written without it (json.dumps + write, the old record);
- with detect-secrets installed (a test dependency), its `scan_line` over the same diff, for scale (minutes).
Prints medians; asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import gitbot.secrets
from gitbot.forge.leaks import scan_diff
from gitbot.record import RunRecord
from gitbot.secrets import Secrets

ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, "GIT_CONFIG_NOSYSTEM": "1",
       "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
       "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
OLD_SHAPES = re.compile(r"(?<![A-Za-z0-9_-])(?:gh[pousr]_|github_pat_|sk-ant-)[A-Za-z0-9_-]{20,}")


def median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def stdlib_sources(limit: int) -> list[tuple[str, str]]:
    files, total = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        files.append((path.name, text))
        total += len(text)
        if total >= limit:
            break
    return files


def make_diff(workdir: Path, size: int) -> tuple[Path, str]:
    repo = workdir / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=ENV)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "empty"], cwd=repo, check=True, env=ENV)
    for name, text in stdlib_sources(size):
        (repo / name).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=ENV)
    subprocess.run(["git", "commit", "-q", "-m", "sources"], cwd=repo, check=True, env=ENV)
    return repo, git_diff(repo)


def git_diff(repo: Path) -> str:
    return subprocess.run(["git", "diff", "--text", "--no-renames", "HEAD^", "HEAD"], cwd=repo, env=ENV,
                          capture_output=True, check=True).stdout.decode("utf-8", "replace")


def old_scan(diff: str, secrets: Secrets) -> bool:
    added = "\n".join(line[1:] for line in diff.split("\n") if line.startswith("+"))
    return bool(OLD_SHAPES.search(added)) or any(v in added for v in secrets.values)


def scanner_at(rev: str) -> ModuleType:
    """gitbot/secretscan.py as it was at `rev`, as a module of its own."""
    source = subprocess.run(["git", "show", f"{rev}:gitbot/secretscan.py"], cwd=ROOT, env=ENV,
                            capture_output=True, check=True).stdout
    with tempfile.TemporaryDirectory(prefix="gitbot-bench-scanner-") as tmp:
        path = Path(tmp) / "secretscan_then.py"
        path.write_bytes(source)
        spec = importlib.util.spec_from_file_location(f"secretscan_at_{rev}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return module


def compare_scanners(diff: str, secrets: Secrets, rev: str, repeat: int) -> None:
    """scan_diff with the scanner at `rev` and with today's, timed in turn (one slow moment of a shared
    machine then slows both), medians."""
    current, baseline = gitbot.secrets.secretscan, scanner_at(rev)
    times: dict[str, list[float]] = {"baseline": [], "current": []}
    counts = {}
    try:
        for _ in range(repeat):
            for label, module in (("baseline", baseline), ("current", current)):
                gitbot.secrets.secretscan = module  # what Secrets.scrub calls
                began = time.perf_counter()
                counts[label] = len(scan_diff(diff, secrets))
                times[label].append(time.perf_counter() - began)
    finally:
        gitbot.secrets.secretscan = current
    t_base, t_now = statistics.median(times["baseline"]), statistics.median(times["current"])
    print(f"{'scan_diff, scanner at ' + rev:38}{t_base * 1000:8.1f} ms   {counts['baseline']} finding(s)")
    print(f"{'scan_diff, scanner now':38}{t_now * 1000:8.1f} ms   = {t_now / t_base:.2f}x; "
          f"{counts['current']} finding(s)")


def record_events(steps: int) -> list[tuple[str, dict]]:
    sources = [text[:4000] for _, text in stdlib_sources(steps * 4000)]
    events: list[tuple[str, dict]] = [("run_start", {"task": "Fix the failing test." * 20, "limits": {"max_steps": 50}})]
    for n in range(1, steps + 1):
        output = sources[n % len(sources)]
        events += [
            ("request", {"n": n, "messages": 2 * n, "estimate_tokens": 1000 * n}),
            ("reply", {"n": n, "content": [{"type": "text", "text": "Reading the module next."},
                                           {"type": "tool_use", "id": f"toolu_{n:024d}", "name": "read_file",
                                            "input": {"path": f"pkg/module_{n}.py"}}],
                       "usage": {"input_tokens": 12, "output_tokens": 80, "cache_read_input_tokens": 900 * n}}),
            ("tool_start", {"step": n, "tool": "read_file", "input": {"path": f"pkg/module_{n}.py"}}),
            ("tool_end", {"step": n, "tool": "read_file", "result": output, "checkpoint": f"{n:040x}"}),
            ("user", {"n": n, "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n:024d}", "content": output}]}),
        ]
    return events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--diff-bytes", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--against", metavar="REV", help="also time scan_diff with gitbot/secretscan.py at REV")
    args = parser.parse_args()
    secrets = Secrets({"ghs_" + "k3Y" * 12, "sk-ant-api03-" + "Q" * 80})
    with tempfile.TemporaryDirectory(prefix="gitbot-bench-scan-") as tmp:
        repo, diff = make_diff(Path(tmp), args.diff_bytes)
        print(f"diff: {len(diff) / 1e6:.2f} MB, {diff.count(chr(10)):,} lines; {args.repeat} repeats, medians")
        t_git = median_time(lambda: git_diff(repo), args.repeat)
        t_old = median_time(lambda: old_scan(diff, secrets), args.repeat)
        t_new = median_time(lambda: scan_diff(diff, secrets), args.repeat)
        leaks = scan_diff(diff, secrets)
        print(f"git diff (producing it)               {t_git * 1000:8.1f} ms")
        print(f"old scan (known values, 2 shapes)     {t_old * 1000:8.1f} ms")
        print(f"scan_diff (all rules, path:line)      {t_new * 1000:8.1f} ms   = {t_new / t_git:.2f}x git diff, "
              f"{t_new / t_old:.1f}x the old scan; {len(leaks)} finding(s)")
        if args.against:
            compare_scanners(diff, secrets, args.against, args.repeat)
        try:
            from detect_secrets.core.scan import scan_line
            from detect_secrets.settings import default_settings
        except ImportError:
            print("detect-secrets: not installed (pip install detect-secrets to compare)")
        else:
            added = [line[1:] for line in diff.split("\n") if line.startswith("+")]

            def detect() -> None:
                with default_settings():
                    for line in added:
                        list(scan_line(line))

            t_ds = median_time(detect, 1)
            print(f"detect-secrets scan_line, same lines  {t_ds * 1000:8.1f} ms   = {t_ds / t_new:.0f}x scan_diff")

        events = record_events(args.steps)
        size = sum(len(json.dumps(data)) for _, data in events)
        print(f"\nrecord of a {args.steps}-step run: {len(events)} events, {size / 1e6:.2f} MB of JSON")
        gitdir = Path(tmp) / "record"
        subprocess.run(["git", "init", "-q", str(gitdir)], check=True, env=ENV)

        def write_plain() -> None:
            with open(Path(tmp) / "plain.jsonl", "w", encoding="utf-8") as f:
                for kind, data in events:
                    f.write(json.dumps({"event": kind, "t": 0.0, **data}, ensure_ascii=False, default=str) + "\n")
                    f.flush()

        counter = iter(range(10**6))

        def write_scrubbed() -> None:
            record = RunRecord(gitdir, f"bench-{next(counter)}", secrets=secrets)
            for kind, data in events:
                record.event(kind, **data)
            record.close()

        t_plain = median_time(write_plain, args.repeat)
        t_scrub = median_time(write_scrubbed, args.repeat)
        print(f"events written without scrubbing      {t_plain * 1000:8.1f} ms")
        print(f"RunRecord.event (scrubbed, fsync once) {t_scrub * 1000:7.1f} ms   = {t_scrub / t_plain:.1f}x, "
              f"{(t_scrub - t_plain) / args.steps * 1000:.2f} ms per step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
