"""Red team, the sandbox made ready while the model thinks (sandbox/warm.py): a command handed to a warm
sandbox must see and do no more than a cold start at that moment would. Real bubblewrap, a real
sandboxed Runner, throwaway repositories under tmp_path.

The hole these show: `WarmSandbox.fits` compares each mount path's (st_dev, st_ino, type), but a mount in
the warm sandbox's namespace is attached to a dentry, not an inode. When the host unlinks (or renames
over) a path that is a mount point in another namespace, the kernel detaches those mounts there
(Linux >= 3.18, fs/namei.c detach_mounts). The path can then be the *same inode* again, so every
identity matches while the mask or read-only mount is gone:
- a hard link put back (`ln .env ../keep; rm .env; mv ../keep .env`): same inode, same secret;
- a file or directory deleted and made again: ext4 (this machine's /tmp) hands the freed inode number
  straight back, so `rm .env; echo NEW > .env` or `rm -rf .github/workflows; mkdir ...` is "the same file".
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time

import pytest

from gitbot.policy import Policy
from gitbot.sandbox import warm
from gitbot.sandbox.runner import Runner
from tests.sandbox.support import require_bwrap, warm_hand_overs

pytestmark = pytest.mark.slow


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".gitbot").mkdir(parents=True)
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (repo / "AGENTS.md").write_text("# agents\n")
    (repo / "README").write_text("hello\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@pytest.fixture
def handed(monkeypatch):
    """The commands a warm sandbox ran."""
    return warm_hand_overs(monkeypatch)


@pytest.fixture
def runner(repo):
    require_bwrap()
    made = Runner(Policy(sandbox_mode="required"), repo)
    yield made
    made.close()


def ready_and_mounted(runner: Runner, repo) -> None:
    """The warm sandbox is prepared and its waiter runs (bubblewrap's mounts are made): the waiter has its
    command line only once bubblewrap has made every mount and exec'd it."""
    runner._prepared()
    assert runner._warm is not None, "no sandbox was made ready"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if runner._warm._find_waiter() is not None:
            return
        time.sleep(0.02)
    raise AssertionError("the warm sandbox's waiter never ran")


# -- GOT THROUGH -----------------------------------------------------------------------------------


def test_a_read_deny_file_unlinked_and_linked_back_is_still_hidden(runner, repo, tmp_path, handed):
    # GOT THROUGH (warm only): the same inode at the same path, so `fits` says yes; but unlinking the
    # dentry detached the warm sandbox's /dev/null mask. A cold start masks it again.
    (repo / ".env").write_text("TOKEN=hardlinked-secret\n")
    runner.run_shell("true", 30)
    ready_and_mounted(runner, repo)
    keep = tmp_path / "keep"  # same file system, outside the repository
    os.link(repo / ".env", keep)
    os.unlink(repo / ".env")
    os.rename(keep, repo / ".env")
    run = runner.run_shell("cat .env; echo end", 30)
    assert "hardlinked-secret" not in run.output, f"warm={bool(handed)}: {run.output!r}"


def test_a_read_deny_file_deleted_and_written_again_is_hidden(runner, repo, handed):
    # GOT THROUGH (warm only): `rm .env; echo NEW > .env` on ext4 gets the freed inode number back, so the
    # identity matches; the mask went with the unlinked dentry.
    (repo / ".env").write_text("TOKEN=old\n")
    runner.run_shell("true", 30)
    ready_and_mounted(runner, repo)
    before = os.lstat(repo / ".env").st_ino
    for _ in range(20):  # ext4 gives the freed number back at once, nearly always
        os.unlink(repo / ".env")
        (repo / ".env").write_text("TOKEN=regenerated-by-the-host\n")
        if os.lstat(repo / ".env").st_ino == before:
            break
    else:
        pytest.skip("this file system did not reuse the inode number")
    run = runner.run_shell("cat .env; echo end", 30)
    assert "regenerated-by-the-host" not in run.output, f"warm={bool(handed)}: {run.output!r}"


def test_a_protected_directory_deleted_and_made_again_stays_read_only(runner, repo, handed):
    # GOT THROUGH (warm only): `.github/workflows` removed and made again by the host gets the same inode
    # number on ext4; the warm sandbox's read-only mount went with the old dentry, so the command writes a
    # workflow a cold start could not.
    runner.run_shell("true", 30)
    ready_and_mounted(runner, repo)
    workflows = repo / ".github" / "workflows"
    before = os.lstat(workflows).st_ino
    shutil.rmtree(workflows)
    spares = []
    for number in range(200):  # ext4 gives the freed number back to a directory made beside it, mostly at once
        made = workflows.with_name(f"spare-{number}")
        made.mkdir()
        if os.lstat(made).st_ino == before:
            os.rename(made, workflows)
            break
        spares.append(made)
    for made in spares:
        made.rmdir()
    if os.lstat(workflows).st_ino != before:
        pytest.skip("this file system did not reuse the inode number")
    (workflows / "ci.yml").write_text("on: push\n")
    run = runner.run_shell("echo 'on: pull_request_target' > .github/workflows/pwn.yml; echo end", 30)
    assert not (workflows / "pwn.yml").exists(), f"warm={bool(handed)}: {run.output!r}"


def _cmdline(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def _waiter_up(repo, timeout=20.0) -> bool:
    """A warm sandbox's waiter runs in `repo` (for a gitbot in another process, whose Runner is not at hand)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                argv = _cmdline(pid).split(b"\0")
                if os.readlink(f"/proc/{pid}/cwd") == str(repo) and argv[0].endswith(b"bash") and \
                        warm.WAITER.encode() in argv:
                    return True
            except OSError:
                continue
        time.sleep(0.05)
    return False


def test_through_gitbot_run_a_secret_the_host_puts_back_while_the_model_thinks_is_hidden(tmp_path):
    # GOT THROUGH (warm only): the first attack as it happens in a run. While the model "thinks" about
    # its second command, the host moves .env aside and back (a backup tool, `git stash -u` and pop would do
    # it with a new file and, on ext4, often the same inode number). The second command reads it.
    from tests.conftest import make_repo, run_gitbot
    from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

    require_bwrap()
    # Protected paths present too (when the red team wrote this, a missing one made no sandbox ready).
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", "AGENTS.md": "# agents\n", ".gitbot/keep": "",
                                         ".github/workflows/ci.yml": "on: push\n"})
    # Not shaped like a secret, so the secret scanner (the next layer) passes it on: it shows what the sandbox let through.
    (repo / ".env").write_text("e2e-warm-canary\n")
    keep = tmp_path / "keep"
    meddled = []

    class HostMeddlesWhileTheModelThinks(FakeMessagesAPI):
        def _reply(self, turn, body, streaming, record):
            if self._next == 2 and not meddled:  # the second command's turn: the warm sandbox is up
                meddled.append(_waiter_up(repo))
                os.link(repo / ".env", keep)
                os.unlink(repo / ".env")
                os.rename(keep, repo / ".env")
            return super()._reply(turn, body, streaming, record)

    script = [tool_turn(("execute_command", {"command": "true"})),
              tool_turn(("execute_command", {"command": "for f in .[e]nv; do cat \"$f\"; done; echo end"})),
              tool_turn(("attempt_completion", {"result": "done"})),
              tool_turn(("attempt_completion", {"result": "done"}))]
    with HostMeddlesWhileTheModelThinks(script) as api:
        done = run_gitbot(["run", "--task", "look around", "--repo", str(repo), "--json"], env=api.env(),
                          timeout=120)
        sent = [json.dumps(request.get("body", request)) for request in api.requests]
    assert done.returncode == 0, done.stderr[-2000:]
    assert meddled == [True], "the warm sandbox was not up while the model thought"
    assert len(sent) >= 3, "the second command's result was never sent"
    assert not any("e2e-warm-canary" in text for text in sent), "the model was sent the .env's secret"


def test_a_command_with_a_nul_byte_is_refused_as_a_cold_start_refuses_it(runner, repo, handed):
    # GOT THROUGH (warm only, low): a cold start refuses it (SandboxRefused: embedded null byte); the waiter's
    # `read -d ""` stops at the NUL and runs the text before it, a command nobody judged or logged as such.
    from gitbot.sandbox.runner import SandboxRefused

    command = "echo judged-as-one\0echo command"
    with pytest.raises(SandboxRefused):
        runner.run_shell(command, 30)  # cold
    runner.run_shell("true", 30)
    ready_and_mounted(runner, repo)
    with pytest.raises(SandboxRefused):
        run = runner.run_shell(command, 30)  # warm
        raise AssertionError(f"ran {handed[-1]!r} as {run.output!r}")


def test_a_read_deny_file_unlinked_and_linked_back_while_a_command_runs_stays_hidden(runner, repo, tmp_path):
    # GOT THROUGH (main too, cold starts as well): the same host action while a command runs unmasks the
    # file for the rest of that command. The warm sandbox stretches this window over the model's thinking.
    import threading

    (repo / ".env").write_text("TOKEN=mid-command-secret\n")
    started = repo / "started"

    def meddle():
        deadline = time.monotonic() + 20
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.link(repo / ".env", tmp_path / "keep")
        os.unlink(repo / ".env")
        os.rename(tmp_path / "keep", repo / ".env")
        started.unlink()

    host = threading.Thread(target=meddle)
    host.start()
    try:
        run = runner.run_shell("cat .env; : > started; while [ -e started ]; do sleep 0.02; done; cat .env; echo end", 30)
    finally:
        host.join()
    assert "mid-command-secret" not in run.output, run.output


# -- held ------------------------------------------------------------------------------------------


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


def test_a_secret_committed_while_the_model_thinks_stays_out_of_the_history(runner, repo, handed):
    # Held: the filtered store is caught up before the hand-over and is what the warm sandbox mounts too.
    (repo / ".env").write_text("FIRST_HISTORY_SECRET_a1\n")
    _git(repo, "add", "-A")
    _git(repo, "add", "-f", ".env")
    _git(repo, "commit", "-q", "-m", "first")
    (repo / ".env").unlink()
    _git(repo, "rm", "-q", "--cached", ".env")
    _git(repo, "commit", "-q", "-m", "gone")
    runner.run_shell("true", 60)
    runner.run_shell("true", 60)
    ready_and_mounted(runner, repo)
    (repo / "conf").mkdir()
    (repo / "conf" / "new.pem").write_text("SECOND_HISTORY_SECRET_b2\n")
    _git(repo, "add", "-f", "conf/new.pem")
    _git(repo, "commit", "-q", "-m", "oops")
    _git(repo, "rm", "-q", "--cached", "conf/new.pem")
    _git(repo, "commit", "-q", "-m", "removed")
    shutil.rmtree(repo / "conf")
    run = runner.run_shell("git log -p --all | grep -c -e _HISTORY_SECRET_ -e ^+++; "
                           "git grep _HISTORY_SECRET_ $(git rev-list --all); cat .git/objects/*/* | wc -c", 60)
    assert run.output.split()[0] not in ("0", ""), run.output
    assert "_HISTORY_SECRET_" not in run.output, f"warm={bool(handed)}: {run.output!r}"


def test_a_launcher_killed_while_the_model_thinks_leaves_no_waiter(runner, repo, handed):
    # Held: the next command starts cold on a new launcher and the old waiter is gone.
    runner.run_shell("true", 30)
    ready_and_mounted(runner, repo)
    waiter = runner._warm.process.pid
    os.kill(runner._launcher.pid, 9)
    time.sleep(0.2)
    run = runner.run_shell("echo ran", 30)
    assert run.output.strip() == "ran" and not handed
    from gitbot.sandbox.processes import live_processes
    assert not live_processes([waiter])


def test_what_the_waiter_reads_is_the_command_and_nothing_more(runner, repo, handed):
    # Held: stdin is /dev/null (no second command can follow on the pipe), $0/$SHLVL as cold, the waiter's
    # variable is not set, a command starting with '-' is bash's option as in a cold start.
    probe = "exec 3<&0; cat <&3; readlink /proc/self/fd/0; echo \"$0 $SHLVL\"; declare -p c 2>&1 | head -c 9"
    for command in (probe, "-c"):
        runner.discard_warm()
        cold = runner.run_shell(command, 30)
        runner.discard_warm()
        runner.run_shell("true", 30)
        ready_and_mounted(runner, repo)
        hot = runner.run_shell(command, 30)
        assert handed[-1] == command and (hot.exit_code, hot.output) == (cold.exit_code, cold.output)
    assert "/dev/null" in cold.output or "option requires an argument" in cold.output


def test_a_nested_git_directory_made_while_the_model_thinks_is_read_only(runner, repo, handed):
    # Held: the guard's walk at the hand-over finds it, the request differs, the command starts cold.
    runner.run_shell("true", 30)
    ready_and_mounted(runner, repo)
    subprocess.run(["git", "init", "-q", str(repo / "vendor" / "lib")], check=True)
    run = runner.run_shell("printf '[core]\\n\\tfsmonitor = evil\\n' >> vendor/lib/.git/config; echo end", 30)
    assert "evil" not in (repo / "vendor" / "lib" / ".git" / "config").read_text(), run.output


def test_a_runner_collected_without_close_leaks_no_fd(repo):
    # GOT THROUGH (warm only, low): the waiter's pipe (WarmSandbox._pipe, a bare fd) is closed only by
    # discard() or go(); a Runner collected instead of closed (run_task never closes its ToolContext's) leaks
    # it: one fd per run for in-process callers such as gitbot/eval/attempt.py. (The waiter itself goes:
    # the launcher's finalizer kills it.)
    import gc

    require_bwrap()

    def pipes() -> set[str]:
        found = set()
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                    found.add(fd)
        return found

    before = pipes()
    made = Runner(Policy(sandbox_mode="required"), repo)
    made.run_shell("true", 30)
    made._prepared()
    assert made._warm is not None
    del made
    gc.collect()
    time.sleep(0.3)
    assert pipes() <= before, f"left open: {pipes() - before}"


def test_a_smaller_process_limit_than_the_warm_sandbox_was_made_with_holds(runner, repo, handed):
    # Held: the limit is part of the request; a command with a smaller one starts cold under it.
    runner.run_shell("true", 30)
    ready_and_mounted(runner, repo)
    run = runner.run_shell("for i in $(seq 20); do sleep 2 & done 2>&1 | head -1; echo end", 30, max_processes=8)
    assert "fork" in run.output.lower(), run.output


def test_a_policy_changed_while_the_model_thinks_hides_what_it_now_denies(repo):
    # Held: ToolContext.runner makes a new Runner for the new policy and discards the old one's warm sandbox.
    from dataclasses import replace

    from gitbot.secrets import Secrets
    from gitbot.tools.base import ToolContext

    require_bwrap()
    (repo / "notes.txt").write_text("denied-from-now-on\n")
    policy = Policy(sandbox_mode="required", repo=repo)
    ctx = ToolContext(repo=repo, policy=policy, secrets=Secrets(), state={})
    first = ctx.runner
    try:
        first.run_shell("true", 30)
        ready_and_mounted(first, repo)
        ctx.policy = replace(policy, read_deny=(*policy.read_deny, "notes.txt"))
        run = ctx.runner.run_shell("cat notes.txt; echo end", 30)
        assert "denied-from-now-on" not in run.output, run.output
        assert first._warm is None
    finally:
        first.close()
        ctx.runner.close()
