"""The object store the sandbox sees when read_deny paths sit in the repository's history: every object
the refs, the reflogs and the index reach, except the blobs read_deny hides (hidden_blobs.py), plus one
placeholder blob and a replace ref for each hidden blob that points at it. Mounted read-only over
`.git/objects` (objects.py), it leaves nothing of a hidden blob for any process to read, git or not;
git itself shows the placeholder in `log -p`, `show`, `diff`, `blame`, `archive` (and, with
GIT_NO_REPLACE_OBJECTS, fails cleanly: the object is missing).

Prepared once per repository state and cached in the git directory's `gitbot/history-store/` (hidden
from the sandbox), in the background from the moment a sandboxed Runner starts. The state is told by
file stats (refs, packed-refs, HEAD, indexes), so asking costs no git process. A new state is caught up
incrementally: the commits the earlier tips do not reach are walked and their objects go into one more
pack; only a newly hidden blob the store already holds starts over. When nothing in the history or an
index is hidden, nothing is built and the sandbox shows the real store, read-only, as before.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gitbot import git, pids
from gitbot.sandbox import readdeny
from gitbot.sandbox.hidden_blobs import (
    HistoryUnreadable,
    Tips,
    current_tips,
    hidden_in_history,
    index_entries,
    pseudo_ref_files,
    run_git,
)

STORE_DIR = "history-store"  # in <common git dir>/gitbot/
PLACEHOLDER = b"[hidden by gitbot: this file matches files.read_deny]\n"
STATE_FILE = "state.json"
# How long a sandboxed command waits for the store before it is refused (the preparation goes on).
WAIT_SECONDS = 120.0
# Catching up adds a pack; past this many the store is built again as one.
MAX_PACKS = 30


@dataclass(frozen=True)
class StoreView:
    """What the sandbox mounts: `objects` over `<common>/objects`, `refs` (the replace refs, with a mount
    point for each of the real refs' entries) over `<common>/refs`."""

    common_dir: str
    objects: str
    refs: str
    index: tuple[str, str] | None = None  # (a copy of an index, the index it stands in for), see masked_index


class StoreNotReady(Exception):
    """The filtered store could not be prepared (yet): the reason says which."""


def fingerprint(common_dir: str, patterns: Sequence[str]) -> str:
    """What changes when the refs or an index may have: stats of HEAD, packed-refs, the pseudo-refs,
    every directory under refs/ (a loose ref is replaced by a rename, which touches its directory) and
    every index. No git."""
    parts = ["\0".join(patterns)]

    def note(path: str) -> None:
        try:
            st = os.stat(path)
        except OSError:
            parts.append(f"{path}:-")
            return
        parts.append(f"{path}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")

    for name in ("HEAD", "packed-refs", "index"):
        note(os.path.join(common_dir, name))
    for path in pseudo_ref_files(common_dir):  # FETCH_HEAD, ORIG_HEAD ...: tips too (hidden_blobs.py)
        note(path)
    for top, directories, _files in os.walk(os.path.join(common_dir, "refs")):
        note(top)
        directories.sort()
    worktrees = os.path.join(common_dir, "worktrees")
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(worktrees)):
            note(os.path.join(worktrees, name, "HEAD"))
            note(os.path.join(worktrees, name, "index"))
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def index_files(common_dir: str) -> list[str]:
    found = [os.path.join(common_dir, "index")]
    with contextlib.suppress(OSError):
        found += [os.path.join(common_dir, "worktrees", name, "index")
                  for name in sorted(os.listdir(os.path.join(common_dir, "worktrees")))]
    return [path for path in found if os.path.isfile(path)]


class FilteredStore:
    """The filtered store of one repository under one set of read_deny rules. `view()` is what a
    sandboxed command mounts (None: the real store, nothing is hidden); `start()` prepares it in a thread."""

    def __init__(self, repo: str, common_dir: str, patterns: Sequence[str], denied: Callable[[str], bool]):
        self.repo = repo
        self.common_dir = common_dir
        self.patterns = tuple(patterns)
        self.denied = denied
        key = hashlib.sha256("\0".join(self.patterns).encode()).hexdigest()[:16]
        self.root = os.path.join(common_dir, "gitbot", STORE_DIR, key)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._error: str | None = None
        self._kept_state: tuple[tuple, dict] | None = None  # (the state file's stamp, what it says), see _state

    # -- asking --------------------------------------------------------------------------------

    def start(self) -> None:
        """Prepare in the background (no-op when it already runs)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._error = None  # a new attempt: an earlier failure no longer says anything
            self._thread = threading.Thread(target=self._prepare_quietly, name="gitbot-history-store", daemon=True)
            self._thread.start()

    def view(self, wait: float = WAIT_SECONDS) -> StoreView | None:
        """The store for the repository as it is now, waiting at most `wait` seconds for its preparation.
        Raises StoreNotReady when it is not ready or could not be made."""
        state = self._state()
        if state is None or state.get("fingerprint") != fingerprint(self.common_dir, self.patterns):
            self.start()
            deadline = time.monotonic() + wait
            while True:
                thread = self._thread
                if thread is not None:
                    thread.join(max(0.0, deadline - time.monotonic()))
                state = self._state()
                if state is not None and state.get("fingerprint") == fingerprint(self.common_dir, self.patterns):
                    break
                if self._error is not None:
                    raise StoreNotReady(self._error)
                if time.monotonic() >= deadline:
                    raise StoreNotReady(f"gitbot is still preparing the repository's history for the sandbox "
                                        f"(hiding what files.read_deny protects); waited {wait:.0f} s")
                self.start()
        if not state.get("hidden"):
            return None
        return StoreView(self.common_dir, os.path.join(self.root, "objects"), self._refs_view())

    def masked_index(self, git_dir: str, hidden: Sequence[str]) -> str | None:
        """A copy of `git_dir`'s index in which the hidden files (repository-relative) that are tracked
        are marked skip-worktree, so that `git status` and `git diff` inside do not show them as emptied
        (they read as empty files there); None when none is tracked or git cannot make the copy (then
        they show as emptied, nothing worse). Kept until the index or the hidden files change."""
        index = os.path.join(git_dir, "index")
        try:
            st = os.stat(index)
        except OSError:
            return None
        key = hashlib.sha256("\0".join([f"{index}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}",
                                         *sorted(hidden)]).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        copy = os.path.join(self.root, f"index-{key}")
        if os.path.isfile(copy):
            return copy
        if not hidden or not os.path.isdir(self.root):
            return None
        temporary = f"{copy}.{os.getpid()}.tmp"
        env = git.clean_env({"GIT_INDEX_FILE": temporary})
        try:
            shutil.copyfile(index, temporary)
            tracked = run_git(self.repo, "--literal-pathspecs", "ls-files", "-z", "--", *hidden, env=env)
            if not tracked:
                return None
            run_git(self.repo, "update-index", "--skip-worktree", "-z", "--stdin", input=tracked, env=env)
            os.chmod(temporary, 0o444)
            os.replace(temporary, copy)
        except (HistoryUnreadable, OSError):
            return None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        for name in os.listdir(self.root):
            if name.startswith("index-") and name != os.path.basename(copy) and "." not in name:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.root, name))
        return copy

    # -- preparing -----------------------------------------------------------------------------

    def _prepare_quietly(self) -> None:
        try:
            self.prepare()
            self._error = None
        except (HistoryUnreadable, OSError) as exc:
            self._error = f"the repository's history could not be prepared for the sandbox: {exc}"

    def prepare(self) -> dict:
        """Bring the store up to the repository's current state; returns the state recorded."""
        wanted = fingerprint(self.common_dir, self.patterns)
        state = self._state()
        if state is not None and state.get("fingerprint") == wanted:
            return state
        tips = current_tips(self.repo)
        entries = index_entries(self.repo, index_files(self.common_dir))
        in_index = {blob for blob, path in entries if self.denied(path)}
        if state is not None and state.get("hidden") is not None:
            try:
                return self._catch_up(state, wanted, tips, entries, in_index)
            except HistoryUnreadable:
                pass  # an earlier tip is gone (pruned), say: start over
        hidden = in_index | hidden_in_history(self.repo, self.denied, tips)
        if not hidden:
            os.makedirs(self.root, exist_ok=True)
            return self._write_state(wanted, tips, hidden)
        return self._build(wanted, tips, hidden, entries)

    def _catch_up(self, state: dict, wanted: str, tips: Tips, entries: list[tuple[str, str]],
                  in_index: set[str]) -> dict:
        """From the state an earlier preparation left: walk only what is new, add one pack."""
        seen = state.get("tips", [])
        hidden = set(state["hidden"]) | in_index | hidden_in_history(self.repo, self.denied, tips, seen)
        added = hidden - set(state["hidden"])
        if not state["hidden"] and hidden:
            return self._build(wanted, tips, hidden, entries)
        if state["hidden"] and self._holds(added):
            return self._build(wanted, tips, hidden, entries)  # a kept object is hidden now: start over
        if hidden and len(glob.glob(os.path.join(self.root, "objects", "pack", "*.pack"))) >= MAX_PACKS:
            return self._build(wanted, tips, hidden, entries)  # one pack again: git looks in each
        if hidden:
            self._add(tips, seen, hidden, entries, added)
        return self._write_state(wanted, tips, hidden)

    def _build(self, wanted: str, tips: Tips, hidden: set[str], entries: list[tuple[str, str]]) -> dict:
        self._remove_abandoned_builds()
        building = f"{self.root}.building-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        os.makedirs(os.path.join(building, "objects", "pack"))
        os.makedirs(os.path.join(building, "objects", "info"))
        os.makedirs(os.path.join(building, "refs", "replace"))
        try:
            self._pack(building, [*tips.refs, *tips.commits], [], hidden, [blob for blob, _ in entries])
            self._placeholders(building, hidden)
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(self.root)
            os.replace(building, self.root)
        finally:
            shutil.rmtree(building, ignore_errors=True)
        return self._write_state(wanted, tips, hidden)

    def _remove_abandoned_builds(self) -> None:
        """Builds a gitbot process left when it ended mid-way (its pid is in the name)."""
        parent, prefix = os.path.split(f"{self.root}.building-")
        with contextlib.suppress(OSError):
            for name in os.listdir(parent):
                pid = name[len(prefix):].split("-", 1)[0] if name.startswith(prefix) else ""
                if pid.isdigit() and not pids.alive(int(pid)):
                    shutil.rmtree(os.path.join(parent, name), ignore_errors=True)

    def _add(self, tips: Tips, seen: list[str], hidden: set[str], entries: list[tuple[str, str]],
             added: set[str]) -> None:
        """One more pack: what the new tips reach and the old do not, and index blobs the store lacks."""
        missing_index = self._missing([blob for blob, _ in entries])
        self._pack(self.root, [*tips.refs, *tips.commits], seen, hidden, missing_index)
        self._placeholders(self.root, added)

    def _pack(self, where: str, positive: list[str], negative: list[str], hidden: set[str],
              extra_blobs: list[str]) -> None:
        """rev-list --objects over the tips, less the hidden blobs, into one pack (none when nothing is new)."""
        revisions = "".join(f"{rev}\n" for rev in positive) + "".join(f"^{rev}\n" for rev in negative)
        listing = run_git(self.repo, "rev-list", "--objects", "--missing=allow-any", "--ignore-missing", "--stdin",
                          input=revisions.encode())
        kept: list[bytes] = []
        listed: set[bytes] = set()
        for line in listing.splitlines(keepends=True):
            name = line.split(b" ", 1)[0].strip()
            if name.decode() not in hidden:
                listed.add(name)
                kept.append(line)
        del listing
        kept += [f"{blob}\n".encode() for blob in dict.fromkeys(extra_blobs)
                 if blob not in hidden and blob.encode() not in listed]
        if kept:
            run_git(self.repo, "pack-objects", "-q", "--delta-base-offset",
                    os.path.join(where, "objects", "pack", "pack"), input=b"".join(kept))

    def _placeholders(self, where: str, hidden: set[str]) -> None:
        """The placeholder blob in the store and a replace ref to it for each hidden blob."""
        objects = os.path.join(where, "objects")
        env = git.clean_env({"GIT_OBJECT_DIRECTORY": objects, "GIT_ALTERNATE_OBJECT_DIRECTORIES": ""})
        placeholder = run_git(self.repo, "hash-object", "-w", "--stdin", input=PLACEHOLDER, env=env).decode().strip()
        replace = os.path.join(where, "refs", "replace")
        os.makedirs(replace, exist_ok=True)
        for blob in hidden:
            _write_atomically(os.path.join(replace, blob), f"{placeholder}\n".encode())

    def _holds(self, blobs: set[str]) -> bool:
        return bool(blobs) and len(self._missing(sorted(blobs))) < len(blobs)

    def _missing(self, blobs: list[str]) -> list[str]:
        """Those of `blobs` the store does not hold."""
        if not blobs:
            return []
        env = git.clean_env({"GIT_OBJECT_DIRECTORY": os.path.join(self.root, "objects"),
                             "GIT_ALTERNATE_OBJECT_DIRECTORIES": ""})
        listing = run_git(self.repo, "cat-file", "--batch-check=%(objectname)",
                          input="".join(f"{blob}\n" for blob in blobs).encode(), env=env).decode().splitlines()
        return [line.split()[0] for line in listing if line.endswith(" missing")]

    # -- the state on disk -----------------------------------------------------------------------

    def _state(self) -> dict | None:
        """The state on disk (never changed in place: a caller only reads it). Asked before every command,
        and on git/git it lists thousands of tips: parsed again only when the file's stamp moved. The file
        is only ever replaced whole (a new inode), and one replaced within the racy window is not kept."""
        path = os.path.join(self.root, STATE_FILE)
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        kept = self._kept_state
        if kept is not None and kept[0] == stamp:
            return kept[1]
        try:
            with open(path, encoding="utf-8") as handle:
                state = json.load(handle)
        except (OSError, ValueError):
            return None
        if not isinstance(state, dict):
            return None
        if st.st_ctime_ns < time.time_ns() - int(readdeny.RACY_SECONDS * 1e9):
            self._kept_state = (stamp, state)
        return state

    def _write_state(self, wanted: str, tips: Tips, hidden: set[str]) -> dict:
        state = {"fingerprint": wanted, "tips": sorted({*tips.refs, *tips.commits}), "hidden": sorted(hidden)}
        os.makedirs(self.root, exist_ok=True)
        _write_atomically(os.path.join(self.root, STATE_FILE), json.dumps(state).encode())
        return state

    def _refs_view(self) -> str:
        """The refs directory the sandbox sees: the replace refs gitbot made, the user's own loose
        replace refs, and an empty mount point for each other entry of the real refs/ (bound over it)."""
        view = os.path.join(self.root, "refs")
        real = os.path.join(self.common_dir, "refs")
        with contextlib.suppress(OSError):
            for entry in os.scandir(real):
                if entry.name == "replace":
                    continue
                target = os.path.join(view, entry.name)
                if entry.is_dir(follow_symlinks=False):
                    os.makedirs(target, exist_ok=True)
                elif not os.path.exists(target):
                    open(target, "a").close()
        with contextlib.suppress(OSError):
            for entry in os.scandir(os.path.join(real, "replace")):
                if entry.is_file(follow_symlinks=False) and not os.path.exists(os.path.join(view, "replace",
                                                                                            entry.name)):
                    shutil.copyfile(entry.path, os.path.join(view, "replace", entry.name))
        return view


def _write_atomically(path: str, data: bytes) -> None:
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)
