"""The toolchain view's decisions, without running anything: what stays on PATH, what is mounted, what is
masked and protected, and which failures are the environment's."""

from __future__ import annotations

import os
from pathlib import Path

from gitbot.policy import Policy
from gitbot.sandbox import diagnose
from gitbot.sandbox.runner import protected_policy
from gitbot.sandbox.toolchain import build_view


def make(path: Path, text: str = "#!/bin/sh\n", mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def test_path_keeps_the_users_order_and_drops_what_the_agent_could_create(tmp_path):
    home, repo = tmp_path / "home", tmp_path / "repo"
    (repo / ".venv" / "bin").mkdir(parents=True)
    make(home / ".local" / "bin" / "tool")
    path = [f"{repo}/.venv/bin", "relative/bin", "", f"{home}/.local/bin", f"{repo}/bin", "/usr/bin", str(repo)]
    view = build_view({"HOME": str(home), "PATH": ":".join(path)}, repo)
    assert view.path == [f"{repo}/.venv/bin", f"{home}/.local/bin", "/usr/bin"]
    dropped = dict(view.dropped)
    assert "relative" in dropped["relative/bin"] and "did not exist" in dropped[f"{repo}/bin"]
    assert "the repository itself" in dropped[str(repo)]
    assert view.protected == [".venv"]


def test_only_what_programs_need_is_mounted_never_home_or_the_rest_of_local(tmp_path):
    home, repo = tmp_path / "home", tmp_path / "repo"
    repo.mkdir()
    make(home / ".local" / "bin" / "tool")
    (home / ".local" / "lib" / "python3.99" / "site-packages").mkdir(parents=True)
    (home / ".local" / "share" / "keyrings").mkdir(parents=True)
    make(home / "bin" / "script")
    view = build_view({"HOME": str(home), "PATH": f"{home}/.local/bin:{home}/bin:/usr/bin"}, repo)
    sources = {m.source for m in view.mounts}
    assert sources == {f"{home}/.local/bin", f"{home}/bin", f"{home}/.local/lib/python3.99"}
    assert view.variables["PYTHONUSERBASE"] == f"{home}/.local"


def test_credential_files_inside_a_mounted_toolchain_are_masked(tmp_path):
    home, repo = tmp_path / "home", tmp_path / "repo"
    repo.mkdir()
    make(home / ".cargo" / "bin" / "cargo")
    make(home / ".cargo" / "credentials.toml", "token = 'x'\n", 0o600)
    (home / ".cargo" / "registry" / "cache").mkdir(parents=True)
    make(home / ".cargo" / "registry" / "cache" / ".npmrc", "not looked into\n")
    view = build_view({"HOME": str(home), "PATH": f"{home}/.cargo/bin:/usr/bin"}, repo)
    assert f"{home}/.cargo" in {m.source for m in view.mounts}
    assert view.masked == [f"{home}/.cargo/credentials.toml"]
    assert view.variables["CARGO_HOME"] == f"{home}/.cargo"


def test_a_venvs_interpreter_leads_to_its_base_install(tmp_path):
    home, repo, base = tmp_path / "home", tmp_path / "repo", tmp_path / "home" / ".local" / "share" / "uv" / "py"
    python = make(base / "bin" / "python3.12")
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to(python)
    (repo / ".venv" / "pyvenv.cfg").write_text(f"home = {base}/bin\ninclude-system-site-packages = false\n")
    view = build_view({"HOME": str(home), "PATH": f"{repo}/.venv/bin:/usr/bin"}, repo)
    assert [m.source for m in view.mounts] == [str(base)]


def test_the_enforced_policy_protects_policy_instructions_and_toolchain_dirs(tmp_path):
    view = build_view({"HOME": "/nonexistent", "PATH": "/usr/bin"}, tmp_path)
    view.protected = [".venv"]
    policy = protected_policy(Policy(repo=tmp_path, edit_deny=()), view)
    for path in (".gitbot/policy.toml", "AGENTS.md", ".venv/bin/grep"):
        assert not policy.check_edit(path), path
    assert policy.check_edit("src/app.py")


def test_a_missing_check_tool_is_the_environments_unless_the_repository_has_it(tmp_path):
    said = "/usr/bin/python3: No module named no_such_checker\n"
    argv = ["python3", "-m", "no_such_checker"]
    assert diagnose.missing_check_module(argv, said, str(tmp_path)) == "no_such_checker"
    (tmp_path / "no_such_checker").mkdir()  # the repository's own package: its code may be what is broken
    assert diagnose.missing_check_module(argv, said, str(tmp_path)) is None
    assert diagnose.missing_check_module(["python3", "-m", "pytest"], "2 failed", str(tmp_path)) is None
    assert diagnose.missing_check_module(["node", "-m", "x"], said, str(tmp_path)) is None


def test_pyenv_chooses_the_version_as_pyenv_does(tmp_path):
    root, project = tmp_path / "pyenv", tmp_path / "work" / "project"
    (project / "src").mkdir(parents=True)
    root.mkdir()
    (root / "version").write_text("3.11.9\n")
    assert diagnose.pyenv_version(str(root), str(project), {}) == ("3.11.9", f"{root}/version")
    (tmp_path / "work" / ".python-version").write_text("# comment\n3.12.4\n")
    assert diagnose.pyenv_version(str(root), str(project / "src"), {})[0] == "3.12.4"
    assert diagnose.pyenv_version(str(root), str(project), {"PYENV_VERSION": "3.13.0:3.12.4"})[0] == "3.13.0"
    assert os.path.basename(diagnose.pyenv_version(str(root), str(project), {})[1]) == ".python-version"


def test_the_views_remembered_real_paths_are_the_real_paths(tmp_path):
    from gitbot.sandbox.toolchain import _Builder

    (tmp_path / "opt" / "tool-1.2" / "bin").mkdir(parents=True)
    make(tmp_path / "opt" / "tool-1.2" / "bin" / "tool")
    (tmp_path / "opt" / "tool").symlink_to("tool-1.2")  # relative
    (tmp_path / "current").symlink_to(tmp_path / "opt" / "tool")  # absolute, to a link
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "dangling").symlink_to("nowhere/at/all")
    (tmp_path / "up").symlink_to("opt/tool/bin/..")
    builder = _Builder({"HOME": str(tmp_path / "home"), "PATH": "/usr/bin"}, str(tmp_path / "repo"), ())
    for path in ("current/bin/tool", "current/bin", "opt/tool/bin/tool", "loop", "loop/x", "dangling", "dangling/x",
                 "up/bin/tool", "current/bin/../bin/tool", "current//bin/./tool", "missing/bin/tool", "", "opt/"):
        full = f"{tmp_path}/{path}"
        assert builder.real(full) == os.path.realpath(full), path
        assert builder.real(full) == os.path.realpath(full), path  # and again, from what it remembered
    (tmp_path / "moved").symlink_to("opt")
    assert builder.real(f"{tmp_path}/moved/tool/bin/tool") == f"{tmp_path}/opt/tool-1.2/bin/tool"
