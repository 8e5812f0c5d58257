"""gitbot.sandbox: the allow-listed environment, the bwrap command line, the probe and its messages."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitbot import sandbox
from gitbot.policy import Policy
from gitbot.sandbox import SandboxStatus, build_env, describe, wrap
from tests.policy.sandbox_support import require_bwrap

PLANTED = {"ANTHROPIC_API_KEY": "sk-ant-planted-0123456789", "GITHUB_TOKEN": "ghs_planted0123456789",
           "MY_SERVICE_PASSWORD": "hunter2-planted-pw", "AWS_SECRET_ACCESS_KEY": "planted-aws-secret-key",
           "RANDOM_SETTING": "not-a-secret-but-not-allowed"}


@pytest.fixture
def planted(monkeypatch):
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    return PLANTED


def test_build_env_is_an_allow_list(planted, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:.:relative/bin::/bin")
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    env = build_env()
    for value in planted.values():
        assert value not in env.values()
    assert "RANDOM_SETTING" not in env
    assert env["PATH"] == "/usr/bin:/bin"  # relative entries would mean "the repository"
    assert env["HOME"] == sandbox.SANDBOX_HOME
    assert env["LANG"] == "en_US.UTF-8"
    assert env["TERM"] == "dumb" and env["PAGER"] == env["GIT_PAGER"] == env["MANPAGER"] == "cat"
    assert env["PYTHONDONTWRITEBYTECODE"] == env["PYTHONUNBUFFERED"] == "1"
    assert env["NO_COLOR"] == "1" and env["PIP_PROGRESS_BAR"] == "off" and env["npm_config_progress"] == "false"
    assert set(env) <= set(sandbox.PASSTHROUGH_VARIABLES) | set(sandbox.FIXED_ENVIRONMENT) | {"HOME"}


def test_build_env_refuses_secrets_in_extra(planted):
    assert build_env({"FOO": "1"}, home="/h")["FOO"] == "1"
    with pytest.raises(ValueError, match="looks like a secret"):
        build_env({"DEPLOY_TOKEN": "x"})
    with pytest.raises(ValueError, match="contains a secret"):
        build_env({"HARMLESS": f"prefix {planted['GITHUB_TOKEN']}"})


def test_wrap_builds_the_sandbox_command_line(tmp_path: Path):
    (tmp_path / ".git" / "gitbot").mkdir(parents=True)
    status = SandboxStatus(True, "test", "/usr/bin/bwrap", features=frozenset({"size", "disable-userns"}))
    argv = wrap(["bash", "-c", "true"], tmp_path, network=False, status=status)
    joined = " ".join(argv)
    repo = os.path.realpath(tmp_path)
    assert argv[0] == "/usr/bin/bwrap" and argv[-3:] == ["bash", "-c", "true"]
    for flags in ("--ro-bind / /", "--dev /dev", "--proc /proc", f"--bind {repo} {repo}",
                  f"--ro-bind {repo}/.git {repo}/.git", f"--tmpfs {repo}/.git/gitbot",
                  f"--remount-ro {repo}/.git/gitbot", "--unshare-net", "--unshare-pid", "--unshare-ipc",
                  "--unshare-uts", "--die-with-parent", "--new-session", "--clearenv", "--cap-drop ALL",
                  f"--chdir {repo}", "--disable-userns"):
        assert flags in joined, flags
    # /tmp is replaced before the repository (which may live under /tmp) is bound.
    assert argv.index("/tmp") < argv.index("--bind")
    assert "--unshare-net" not in wrap(["true"], tmp_path, network=True, status=status)


def test_probe_really_runs_bwrap():
    status = require_bwrap()
    assert status.available and status.bwrap
    assert sandbox.probe() is status  # cached


def test_describe_is_loud_when_commands_are_not_sandboxed(monkeypatch, tmp_path):
    broken = SandboxStatus(False, "bubblewrap does not work here: setting up uid map: Permission denied",
                           "/usr/bin/bwrap", "setting up uid map: Permission denied")
    monkeypatch.setattr(sandbox, "probe", lambda refresh=False: broken)
    auto = describe(Policy(sandbox_mode="auto"))
    assert auto.startswith("WARNING") and "WITHOUT a sandbox" in auto
    assert "apparmor_restrict_unprivileged_userns=0" in auto
    required = describe(Policy(sandbox_mode="required"))
    assert "refused" in required and "apt-get install -y bubblewrap" in required
    assert describe(Policy(sandbox_mode="off")).startswith("WARNING")


def test_probe_reports_a_missing_bwrap(monkeypatch):
    monkeypatch.setattr(sandbox, "_bwrap_path", lambda: None)
    status = sandbox._probe()
    assert not status.available and "not installed" in status.description


def test_probe_reports_a_bwrap_that_fails(monkeypatch, tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sandbox, "_bwrap_path", lambda: str(fake))
    status = sandbox._probe()
    assert not status.available
    assert "setting up uid map: Permission denied" in status.description


def test_process_limit_has_a_working_mechanism():
    with sandbox.ProcessLimit(32) as limit:
        assert limit.cgroup or limit.nproc, limit.description
        completed = subprocess.run(limit.launcher(["/bin/sh", "-c", "echo ok"]), capture_output=True, text=True,
                                   env=build_env(), check=False)
        assert completed.stdout == "ok\n", completed.stderr
    assert limit.cgroup is None  # removed on exit
