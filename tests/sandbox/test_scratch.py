"""gitbot's per-process scratch directories (the empty file, sanitized git configs, the staging mount
point) leave nothing in the temp directory: removed at exit, and what a killed process left is removed
by the next one; nothing planted there is followed or used."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitbot.sandbox import bwrap, scratch
from tests.conftest import git, gitbot_env, make_repo
from tests.sandbox.support import require_bwrap

_NO_SUCH_PID = itertools.count(int(Path("/proc/sys/kernel/pid_max").read_text()))


def dead_pid() -> int:
    """A pid no process has (pid_max and above are never given out): one whose process is gone."""
    return next(_NO_SUCH_PID)


def leftover_name(kind: str, pid: int) -> str:
    return f"gitbot-{kind}-{scratch._pid_namespace()}-{pid}-x1y2z3"


@pytest.mark.slow
def test_a_gitbot_process_that_ran_a_sandboxed_command_leaves_nothing_in_the_temp_directory(tmp_path: Path):
    require_bwrap()
    temp = tmp_path / "tmp"
    temp.mkdir()
    # What a gitbot killed before it could clean up left: the next one removes it.
    leftover = temp / leftover_name("empty", dead_pid())
    leftover.mkdir()
    (leftover / "empty").touch()
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    # A token in the repository's config: the sandbox is shown a sanitized copy of it.
    git(repo, "config", "http.https://example.com/.extraheader", "AUTHORIZATION: basic c2VjcmV0")
    process = subprocess.Popen([sys.executable, "-m", "gitbot", "fix-check", "--", "true"], cwd=repo,
                               env=gitbot_env({"TMPDIR": str(temp)}), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, out + err
    assert sorted(os.listdir(temp)) == []
    # As root the helper's staging directory is in /tmp itself: gone too.
    ours = f"-{scratch._pid_namespace()}-{process.pid}-"
    assert [name for name in os.listdir("/tmp") if name.startswith("gitbot-") and ours in name] == []


def test_leftovers_are_removed_only_when_they_are_this_users_directories_of_a_finished_process(tmp_path: Path):
    gone = dead_pid()
    leftover = tmp_path / leftover_name("gitconfig", gone)
    leftover.mkdir()
    (leftover / "config-1").write_text("[core]\n")
    # Planted by someone else who can write the temp directory: a symlink to what must not be removed,
    # a directory of a live process (this one's parent), of no kind of gitbot's, of another pid namespace.
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep").write_text("data\n")
    planted = tmp_path / leftover_name("gitconfig", dead_pid())
    planted.symlink_to(precious, target_is_directory=True)
    live = tmp_path / leftover_name("gitconfig", os.getppid())
    live.mkdir()
    not_gitbots = tmp_path / leftover_name("tests", gone)
    not_gitbots.mkdir()
    another_namespace = tmp_path / f"gitbot-empty-1-{gone}-x1y2z3"
    another_namespace.mkdir()
    scratch.remove_leftovers(str(tmp_path))
    assert not leftover.exists()
    assert planted.is_symlink() and (precious / "keep").read_text() == "data\n"
    assert live.is_dir() and not_gitbots.is_dir() and another_namespace.is_dir()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user owns needs root")
def test_another_users_leftover_is_not_removed(tmp_path: Path):
    theirs = tmp_path / leftover_name("empty", dead_pid())
    theirs.mkdir()
    os.chown(theirs, 12345, 12345)
    scratch.remove_leftovers(str(tmp_path))
    assert theirs.is_dir()


def test_the_empty_file_is_made_again_when_it_is_no_longer_an_empty_regular_file(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(scratch, "_OWN", {})
    monkeypatch.setattr("tempfile.tempdir", None)
    path = bwrap.empty_file()
    assert Path(path).parent.parent == tmp_path
    info = os.lstat(path)
    assert (info.st_size, info.st_mode & 0o777, info.st_uid) == (0, 0o444, os.geteuid())
    assert Path(path).parent.stat().st_mode & 0o777 == 0o755
    # Made writable, written to, or replaced by a symlink to a file with content: never bound as "empty".
    os.chmod(path, 0o666)
    assert bwrap.empty_file() == path and os.lstat(path).st_mode & 0o777 == 0o444
    os.chmod(path, 0o644)
    Path(path).write_text("secret\n")
    assert bwrap.empty_file() == path and os.path.getsize(path) == 0 and not os.path.islink(path)
    (tmp_path / "content").write_text("secret\n")
    os.unlink(path)
    os.symlink(tmp_path / "content", path)
    assert bwrap.empty_file() == path and os.path.getsize(path) == 0 and not os.path.islink(path)
    assert os.lstat(path).st_mode & 0o777 == 0o444
