"""The pre-commit framework installs gitbot from this checkout and runs the `gitbot-fix` hook.

`pre-commit try-repo` clones a repository at a commit, so the checkout's files as they are now
(committed or not) are copied into a scratch repository first. pre-commit builds its own virtual
environment and installs gitbot into it with pip, through the configured package index (no other
network access is needed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import gitbot_env, make_repo

pytest.importorskip("pre_commit")

CHECKOUT = Path(__file__).resolve().parents[2]
TEST_OK = 'def test_ok():\n    assert open("ok.txt").read().strip() == "ok"\n'


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    """This checkout's files (tracked and untracked, not ignored), committed in a scratch repository."""
    target = tmp_path_factory.mktemp("gitbot-src") / "gitbot"
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=CHECKOUT, capture_output=True, check=True).stdout.decode()
    target.mkdir()
    for name in filter(None, listing.split("\0")):
        source = CHECKOUT / name
        if not (source.is_symlink() or source.is_file()):
            continue  # listed but deleted in the work tree
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target / name)
        else:
            shutil.copy2(source, target / name)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(["git", *args], cwd=target, check=True, capture_output=True, env=gitbot_env())
    return target


def try_repo(hook_repo: Path, project: Path, home: Path) -> subprocess.CompletedProcess:
    # The project's own tools (pytest) are in this test run's virtualenv, first on PATH, as when a user
    # commits with their project's environment active; pre-commit puts its own environment before it.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = gitbot_env({"PRE_COMMIT_HOME": str(home), "PATH": path, "VIRTUAL_ENV": str(Path(sys.executable).parent.parent)})
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "gitbot-fix",
                           "--all-files", "--verbose"], cwd=project, capture_output=True, text=True, env=env,
                          timeout=600, check=False)


@pytest.mark.slow
@pytest.mark.timeout(300)  # pip installs gitbot and its dependencies: 25 s alone, 120 s and more on a loaded machine
def test_try_repo_runs_a_real_pytest_check_with_the_projects_python(hook_repo, tmp_path):
    # One run only: try-repo builds a fresh environment every time (~15-20 s here), so the passing case
    # is left to tests/test_hooks.py, which runs the same `gitbot hook run` through git itself.
    # `python -m pytest` must find the project's pytest, not fail in the hook's private virtualenv
    # ("No module named pytest", which gitbot might otherwise pay a model to "fix").
    project = make_repo(tmp_path / "project", {
        "test_ok.py": TEST_OK, "ok.txt": "broken\n",
        ".gitbot/config.toml": '[hooks.pre-commit]\nchecks = ["python -m pytest -q -p no:cacheprovider"]\n'})
    proc = try_repo(hook_repo, project, tmp_path / "pre-commit-home")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "gitbot (run checks, fix failures)" in proc.stdout and "Failed" in proc.stdout
    assert "No module named pytest" not in proc.stdout
    assert "1 failed" in proc.stdout and "test_ok.py::test_ok" in proc.stdout  # pytest really ran
    assert "exited 1" in proc.stdout
    assert "fixing is off for pre-commit" in proc.stdout  # fixing is opt-in: no model call
    assert (project / "ok.txt").read_text() == "broken\n"
