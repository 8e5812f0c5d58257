"""Issue 20, finding 1, through `gitbot fix-check --commit`: the commit holds names as names, only what
the run changed, and nothing the policy keeps from the agent (the commit gate, fixcheck/gate.py)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import BUGGY_MODULE, FIX_DIFF, TEST_MODULE, make_repo
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn
from tests.fixcheck.test_fix_check import CHECK, completion_turns, fix_check_with, git

pytestmark = pytest.mark.slow
FIX = tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF}))


def tree_names(repo, commit: str) -> list[bytes]:
    out = subprocess.run(["git", "ls-tree", "-r", "-z", "--name-only", commit], cwd=repo, capture_output=True,
                         check=True).stdout
    return sorted(name for name in out.split(b"\0") if name)


def test_odd_names_are_committed_as_names_and_bystanders_stay_out(tmp_path, gitbot_in_process):
    repo = make_repo(tmp_path / "repo", {"stats.py": BUGGY_MODULE, "test_stats.py": TEST_MODULE,
                                         ".gitignore": "__pycache__/\n"})
    (repo / ".env").write_text("DB_PASS=plainpassword123\n")  # the user's, untracked
    (repo / "gha-creds-5f2e.json").write_text("{}\n")
    names = [":(glob)*", "-rf", "*"]
    script = [*(tool_turn(("write_to_file", {"path": name, "content": ""})) for name in names), FIX,
              *completion_turns()]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check_with(gitbot_in_process, repo, "--commit", env=api.env())
    assert proc.returncode == 0, proc.stderr
    expected = sorted(os.fsencode(n) for n in [*names, ".gitignore", "stats.py", "test_stats.py"])
    assert tree_names(repo, data["commit"]) == expected
    assert data["commit_verified"] is True


def test_a_file_the_policy_keeps_from_the_agent_is_never_committed(tmp_path, gitbot_in_process):
    # Running the check verbosely (an allowed command) rewrites ci.cfg, which the policy does not let the agent
    # edit: the checkpoints see the change, and before the gate `--commit` committed it.
    writes_config = TEST_MODULE.replace("import unittest\n",
                                        "import sys\nimport unittest\n\nif '-v' in sys.argv:\n"
                                        "    open('ci.cfg', 'w').write('strict = false\\n')\n")
    repo = make_repo(tmp_path / "repo", {"stats.py": BUGGY_MODULE, "test_stats.py": writes_config,
                                         "ci.cfg": "strict = true\n", ".gitignore": "__pycache__/\n"})
    policy = tmp_path / "policy.toml"
    policy.write_text('[files]\nedit_deny = [".git/**", ".gitbot/**", "ci.cfg"]\n')
    head = git(repo, "rev-parse", "HEAD").strip()
    script = [tool_turn(("execute_command", {"command": " ".join([*CHECK, "-v"])})), FIX, *completion_turns()]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check_with(gitbot_in_process, repo, "--commit", "--policy", str(policy), env=api.env())
    assert data["outcome"] == "fixed", proc.stderr
    assert proc.returncode == 1 and "branch" not in data
    assert "ci.cfg (the policy does not allow editing it)" in data["commit_error"]
    assert git(repo, "for-each-ref", "refs/heads/gitbot/") == ""  # no branch, no commit on one
    assert git(repo, "rev-parse", "HEAD").strip() == head
