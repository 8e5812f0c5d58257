"""Red team, missing protected paths (sandbox/created.py) and symlinks at read_deny names (planted.py):
whatever a command makes at a protected path that was missing must be out of the work tree before anything
of the host reads it, and a symlink at a denied name must not let a later host write put a secret where
commands read. Real bubblewrap (or the real unsandboxed runner), throwaway repositories under tmp_path.

Here: the symlinks and FIFOs at (or above) read_deny names (sandbox/readdeny.py, planted.py). The tests once
marked GOT THROUGH failed before the fix that made them pass; `test_held_*` passed already."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox.planted import SET_ASIDE, CommandUndone
from gitbot.sandbox.runner import Runner
from tests.conftest import make_repo
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow

POLICY = '[commands]\nallow = ["*"]\n'


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# project\n", "notes.txt": "notes\n",
                                         "public/index.html": "<p>hi</p>\n"})


def sandboxed(repo: Path, **policy) -> Runner:
    require_bwrap()
    runner = Runner(Policy(repo=repo, sandbox_mode="required", **policy), repo)
    assert runner.sandboxed, runner.receipt_line
    return runner


def set_aside(repo: Path) -> list[Path]:
    store = repo / ".git" / "gitbot" / SET_ASIDE
    return sorted(store.iterdir()) if store.is_dir() else []


def run_undone(runner: Runner, command: str):
    """Run `command`; the CommandUndone it raised (or None)."""
    try:
        runner.run_shell(command, 30)
    except CommandUndone as exc:
        return exc
    return None


# -- held ------------------------------------------------------------------------------------------------


def test_held_a_users_own_symlink_at_a_denied_name_stays_readable(repo):
    os.symlink("README.md", repo / "link.key")
    runner = sandboxed(repo)
    assert runner.run_shell("cat link.key", 30).output == "# project\n"
    assert runner.run_shell("cat link.key", 30).output == "# project\n"
    assert os.readlink(repo / "link.key") == "README.md"


@pytest.mark.parametrize("command", [
    "ln -s notes.txt tmp && mv tmp .env",  # made by renaming
    "ln -s a .env && ln -s notes.txt a",  # a chain .env -> a -> notes.txt
    "mkdir -p new/deeper && ln -s ../../notes.txt new/deeper/.env",  # in new directories
    "ln -P link.key copy.key",  # a hard link to the user's own denied-name link
])
def test_held_a_symlink_a_command_makes_at_a_denied_name_is_set_aside(repo, command):
    os.symlink("README.md", repo / "link.key")
    runner = sandboxed(repo)
    with pytest.raises(CommandUndone, match="symlink at a name"):
        runner.run_shell(command, 30)
    for name in (".env", "new/deeper/.env", "copy.key"):
        assert not os.path.lexists(repo / name)
    assert os.readlink(repo / "link.key") == "README.md"


def test_held_a_denied_directory_on_the_way_of_a_users_link_swapped_for_a_symlink_is_set_aside(repo):
    # Held: read_deny `secrets/**` matches `secrets` itself, so a symlink made there is a denied-name link. (The
    # user's `.env -> secrets/app.env` would otherwise lead the host's write into public/.)
    (repo / "secrets").mkdir()
    os.symlink("secrets/app.env", repo / ".env")
    runner = sandboxed(repo, read_deny=("**/.env", "secrets/**"))
    with pytest.raises(CommandUndone, match=r"symlink at a name the policy does not let you read \(secrets\)"):
        runner.run_shell("rmdir secrets && ln -s public secrets", 30)
    assert not os.path.lexists(repo / "secrets")


def test_a_users_own_directory_symlink_above_a_denied_name_stays_and_what_it_leads_to_is_masked(repo):
    # The user's `.docker -> dockercfg` (`**/.docker/config.json` denied): there before the run, so it is theirs,
    # not set aside; the command runs as usual and the link stays as it was. (Before the fix the token was
    # not masked under either name: the walk follows no symlink, and dockercfg/config.json matches no rule.)
    (repo / "dockercfg").mkdir()
    (repo / "dockercfg" / "config.json").write_text('{"auths": {"x": {"auth": "SECRET-TOKEN-u5r"}}}\n')
    os.symlink("dockercfg", repo / ".docker")
    runner = sandboxed(repo)
    run = runner.run_shell("ls .docker/ && cat .docker/config.json dockercfg/config.json && echo more >> notes.txt", 30)
    assert run.exit_code == 0 and "config.json" in run.output and "SECRET-TOKEN-u5r" not in run.output, run.output
    assert os.readlink(repo / ".docker") == "dockercfg" and set_aside(repo) == []


def test_a_users_own_fifo_at_a_denied_name_stays_and_is_masked(repo):
    # A secrets manager may serve `.env` as a FIFO: the user's stays, and a command reads it as an empty file
    # (before the fix its `cat .env` took what the host wrote, as with a command's FIFO below).
    import threading

    os.mkfifo(repo / ".env")
    runner = sandboxed(repo)

    def host_serves_the_secret():
        with contextlib.suppress(OSError):
            fd = os.open(repo / ".env", os.O_WRONLY)  # blocks until a reader comes
            os.write(fd, b"DB_PASSWORD=SECRET-FIFO-u5r\n")
            os.close(fd)

    writer = threading.Thread(target=host_serves_the_secret, daemon=True)
    writer.start()
    seen = runner.run_shell("timeout 5 cat .env 2>&1; echo more >> notes.txt", 30).output
    if writer.is_alive():  # unblock it (opening for reading ourselves)
        with contextlib.suppress(OSError):
            os.close(os.open(repo / ".env", os.O_RDONLY | os.O_NONBLOCK))
    assert "SECRET-FIFO-u5r" not in seen, seen
    assert stat.S_ISFIFO(os.lstat(repo / ".env").st_mode) and set_aside(repo) == []


# -- GOT THROUGH before the fix ----------------------------------------------------------------------------


def test_a_directory_symlink_above_a_path_specific_denied_name_is_set_aside(repo):
    # GOT THROUGH. The default read_deny has `**/.docker/config.json`. A command makes `.docker -> public`: the
    # walk notes only links whose own name is denied (`.docker` is not), so it stays. The host's `docker login`
    # (DOCKER_CONFIG=$PWD/.docker, as CI jobs set it) then writes public/config.json, which the next command reads.
    runner = sandboxed(repo)
    undone = run_undone(runner, "ln -s public .docker")
    (repo / ".docker").mkdir(exist_ok=True)  # the host, as docker login does (MkdirAll: the link, or a new directory)
    (repo / ".docker" / "config.json").write_text('{"auths": {"x": {"auth": "SECRET-TOKEN-d0c"}}}\n')
    seen = runner.run_shell("cat public/config.json 2>&1 || true", 30).output
    assert undone is not None and "SECRET-TOKEN-d0c" not in seen, seen


def test_a_fifo_a_command_makes_at_a_denied_name_does_not_carry_a_host_write_to_a_later_command(repo):
    # GOT THROUGH (on main too). Like a symlink at `.env`, a FIFO there turns the host's write of the secret
    # (`cp .env.example .env`, a setup step, the user in another terminal) into something a command reads:
    # the walk notes only regular files (masked) and symlinks; a FIFO is neither, so it is not masked, and the
    # write blocks until the next command opens it.
    import threading

    runner = sandboxed(repo)
    undone = run_undone(runner, "mkfifo .env")
    if not stat.S_ISFIFO(os.lstat(repo / ".env").st_mode if os.path.lexists(repo / ".env") else 0):
        assert undone is not None
        return  # set aside: held

    def host_writes_the_secret():
        fd = os.open(repo / ".env", os.O_WRONLY)  # blocks until a reader comes
        os.write(fd, b"DB_PASSWORD=SECRET-FIFO-7c2\n")
        os.close(fd)

    writer = threading.Thread(target=host_writes_the_secret, daemon=True)
    writer.start()
    seen = runner.run_shell("timeout 5 cat .env 2>&1 || true", 30).output
    if writer.is_alive():  # unblock it (opening for reading ourselves)
        with contextlib.suppress(OSError):
            os.close(os.open(repo / ".env", os.O_RDONLY | os.O_NONBLOCK))
    assert undone is not None and "SECRET-FIFO-7c2" not in seen, seen


def test_held_a_hard_link_at_a_denied_name_to_a_readable_file_is_removed(repo):
    # The host's `echo SECRET > .env` writes in place: through a hard link it would land in notes.txt.
    runner = sandboxed(repo)
    with pytest.raises(CommandUndone, match="hard link"):
        runner.run_shell("ln notes.txt .env", 30)
    assert not os.path.lexists(repo / ".env") and (repo / "notes.txt").read_text() == "notes\n"
