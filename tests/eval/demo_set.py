"""The bundled offline evaluation set (gitbot/data/eval/): a history of the demo statistics module with
five real fixes (each with the test that shows it), a refactor whose changed test passes before it too (no
instance), and a docs-only change; the instances are mined from it by `gitbot eval mine` itself, and each
gets recorded model replies that make the fix.

    python -m tests.eval.demo_set          # rewrite gitbot/data/eval/ (instances.jsonl, demo.bundle, replays/)

Commits are made with fixed names and dates, so their ids (the instances' base commits) do not change
when the set is rebuilt.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

TARGET = Path(__file__).resolve().parents[2] / "gitbot" / "data" / "eval"
TEST_CMD = "python3 -m unittest -v"
MODEL = "claude-sonnet-5-5"

STATS = '''"""Small statistics helpers."""


def mean(values):
    """Arithmetic mean of a non-empty sequence of numbers."""
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / (len(values) - 1)


def median(values):
    """Middle value of a non-empty sequence of numbers."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]


def variance(values):
    """Sample variance of at least two numbers."""
    centre = mean(values)
    return sum((value - centre) ** 2 for value in values) / len(values)


def spread(values):
    """Largest value minus smallest."""
    return max(values) - max(values)
'''

TESTS = '''import unittest

from stats import mean, median, spread, variance


class MeanTest(unittest.TestCase):
    def test_empty(self):
        with self.assertRaises(ValueError):
            mean([])


class MedianTest(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(median([3, 1, 2]), 2)


class SpreadTest(unittest.TestCase):
    def test_constant(self):
        self.assertEqual(spread([4, 4]), 0)


class VarianceTest(unittest.TestCase):
    def test_constant(self):
        self.assertEqual(variance([2, 2]), 0)


if __name__ == "__main__":
    unittest.main()
'''

# (commit message, [(file, search, replace)]): each edit replaces one exact piece of text.
FIXES = [
    (("mean([1, 2, 3]) is 3, not 2\n\nmean() of three numbers gives 3 instead of 2, and mean([5]) divides by "
     "zero.\n\nThe divisor in stats.py was len(values) - 1; it is len(values).\n\nFixes #1\n"),
     [("stats.py", "    return sum(values) / (len(values) - 1)\n", "    return sum(values) / len(values)\n"),
      ("test_stats.py", "            mean([])\n",
       ("            mean([])\n\n    def test_mean_of_three(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n\n"
       "    def test_mean_of_one(self):\n        self.assertEqual(mean([5]), 5)\n"))]),
    (("median() of an even number of values is wrong\n\nmedian([4, 1, 3, 2]) gives 3; the median of an even "
     "count is the mean of the middle two, 2.5.\n"),
     [("stats.py", "    middle = len(ordered) // 2\n    return ordered[middle]\n",
       ("    middle = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[middle]\n"
       "    return (ordered[middle - 1] + ordered[middle]) / 2\n")),
      ("test_stats.py", "        self.assertEqual(median([3, 1, 2]), 2)\n",
       ("        self.assertEqual(median([3, 1, 2]), 2)\n\n    def test_even(self):\n"
       "        self.assertEqual(median([4, 1, 3, 2]), 2.5)\n"))]),
    (("spread() is always 0\n\nspread([1, 5, 3]) should be 4.\n\nIt subtracted max(values) from itself; "
     "use min(values).\n\nCloses #3\n"),
     [("stats.py", "    return max(values) - max(values)\n", "    return max(values) - min(values)\n"),
      ("test_stats.py", "        self.assertEqual(spread([4, 4]), 0)\n",
       ("        self.assertEqual(spread([4, 4]), 0)\n\n    def test_spread(self):\n"
       "        self.assertEqual(spread([1, 5, 3]), 4)\n"))]),
    ("median([]) raises IndexError, unlike mean([])\n\nBoth should raise ValueError for an empty sequence.\n",
     [("stats.py", '    """Middle value of a non-empty sequence of numbers."""\n',
       ('    """Middle value of a non-empty sequence of numbers."""\n    if not values:\n'
       '        raise ValueError("median() of an empty sequence")\n')),
      ("test_stats.py", "class MedianTest(unittest.TestCase):\n",
       ("class MedianTest(unittest.TestCase):\n    def test_empty(self):\n        with self.assertRaises(ValueError):\n"
       "            median([])\n\n"))]),
    (("variance() is the population variance, documented as the sample variance\n\nvariance([1, 2, 3, 4]) "
     "gives 1.25; the sample variance is 5/3.\n"),
     [("stats.py", "    return sum((value - centre) ** 2 for value in values) / len(values)\n",
       "    return sum((value - centre) ** 2 for value in values) / (len(values) - 1)\n"),
      ("test_stats.py", "        self.assertEqual(variance([2, 2]), 0)\n",
       ("        self.assertEqual(variance([2, 2]), 0)\n\n    def test_sample(self):\n"
       "        self.assertAlmostEqual(variance([1, 2, 3, 4]), 5 / 3)\n"))]),
]
# Not fixes: a refactor whose new test passes before it too, and a change to the docs only.
REFACTOR = ("stats: name the middle index once\n",
            [("stats.py", "    ordered = sorted(values)\n", "    ordered = list(sorted(values))\n"),
             ("test_stats.py", "    def test_odd(self):\n",
              "    def test_one(self):\n        self.assertEqual(median([7]), 7)\n\n    def test_odd(self):\n")])
DOCS = ("README: say what the module is for\n", [("README.md", "", "# stats\n\nSmall statistics helpers.\n")])


def _git(repo: Path, *args: str, when: int = 0) -> str:
    date = f"2026-01-{1 + when:02d}T12:00:00+00:00"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_AUTHOR_NAME": "Stats Maintainer", "GIT_AUTHOR_EMAIL": "stats@example.invalid",
                "GIT_COMMITTER_NAME": "Stats Maintainer", "GIT_COMMITTER_EMAIL": "stats@example.invalid",
                "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date, "GIT_CONFIG_GLOBAL": "/dev/null",
                "GIT_CONFIG_NOSYSTEM": "1"})
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=repo, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, message: str, edits, when: int) -> str:
    for name, search, replace in edits:
        path = repo / name
        text = path.read_text() if path.exists() else ""
        assert text.count(search) == 1 or not search, (name, search)
        path.write_text(text.replace(search, replace, 1) if search else replace)
    _git(repo, "add", "-A", when=when)
    _git(repo, "commit", "-q", "-m", message, when=when)
    return _git(repo, "rev-parse", "HEAD")


def make_history(repo: Path) -> dict[str, list]:
    """The demo history in `repo`; returns {fix commit: its edits}."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "stats.py").write_text(STATS)
    (repo / "test_stats.py").write_text(TESTS)
    (repo / ".gitignore").write_text("__pycache__/\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "stats: mean, median, variance, spread")
    fixes = {}
    steps = [FIXES[0], FIXES[1], REFACTOR, FIXES[2], DOCS, FIXES[3], FIXES[4]]
    for when, (message, edits) in enumerate(steps, 1):
        sha = _commit(repo, message, edits, when)
        if (message, edits) in FIXES:
            fixes[sha] = edits
    return fixes


def replay_for(edits) -> dict:
    """Recorded replies that read the module, make the fix's code edits and complete (review-on-submit:
    attempt_completion twice)."""
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 4800,
             "output_tokens": 120}
    replies = [{"content": [{"type": "text", "text": "Reading the module first."},
                            {"type": "tool_use", "id": "toolu_eval_01", "name": "read_file",
                             "input": {"path": "stats.py"}}], "stop_reason": "tool_use", "usage": usage}]
    for n, (name, search, replace) in enumerate((e for e in edits if e[0] == "stats.py"), 2):
        diff = f"<<<<<<< SEARCH\n{search.rstrip(chr(10))}\n=======\n{replace.rstrip(chr(10))}\n>>>>>>> REPLACE"
        replies.append({"content": [{"type": "tool_use", "id": f"toolu_eval_{n:02d}", "name": "replace_in_file",
                                     "input": {"path": name, "diff": diff}}], "stop_reason": "tool_use",
                        "usage": usage})
    for n in (8, 9):
        replies.append({"content": [{"type": "tool_use", "id": f"toolu_eval_{n:02d}", "name": "attempt_completion",
                                     "input": {"result": "Fixed the bug described in the task in stats.py."}}],
                        "stop_reason": "tool_use", "usage": usage})
    return {"model": MODEL, "replies": replies}


def build(target: Path) -> list:
    from gitbot.eval.instances import dumps
    from gitbot.eval.mine import mine

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "stats-demo"
        fixes = make_history(repo)
        instances = mine(repo, max_commits=50, test_cmd=TEST_CMD)
        target.mkdir(parents=True, exist_ok=True)
        (target / "replays").mkdir(exist_ok=True)
        _git(repo, "bundle", "create", str(target / "demo.bundle"), "main")
    for instance in instances:
        commit = next(sha for sha in fixes if instance.instance_id.endswith(sha[:12]))
        instance.repo = "demo.bundle"
        (target / "replays" / f"{instance.instance_id}.json").write_text(
            json.dumps(replay_for(fixes[commit]), indent=1) + "\n")
    (target / "instances.jsonl").write_text(dumps(instances))
    return instances


if __name__ == "__main__":
    built = build(TARGET)
    print(f"{len(built)} instances in {TARGET}")
