"""The filtered store's state file is asked before every command, and parsed again only when its stamp
moved: whatever replaces or rewrites it must be what the next command's view is built from."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from gitbot.sandbox import filtered_store, readdeny
from gitbot.sandbox.filtered_store import FilteredStore


def store_with_state(tmp_path: Path, state: dict) -> tuple[FilteredStore, Path]:
    common = tmp_path / "repo" / ".git"
    common.mkdir(parents=True)
    store = FilteredStore(str(tmp_path / "repo"), str(common), ("**/.env",), lambda path: path.endswith(".env"))
    os.makedirs(store.root)
    path = Path(store.root) / filtered_store.STATE_FILE
    path.write_text(json.dumps(state))
    return store, path


def test_a_state_rewritten_in_place_with_the_same_size_and_mtime_is_read_again(tmp_path, monkeypatch):
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0)  # kept at once
    store, path = store_with_state(tmp_path, {"fingerprint": "a" * 64, "hidden": []})
    assert store._state()["fingerprint"] == "a" * 64
    assert store._state()["fingerprint"] == "a" * 64  # (kept)
    time.sleep(0.05)
    before = os.stat(path)
    with open(path, "r+b") as handle:  # same inode, same size, the mtime set back: only the ctime moves
        handle.write(json.dumps({"fingerprint": "b" * 64, "hidden": []}).encode())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert store._state()["fingerprint"] == "b" * 64


def test_a_state_replaced_is_read_again(tmp_path, monkeypatch):
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0)
    store, path = store_with_state(tmp_path, {"fingerprint": "a" * 64, "hidden": ["1" * 40]})
    assert store._state()["hidden"] == ["1" * 40]
    filtered_store._write_atomically(str(path), json.dumps({"fingerprint": "a" * 64, "hidden": []}).encode())
    assert store._state()["hidden"] == []
    path.unlink()
    assert store._state() is None


def test_a_state_written_within_the_racy_window_is_not_kept(tmp_path, monkeypatch):
    # With whole-second stamps a rewrite in the same second leaves every field of the stamp as it was.
    store, path = store_with_state(tmp_path, {"fingerprint": "a" * 64, "hidden": []})
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: _WholeSeconds(real_stat(p, *a, **k)))
    assert store._state()["fingerprint"] == "a" * 64
    with open(path, "r+b") as handle:
        handle.write(json.dumps({"fingerprint": "b" * 64, "hidden": []}).encode())
    assert store._state()["fingerprint"] == "b" * 64


class _WholeSeconds:
    def __init__(self, st: os.stat_result):
        self._st = st
        self.st_ctime_ns = st.st_ctime_ns // 10**9 * 10**9
        self.st_mtime_ns = st.st_mtime_ns // 10**9 * 10**9

    def __getattr__(self, name):
        return getattr(self._st, name)
