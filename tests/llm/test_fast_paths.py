"""The paths that call no model import no provider SDK: a passing `gitbot fix-check` and a passing
hook stay fast, whichever provider the policy names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import gitbot_env, make_repo

pytestmark = pytest.mark.slow

SDKS = ("anthropic", "openai", "boto3", "botocore", "google", "httpx2")
PROBE = f"""
import json, sys
from gitbot.cli import main
code = main(sys.argv[1:])
loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set({SDKS!r}))
print(json.dumps({{"code": code, "sdks": loaded}}))
"""


def probe(repo: Path, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=repo, capture_output=True, text=True,
                          env=gitbot_env({"OPENAI_API_KEY": "sk-not-used", "AWS_REGION": "us-east-1"}),
                          timeout=120, check=False)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("provider", ["anthropic", "bedrock", "openai"])
def test_a_passing_fix_check_imports_no_provider_sdk(tmp_path: Path, provider: str):
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[model]\nprovider = "{provider}"\nname = "some-model"\n')
    assert probe(repo, "fix-check", "--policy", str(policy), "--", "true") == {"code": 0, "sdks": []}


def test_a_passing_hook_imports_no_provider_sdk(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    assert probe(repo, "hook", "run", "pre-commit", "--check", "true") == {"code": 0, "sdks": []}


def test_the_probe_sees_an_sdk_when_one_is_imported(tmp_path: Path):
    # The same probe on a path that does build a provider (and then stops at the missing task file).
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    result = probe(repo, "run", "--provider", "openai", "--model", "m", "--task-file", "missing.md")
    assert result["code"] == 2 and result["sdks"] == []  # a bad argument: stopped before any provider
    result = probe(repo, "run", "--provider", "openai", "--model", "m", "--task", "x", "--max-steps", "0")
    assert "openai" in result["sdks"]
