"""A passing `gitbot fix-check` (a CI step on every push) loads only what running the check needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import gitbot_env, make_repo

pytestmark = pytest.mark.slow

# What only a failing check needs: the checkpoints, the output parsers, the tampering checks, the
# agent and its result types, the command rules, judge and parser, the price table, TOML (no policy file here).
NOT_NEEDED = ("gitbot.checkpoints", "gitbot.checks", "gitbot.fixcheck.tampering", "gitbot.fixcheck.changes",
              "gitbot.agent.loop", "gitbot.agent.result", "gitbot.policy.judge.judge", "gitbot.policy.judge.rules",
              "gitbot.llm.pricing", "tree_sitter", "tomllib", "gitbot.tools")
PROBE = f"""
import json, sys
from gitbot.cli import main
code = main(sys.argv[1:])
print(json.dumps({{"code": code, "loaded": sorted(name for name in {NOT_NEEDED!r} if name in sys.modules)}}))
"""


def test_a_passing_check_loads_nothing_a_fix_needs(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    proc = subprocess.run([sys.executable, "-c", PROBE, "fix-check", "--", "true"], cwd=repo, capture_output=True,
                          text=True, env=gitbot_env(), timeout=120, check=False)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"code": 0, "loaded": []}, proc.stderr
