"""The launcher (sandbox/launcher.py): one helper starts a runner's commands, with what each command
gets unchanged: its own fds only, default signal dispositions, its process limit, and nothing left
running when gitbot goes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from gitbot.policy import Policy
from gitbot.sandbox.processes import live_processes
from gitbot.sandbox.runner import Runner
from tests.sandbox.support import processes_with, require_bwrap

pytestmark = pytest.mark.slow


@pytest.fixture
def git_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("hello\n")
    return repo


@pytest.fixture
def runner(git_repo):
    require_bwrap()
    made = Runner(Policy(sandbox_mode="required"), git_repo)
    yield made
    made.close()


@pytest.fixture(params=["sandboxed", "unsandboxed"])
def any_runner(request, git_repo):
    if request.param == "sandboxed":
        require_bwrap()
    made = Runner(Policy(sandbox_mode="required" if request.param == "sandboxed" else "off"), git_repo)
    yield made
    made.close()


def test_one_launcher_starts_every_command_of_a_runner(runner):
    outputs = [runner.run_shell(f"echo run-{n}", 30).output.strip() for n in range(3)]
    assert outputs == ["run-0", "run-1", "run-2"]
    launcher = runner._launcher
    assert launcher is not None and launcher.alive()
    runner.run_shell("true", 30)
    assert runner._launcher is launcher and launcher.alive()  # the same process, not one per command


def test_commands_get_default_signal_dispositions(any_runner):
    # A helper written in Python ignores SIGPIPE and SIGXFSZ, and exec keeps what is ignored: `yes | head`
    # then failed with "Broken pipe" instead of `yes` ending quietly by the signal.
    run = any_runner.run_shell("yes | head -1; echo status=${PIPESTATUS[0]}; grep SigIgn /proc/self/status", 30)
    assert "status=141" in run.output, run.output
    assert "Broken pipe" not in run.output
    ignored = int(run.output.split("SigIgn:")[1].split()[0], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)) and not ignored & (1 << (signal.SIGXFSZ - 1))


def test_a_command_holds_no_fd_of_the_launcher_or_of_gitbot(any_runner):
    # The launcher's socket would let a command start others outside its own limits.
    run = any_runner.run_shell("ls -l /proc/self/fd/ | tail -n +2 | awk '{print $9, $11}'", 30)
    fds = dict(line.split(" ", 1) for line in run.output.strip().splitlines())
    assert set(fds) <= {"0", "1", "2", "3"}, run.output  # 3: the directory ls is listing
    assert not any("socket:" in target for target in fds.values()), run.output


def test_commands_run_at_once_on_one_runner_each_finish_untouched(runner):
    # Two at once would share the launcher's cgroup, where one's end would kill the other: the second
    # starts the per-command way.
    results = {}

    def run(name):
        results[name] = runner.run_shell(f"sleep 1; echo done-{name}", 30)

    threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {name: r.output.strip() for name, r in results.items()} == {"a": "done-a", "b": "done-b"}
    assert all(r.exit_code == 0 and not r.notes for r in results.values())


def test_background_processes_of_a_command_are_stopped_and_the_launcher_stays(any_runner):
    # setsid: out of the command's process group, so only the (launcher's) cgroup finds it.
    marker = f"gitbot-bg-{os.getpid()}-{time.monotonic_ns()}"
    run = any_runner.run_shell(f"setsid bash -c 'exec -a {marker} sleep 60' & sleep 0.2; echo started", 30)
    assert not processes_with(marker)
    if not any_runner.sandboxed:
        # Killed by the launcher, which says so. In the sandbox they die with bubblewrap's pid namespace,
        # which may be gone before the launcher looks: the note is then missing (nothing is left either way).
        assert "Background processes the command started were stopped when it finished." in run.notes
    launcher = any_runner._launcher
    assert launcher.alive() and any_runner.run_shell("echo still", 30).output.strip() == "still"
    assert any_runner._launcher is launcher


def test_when_gitbot_is_killed_its_launcher_and_commands_go(git_repo, tmp_path):
    require_bwrap()
    marker = f"gitbot-orphan-{os.getpid()}-{time.monotonic_ns()}"
    script = textwrap.dedent(f"""
        import sys
        from gitbot.policy import Policy
        from gitbot.sandbox.runner import Runner
        runner = Runner(Policy(sandbox_mode="required"), sys.argv[1])
        runner.run_shell("true", 30)
        print(runner._launcher.pid, flush=True)
        runner.run_shell("exec -a {marker} sleep 120", 300)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script, str(git_repo)], stdout=subprocess.PIPE, text=True)
    launcher_pid = int(parent.stdout.readline())
    deadline = time.monotonic() + 30
    while not processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker), "the command never started"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while (processes_with(marker) or live_processes([launcher_pid])) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not processes_with(marker)
    assert not live_processes([launcher_pid])


def test_cgroups_left_by_killed_gitbot_processes_are_removed(runner):
    from gitbot.sandbox import processes

    parents = [parent for _kind, parent in processes._own_cgroup_dirs() if os.access(parent, os.W_OK)]
    if not parents:
        pytest.skip("no writable pids cgroup here")
    with open("/proc/sys/kernel/pid_max") as handle:
        dead = int(handle.read()) + 1  # no process can have it
    stale = [os.path.join(parents[0], f"gitbot-launcher-{dead}"), os.path.join(parents[0], f"gitbot-{dead}-7")]
    for directory in stale:
        os.mkdir(directory)
    try:
        runner.run_shell("true", 30)  # starts the launcher, which sweeps
        assert not any(os.path.exists(directory) for directory in stale)
        assert os.path.isdir(runner._launcher.cgroup)  # its own stays
    finally:
        for directory in stale:
            if os.path.exists(directory):
                os.rmdir(directory)


@pytest.mark.parametrize("mode", ["required", "off"])
def test_commands_start_under_a_users_usual_open_file_limit(git_repo, mode):
    # A user's soft RLIMIT_NOFILE is usually 1024 (root's here is higher): the launcher moved fds to
    # 1024 and up, so as any ordinary user every command failed at once with status 125 and no word.
    if mode == "required":
        require_bwrap()
    script = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        from gitbot.policy import Policy
        from gitbot.sandbox.runner import Runner
        runner = Runner(Policy(sandbox_mode={mode!r}), sys.argv[1])
        run = runner.run_shell("echo started-ok", 30)
        print(run.exit_code, run.output.strip())
    """)
    done = subprocess.run([sys.executable, "-c", script, str(git_repo)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.stdout.strip() == "0 started-ok", done.stdout + done.stderr
