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

CHECKOUT = Path(__file__).resolve().parent.parent
CHECK_PY = 'import sys\nsys.exit(0 if open("ok.txt").read().strip() == "ok" else 1)\n'


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
    env = gitbot_env({"PRE_COMMIT_HOME": str(home)})
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "gitbot-fix",
                           "--all-files", "--verbose"], cwd=project, capture_output=True, text=True, env=env,
                          timeout=600, check=False)


def test_try_repo_installs_gitbot_and_its_hook_reports_a_failing_check(hook_repo, tmp_path):
    # One run only: try-repo builds a fresh environment every time (~15-20 s here), so the passing case
    # is left to tests/test_hooks.py, which runs the same `gitbot hook run` through git itself.
    project = make_repo(tmp_path / "project", {
        "check.py": CHECK_PY, "ok.txt": "broken\n",
        ".gitbot/config.toml": '[hooks.pre-commit]\nchecks = ["python check.py"]\n'})
    proc = try_repo(hook_repo, project, tmp_path / "pre-commit-home")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "gitbot (run checks, fix failures)" in proc.stdout and "Failed" in proc.stdout
    assert "pre-commit check `python check.py` exited 1" in proc.stdout
    assert "set ANTHROPIC_API_KEY" in proc.stdout  # no key: it reports; it does not call a model
    assert (project / "ok.txt").read_text() == "broken\n"
