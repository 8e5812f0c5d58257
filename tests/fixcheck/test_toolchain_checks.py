"""fix-check and the git hooks verify real fixes with the developer's own interpreter, with nothing
configured: a pyenv Python chosen by `.python-version`, an activated project venv, a `pip install
--user` module. The check's tool (`checkrunner`) exists only in that toolchain, as pytest does on a
developer's machine. And a check whose own tool is missing costs no model request at all.

gitbot runs in the worker (gitbot_in_process) with exactly the environment a user's shell would give it;
the hooks run it as the real subprocess git starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import BUGGY_MODULE, FIX_DIFF, TEST_MODULE, make_repo
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn
from tests.hooks.test_hooks import git, installed
from tests.sandbox.layouts import REAL_PYTHON, SYSTEM_PATH, executable, pyenv_root, python_version, venv
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow

# The project's test runner, installed only in the toolchain under test (like pytest).
CHECKRUNNER = ("import sys, unittest\n"
               "result = unittest.main(module=None, argv=['checkrunner', 'discover', '-s', '.'], exit=False).result\n"
               "sys.exit(0 if result.wasSuccessful() else 1)\n")
FIX_SCRIPT = [tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})),
              tool_turn(("attempt_completion", {"result": "fixed mean()"})),
              tool_turn(("attempt_completion", {"result": "fixed mean()"}))]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PLANTED-KEY\n")
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"stats.py": BUGGY_MODULE, "test_stats.py": TEST_MODULE,
                                         ".gitignore": "__pycache__/\n.venv/\n"})


def pyenv_layout(home: Path, repo: Path) -> dict[str, str]:
    root = pyenv_root(home, {"3.98.0": "unused", "3.99.0": "checkrunner"}, "3.98.0", CHECKRUNNER)
    (repo / ".python-version").write_text("3.99.0\n")  # untracked, as it often is
    return {"HOME": str(home), "PATH": f"{root}/shims:{SYSTEM_PATH}"}


def venv_layout(home: Path, repo: Path, tool: str = "checkrunner") -> dict[str, str]:
    venv(repo / ".venv", tool, CHECKRUNNER)
    return {"HOME": str(home), "PATH": f"{repo}/.venv/bin:{SYSTEM_PATH}", "VIRTUAL_ENV": str(repo / ".venv")}


def user_site_layout(home: Path, repo: Path) -> dict[str, str]:
    site = home / ".local" / "lib" / f"python{python_version()}" / "site-packages"
    site.mkdir(parents=True)
    (site / "checkrunner.py").write_text(CHECKRUNNER)
    bin_dir = home / "bin"  # the interpreter on PATH under a plain name, as a distro or pyenv global puts it
    executable(bin_dir / "python3", f'#!/bin/sh\nexec "{REAL_PYTHON}" "$@"\n')
    return {"HOME": str(home), "PATH": f"{bin_dir}:{SYSTEM_PATH}"}


LAYOUTS = {"pyenv": (pyenv_layout, "python3"), "venv": (venv_layout, "python"),
           "user-site": (user_site_layout, "python3")}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_fix_check_verifies_a_real_fix_with_the_users_interpreter(home, repo, layout, gitbot_in_process):
    require_bwrap()
    build, python = LAYOUTS[layout]
    env = build(home, repo)
    with FakeMessagesAPI(FIX_SCRIPT) as api:
        proc = gitbot_in_process(["fix-check", "--repo", str(repo), "--json", "--", python, "-m", "checkrunner"],
                                 env={**env, **api.env()})
        assert len(api.requests) == 3, proc.stderr
    data = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert data["outcome"] == "fixed" and data["verified"] is True and data["check_exit_after"] == 0
    assert "bubblewrap" in data["check_environment"]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_hook_verifies_a_real_fix_with_the_users_interpreter(home, repo, layout):
    require_bwrap()
    build, python = LAYOUTS[layout]
    env = build(home, repo)
    installed(repo, "--check", f"{python} -m checkrunner")
    with FakeMessagesAPI(FIX_SCRIPT) as api:
        commit = git(repo, "commit", "--allow-empty", "-q", "-m", "x", check=False, env={**env, **api.env()})
        assert len(api.requests) == 3, commit.stderr
    assert commit.returncode == 1 and "VERIFIED" in commit.stderr and "NOT VERIFIED" not in commit.stderr
    assert "/ len(values)\n" in (repo / "stats.py").read_text()


def test_a_missing_check_tool_costs_no_model_request(home, repo, gitbot_in_process):
    env = pyenv_layout(home, repo)
    with FakeMessagesAPI(FIX_SCRIPT) as api:
        proc = gitbot_in_process(["fix-check", "--repo", str(repo), "--", "python3", "-m", "no_such_checker"],
                                 env={**env, **api.env()})
        assert api.requests == []
    assert proc.returncode == 2
    assert "no module `no_such_checker`" in proc.stderr and "No change to the repository can fix that" in proc.stderr
    # What differs (nothing, here: the tool is simply not installed) is shown, resolution by resolution.
    assert "in your shell:" in proc.stderr and "in the sandbox:" in proc.stderr and "pyenv 3.99.0" in proc.stderr


def test_a_missing_check_tool_in_a_hook_costs_no_model_request(home, repo, gitbot_in_process):
    env = pyenv_layout(home, repo)
    installed(repo, "--check", "python3 -m no_such_checker")
    with FakeMessagesAPI(FIX_SCRIPT) as api:
        commit = git(repo, "commit", "--allow-empty", "-q", "-m", "x", check=False, env={**env, **api.env()})
        hook = gitbot_in_process(["hook", "run", "pre-commit"], cwd=repo, env={**env, **api.env()})
        assert api.requests == []
    assert commit.returncode != 0 and "no module `no_such_checker`" in commit.stderr
    assert hook.returncode == 2 and "No change to the repository can fix that" in hook.stderr


def test_a_check_program_that_is_not_there_costs_no_model_request(home, repo, gitbot_in_process):
    with FakeMessagesAPI(FIX_SCRIPT) as api:
        proc = gitbot_in_process(["fix-check", "--repo", str(repo), "--", "no-such-test-runner", "-q"],
                                 env={"HOME": str(home), "PATH": SYSTEM_PATH, **api.env()})
        assert api.requests == []
    assert proc.returncode == 2 and "`no-such-test-runner` is not found" in proc.stderr


def test_run_with_check_stops_before_the_model_when_the_tool_is_missing(home, repo, gitbot_in_process):
    env = pyenv_layout(home, repo)
    with FakeMessagesAPI(FIX_SCRIPT) as api:
        proc = gitbot_in_process(["run", "--repo", str(repo), "--task", "fix mean", "--check",
                                  "python3 -m no_such_checker"], env={**env, **api.env()})
        assert api.requests == []
    assert proc.returncode == 2 and "no module `no_such_checker`" in proc.stderr


def test_run_with_check_verifies_with_the_users_interpreter(home, repo, gitbot_in_process):
    require_bwrap()
    env = venv_layout(home, repo)
    with FakeMessagesAPI(FIX_SCRIPT) as api:
        proc = gitbot_in_process(["run", "--repo", str(repo), "--task", "fix mean", "--check",
                                  "python -m checkrunner", "--json"], env={**env, **api.env()})
        assert len(api.requests) == 3, proc.stderr
    data = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert data["verified"] is True and data["check_exit_before"] == 1 and data["check_exit_after"] == 0


def test_a_newcomers_run_can_run_the_projects_tests(home, repo, gitbot_in_process):
    require_bwrap()
    (repo / "tests").mkdir()  # what `gitbot policy init` takes as a sign of pytest
    env = venv_layout(home, repo, tool="pytest")  # a stand-in pytest, installed in the project's venv only
    script = [tool_turn(("execute_command", {"command": "python -m pytest -q"})),
              tool_turn(("attempt_completion", {"result": "ran the tests"})),
              tool_turn(("attempt_completion", {"result": "ran the tests"}))]
    with FakeMessagesAPI(script) as api:
        proc = gitbot_in_process(["run", "--repo", str(repo), "--task", "run the tests", "--json"],
                                 env={**env, **api.env()})
        assert len(api.requests) == 3, proc.stderr
        tool_result = json.dumps(api.requests[1]["body"]["messages"][-1])
    assert "not allowed" not in tool_result and "FAILED" in tool_result  # it ran: the suite fails on the bug
    data = json.loads(proc.stdout)
    assert "python -m pytest *" in data["allowed_for_this_run"] and "tests/ directory" in data["allowed_for_this_run"]
    assert "allowed for this run" in proc.stderr
