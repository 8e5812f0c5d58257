"""What tells a hand-over or a finished command that a mask may have come off (sandbox/unmasked.py, and
warm.py's reading of the sandbox's mount table): real files, no subprocess."""

from __future__ import annotations

import os

import pytest

from gitbot.sandbox import unmasked
from gitbot.sandbox.warm import mount_points, mount_targets


def test_a_masked_file_linked_away_and_back_is_seen_as_changed(tmp_path):
    # The same inode at the same path: only its ctime (the link count went up and down) tells.
    (tmp_path / ".env").write_text("TOKEN=x\n")
    before = unmasked.states(str(tmp_path), [".env", "missing"])
    assert unmasked.changed(str(tmp_path), before) == []
    os.link(tmp_path / ".env", tmp_path / "keep")
    os.unlink(tmp_path / ".env")
    os.rename(tmp_path / "keep", tmp_path / ".env")
    assert unmasked.changed(str(tmp_path), before) == [".env"]


def test_a_masked_file_deleted_and_made_again_or_a_missing_one_made_is_seen_as_changed(tmp_path):
    (tmp_path / ".env").write_text("TOKEN=x\n")
    before = unmasked.states(str(tmp_path), [".env", "later.pem"])
    os.unlink(tmp_path / ".env")
    (tmp_path / ".env").write_text("TOKEN=y\n")
    (tmp_path / "later.pem").write_text("k\n")
    assert unmasked.changed(str(tmp_path), before) == [".env", "later.pem"]
    assert ".env" in unmasked.withheld([".env"]) and "withheld" in unmasked.withheld([".env"])


def test_mount_points_are_read_with_their_octal_escapes():
    mountinfo = (b"22 1 0:21 / / rw - tmpfs tmpfs rw\n"
                 b"40 22 8:1 /srv/my\\040repo /srv/my\\040repo rw - ext4 /dev/sda1 rw\n"
                 b"41 40 8:1 /x /srv/my\\040repo/tab\\011and\\134slash\\012line ro - ext4 /dev/sda1 rw\n")
    assert mount_points(mountinfo) == {"/", "/srv/my repo", "/srv/my repo/tab\tand\\slash\nline"}


def test_mount_targets_are_the_binds_and_tmpfs_under_the_roots_bubblewrap_must_make():
    bwrap = ["bwrap", "--ro-bind", "/usr", "/usr", "--bind", "/r", "/r", "--ro-bind", "/empty", "/r/.env",
             "--ro-bind-try", "/r/maybe", "/r/maybe", "--tmpfs", "/r/.git/gitbot", "--remount-ro", "/r/.git/gitbot",
             "--setenv", "X", "/r/not-a-mount", "--dir", "/r/d", "--chdir", "/r", "--", "bash", "-c", "--bind"]
    assert mount_targets(bwrap, ["/r"]) == {"/r", "/r/.env", "/r/.git/gitbot"}
    # As root, the helper's arguments come first (`python -I ... -- bwrap ...`).
    helper = ["python3", "-I", "-S", "-c", "source", "drop", "spec", "--", *bwrap]
    assert mount_targets(helper, ["/r"]) == mount_targets(bwrap, ["/r"])


@pytest.mark.slow
def test_a_git_config_rewritten_on_the_host_while_a_command_runs_keeps_its_credentials_from_the_model(tmp_path):
    # `git config` on the host writes through config.lock and renames it over .git/config: the sandbox's
    # copy without credentials comes off, and the command's second read shows the real file. (Here it
    # sets what was already set: the file's text is the same, which the metadata guard, comparing texts,
    # does not see as a change.)
    import subprocess
    import threading
    import time

    from gitbot.policy import Policy
    from gitbot.sandbox.runner import Runner
    from tests.sandbox.support import require_bwrap

    require_bwrap()
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    url = "https://bot:cfg-canary-77@example.com/x"
    subprocess.run(["git", "-C", str(repo), "config", "remote.origin.url", url], check=True)
    started = repo / "started"

    def host():
        deadline = time.monotonic() + 20
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        subprocess.run(["git", "-C", str(repo), "config", "remote.origin.url", url], check=True)
        started.unlink()

    runner = Runner(Policy(sandbox_mode="required"), repo)
    meddling = threading.Thread(target=host)
    meddling.start()
    try:
        run = runner.run_shell("cat .git/config; : > started; while [ -e started ]; do sleep 0.02; done; "
                               "cat .git/config; echo end", 30)
    finally:
        meddling.join()
        runner.close()
    assert "cfg-canary-77" not in run.output and "withheld" in run.output, run.output
