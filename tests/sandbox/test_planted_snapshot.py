"""The git metadata guard's snapshot keeps the bytes it read by each file's stamp, so a command's step
does not read every config and hook again. What it puts back after a command must still be what the
file held right before that command, however the file changed in between."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox import readdeny
from gitbot.sandbox.planted import GitMetadataGuard, GitMetadataPlanted
from gitbot.sandbox.readdeny import DeniedFiles
from tests.conftest import make_repo


def guarded(repo: Path) -> tuple[GitMetadataGuard, DeniedFiles]:
    root = os.path.realpath(repo)
    index = DeniedFiles(root, Policy(repo=root), store=False)
    index.current()
    return GitMetadataGuard(root), index


def rewrite_keeping_size_and_mtime(path: Path, text: str) -> None:
    """What a user's editor or script can do: new bytes, same length, the old mtime set back."""
    before = os.stat(path)
    assert len(text.encode()) == before.st_size
    with open(path, "r+b") as handle:  # in place: the same inode
        handle.write(text.encode())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


def test_a_config_rewritten_between_commands_with_the_same_size_and_mtime_is_what_is_put_back(tmp_path, monkeypatch):
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0)  # every stamp trusted at once: the cache keeps all it reads
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    config = repo / ".git" / "config"
    guard, index = guarded(repo)
    guard.before(index)
    guard.after(index)  # a first command changed nothing; the snapshot kept the config's bytes
    time.sleep(0.05)  # a clock tick later, so the change time moves
    users = config.read_text().replace("[core]", "[CORE]")
    rewrite_keeping_size_and_mtime(config, users)
    guard.before(index)  # the user's bytes, told apart by the change time alone
    config.write_text(users + "[core]\n\tfsmonitor = /tmp/x\n")  # the command's
    with pytest.raises(GitMetadataPlanted):
        guard.after(index)
    assert config.read_text() == users


class _WholeSeconds:
    """An lstat result with whole-second stamps, as ext4 with small inodes or FAT report them."""

    def __init__(self, st: os.stat_result):
        self._st = st
        self.st_ctime_ns = st.st_ctime_ns // 10**9 * 10**9
        self.st_mtime_ns = st.st_mtime_ns // 10**9 * 10**9

    def __getattr__(self, name):
        return getattr(self._st, name)


def test_bytes_read_in_the_same_clock_tick_as_their_last_change_are_read_again(tmp_path, monkeypatch):
    # On a file system with whole-second stamps, a rewrite in the same second leaves the stamp as it
    # was: bytes read that soon after a change are not kept (the readdeny index's racy rule).
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    config = repo / ".git" / "config"
    real_lstat = os.lstat
    monkeypatch.setattr(os, "lstat", lambda path, *a, **k: _WholeSeconds(real_lstat(path, *a, **k)))
    guard, index = guarded(repo)
    while time.time() % 1 > 0.5:  # room for all of it in the same second
        time.sleep(0.05)
    config.write_text(config.read_text() + "# v1\n")
    guard.before(index)
    guard.after(index)
    users = config.read_text().replace("# v1", "# v2")
    with open(config, "r+b") as handle:
        handle.write(users.encode())
    assert int(os.path.getctime(config)) == int(time.time()), "the second ended; the test needs it to last"
    guard.before(index)
    config.write_text(users + "[core]\n\tfsmonitor = /tmp/x\n")
    with pytest.raises(GitMetadataPlanted):
        guard.after(index)
    assert config.read_text() == users
