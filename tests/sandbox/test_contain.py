"""The confinement without namespaces (contain.py), tried where it is used: inside a container without
user namespaces, made here by a bubblewrap started with `--disable-userns` (bubblewrap inside it fails
with ENOSPC, as on a GitLab runner's Docker job). Each test runs one script in there that builds a real
Runner and runs real commands through it, and asserts what the commands could and could not do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitbot.sandbox import contain
from tests.conftest import git, make_repo
from tests.sandbox.support import processes_with

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import json, os, sys
from pathlib import Path
from gitbot.policy import load_policy
from gitbot.sandbox.runner import Runner

repo = Path(sys.argv[1])
policy = load_policy(repo)
runner = Runner(policy, repo)
from gitbot.sandbox.explain import explain
results = {"sandboxed": runner.sandboxed, "contained": runner.contained, "receipt": runner.receipt_line,
           "refusal": runner.refusal, "explain": explain(["true"], repo, policy)[0]}
for name, command in json.loads(sys.argv[2]).items():
    run = runner.run_shell(command, 30)
    results[name] = [run.exit_code, run.output]
print(json.dumps(results))
'''


def in_container(repo: Path, commands: dict[str, str], tmp_path: Path, extra_env: dict[str, str] | None = None,
                 *, cgroups: bool = True):
    """Run SCRIPT in a bubblewrap without user namespaces; its results as a dict. `cgroups=False`: with
    /sys/fs/cgroup read-only, as in a usual Docker job (no pids cgroup for gitbot's commands)."""
    if contain.landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-OF-THE-USER\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": str(ROOT), "PLANTED_SECRET_VARIABLE": "gitbot-process-secret-0451", **(extra_env or {})}
    outer = [shutil.which("bwrap"), "--unshare-user", "--disable-userns", "--bind", "/", "/", "--dev", "/dev",
             "--proc", "/proc", *([] if cgroups else ["--ro-bind", "/sys/fs/cgroup", "/sys/fs/cgroup"]),
             "--die-with-parent", "--", sys.executable, "-c", SCRIPT, str(repo), json.dumps(commands)]
    completed = subprocess.run(outer, capture_output=True, text=True, env=env, timeout=240, check=False)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


@pytest.fixture
def repo(tmp_path):
    path = make_repo(tmp_path / "repo", {"README.md": "readme\n", "sub/app.py": "print('app')\n",
                                         "sub/deep/other.txt": "other\n", "AGENTS.md": "be nice\n",
                                         ".gitignore": ".env\nsub/.env\n"})
    (path / ".env").write_text("DB_PASS=top-secret-env-value\n")
    make_repo(path / "vendor" / "lib", {"lib.py": "x = 1\n"})  # a nested repository, untracked
    (path / "sub" / ".env").write_text("NESTED=nested-secret-value\n")
    return path


def test_in_a_container_without_user_namespaces_commands_are_confined_not_unsandboxed(repo, tmp_path):
    results = in_container(repo, {
        "write_subdir": "echo made > sub/deep/new.txt && cat sub/deep/new.txt",
        "beside_denied": "echo x > sub/new.txt",
        "append_root_file": "echo more >> README.md",
        "create_root_file": "echo x > top.txt",
        "git_config": "echo '[core] fsmonitor = x' >> .git/config",
        "git_hook": "echo evil > .git/hooks/post-checkout",
        "nested_git_config": "echo '[core] fsmonitor = x' >> vendor/lib/.git/config",
        "nested_git_file": "echo x > vendor/lib/lib.py",
        "agents": "echo evil > AGENTS.md",
        "policy_dir": "mkdir .gitbot",
        "env_file": "cat .env",
        "nested_env": "cat sub/.env",
        "env_by_link": "ln -s ../.env sub/link && cat sub/link",
        "env_hardlink": "ln sub/.env sub/hard && cat sub/hard",
        "user_key": f"cat {tmp_path}/home/.ssh/id_rsa",
        "outside_write": f"echo x > {tmp_path}/outside.txt",
        "tmpdir": 'echo t > "$TMPDIR/t" && cat "$TMPDIR/t"',
        "tcp": "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 9))\"",
        "unix": "python3 -c \"import socket; socket.socket(socket.AF_UNIX)\"",
        "parent_environ": "cat /proc/$PPID/environ /proc/1/environ 2>&1 | tr '\\0' '\\n' | grep -c PLANTED || true",
        "git_status": "git status --porcelain",
    }, tmp_path)
    assert results["sandboxed"] is False and results["contained"] is True, results["receipt"]
    assert "Landlock" in results["receipt"] and results["refusal"] is None
    assert "Confinement: Landlock and seccomp, without namespaces" in results["explain"]

    def ok(name):
        assert results[name][0] == 0, (name, results[name])
        return results[name][1]

    def refused(name):
        assert results[name][0] != 0, (name, results[name])
        return results[name][1]

    assert "made" in ok("write_subdir") and (repo / "sub" / "deep" / "new.txt").read_text() == "made\n"
    refused("beside_denied")  # a directory holding a read_deny file gets no new entries (contain.py says why)
    ok("append_root_file")
    assert (repo / "README.md").read_text() == "readme\nmore\n"
    refused("create_root_file")
    assert not (repo / "top.txt").exists()
    refused("git_config")
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()
    refused("git_hook")
    refused("nested_git_config")
    assert "fsmonitor" not in (repo / "vendor" / "lib" / ".git" / "config").read_text()
    ok("nested_git_file")  # the nested repository's work tree is the repository's to change
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    refused("agents")
    assert (repo / "AGENTS.md").read_text() == "be nice\n"
    refused("policy_dir")
    assert not (repo / ".gitbot").exists()
    for name in ("env_file", "nested_env", "env_by_link", "env_hardlink"):
        output = results[name][1]
        assert "top-secret-env-value" not in output and "nested-secret-value" not in output, (name, output)
    assert "PRIVATE-KEY-OF-THE-USER" not in results["user_key"][1] and results["user_key"][0] != 0
    refused("outside_write")
    assert not (tmp_path / "outside.txt").exists()
    assert ok("tmpdir").strip() == "t"
    assert "PermissionError" in refused("tcp")
    assert "PermissionError" in refused("unix")
    assert results["parent_environ"][1].strip().splitlines()[-1] == "0"
    assert "sub/deep/new.txt" in ok("git_status")


def test_required_mode_accepts_the_confinement_but_not_with_credentials_in_git_config(repo, tmp_path):
    (repo / ".gitbot").mkdir()
    (repo / ".gitbot" / "policy.toml").write_text('[sandbox]\nmode = "required"\n')
    results = in_container(repo, {"echo": "echo confined"}, tmp_path)
    assert results["contained"] is True and results["refusal"] is None
    assert results["echo"] == [0, "confined\n"]

    git(repo, "remote", "add", "origin", "https://oauth2:glpat-planted0123456789abcd@gitlab.example/x/y.git")
    results = in_container(repo, {}, tmp_path)
    assert results["refusal"] and ".git/config" in results["refusal"]


def test_without_a_pids_cgroup_what_a_command_leaves_running_is_gone_right_after_it(repo, tmp_path):
    # The command's first process exits at once; a `setsid` child (out of its process group) and a double
    # fork's grandchild (its parent gone) outlive it. With no cgroup to find them, the launcher (a child
    # subreaper: both are its descendants) kills them before it reports the end: the next command sees none.
    number = f"{os.getpid()}-{time.monotonic_ns()}"
    marker = f"gitbot-survivor-{number}"
    # The marker is put together by the shell, and the grep's pattern bracketed: neither these command
    # lines nor the container script's (which holds them) contain it.
    results = in_container(repo, {
        "leave": f"M=gitbot-surv''ivor-{number}; setsid bash -c \"exec -a $M-setsid sleep 100\" >/dev/null 2>&1 "
                 f"< /dev/null & (bash -c \"exec -a $M-forked sleep 100 &\" &) >/dev/null 2>&1; echo started",
        "look": f"grep -ls 'gitbot-surv[i]vor-{number}' /proc/[0-9]*/cmdline; echo looked",
    }, tmp_path, cgroups=False)
    assert results["contained"] is True, results["receipt"]
    assert results["leave"] == [0, "started\n"]
    assert results["look"] == [0, "looked\n"], "a process the previous command left is still running"
    assert not processes_with(marker)
