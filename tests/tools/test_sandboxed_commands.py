"""execute_command under the default policy (issue 22): in bubblewrap the commands agents type run and
the sandbox, not the judge, keeps read_deny files and protected paths; without the sandbox the
allow-list refuses them and says what to do instead. Real bwrap, real git, real bash."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.secrets import Secrets
from gitbot.tools.base import ToolContext, ToolDenied, ToolError
from gitbot.tools.shell import EXECUTE_COMMAND
from tests.conftest import make_repo
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow
SECRET = "sandboxed-secret-" + "4417"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "repo", {"src/app.py": "print('app')\n", ".gitignore": ".env\n"})
    (path / ".env").write_text(f"TOKEN={SECRET}\n")
    (path / "scratch.py").write_text("print(6 * 7)\n")
    return path


def _run(repo: Path, command: str, mode: str) -> str:
    ctx = ToolContext(repo, Policy(repo=repo, sandbox_mode=mode), Secrets())
    return EXECUTE_COMMAND.function(ctx, {"command": command})


def test_in_the_sandbox_scripts_run_scratch_files_go_and_secrets_stay_masked(repo: Path):
    require_bwrap()
    assert "42" in _run(repo, "python3 scratch.py && python3 -c 'print(6 * 7)'", "required")
    _run(repo, "rm scratch.py", "required")
    assert not (repo / "scratch.py").exists()
    # Allowed now, and the sandbox (not the judge) keeps the value out: .env is /dev/null inside.
    assert SECRET not in _run(repo, "cat .env; grep -R TOKEN .", "required")
    assert (repo / ".env").read_text() == f"TOKEN={SECRET}\n"
    # A protected path the command creates is set aside after it, and the command fails, saying why.
    with pytest.raises(ToolError, match="created .gitbot, a protected path"):
        _run(repo, "mkdir -p .gitbot; echo x > .gitbot/policy.toml; echo rc=$?", "required")
    assert not (repo / ".gitbot").exists()
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout == ""


def test_without_the_sandbox_the_allow_list_refuses_and_says_what_to_do_instead(repo: Path):
    for command, tool in (("python3 scratch.py", "commands.allow"), ("sed -i 's/a/b/' src/app.py", "replace_in_file"),
                          ("cat .env", "secret")):
        with pytest.raises(ToolDenied) as refused:
            _run(repo, command, "off")
        assert "Instead:" in str(refused.value) and tool in str(refused.value).partition("Instead:")[2]
    assert (repo / "scratch.py").exists()
