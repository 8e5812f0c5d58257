"""gitbot.sandbox: the allow-listed environment, the bwrap command line, the probe and its messages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox import bwrap, processes, readdeny
from gitbot.sandbox import env as sandbox_env
from gitbot.sandbox.bwrap import SandboxStatus, empty_file, wrap
from gitbot.sandbox.env import build_env
from gitbot.sandbox.runner import Runner
from tests.sandbox.support import require_bwrap

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
    assert env["HOME"] == sandbox_env.SANDBOX_HOME
    assert env["LANG"] == "en_US.UTF-8"
    assert env["TERM"] == "dumb" and env["PAGER"] == env["GIT_PAGER"] == env["MANPAGER"] == "cat"
    assert env["PYTHONDONTWRITEBYTECODE"] == env["PYTHONUNBUFFERED"] == "1"
    assert env["NO_COLOR"] == "1" and env["PIP_PROGRESS_BAR"] == "off" and env["npm_config_progress"] == "false"
    assert set(env) <= set(sandbox_env.PASSTHROUGH_VARIABLES) | set(sandbox_env.FIXED_ENVIRONMENT) | {"HOME"}


def test_build_env_refuses_secrets_in_extra(planted):
    assert build_env({"FOO": "1"}, home="/h")["FOO"] == "1"
    with pytest.raises(ValueError, match="looks like a secret"):
        build_env({"DEPLOY_TOKEN": "x"})
    with pytest.raises(ValueError, match="contains a secret"):
        build_env({"HARMLESS": f"prefix {planted['GITHUB_TOKEN']}"})


def bwrap_part(argv: list[str]) -> list[str]:
    """The bubblewrap command line of `wrap`'s result (as root it comes after the privilege-dropping helper)."""
    return argv if os.geteuid() != 0 else argv[argv.index("--") + 1:]


def test_wrap_builds_the_sandbox_command_line(tmp_path: Path):
    (tmp_path / ".git" / "gitbot").mkdir(parents=True)
    status = SandboxStatus(True, "test", "/usr/bin/bwrap", features=frozenset({"size", "disable-userns"}))
    argv = bwrap_part(wrap(["bash", "-c", "true"], tmp_path, network=False, status=status))
    joined = " ".join(argv)
    repo = os.path.realpath(tmp_path)
    assert argv[0] == "/usr/bin/bwrap" and argv[-3:] == ["bash", "-c", "true"]
    # As root the sources of the repository's binds are its id-mapped copy (see confine.py).
    assert any(argv[i] == "--ro-bind" and argv[i + 2] == f"{repo}/.git" for i in range(len(argv) - 2))
    assert any(argv[i] == "--bind" and argv[i + 2] == repo for i in range(len(argv) - 2))
    for flags in ("--ro-bind /usr /usr", "--dev /dev", "--proc /proc", "--ro-bind /proc/sys /proc/sys",
                  f"--tmpfs {repo}/.git/gitbot",
                  f"--remount-ro {repo}/.git/gitbot", "--remount-ro /", "--unshare-net", "--unshare-pid",
                  "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session", "--clearenv",
                  "--cap-drop ALL", f"--chdir {repo}", "--disable-userns", "--uid 1000"):
        assert flags in joined, flags
    assert "--ro-bind / /" not in joined  # only the system directories, not the whole host
    # /tmp is replaced before the repository (which may live under /tmp) is bound.
    assert argv.index("/tmp") < argv.index(repo)
    assert "--unshare-net" not in wrap(["true"], tmp_path, network=True, status=status)


def test_probe_really_runs_bwrap():
    status = require_bwrap()
    assert status.available and status.bwrap
    assert bwrap.probe() is status  # cached


def test_describe_is_loud_when_commands_are_not_sandboxed(monkeypatch, tmp_path):
    broken = SandboxStatus(False, "bubblewrap does not work here: setting up uid map: Permission denied",
                           "/usr/bin/bwrap", "setting up uid map: Permission denied")
    monkeypatch.setattr(bwrap, "probe", lambda refresh=False: broken)
    def describe(policy):
        return Runner(policy, tmp_path).receipt_line

    from gitbot.sandbox import contain

    # Where the confinement without namespaces works (this machine), auto and required use it, and say
    # how bubblewrap could work.
    for mode in ("auto", "required"):
        contained = describe(Policy(sandbox_mode=mode))
        assert contained.startswith("confined without namespaces") and "Landlock" in contained
        assert "apparmor_restrict_unprivileged_userns=0" in contained
    monkeypatch.setattr(contain, "probe", lambda: (False, "no Landlock"))
    auto = describe(Policy(sandbox_mode="auto"))
    assert auto.startswith("WARNING") and "WITHOUT a sandbox" in auto
    assert "apparmor_restrict_unprivileged_userns=0" in auto
    required = describe(Policy(sandbox_mode="required"))
    assert "refused" in required and "apt-get install -y bubblewrap" in required
    assert describe(Policy(sandbox_mode="off")).startswith("WARNING")


def test_the_receipt_says_when_unsandboxed_commands_could_read_the_parents_environment(monkeypatch, tmp_path):
    from gitbot.sandbox import confine

    monkeypatch.setattr(bwrap, "probe", lambda refresh=False: SandboxStatus(False, "bwrap is missing"))
    assert confine.environ_protection()  # Landlock works on this machine: nothing to warn about
    assert "CANNOT keep" not in Runner(Policy(sandbox_mode="auto"), tmp_path).receipt_line
    monkeypatch.setattr(confine, "_LANDLOCK", False)  # a kernel without Landlock
    for mode in ("auto", "off"):
        runner = Runner(Policy(sandbox_mode=mode), tmp_path)
        assert not runner.environ_protected and "CANNOT keep the commands from reading" in runner.receipt_line
    assert Runner(Policy(sandbox_mode="required"), tmp_path).refusal  # required: nothing runs at all


def test_probe_reports_a_missing_bwrap(monkeypatch):
    monkeypatch.setattr(bwrap, "_bwrap_path", lambda: None)
    status = bwrap._probe()
    assert not status.available and "not installed" in status.description


def test_probe_reports_a_bwrap_that_fails(monkeypatch, tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(bwrap, "_bwrap_path", lambda: str(fake))
    status = bwrap._probe()
    assert not status.available
    assert "setting up uid map: Permission denied" in status.description


def test_process_limit_has_a_working_mechanism():
    with processes.ProcessLimit(32) as limit:
        assert limit.cgroup or limit.nproc, limit.description
        completed = subprocess.run(limit.launcher(["/bin/sh", "-c", "echo ok"]), capture_output=True, text=True,
                                   env=build_env(), check=False)
        assert completed.stdout == "ok\n", completed.stderr
    assert limit.cgroup is None  # removed on exit


# --- host sockets, PATH, gitbot's own environ, git config and read_deny (security review) -------------------


def test_wrap_hides_host_socket_directories(tmp_path: Path):
    status = SandboxStatus(True, "test", "/usr/bin/bwrap", features=frozenset())
    argv = bwrap_part(wrap(["true"], tmp_path, network=False, status=status))
    assert argv[argv.index("/run") - 1] == "--tmpfs"
    assert not any(arg == "/var" or arg.startswith("/var/run") for arg in argv)  # /var is not shown at all


def test_build_env_drops_path_entries_the_agent_can_write(monkeypatch, tmp_path: Path):
    repo = tmp_path / "repo"
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    entries = [f"{repo}/.venv/bin", "/usr/local/bin", f"{repo}/node_modules/.bin", "/tmp/tools/bin",
               "/var/tmp/bin", f"{home}/.local/bin", "/usr/bin", "/tmp", "/bin"]
    monkeypatch.setenv("PATH", ":".join(entries))
    assert build_env(repo=repo)["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    # GITHUB_WORKSPACE is the repository in a workflow, even when `repo` is not given.
    monkeypatch.setenv("GITHUB_WORKSPACE", str(repo))
    assert build_env()["PATH"] == "/usr/local/bin:/usr/bin:/bin"


def test_build_env_drops_a_path_entry_that_leads_into_the_repository_through_a_symlink(monkeypatch, tmp_path):
    repo = tmp_path / "repo"
    (repo / "bin").mkdir(parents=True)
    outside = Path(tempfile.mkdtemp(prefix="gitbot-path-test-", dir="/var/tmp"))
    try:
        # A PATH entry that looks harmless but resolves into the repository.
        link = outside / "tools"
        link.symlink_to(repo / "bin")
        monkeypatch.setenv("PATH", f"/usr/bin:{link}:/bin")
        assert build_env(repo=repo)["PATH"] == "/usr/bin:/bin"
    finally:
        shutil.rmtree(outside, ignore_errors=True)


_DUMPABLE_PROBE = """
import ctypes, sys
from gitbot.sandbox import bwrap, env
libc = ctypes.CDLL(None)
assert libc.prctl(3, 0, 0, 0, 0) == 1, "a fresh process is dumpable"
if sys.argv[1] == "wrap":
    bwrap.wrap(["true"], sys.argv[2], network=False,
               status=bwrap.SandboxStatus(True, "test", "/usr/bin/bwrap"), env={"PATH": "/usr/bin"})
else:
    env.build_env()
print("dumpable", libc.prctl(3, 0, 0, 0, 0))
env.protect_process_environ()
env.protect_process_environ()
print("again", libc.prctl(3, 0, 0, 0, 0))
"""


@pytest.mark.parametrize("how", ["wrap", "build_env"])
def test_preparing_any_command_makes_gitbot_non_dumpable(tmp_path, how):
    # In a fresh process: this test process may already have been protected by an earlier test.
    completed = subprocess.run([sys.executable, "-c", _DUMPABLE_PROBE, how, str(tmp_path)], capture_output=True,
                               text=True, cwd=Path(__file__).resolve().parents[2], check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["dumpable", "0", "again", "0"]


class _DenyByName(Policy):
    def check_read(self, relpath):  # a policy with its own read rules: every file goes through it
        from gitbot.policy.base import Decision

        return Decision("private" not in relpath, "test rule")


def test_read_denied_files_finds_hidden_ignored_and_nested_matches(tmp_path: Path):
    repo = tmp_path / "repo"
    for relpath in (".env", "app/.env.local", "deep/er/cert.PEM", "node_modules/pkg/id_rsa", "src/main.py",
                    "README.md", ".git/secret.key", "private-notes.txt"):
        (repo / relpath).parent.mkdir(parents=True, exist_ok=True)
        (repo / relpath).write_text("x\n")
    (repo / ".gitignore").write_text(".env\nnode_modules/\n")
    (repo / "link.key").symlink_to(repo / "README.md")  # a symlink: its target decides, and it is allowed
    policy = Policy(repo=repo)
    found = sorted(readdeny.read_denied_files(repo, policy))
    assert found == [".env", "app/.env.local", "deep/er/cert.PEM", "node_modules/pkg/id_rsa"]
    assert readdeny.read_denied_files(repo, _DenyByName(repo=repo)) == ["private-notes.txt"]


def test_read_denied_files_fails_closed_when_there_are_too_many(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(readdeny, "MAX_MASKED_FILES", 3)
    for n in range(4):
        (tmp_path / f"k{n}.pem").write_text("x")
    with pytest.raises(readdeny.SandboxRefusal, match="more than 3 files .* read_deny"):
        readdeny.read_denied_files(tmp_path, Policy(repo=tmp_path))


def test_wrap_masks_hidden_files_after_every_directory_bind(tmp_path: Path):
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / ".env").write_text("x")
    status = SandboxStatus(True, "test", "/usr/bin/bwrap", features=frozenset())
    argv = wrap(["true"], tmp_path, network=False, status=status, read_only=[tmp_path / ".github" / "workflows"],
                hidden_files=[".github/workflows/.env", "../outside.env", "missing.env"])
    repo = os.path.realpath(tmp_path)
    target = f"{repo}/.github/workflows/.env"
    assert argv[argv.index(target) - 2:argv.index(target) + 1] == ["--ro-bind", empty_file(), target]
    assert os.path.getsize(empty_file()) == 0
    assert argv.index(target) > argv.index(f"{repo}/.github/workflows")
    assert not any("outside.env" in arg or "missing.env" in arg for arg in argv)


def test_the_helpers_spec_arrives_as_written_and_a_malformed_one_runs_nothing(tmp_path: Path):
    from gitbot.sandbox import confine, helper

    spec = {"uid": confine.SANDBOX_HOST_UID, "stage": "/tmp/stage x", "idmap": [["/work/my repo", "id0"]],
            "bind": [["/home/u/.pyenv", "b0", True], ["/home/u/.python-version", "b1", False]]}
    command = confine.helper_command("drop", spec)
    fields = command[command.index("drop") + 1:command.index("--")]
    assert helper.parse_spec("drop", fields) == ({"file_bytes": "-", "nproc": "-", "go": "-"}, spec)
    with processes.ProcessLimit(64) as limit:
        confine_fields = confine.helper_command("confine", {"landlock": True}, limit)[6:-1]
        assert helper.parse_spec("confine", confine_fields) == (
            {"file_bytes": str(processes.MAX_FILE_BYTES), "nproc": str(limit.nproc) if limit.nproc else "-",
             "go": str(limit.pass_fds[0]) if limit.cgroup else "-"}, {"landlock": True})
    marker = tmp_path / "ran"
    truncated = command[:command.index("--") - 1] + ["--", "/bin/sh", "-c", f"touch {marker}"]
    completed = subprocess.run(truncated, capture_output=True, text=True, timeout=30, check=False)
    assert completed.returncode == confine.EXIT_FAILED and completed.stderr.startswith(confine.FAILURE_PREFIX)
    assert not marker.exists()


def test_through_the_helper_a_command_is_in_its_cgroup_before_it_runs_and_keeps_its_limits(tmp_path: Path):
    from gitbot.sandbox import command, confine

    with processes.ProcessLimit(32, max_file_bytes=4096) as limit:
        if not limit.cgroup:
            pytest.skip(f"no pids cgroup here ({limit.description}): the launcher joins nothing")
        line = "pids" if limit.cgroup_kind == "v1" else "^0::"
        script = f"grep -E '{line}' /proc/self/cgroup; head -c 10000 /dev/zero > big; echo wrote=$?"
        argv = confine.unsandboxed(["/bin/sh", "-c", script], limit)
        assert limit.launcher(argv) == argv  # the helper sets the limits: no launcher shell in front
        run = command.run_command(argv, tmp_path, env=build_env(), timeout=30, display="probe", limit=limit)
    # The command's first look at its cgroup already finds it in the command's own.
    assert f"/gitbot-{os.getpid()}-" in run.output.splitlines()[0], run.output
    assert "wrote=0" not in run.output and (tmp_path / "big").stat().st_size == 4096, run.output


def test_a_helper_that_is_not_put_into_its_cgroup_runs_nothing(tmp_path: Path, monkeypatch):
    from gitbot.sandbox import command, confine

    marker = tmp_path / "ran"
    with processes.ProcessLimit(32) as limit:
        if not limit.cgroup:
            pytest.skip(f"no pids cgroup here ({limit.description})")
        # Joining fails (the cgroup went away): the helper hears nothing and stops.
        monkeypatch.setattr(limit, "cgroup", str(tmp_path / "no-such-cgroup"))
        argv = confine.unsandboxed(["/bin/sh", "-c", f"touch {marker}"], limit)
        run = command.run_command(argv, tmp_path, env=build_env(), timeout=30, display="probe", limit=limit)
        monkeypatch.undo()
    assert run.exit_code == confine.EXIT_FAILED and "process-limit cgroup" in run.output
    assert not marker.exists()
