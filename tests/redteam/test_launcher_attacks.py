"""Red team: the launcher (sandbox/launcher.py, helper.py "serve") that starts every command of a Runner.

Attacks from a command (sandboxed as root, and unsandboxed `[sandbox] mode = "off"`) on what the
launcher changed: the exit status it reports, the process budget its shared cgroup gives each command,
and what is left running or charged after a command."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from gitbot.policy import Policy
from gitbot.sandbox import launcher as launcher_module
from gitbot.sandbox.runner import Runner
from tests.sandbox.support import processes_with, require_bwrap

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def git_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("hello\n")
    return repo


def _runner(repo, mode):
    if mode == "sandboxed":
        require_bwrap()
    return Runner(Policy(sandbox_mode="required" if mode == "sandboxed" else "off"), repo)


# ------------------------------------------------------------------ the exit status


def test_a_command_that_ends_before_gitbot_reads_its_pid_keeps_its_exit_status(git_repo, monkeypatch):
    # GOT THROUGH. The launcher says "pid N\n", then "exit M\n" as soon as it reaps the command; when both
    # are in the socket by the time gitbot reads (a command that ends at once, gitbot's thread descheduled
    # on a busy machine), Launcher.spawn reads them as one line and int(b"N\nexit M") raises ValueError:
    # the tool call fails, a check crashes. Seen without any help once in 300 `exit 3` runs here; the
    # delay below only makes it happen every time.
    real_send_fds = socket.send_fds

    def send_then_stall(*args, **kwargs):
        sent = real_send_fds(*args, **kwargs)
        time.sleep(0.5)  # gitbot's thread is slow to come back to the answer socket
        return sent

    monkeypatch.setattr(launcher_module.socket, "send_fds", send_then_stall)
    runner = _runner(git_repo, "unsandboxed")
    try:
        run = runner.run_shell("exit 3", 30)
        assert run.exit_code == 3, run
        assert runner.run_shell("exit 0", 30).exit_code == 0
    finally:
        runner.close()


@pytest.mark.parametrize("mode", ["sandboxed", "unsandboxed"])
def test_a_launcher_killed_mid_command_never_reports_it_as_passing(git_repo, mode):
    # HELD. The launcher dies (the OOM killer, a stray kill) while a command runs: the command is reported
    # as killed, not as passed, nothing of it goes on, and the next command runs under a new launcher.
    runner = _runner(git_repo, mode)
    marker = f"gitbot-rt-launcher-{os.getpid()}-{time.monotonic_ns()}"
    try:
        runner.run_shell("true", 30)
        first = runner._launcher

        def kill_once_it_runs():
            deadline = time.monotonic() + 20
            while not processes_with(marker) and time.monotonic() < deadline:
                time.sleep(0.02)
            os.kill(first.pid, signal.SIGKILL)

        killer = threading.Thread(target=kill_once_it_runs)
        killer.start()
        run = runner.run_shell(f"(exec -a {marker} sleep 30) & sleep 5; echo finished; exit 0", 30)
        killer.join()
        assert run.exit_code != 0 and "finished" not in run.output, run
        time.sleep(0.3)
        assert not processes_with(marker)
        after = runner.run_shell("echo again", 30)
        assert after.output.strip() == "again" and after.exit_code == 0
        assert runner._launcher is not first and runner._launcher.alive()
    finally:
        runner.close()


# ------------------------------------------------------------------ the shared cgroup's budget

# Run as its own process: a child subreaper that never reaps stands for a pid 1 that does not (gitbot as
# the container's first process, `docker run image gitbot run ...`; a job container whose pid 1 is
# `tail -f /dev/null`). Orphans of the commands then stay zombies, and a zombie stays charged to the
# pids cgroup it was born in until it is reaped.
NON_REAPING_INIT = textwrap.dedent("""
    import ctypes, json, sys, time
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, and never wait for what comes
    from gitbot.policy import Policy
    from gitbot.sandbox.runner import Runner
    runner = Runner(Policy(sandbox_mode=sys.argv[1]), sys.argv[2])
    results = []
    for command, timeout in json.loads(sys.argv[3]):
        run = runner.run_shell(command, timeout)
        results.append([run.exit_code, run.output[-300:]])
    cgroup = runner._launcher.cgroup
    # The sandbox made ready for a next command (warm.py) is no finished command's: it would be the next
    # one's own processes, or go before a cold start. Without it, the race with its start decides.
    runner.discard_warm()
    deadline = time.monotonic() + 3
    while True:  # the launcher reaps on SIGCHLD: give it a moment
        with open(cgroup + "/pids.current") as handle:
            charged = int(handle.read())
        if charged <= 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    print(json.dumps({"results": results, "charged": charged}))
    runner.close()
""")


def _under_non_reaping_init(repo, mode, commands):
    import json

    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", NON_REAPING_INIT, mode, str(repo), json.dumps(commands)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_sandboxed_commands_leave_nothing_charged_to_the_launchers_cgroup(git_repo):
    # GOT THROUGH. Each sandboxed command orphans one bubblewrap process (comm "3": bwrap exec'd through
    # /proc/self/fd/3), reaped by whatever pid 1 is. Until then it stays charged to the launcher's cgroup,
    # which every later command shares: with a pid 1 that does not reap, each command takes one process
    # from every later one's budget, and after ~510 commands nothing starts at all. (Here, with this VM's
    # pid 1, 30 quick commands left 19 charged.) Per-command cgroups dropped that charge with the cgroup.
    require_bwrap()
    found = _under_non_reaping_init(git_repo, "required", [["true", 30]] * 5)
    assert all(code == 0 for code, _ in found["results"]), found
    assert found["charged"] <= 1, f"{found['charged'] - 1} processes of finished commands still charged"


def test_orphans_of_one_command_do_not_eat_the_next_commands_process_budget(git_repo):
    # GOT THROUGH. Unsandboxed, a command makes orphans that exit at once (double fork) until its cgroup is
    # full. Under a pid 1 that does not reap, those zombies stay charged to the launcher's cgroup, so the
    # next command (the check that verifies a fix, too) may start no process at all: `ls / | wc -l`
    # cannot fork. Before the launcher, the next command had a cgroup of its own.
    flood = textwrap.dedent(f"""
        {sys.executable} -c '
        import os
        for _ in range(2000):
            try:
                child = os.fork()
            except OSError:
                break
            if child == 0:
                try:
                    if os.fork() == 0:
                        os._exit(0)
                except OSError:
                    pass
                os._exit(0)
            os.waitpid(child, 0)
        print("flooded")'
    """)
    found = _under_non_reaping_init(git_repo, "off", [[flood, 60], ["ls / | wc -l", 5]])
    assert found["results"][0][0] == 0, found
    code, output = found["results"][1]
    assert code == 0 and "Resource temporarily unavailable" not in output and output.strip().isdigit(), found


# ------------------------------------------------------------------ the per-command kill


@pytest.mark.parametrize("mode", ["sandboxed", "unsandboxed"])
def test_a_timed_out_command_is_killed_whole_with_what_left_its_session(git_repo, mode):
    # HELD. setsid and a TERM trap: only the launcher's cgroup finds it, and SIGKILL ends it.
    runner = _runner(git_repo, mode)
    marker = f"gitbot-rt-timeout-{os.getpid()}-{time.monotonic_ns()}"
    try:
        run = runner.run_shell(f"setsid bash -c 'trap \"\" TERM HUP; exec -a {marker} sleep 60' & "
                               f"trap '' TERM; sleep 60", 1)
        assert run.timed_out
        assert not processes_with(marker)
        assert runner.run_shell("echo next", 30).output.strip() == "next"
    finally:
        runner.close()
