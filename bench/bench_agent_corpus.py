"""The command judge on the commands real agents typed (bench/corpus/agent_commands.jsonl.gz).

For each project of the corpus a small repository stands in for it (its test runner's files: Django's
tests/runtests.py, sympy's bin/test, pytest elsewhere) with the project's check command allowed, as a
fix-check run has it. Every command goes through `gitbot policy check --batch`, a real subprocess of
the gitbot under test, under ("defaults": no policy file, so what `gitbot run` adds to the built-in
defaults, the test commands `policy init` would write, is allowed too):
  - defaults, sandboxed      (--sandbox)
  - defaults, unsandboxed    (--no-sandbox)
  - `policy init`'s output, sandboxed
and the script prints, per configuration: the allowed share per kind, the refusals that do not say
what to do instead, the replay metric (the share of trajectories that meet three refusals in a row,
gitbot's mistake limit, when replayed as issued, and the median command where that happens), and the
judging time (median, max) reported by --batch.

Today's figures (issue 22, measured on main with the same kind of corpus) are printed beside them;
the targets are the issue's. `--source DIR` measures another checkout of gitbot (e.g. a worktree of
main): a gitbot without --batch is asked through its Policy.check_command, as its CLI did.

Run: .venv/bin/python bench/bench_agent_corpus.py [--source DIR] [--limit N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus" / "agent_commands.jsonl.gz"
KINDS = ("read", "run", "setup", "edit", "git", "other")
MISTAKE_LIMIT = 3

# Issue 22's figures for today's judge (defaults with the check command allowed; init in brackets).
TODAY = {"all": "41.5% (init 42.8%)", "read": "62%", "run": "7% (init 13%)", "setup": "0%",
         "replay": "678/701 = 96.7%, at median command 11", "instead": "20,878 of 20,878 refusals name no tool"}
TARGETS = {"read": ">= 95%", "run": ">= 90%", "replay": "<= 5%", "instead": "0", "ms": "median <= 5, max <= 50"}

RUNNER = "#!/usr/bin/env python3\nprint('ok')\n"
# A project's stand-in files and its check command.
PROJECT_FILES = {
    "django/django": ({"tests/runtests.py": RUNNER, "setup.py": "", "django/__init__.py": ""}, "./tests/runtests.py"),
    "sympy/sympy": ({"bin/test": RUNNER, "setup.py": "", "sympy/__init__.py": ""}, "bin/test"),
}
PYTEST_FILES = {"setup.py": "", "src/__init__.py": "", "tests/conftest.py": "", "tox.ini": "[pytest]\n"}

# What a gitbot without --batch is asked: its own CLI's calls (load_policy, check_command) for each line.
OLD_BATCH = r"""
import json, sys, time
from pathlib import Path
from gitbot.policy import load_policy
repo, checks = Path(sys.argv[1]), tuple(sys.argv[2:])
policy = load_policy(repo, None)
for line in sys.stdin:
    q = json.loads(line)
    t = time.perf_counter()
    d = policy.check_command(q["command"], checks)
    print(json.dumps({"id": q.get("id"), "allowed": d.allowed, "reason": d.reason, "rule": None, "instead": None,
                      "ms": round((time.perf_counter() - t) * 1000, 3)}), flush=False)
"""


def load_corpus(limit: int | None) -> list[dict]:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    return rows[:limit] if limit else rows


def make_repo(root: Path, project: str) -> tuple[Path, str]:
    files, check = PROJECT_FILES.get(project, (PYTEST_FILES, "python -m pytest"))
    repo = root / project.replace("/", "__")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
        if text.startswith("#!"):
            os.chmod(repo / name, 0o755)
    environment = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
                   "GIT_COMMITTER_EMAIL": "b@x"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *argv], cwd=repo, env=environment, check=True, capture_output=True)
    return repo, check


class Gitbot:
    """The gitbot under test: `python -m gitbot` from `source`, in this interpreter."""

    def __init__(self, source: Path):
        # `python -m` puts its working directory first on sys.path: run from the source, not from here.
        self.source = source
        self.env = {**os.environ, "PYTHONPATH": str(source)}
        help_text = self.run(["policy", "check", "--help"]).stdout
        self.has_batch = "--batch" in help_text

    def run(self, argv: list[str], stdin: str | None = None, module: bool = True) -> subprocess.CompletedProcess:
        head = [sys.executable, "-m", "gitbot"] if module else [sys.executable]
        return subprocess.run([*head, *argv], input=stdin, capture_output=True, text=True, env=self.env,
                              cwd=self.source, check=False)

    def judge(self, repo: Path, check: str, rows: list[dict], sandbox: str) -> list[dict]:
        lines = "".join(json.dumps({"id": i, "command": row["command"]}) + "\n" for i, row in enumerate(rows))
        if self.has_batch:
            proc = self.run(["policy", "check", "--repo", str(repo), "--allow-check", check, sandbox,
                             "--batch", "-"], stdin=lines)
        else:
            proc = self.run(["-c", OLD_BATCH, str(repo), check], stdin=lines, module=False)
        if proc.returncode != 0:
            raise SystemExit(f"policy check failed: {proc.stderr[-2000:]}")
        answers = [json.loads(line) for line in proc.stdout.splitlines()]
        assert len(answers) == len(rows), (len(answers), len(rows))
        if answers:  # the first judgement of a process loads the judge (tree-sitter, tables): shown apart
            answers[0]["first"] = True
        return answers

    def init(self, repo: Path) -> None:
        proc = self.run(["policy", "init", "--repo", str(repo), "--force"])
        if proc.returncode != 0:
            raise SystemExit(f"policy init failed: {proc.stderr}")


def replay(rows: list[dict], allowed: list[bool]) -> tuple[int, int, list[int]]:
    """(trajectories, those that meet MISTAKE_LIMIT refusals in a row, the command index where each does)."""
    by_trajectory: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for row, ok in zip(rows, allowed, strict=True):
        by_trajectory[row["trajectory"]].append((row["step"], ok))
    where = []
    for steps in by_trajectory.values():
        run = 0
        for index, (_, ok) in enumerate(sorted(steps, key=lambda s: s[0]), 1):
            run = 0 if ok else run + 1
            if run == MISTAKE_LIMIT:
                where.append(index)
                break
    return len(by_trajectory), len(where), where


def report(name: str, rows: list[dict], answers: list[dict]) -> None:
    allowed = [bool(a["allowed"]) for a in answers]
    print(f"\n== {name}: {len(rows):,} commands")
    total, kinds = Counter(), Counter()
    for row, ok in zip(rows, allowed, strict=True):
        total[row["kind"]] += 1
        kinds[row["kind"]] += ok
    share = sum(allowed) / len(allowed)
    print(f"  allowed, all kinds     {share:6.1%}   (today: {TODAY['all']})")
    for kind in KINDS:
        if total[kind]:
            today = f"today: {TODAY[kind]}" if kind in TODAY else ""
            target = f"target {TARGETS[kind]}" if kind in TARGETS else ""
            note = "; ".join(x for x in (today, target) if x)
            print(f"  allowed, {kind:<13} {kinds[kind] / total[kind]:6.1%}   of {total[kind]:>6,}"
                  f"{'   (' + note + ')' if note else ''}")
    refusals = [a for a in answers if not a["allowed"]]
    lacking = sum(1 for a in refusals if not a.get("instead"))
    print(f"  refusals without `instead`: {lacking:,} of {len(refusals):,}   (today: {TODAY['instead']}; "
          f"target {TARGETS['instead']})")
    trajectories, hit, where = replay(rows, allowed)
    at = f", at median command {statistics.median(where):g}" if where else ""
    print(f"  replay: {hit:,} of {trajectories:,} trajectories = {hit / trajectories:.1%} meet {MISTAKE_LIMIT} "
          f"refusals in a row{at}   (today: {TODAY['replay']}; target {TARGETS['replay']})")
    times = [a["ms"] for a in answers if not a.get("first")]
    cold = max(a["ms"] for a in answers if a.get("first"))
    print(f"  judging: median {statistics.median(times):.2f} ms, max {max(times):.1f} ms, p99 "
          f"{statistics.quantiles(times, n=100)[98]:.1f} ms   (target {TARGETS['ms']}; a process's first "
          f"judgement, which loads the judge: up to {cold:.0f} ms)")
    reasons = Counter(a["reason"].split(":")[0][:90] for a in refusals if a.get("reason"))
    print("  most common refusals: " + "; ".join(f"{n}× {r}" for r, n in reasons.most_common(3)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, default=HERE.parent, help="the gitbot checkout to measure")
    parser.add_argument("--limit", type=int, default=None, help="only the first N commands (a quick look)")
    args = parser.parse_args()
    rows = load_corpus(args.limit)
    gitbot = Gitbot(args.source.resolve())
    models = Counter(r["model"] for r in rows)
    print(f"corpus: {len(rows):,} commands, {len({r['trajectory'] for r in rows}):,} trajectories, "
          f"{len({r['project'] for r in rows})} projects, models {dict(models)}")
    print(f"gitbot: {gitbot.run(['-c', 'import gitbot; print(gitbot.__file__)'], module=False).stdout.strip()} "
          f"({'--batch' if gitbot.has_batch else 'no --batch: Policy.check_command, as its CLI'})")
    by_project: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_project[row["project"]].append(index)
    configurations = [("defaults, sandboxed", "--sandbox", False), ("defaults, unsandboxed", "--no-sandbox", False),
                      ("policy init, sandboxed", "--sandbox", True)]
    with tempfile.TemporaryDirectory(prefix="gitbot-corpus-") as tmp:
        repos = {project: make_repo(Path(tmp), project) for project in by_project}
        for name, sandbox, init in configurations:
            answers: list[dict | None] = [None] * len(rows)
            for project, indexes in by_project.items():
                repo, check = repos[project]
                if init:
                    gitbot.init(repo)
                for index, answer in zip(indexes, gitbot.judge(repo, check, [rows[i] for i in indexes], sandbox),
                                         strict=True):
                    answers[index] = answer
            report(name, rows, answers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
