"""Taking checkpoints: the work tree's state after each step, as a commit in the shadow repository.

A run's checkpoints are commits under refs/gitbot/<run-id>/<step>, built from a private index
(`<shadow>/indexes/<run-id>`). The index is seeded by copying the user's own index, so git's
stat data is valid from the first checkpoint on: the first `status` lstat()s files instead of
hashing all of them, and blobs the user already has are found through the alternates.

Per step, the index is brought up to date in one of three ways:
- the caller names the paths a file tool wrote (`touched`): `git add -A -- <those paths>`,
  which neither walks the tree nor lstat()s every file;
- a command ran, and inotify says which paths it changed (`watch()`, watch.py): one `git status`
  limited to those paths, or none at all when it changed nothing;
- otherwise (anything may have changed): one `git status` (stat data in the index, untracked
  cache) says what differs, and only those paths are updated.
Then write-tree; if the tree equals the previous checkpoint's, no commit is made and the step's
ref points at the previous commit.

Not captured, and listed as such: files above the size cap (default 10 MB, or
GITBOT_CHECKPOINT_SIZE_CAP; hashing and storing them on every step would cost more than the
checkpoint is worth), nested repositories and submodules (recorded by reference: a gitlink to
their HEAD; their `.git` is never renamed or entered), files that cannot be read, and files the
policy's `read_deny` rules match (an untracked `.env`: the store is uploaded as the Action's
artifact, and a secret must not reach it; tracked ones are dropped from the private index too, so
their blobs are never copied in). The run's read_deny rules are written into every checkpoint's
manifest, so a restore or resume of the run excludes the same files without being told, and never
deletes or overwrites one because no checkpoint holds it. Ignored files are not in the steps' trees:
git's ignore rules decide, and there is no other built-in exclusion list (so lockfiles and build
scripts restore fine). They are captured once, at step 0, into a commit of their own, and what
neither holds is named for the sandbox to keep read-only (ignored.py).

What the seeded index must not be trusted for (fixed up at seeding):
- stat data the user's git could not vouch for: the copy keeps the index's mtime, so git's
  racy-entry check re-reads files modified in the same second as the user's last index write;
- entries git would not look at: skip-worktree and assume-unchanged bits are cleared for files
  that exist;
- blob ids in "clean" form: files with a `filter` attribute (git-lfs) are re-hashed raw, as the
  shadow runs no filters, so a restore writes the real file and not its pointer;
- blobs only the user's index holds (staged, never committed): copied into the shadow's own
  store, as the user's `git gc` may prune them.
Which paths are captured, and how status output is read: capture.py.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitbot.checkpoints.capture import (
    GIT_METADATA_REASON,
    GITLINK_REASON,
    STATUS_ARGS,
    CaptureRules,
    gitlink_reason,
    is_nested_repo,
    relative_path,
    size_cap_from_env,
    status_paths,
)
from gitbot.checkpoints.errors import json_safe_path
from gitbot.checkpoints.ignored import (
    capture_ignored,
    rebuildable_at_start,
    start_listing,
    unrestorable_at_start,
)
from gitbot.checkpoints.pace import SLOW_MEDIAN_SECONDS, Pace
from gitbot.checkpoints.seeding import (
    LISTING_ARGS,
    Background,
    SeedFixes,
    filtered_index_info,
    prune_old_indexes,
    read_seed_listing,
    wait_at_exit,
)
from gitbot.checkpoints.shadow import (
    GITLINK_MODE,
    MANIFEST_PREFIX,
    REF_ROOT,
    RepoPaths,
    ShadowRepo,
    discover,
    fs,
    user_head,
    validate_run_id,
)
from gitbot.checkpoints.watch import TreeWatcher, watch_for
from gitbot.git import GitCommandError
from gitbot.policy.files import path_matcher
from gitbot.policy.rebuildable import rebuildable_directory

log = logging.getLogger(__name__)


@dataclass
class Checkpoint:
    step: int
    commit: str
    seconds: float
    files_changed: list[str]  # relative to the previous checkpoint; empty for the first
    not_captured: list[str]  # large files, unreadable files, nested repositories/submodules
    new_commit: bool = True  # False when the tree was unchanged and the step reuses the previous commit
    reason: str | None = None  # e.g. "before restore"
    not_captured_reasons: dict[str, str] = field(default_factory=dict)

    def to_event(self) -> dict[str, Any]:
        """Fields to add to the step's tool_end event, paths made JSON/UTF-8 safe (step is the caller's)."""
        data: dict[str, Any] = {"checkpoint": self.commit, "checkpoint_seconds": round(self.seconds, 4),
                                "files_changed": [json_safe_path(p) for p in self.files_changed],
                                "not_captured": [json_safe_path(p) for p in self.not_captured]}
        if self.reason:
            data["reason"] = self.reason
        return data

    def record_fields(self) -> dict[str, Any]:
        """Fields of a `checkpoint` event in the run record (one taken apart from its tool call's tool_end:
        after a command while the next request was out, at the end of a response, around a restore)."""
        data = self.to_event()
        return {"step": self.step, "commit": self.commit, "seconds": data["checkpoint_seconds"],
                "files_changed": data["files_changed"], "not_captured": data["not_captured"]}


class Checkpointer:
    """Takes a run's checkpoints. One instance per run; the caller holds the RunLock meanwhile."""

    def __init__(self, repo: Path | str, run_id: str, *, size_cap_bytes: int | None = None,
                 slow_median_seconds: float = SLOW_MEDIAN_SECONDS, read_deny: Sequence[str] = (),
                 rebuildable: Sequence[str] = ()):
        validate_run_id(run_id)
        if size_cap_bytes is None:
            size_cap_bytes = size_cap_from_env()
        if size_cap_bytes < 0:
            raise ValueError(f"size_cap_bytes must be >= 0, not {size_cap_bytes}")
        self.paths: RepoPaths = discover(repo)
        self.repo = self.paths.work_tree
        self.run_id = run_id
        self.size_cap_bytes = size_cap_bytes
        self.shadow = ShadowRepo(self.paths)
        self.index = self.shadow.dir / "indexes" / run_id
        self._ref_prefix = f"{REF_ROOT}/{run_id}/"
        # path -> why it is not captured; carried from step to step and written into each commit.
        self._not_captured: dict[str, str] = {}
        self._last_step: int | None = None
        self._last_commit: str | None = None
        self._last_tree: str | None = None
        steps = self.shadow.run_steps(run_id)
        if steps:  # re-opening a run (restore, resume): continue from its last checkpoint
            self._last_step = max(steps)
            self._last_commit = steps[self._last_step]
            self._last_tree, manifest = self.shadow.read_commit(self._last_commit)
            self._not_captured = dict(manifest.get("not_captured", {}))
            # A run keeps the read_deny rules it started with (and gains any it is given now).
            read_deny = (*manifest.get("read_deny", ()), *read_deny)
        self.read_deny: tuple[str, ...] = tuple(dict.fromkeys(read_deny))
        self._denied = path_matcher(self.read_deny)
        # `[sandbox] rebuildable`: what the start's capture cannot hold there stays writable (ignored.py).
        self._rebuildable = rebuildable_directory(rebuildable) if rebuildable else None
        self.rules = CaptureRules(self.repo, size_cap_bytes, self._denied, self.shadow.dir)
        # Paths whose index entries changed since the last recorded tree, so a checkpoint's
        # files_changed needs no tree diff; None when unknown (then diff the trees).
        self._changed: set[str] | None = set()
        self.pace = Pace(self.paths, run_id, slow_median_seconds=slow_median_seconds, resumed=bool(steps))
        # Set when the index was (re-)seeded: the next scan copies blobs only the user's index holds.
        self._keep_staged = False
        self._refresh_pending = False  # the first scan did not write the index (see _scan_all)
        self._refresher: Background | None = None
        self._seed_listing: Background | None = None
        self._seed_tree: str | None = None  # HEAD's tree when the index was seeded
        self._head_tree: str | None = None  # the tree of the shadow's HEAD, when this checkpointer set it
        self._watcher: TreeWatcher | None = None  # see watch()
        self._from_changes = 0  # checkpoints that looked only at what the watcher said changed

    # -- public ------------------------------------------------------------------------------

    @property
    def last_step(self) -> int | None:
        return self._last_step

    @property
    def last_commit(self) -> str | None:
        return self._last_commit

    @property
    def last_tree(self) -> str | None:
        return self._last_tree

    @property
    def not_captured_reasons(self) -> dict[str, str]:
        """path -> why it is not captured, as of the last scan."""
        return dict(self._not_captured)

    def take(self, step: int, *, touched: Sequence[str | os.PathLike[str]] | None = None,
             reason: str | None = None) -> Checkpoint:
        """Checkpoint the work tree as `step` (0 = before the agent did anything).

        touched: the repo-relative (or absolute, inside the repo) paths a file tool wrote;
        None when anything may have changed (a command ran).
        """
        if not isinstance(step, int) or step < 0:
            raise ValueError(f"step must be a non-negative integer, not {step!r}")
        if self._last_step is not None and step < self._last_step:
            raise ValueError(f"step {step} comes before this run's last checkpoint (step {self._last_step})")
        relative = None if touched is None else [relative_path(self.repo, p) for p in touched]
        began = time.perf_counter()
        first = self._last_commit is None
        # A run's start: its ignored files are listed while the first scan runs (ignored.py).
        listing = start_listing(self.shadow) if first and step == 0 else None
        try:
            tree = self.build_tree(relative)
            checkpoint = self.record(step, tree, reason=reason)
        except BaseException:
            if listing is not None:
                listing.discard()
            raise
        if listing is not None:
            self._capture_ignored(listing)
        checkpoint.seconds = time.perf_counter() - began
        self.pace.note(step, checkpoint.seconds, first)
        self._refresh_later()
        return checkpoint

    def unrestorable(self) -> dict[str, str]:
        """Paths there when the run started that no restore can bring back (path -> why): the sandbox
        keeps them read-only (ignored.py)."""
        return unrestorable_at_start(self.shadow, self.run_id)

    def rebuildable(self) -> dict[str, str]:
        """Ignored paths there when the run started that it leaves writable and does not restore (path ->
        why): too big to capture, inside a `[sandbox] rebuildable` directory (ignored.py)."""
        return rebuildable_at_start(self.shadow, self.run_id)

    def _capture_ignored(self, listing: Background) -> None:
        """At the start of a run: its ignored files, captured apart from the steps (ignored.py)."""
        capture_ignored(self.shadow, self.index, self.run_id, size_cap_bytes=self.size_cap_bytes, denied=self._denied,
                        listing=listing, rebuildable=self._rebuildable)

    def watch(self) -> None:
        """From now on, learn what commands change from inotify (watch.py), so that a checkpoint after one
        asks git about those paths only. For sandboxed commands (see watch.py); `stop_watching()` at the end."""
        if self._watcher is None:
            self._watcher = watch_for(self.shadow, self.repo)

    def stop_watching(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.close()

    def settle(self) -> None:
        """Wait for the private index's background refresh, if one runs (every use of the index does)."""
        refresher, self._refresher = self._refresher, None
        if refresher is not None:
            try:
                refresher.output()
            except GitCommandError as exc:  # e.g. the lock taken: the next status writes it instead
                log.info("background refresh of the checkpoint index failed: %s", exc.stderr)

    def _refresh_later(self) -> None:
        """Start the status that writes the refreshed index and its untracked cache, which the first scan
        skipped. It only writes what git already knows from the files (stat data, directory listings):
        the checkpoint taken does not depend on it, the next scan only gets faster."""
        if not self._refresh_pending or self._refresher is not None:
            return
        self._refresh_pending = False
        try:
            self._refresher = Background(self.shadow, self.index, STATUS_ARGS)
        except OSError:
            return
        wait_at_exit(self._refresher)

    def should_checkpoint_step(self) -> bool:
        """False once checkpoints got slow and the run switched to one checkpoint per model response."""
        return self.pace.per_step

    def stats(self) -> dict[str, Any]:
        return {**self.pace.stats(), "from_changes": self._from_changes}

    def mark(self, step: int) -> Checkpoint:
        """A step that cannot change files (a read-only tool): its ref points at the last checkpoint,
        without scanning the work tree, so every step can be listed, diffed and restored.

        Only valid while every earlier write was checkpointed (per-step mode). In per-response mode
        earlier steps of the response may have written files the last checkpoint lacks, so this
        takes a real checkpoint instead (the loop does not mark steps in that mode at all)."""
        if self._last_tree is None:
            raise ValueError("mark() needs a first checkpoint: call take(0) before")
        if not self.pace.per_step:
            return self.take(step)
        return self.record(step, self._last_tree)

    def changed_since_start(self) -> list[str]:
        """Paths that differ between step 0 and the last checkpoint (what the run changed)."""
        self.settle()  # the run is ending: its index is complete before the lock goes
        first = self.shadow.run_steps(self.run_id).get(0)
        if first is None or self._last_commit is None or first == self._last_commit:
            return []
        return [json_safe_path(p) for p in self.shadow.changed_paths(first, self._last_commit)]

    def diff_from_start(self) -> str:
        """The run's work so far as a diff (binary files summarised): what review-on-submit shows."""
        from gitbot.checkpoints.history import diff

        return diff(self.repo, self.run_id, 0, self._last_step)

    # -- building the tree -------------------------------------------------------------------

    def build_tree(self, touched: list[str] | None = None) -> str:
        """Bring the private index up to date with the work tree and return its tree id."""
        self.settle()
        # Read before anything else: what changes from here on is the next checkpoint's to look at.
        watcher = self._watcher  # once: stop_watching() may run in another thread (the end of a run)
        scope = watcher.changes() if touched is None and watcher is not None else None
        if self._last_commit is None or not self.index.exists():
            self._seed_index()
            scope = None
        try:
            return self._update_and_write_tree(touched, scope)
        except GitCommandError as exc:
            # "invalid object": an entry's blob is gone (written by a run killed before its checkpoint,
            # then pruned): the index is no better than unreadable.
            if "index" not in exc.stderr and ".lock" not in exc.stderr and "invalid object" not in exc.stderr:
                raise
            # A private index git cannot read (its shared part expired, or a process killed
            # mid-write left its .lock): start it again from the user's index. Correctness never
            # depended on its contents, only speed, and the caller's RunLock rules out a live writer.
            log.warning("checkpoint index for run %s was unreadable (%s); re-seeding it", self.run_id, exc.stderr)
            self._seed_index()
            return self._update_and_write_tree(None)

    def _update_and_write_tree(self, touched: list[str] | None, scope: list[str] | None = None) -> str:
        """`scope`: the paths changed since the last scan, when they are known (TreeWatcher)."""
        if touched is None or self._keep_staged or not self._add_touched(touched):
            seed_tree = self._seed_tree if self._keep_staged else None
            if not self._scan_all(None if self._keep_staged else scope):
                if seed_tree:
                    # Nothing differs from the freshly seeded index, and status compared it with HEAD:
                    # the tree is HEAD's (a clean checkout, as in CI), and write-tree need not read the index.
                    return seed_tree
                if self._head_tree and self._head_is_last_commit():
                    # Status found nothing: the work tree is the index and the index is the shadow's HEAD,
                    # which is this run's last commit. The tree is that commit's: no write-tree.
                    return self._head_tree
        else:
            # The tool's writes are captured now, but their events are still queued: read them as changed
            # since this look, or a file it made would pass next time for one absent at the last scan.
            self._scanned()
        return self.shadow.out("write-tree", index=self.index)

    def _scanned(self) -> None:
        """The tree was just read (a status, or a file tool's paths): tell the watcher (after_scan)."""
        watcher = self._watcher
        if watcher is not None:
            watcher.after_scan()

    def _head_is_last_commit(self) -> bool:
        try:
            return (self.shadow.dir / "HEAD").read_text(encoding="ascii").strip() == self._last_commit
        except (OSError, UnicodeDecodeError):
            return False

    def _seed_index(self) -> None:
        """Start the private index as a copy of the user's (stat data + blob ids they already have)."""
        self.index.parent.mkdir(parents=True, exist_ok=True)
        prune_old_indexes(self.index.parent, keep=self.index.name)
        for stale in (self.index, self.index.with_name(self.index.name + ".lock")):
            stale.unlink(missing_ok=True)
        self._changed = None
        if self._seed_listing is not None:  # from a seeding whose scan failed
            self._seed_listing.discard()
            self._seed_listing = None
        user_index = self.paths.user_index
        if user_index.is_file():
            tmp = self.index.with_name(f".{self.index.name}.{os.getpid()}.seed")
            # git replaces its index by rename, so this copy is consistent. copy2 keeps the mtime:
            # git trusts an entry's stat data only if the file's mtime is older than the index's,
            # so a file edited in the same second as the user's last index write (same size, same
            # inode) is re-read, not taken for the content the index names (racy git).
            shutil.copy2(user_index, tmp)
            # A user index in split-index mode names its shared part, which git looks up in GIT_DIR.
            for shared in self.paths.git_dir.glob("sharedindex.*"):
                target = self.shadow.dir / shared.name
                if not target.exists():
                    shutil.copy2(shared, target)
            os.replace(tmp, self.index)
        head = user_head(self.paths)
        self._head_tree = None
        if head:
            # status compares HEAD with the index; HEAD == the seeded index's commit keeps that cheap.
            self.shadow.set_refs({"HEAD": head[0]})
        self._seed_tree = head[1] if head else None
        if not self.index.exists():
            return
        self._keep_staged = True
        # One pass over the seeded entries finds gitlinks and the assume-unchanged and skip-worktree
        # bits that would hide our changes; it runs while the first scan's status does (_fix_seeded).
        self._seed_listing = Background(self.shadow, self.index, LISTING_ARGS)

    def _read_seed_listing(self) -> SeedFixes | None:
        """What the seeded index holds that the first scan must handle (read while its status runs)."""
        listing, self._seed_listing = self._seed_listing, None
        if listing is None:
            return None
        fixes = read_seed_listing(listing.output(), self._denied)
        for path, sha in fixes.gitlinks:  # recorded by reference from now on
            self._not_captured[os.fsdecode(path)] = gitlink_reason(sha)
        return fixes

    def _fix_seeded(self, fixes: SeedFixes) -> list[str]:
        """After the first status: tracked files the policy denies reading leave the private index (the
        scan finds them untracked and passes them by), the bits are cleared, and entries whose stored
        form is filtered are re-added. Returns the paths the status did not judge, for the scan."""
        if fixes.denied:
            self.shadow.git("update-index", "--force-remove", "-z", "--stdin", index=self.index,
                            input=b"\0".join(fixes.denied) + b"\0")
        assume_unchanged = [p for p in fixes.assume_unchanged if p not in fixes.denied]
        if assume_unchanged:
            self.shadow.git("update-index", "--no-assume-unchanged", "-z", "--stdin", index=self.index,
                            input=b"\0".join(assume_unchanged) + b"\0")
        # A skip-worktree entry whose file is absent (sparse checkout) keeps its bit and its content.
        dirs: dict[str, bool] = {}
        present = [p for p in fixes.skip_worktree
                   if p not in fixes.denied and self.rules.lstat(os.fsdecode(p), dirs) is not None]
        if present:
            self.shadow.git("update-index", "--no-skip-worktree", "-z", "--stdin", index=self.index,
                            input=b"\0".join(present) + b"\0")
        filtered: list[bytes] = []
        if fixes.has_attributes or self._attribute_files_outside_the_tree():
            filtered = self._rehash_filtered(fixes)
        return [os.fsdecode(p) for p in dict.fromkeys([*fixes.denied, *assume_unchanged, *present, *filtered])]

    def _attribute_files_outside_the_tree(self) -> bool:
        return bool(self.shadow.user_settings.get("attributesfile")) or any(
            p.is_file() for p in (self.paths.common_dir / "info" / "attributes", Path("/etc/gitattributes")))

    def _rehash_filtered(self, fixes: SeedFixes) -> list[bytes]:
        """Entries with a `filter` attribute hold the user's *clean* form (an LFS pointer); the shadow
        runs no filters, so it must store what is on disk. Re-adding them without stat data makes
        the next scan hash the file as it is. Returns the paths re-added."""
        records, paths = filtered_index_info(self.repo, fixes)
        if records:
            self.shadow.git("update-index", "-z", "--index-info", index=self.index, input=records)
        return paths

    def _add_touched(self, touched: list[str]) -> bool:
        """The fast path: update only the named paths. False when it cannot decide (scan instead)."""
        to_add: list[str] = []
        to_drop: list[str] = []
        dirs: dict[str, bool] = {}
        git_dirs: dict[str, bool] = {}
        for rel in touched:
            if rel == ".":
                return False
            if rel.split("/")[0] == ".git":
                continue  # a tool writing inside .git changed nothing we capture
            if not self.rules.real_parents(rel, dirs):
                return False  # under a symlink or a file: the scan removes what lay there
            try:
                st = os.lstat(self.repo / rel)
            except (FileNotFoundError, NotADirectoryError):
                to_add.append(rel)  # `add -A` records the deletion
                continue
            if stat.S_ISDIR(st.st_mode) or not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                return False  # a directory, nested repository or special file: let the scan classify it
            why = GIT_METADATA_REASON if self.rules.in_git_metadata(rel, git_dirs) else \
                self.rules.why_not_capturable(rel, st)
            if why:
                to_drop.append(rel)
                self._not_captured[rel] = why
            else:
                to_add.append(rel)
                self._not_captured.pop(rel, None)
        if to_drop:
            self._drop_from_index(to_drop)
            self._changed = None  # whether they were in the index is unknown here: diff the trees
        if to_add:
            try:
                out = self.shadow.git("add", "-A", "--verbose", "--pathspec-from-file=-", "--pathspec-file-nul",
                                      index=self.index, input=b"\0".join(fs(p) for p in to_add) + b"\0").stdout
            except GitCommandError:
                # e.g. a path that is ignored, never existed, or lies inside a nested repository:
                # the full scan gets every one of those right. (add may have staged some paths
                # before failing, so which entries changed is no longer known.)
                self._changed = None
                return False
            if self._changed is not None:
                # --verbose names exactly the paths whose entries changed: "add 'p'" / "remove 'p'".
                self._changed.update(p for p in to_add
                                     if b"add '%s'\n" % fs(p) in out or b"remove '%s'\n" % fs(p) in out)
        return True

    def _scan_all(self, scope: list[str] | None = None) -> bool:
        """The general path: ask git what differs from the index, and update just those paths; with
        `scope`, only under those paths (nothing else changed since the last scan).
        False when status found nothing at all to look at."""
        if scope is not None:
            self._from_changes += 1
            if not scope:
                return False
        # Right after seeding, the seeded index's listing is read and matched here while status runs.
        # The first scan of a seeded index does not write it back: building its untracked cache and
        # writing the split index costs a third of that status. `take` has a second status write
        # them in the background, while the run's first model request is out (see _refresh_later).
        first = self._keep_staged
        args = STATUS_ARGS if scope is None else ("--literal-pathspecs", *STATUS_ARGS, "--", *scope)
        # A scoped status need not write the index: update-index writes it next, if anything changed.
        status = Background(self.shadow, self.index, args, write_index=not first and scope is None)
        self._refresh_pending = self._refresh_pending or first
        try:
            fixes = self._read_seed_listing()
        except BaseException:
            status.discard()
            raise
        out = status.output()
        self._scanned()
        unjudged = self._fix_seeded(fixes) if fixes is not None else []
        candidates, tracked, staged = status_paths(out)
        if unjudged:
            known = set(candidates)
            candidates += [p for p in unjudged if p not in known]
            tracked.update(unjudged)
        if self._keep_staged:
            # Right after seeding, index entries that differ from HEAD name blobs only the user's
            # index holds; keep them, or the user's `git gc` may prune what a checkpoint needs
            # (never those of files the policy denies reading: they are not stored at all).
            denied = self._denied
            self.shadow.keep_objects(sha for sha, path in staged if denied is None or not denied(path))
            self._keep_staged = False
        # Anything untracked is reported again by every scan, so these are re-derived here; gitlinks stay
        # known through the index, and outside a scope nothing changed.
        scoped = frozenset(scope) if scope is not None else None
        self._not_captured = {p: why for p, why in self._not_captured.items()
                              if why.startswith(GITLINK_REASON) or (scoped is not None and not _within(p, scoped))}
        update: list[bytes] = []  # add if present, remove if gone
        drop: list[str] = []  # in the index but must not be captured
        gitlinks: list[tuple[str, str]] = []
        changed: list[str] = []  # status reported them, so their entries differ (or they are new)
        dirs: dict[str, bool] = {}
        git_dirs: dict[str, bool] = {}
        for rel in candidates:
            st = self.rules.lstat(rel, dirs)  # never through a symlink: a file under one is gone
            if st is None:
                # gone: --force-remove drops its entry (plain --remove refuses a path beyond a symlink)
                drop.append(rel)
                self._not_captured.pop(rel, None)
            elif self.rules.in_git_metadata(rel, git_dirs):
                drop.append(rel)
                self._not_captured[rel] = GIT_METADATA_REASON
            elif stat.S_ISDIR(st.st_mode) and is_nested_repo(self.repo / rel):
                head = self.rules.nested_head(self.repo / rel)
                if head:
                    gitlinks.append((rel, head))
                    self._not_captured[rel] = gitlink_reason(head)
                else:
                    drop.append(rel)
                    self._not_captured[rel] = "nested git repository without commits; not captured"
            elif stat.S_ISDIR(st.st_mode):
                drop.append(rel)  # an entry that is a plain directory now; its files are candidates of their own
                self._not_captured.pop(rel, None)
            elif why := self.rules.why_not_capturable(rel, st):
                drop.append(rel)
                self._not_captured[rel] = why
            else:
                update.append(fs(rel))
                self._not_captured.pop(rel, None)
            # An untracked path that is dropped never entered the index; everything else changes an entry.
            if rel in tracked or not (drop and drop[-1] == rel):
                changed.append(rel)
        if drop:
            self._drop_from_index(drop)
        if update:
            # --replace: a file that became a directory (or back) swaps entries in one go.
            self.shadow.git("update-index", "--add", "--remove", "--replace", "-z", "--stdin", index=self.index,
                            input=b"\0".join(update) + b"\0")
        if gitlinks:
            records = b"".join(b"%s %s\t%s\0" % (GITLINK_MODE.encode(), sha.encode(), fs(rel)) for rel, sha in gitlinks)
            self.shadow.git("update-index", "--replace", "-z", "--index-info", index=self.index, input=records)
        if self._changed is not None:
            self._changed.update(changed)
        return bool(candidates)

    def _drop_from_index(self, paths: list[str]) -> None:
        self.shadow.git("update-index", "--force-remove", "-z", "--stdin", index=self.index,
                        input=b"\0".join(fs(p) for p in paths) + b"\0")

    # -- recording ---------------------------------------------------------------------------

    def record(self, step: int, tree: str, *, reason: str | None = None) -> Checkpoint:
        """Point refs/gitbot/<run>/<step> at a commit of `tree` (a new one only if the tree changed)."""
        changed, self._changed = self._changed, set()
        if self._last_commit is not None and tree == self._last_tree:
            commit, files_changed, new = self._last_commit, [], False
        else:
            manifest = {"run": self.run_id, "step": step, "size_cap": self.size_cap_bytes,
                        "not_captured": self._not_captured}
            if self.read_deny:
                manifest["read_deny"] = list(self.read_deny)
            title = f"gitbot checkpoint: run {self.run_id} step {step}" + (f" ({reason})" if reason else "")
            # ensure_ascii keeps undecodable file names as \\udcXX escapes: valid JSON, lossless.
            message = f"{title}\n\n{MANIFEST_PREFIX}{json.dumps(manifest, sort_keys=True)}\n"
            commit = self.shadow.write_commit(tree, self._last_commit, message)
            if not self._last_tree:
                files_changed = []
            elif changed is None:
                files_changed = self.shadow.changed_paths(self._last_tree, tree)
            else:
                files_changed = sorted(changed)
            new = True
        # The step's ref, and the shadow's HEAD (which keeps the next status's HEAD/index comparison small).
        self.shadow.set_refs({f"{self._ref_prefix}{step}": commit, "HEAD": commit})
        self._head_tree = tree
        self._last_step, self._last_commit, self._last_tree = step, commit, tree
        return Checkpoint(step=step, commit=commit, seconds=0.0, files_changed=files_changed,
                          not_captured=sorted(self._not_captured), new_commit=new, reason=reason,
                          not_captured_reasons=dict(self._not_captured))


def _within(path: str, roots: frozenset[str]) -> bool:
    """Whether `path` is one of `roots` or lies below one."""
    while path:
        if path in roots:
            return True
        path = path.rpartition("/")[0]
    return False
