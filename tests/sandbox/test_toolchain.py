"""The user's toolchain inside the sandbox, built for real under a temporary HOME: a project venv, a
pyenv-like root with shims and `.python-version`, a `pip install --user` site, a conda-like prefix, a
node-like install, cargo behind rustup-like proxies, an fnm-like PATH link. For each, the check
resolves to the same program inside as in the user's shell; secrets planted in the same HOME stay
unreadable inside."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox.runner import Runner
from gitbot.sandbox.toolchain import build_view
from tests.conftest import make_repo
from tests.sandbox.layouts import PYENV_EXEC, REAL_PYTHON, SHIM, SYSTEM_PATH, WHO_AM_I, executable, venv
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow

@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HOME holding what a developer's home holds: secrets next to the toolchains."""
    home = tmp_path / "home"
    token = "PLANTED-" + uuid.uuid4().hex
    for relative in (".ssh/id_rsa", ".aws/credentials", ".netrc", ".npmrc", ".git-credentials", ".pypirc",
                     ".docker/config.json", ".bash_history", ".config/gh/hosts.yml"):
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(f"secret {token}\n")
    (home / ".token").write_text(token)
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "work" / "repo", {"README.md": "# project\n"})


def user_env(home: Path, path: str, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8", **extra}


def outside(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    completed = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def inside(argv: list[str], env: dict[str, str], repo: Path) -> str:
    require_bwrap()
    runner = Runner(Policy(repo=repo, sandbox_mode="required"), repo, environ=env)
    run = runner.run_check(argv, 60)
    assert run.passed, run.output
    return run.output


def assert_secrets_hidden(env: dict[str, str], repo: Path, home: Path) -> None:
    token = (home / ".token").read_text()
    found = inside(["sh", "-c", f'grep -rs "{token}" "$HOME" /tmp {home.parent}; ls -A "$HOME"; echo scanned'],
                   env, repo)
    assert token not in found and found.endswith("scanned\n")
    assert ".ssh" not in found and ".aws" not in found and ".netrc" not in found


def assert_unreadable(path: Path, env: dict[str, str], repo: Path, home: Path) -> None:
    assert (home / ".token").read_text() in path.read_text()  # it is there, outside
    assert (home / ".token").read_text() not in inside(["sh", "-c", f'cat "{path}"; echo read'], env, repo)


def same_inside_and_outside(argv: list[str], env: dict[str, str], repo: Path) -> str:
    shell = outside(argv, env, repo)
    assert inside(argv, env, repo) == shell
    return shell


# ---------------------------------------------------------------- the layouts


def test_a_venv_inside_the_repository_activated_through_path(home, repo):
    venv(repo / ".venv", "venv_only")
    env = user_env(home, f"{repo}/.venv/bin:{SYSTEM_PATH}", VIRTUAL_ENV=str(repo / ".venv"))
    shell = same_inside_and_outside(["python", "-c", WHO_AM_I], env, repo)
    assert f"{repo}/.venv" in shell
    assert "venv_only imported" in same_inside_and_outside(["python", "-m", "venv_only"], env, repo)
    assert build_view(env, repo).protected == [".venv"]
    assert_secrets_hidden(env, repo, home)


def test_a_pyenv_root_with_shims_and_a_python_version_file(home, repo):
    root = home / ".pyenv"
    venv(root / "versions" / "3.98.0", "pyenv_global_only")
    venv(root / "versions" / "3.99.0", "pyenv_local_only")
    (root / "version").write_text("3.98.0\n")
    executable(root / "libexec" / "pyenv", PYENV_EXEC)
    executable(root / "shims" / "python3", SHIM.format(root=root))
    (repo / ".python-version").write_text("3.99.0\n")
    env = user_env(home, f"{root}/shims:{SYSTEM_PATH}")
    shell = same_inside_and_outside(["python3", "-c", WHO_AM_I], env, repo)
    assert f"{root}/versions/3.99.0" in shell  # chosen by the repository's .python-version
    assert "pyenv_local_only imported" in same_inside_and_outside(["python3", "-m", "pyenv_local_only"], env, repo)
    (repo / ".python-version").unlink()
    assert f"{root}/versions/3.98.0" in same_inside_and_outside(["python3", "-c", WHO_AM_I], env, repo)
    assert_secrets_hidden(env, repo, home)


def test_a_pip_install_user_site_and_its_console_script(home, repo):
    version = subprocess.run([REAL_PYTHON, "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
                             capture_output=True, text=True, check=True).stdout.strip()
    site = home / ".local" / "lib" / f"python{version}" / "site-packages"
    site.mkdir(parents=True)
    (site / "user_only.py").write_text("print('user_only imported')\n")
    executable(home / ".local" / "bin" / "user-tool", f"#!{REAL_PYTHON}\nimport user_only\n")
    (home / ".local" / "share" / "keyrings").mkdir(parents=True)
    (home / ".local" / "share" / "keyrings" / "login.keyring").write_text((home / ".token").read_text())
    env = user_env(home, f"{home}/.local/bin:{os.path.dirname(REAL_PYTHON)}:{SYSTEM_PATH}")
    assert same_inside_and_outside(["user-tool"], env, repo) == "user_only imported\n"
    assert "user_only imported" in same_inside_and_outside([REAL_PYTHON, "-m", "user_only"], env, repo)
    assert_secrets_hidden(env, repo, home)  # ~/.local/share is not shown: only bin/ and lib/pythonX.Y


def test_a_conda_like_prefix_with_an_activated_env(home, repo):
    base = home / "miniconda3"
    (base / "conda-meta").mkdir(parents=True)
    executable(base / "condabin" / "conda", "#!/bin/sh\necho conda-base\n")
    env_prefix = venv(base / "envs" / "project", "conda_env_only")
    (env_prefix / "conda-meta").mkdir()
    env = user_env(home, f"{env_prefix}/bin:{base}/condabin:{SYSTEM_PATH}", CONDA_PREFIX=str(env_prefix),
                   CONDA_DEFAULT_ENV="project")
    shell = same_inside_and_outside(["python", "-c", WHO_AM_I], env, repo)
    assert str(env_prefix) in shell
    assert "conda_env_only imported" in same_inside_and_outside(["python", "-m", "conda_env_only"], env, repo)
    assert same_inside_and_outside(["conda"], env, repo) == "conda-base\n"
    assert_secrets_hidden(env, repo, home)


def test_a_node_like_install_with_its_global_npmrc_masked(home, repo):
    prefix = home / ".nvm" / "versions" / "node" / "v20.11.0"
    executable(prefix / "bin" / "node", '#!/bin/sh\necho "node at $(readlink -f "$0") ran $*"\n')
    executable(prefix / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js", "#!/usr/bin/env node\n")
    (prefix / "bin" / "npm").symlink_to("../lib/node_modules/npm/bin/npm-cli.js")
    (prefix / "etc").mkdir()
    (prefix / "etc" / "npmrc").write_text(f"//registry.npmjs.org/:_authToken={(home / '.token').read_text()}\n")
    env = user_env(home, f"{prefix}/bin:{SYSTEM_PATH}", NVM_DIR=str(home / ".nvm"))
    assert "node at" in same_inside_and_outside(["node"], env, repo)
    assert "/bin/npm --version" in same_inside_and_outside(["npm", "--version"], env, repo)  # through env node
    assert_unreadable(prefix / "etc" / "npmrc", env, repo, home)
    assert_secrets_hidden(env, repo, home)


def test_cargo_behind_rustup_like_proxies_with_credentials_masked(home, repo):
    cargo_home, rustup_home = home / ".cargo", home / ".rustup"
    executable(cargo_home / "bin" / "rustup",
               '#!/bin/sh\nexec "${RUSTUP_HOME:-$HOME/.rustup}/toolchains/stable/bin/${0##*/}" "$@"\n')
    (cargo_home / "bin" / "cargo").symlink_to("rustup")
    executable(rustup_home / "toolchains" / "stable" / "bin" / "cargo", '#!/bin/sh\necho "cargo at $0"\n')
    (cargo_home / "credentials.toml").write_text(f'[registry]\ntoken = "{(home / ".token").read_text()}"\n')
    env = user_env(home, f"{cargo_home}/bin:{SYSTEM_PATH}")
    assert same_inside_and_outside(["cargo"], env, repo) == f"cargo at {rustup_home}/toolchains/stable/bin/cargo\n"
    assert_unreadable(cargo_home / "credentials.toml", env, repo, home)
    assert_secrets_hidden(env, repo, home)


def test_an_fnm_like_path_entry_that_is_a_link_somewhere_hidden(home, repo, tmp_path):
    installation = home / ".local" / "share" / "fnm" / "node-versions" / "v18.0.0" / "installation"
    executable(installation / "bin" / "node", '#!/bin/sh\necho "fnm node $(readlink -f "$0")"\n')
    shell_link = tmp_path / "run" / "fnm_multishells" / "1234_5678"
    shell_link.parent.mkdir(parents=True)
    shell_link.symlink_to(installation)
    env = user_env(home, f"{shell_link}/bin:{SYSTEM_PATH}")
    assert "fnm node" in same_inside_and_outside(["node"], env, repo)
    assert_secrets_hidden(env, repo, home)


def test_extra_read_only_paths_from_the_policy(home, repo, tmp_path):
    tools = tmp_path / "opt-tools"
    executable(tools / "lint", "#!/bin/sh\necho linted\n")
    env = user_env(home, SYSTEM_PATH)
    require_bwrap()
    plain = Runner(Policy(repo=repo, sandbox_mode="required"), repo, environ=env)
    with pytest.raises(Exception, match="the sandbox does not show"):
        plain.run_check([str(tools / "lint")], 30)
    policy = Policy(repo=repo, sandbox_mode="required", sandbox_read_only=(str(tools),))
    assert Runner(policy, repo, environ=env).run_check([str(tools / "lint")], 30).output == "linted\n"
