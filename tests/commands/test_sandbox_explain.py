"""`gitbot sandbox explain` as a user runs it, on a real repository with a pyenv-like toolchain under a
temporary HOME: how the command resolves in the shell and inside, what is shown, masked, protected
and hidden."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import make_repo, run_gitbot
from tests.sandbox.layouts import SYSTEM_PATH, pyenv_root
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow


def test_explain_shows_both_resolutions_and_the_mounts(tmp_path: Path):
    require_bwrap()
    home = tmp_path / "home"
    root = pyenv_root(home, {"3.99.0": "marker"}, "3.99.0")
    (home / ".cargo" / "bin").mkdir(parents=True)
    (home / ".cargo" / "bin" / "cargo").write_text("#!/bin/sh\n")
    (home / ".cargo" / "credentials.toml").write_text("token = 'x'\n")
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    env = {"HOME": str(home), "PATH": f"{root}/shims:{home}/.cargo/bin:{repo}/bin:{SYSTEM_PATH}"}
    proc = run_gitbot(["sandbox", "explain", "--repo", str(repo), "--", "python3", "-m", "pytest"], env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"in your shell:  {root}/shims/python3 → pyenv 3.99.0 (chosen by {root}/version)" in out
    assert f"in the sandbox: {root}/shims/python3 → pyenv 3.99.0" in out
    assert f"checked inside: `command -v python3` → {root}/shims/python3" in out
    assert f"{root} (pyenv root" in out and f"{home}/.cargo (cargo home" in out
    assert f"{home}/.cargo/credentials.toml" in out.split("Masked")[1].split("Writable")[0]
    assert f"{repo}/bin: inside the repository, and it did not exist" in out
    assert ".gitbot" in out.split("Protected")[1] and "AGENTS.md" in out.split("Protected")[1]
    hidden = out.split("Hidden")[1]
    assert "/opt" in hidden or not Path("/opt").is_dir()


def test_explain_exits_2_for_a_program_the_sandbox_cannot_start(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    proc = run_gitbot(["sandbox", "explain", "--repo", str(repo), "--", "no-such-checker"])
    assert proc.returncode == 2 and "It cannot start there" in proc.stdout
    assert run_gitbot(["sandbox", "explain", "--repo", str(repo)]).returncode == 2  # no command
    assert run_gitbot(["sandbox", "explain", "--repo", str(tmp_path), "--", "ls"]).returncode == 2  # not a repository


def test_explain_names_the_rebuildable_build_output_and_what_a_restore_does_with_it(tmp_path: Path):
    require_bwrap()
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n", ".gitignore": "target/\nmodels/\n"})
    (repo / "target" / "debug").mkdir(parents=True)
    (repo / "target" / "debug" / "app").write_text("built\n")
    (repo / "models").mkdir()
    (repo / "models" / "weights.bin").write_text("the user's\n")
    proc = run_gitbot(["sandbox", "explain", "--repo", str(repo), "--", "true"])
    assert proc.returncode == 0, proc.stderr
    section = proc.stdout.split("Rebuildable")[1].split("Hidden")[0]
    assert "none: [sandbox] rebuildable is empty" in section and "target/" not in section  # opt-in
    (repo / ".gitbot").mkdir()
    (repo / ".gitbot" / "policy.toml").write_text('[sandbox]\nrebuildable = ["**/target"]\n')
    proc = run_gitbot(["sandbox", "explain", "--repo", str(repo), "--", "true"])
    assert proc.returncode == 0, proc.stderr
    section = proc.stdout.split("Rebuildable")[1].split("Hidden")[0]
    assert "not restored" in section and "runs on your machine" in section
    assert "target/" in section and "models" not in section
