"""Restoring the work tree to a checkpoint, without touching the user's HEAD, branches or index.

Files are written from the run's private index with `checkout-index` and removed with unlink();
nothing runs `reset --hard` or `clean`. Restoring to step 0 (before the run) also writes back the
ignored files captured at the run's start (ignored.py) that are gone, and leaves one that changed
since as it is unless forced. What restore will not do, and says so in its report:
- overwrite or delete a file whose current content no checkpoint holds (too large, unreadable,
  or not in the current checkpoint at all, e.g. ignored now). With force=True such a file that
  the target step has is overwritten, but copied to `<git-dir>/gitbot/restore-backup/<time>/`
  first, and the report says where;
- start when an object the target needs is missing (pruned by the user's `git gc`): it checks
  first and changes nothing;
- follow a symbolic link to a directory (outside the work tree, perhaps);
- delete a file the target step's own .gitignore rules ignore (it may have existed then, unseen:
  the agent may have un-ignored it since), or one that step could not capture;
- enter, move or replace a nested repository or submodule (recorded by reference only);
- remove a directory that still holds files the run never captured (e.g. ignored files) to put
  a file in its place.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gitbot.checkpoints.capture import DEFAULT_SIZE_CAP, GITLINK_REASON
from gitbot.checkpoints.errors import CheckpointError, OutsideChanges, display_path, json_safe_path
from gitbot.checkpoints.history import checkpoint_steps, resolve_run, resolve_step
from gitbot.checkpoints.ignored import read_ignored
from gitbot.checkpoints.lock import RunLock
from gitbot.checkpoints.shadow import GITLINK_MODE, DiffEntry, RepoPaths, ShadowRepo, fs
from gitbot.checkpoints.snapshot import Checkpoint, Checkpointer
from gitbot.record import RunRecord


@dataclass
class RestoreReport:
    run_id: str
    step: int
    commit: str
    before_step: int | None = None  # checkpoint of the state just before restoring: restore it to undo
    before_commit: str | None = None
    after_step: int | None = None  # checkpoint of the state after restoring
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # path -> why it was left as it is
    failed: list[str] = field(default_factory=list)  # paths that still differ for no reason we know of
    outside_changes: list[str] = field(default_factory=list)  # overwritten because of force=True
    backed_up: dict[str, str] = field(default_factory=dict)  # path -> where its old content was copied (force)
    stale_lock: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("written", "removed", "failed", "outside_changes"):
            data[key] = [json_safe_path(p) for p in data[key]]
        data["skipped"] = {json_safe_path(p): why for p, why in self.skipped.items()}
        data["backed_up"] = {json_safe_path(p): json_safe_path(where) for p, where in self.backed_up.items()}
        return data

    def summary(self) -> str:
        if self.before_step is None and not self.written and not self.skipped:
            return f"The work tree already matches run {self.run_id} step {self.step}; nothing to restore."
        lines = [(f"Restored run {self.run_id} to step {self.step} (checkpoint {self.commit[:12]}): "
                  f"{len(self.written)} file(s) written, {len(self.removed)} removed.")]
        for path, why in sorted(self.skipped.items()):
            lines.append(f"  skipped {display_path(path)}: {why}")
        for path, where in sorted(self.backed_up.items()):
            lines.append(f"  overwrote {display_path(path)}, which no checkpoint held (--force); "
                         f"its old content is in {display_path(where)}")
        for path in self.failed:
            lines.append(f"  FAILED {display_path(path)}: still differs from the checkpoint")
        if self.outside_changes:
            lines.append(f"  {len(self.outside_changes)} change(s) made outside the run were overwritten (--force).")
        if self.before_step is not None:
            lines.append(f"The state before restoring is checkpoint step {self.before_step}; undo with: "
                         f"gitbot checkpoints restore {self.run_id} {self.before_step}")
        return "\n".join(lines)


def restore(repo: Path | str, run_id: str, step: int, *, force: bool = False) -> RestoreReport:
    """Make the work tree's files equal to checkpoint `step` of `run_id` (see module doc for limits)."""
    paths, run_id = resolve_run(repo, run_id)
    steps = checkpoint_steps(paths, run_id)
    target = resolve_step(paths, run_id, steps, step)
    lock = None
    if not RunLock.held_by_this_process(paths.work_tree):  # resume restores while holding the run's lock
        lock = RunLock(paths.work_tree, run_id=run_id).acquire()
    try:
        report = _restore_locked(paths, run_id, step, target, steps, force)
        report.stale_lock = lock.stale if lock else None
        return report
    finally:
        if lock:
            lock.release()


def _restore_locked(paths: RepoPaths, run_id: str, step: int, target: str, steps: dict[int, str],
                    force: bool) -> RestoreReport:
    _, last_manifest = ShadowRepo(paths, create=False).read_commit(steps[max(steps)])
    checkpointer = Checkpointer(paths.work_tree, run_id,
                                size_cap_bytes=int(last_manifest.get("size_cap", DEFAULT_SIZE_CAP)))
    shadow = checkpointer.shadow
    target_tree, target_manifest = shadow.read_commit(target)
    last_step, last_tree = checkpointer.last_step, checkpointer.last_tree
    assert last_step is not None and last_tree is not None
    began = time.perf_counter()
    current_tree = checkpointer.build_tree(None)
    outside = shadow.changed_paths(last_tree, current_tree) if current_tree != last_tree else []
    if outside and not force:
        raise OutsideChanges(run_id, last_step, outside)
    report = RestoreReport(run_id=run_id, step=step, commit=target, outside_changes=outside)
    if current_tree == target_tree:
        if step == 0:
            _restore_ignored(paths, shadow, run_id, force, report)
        return report

    # Decide everything before changing anything.
    root = paths.work_tree
    not_captured_now = dict(checkpointer.not_captured_reasons)
    not_captured_then: dict[str, str] = target_manifest.get("not_captured", {})
    deletes: list[str] = []
    writes = []
    for entry in shadow.diff_entries(current_tree, target_tree):
        path = entry.path
        if GITLINK_MODE in (entry.old_mode, entry.new_mode):
            report.skipped[path] = "a git repository (nested repository or submodule) is recorded by reference only"
        elif path in not_captured_now:
            report.skipped[path] = f"its current content is not in any checkpoint ({not_captured_now[path]})"
        elif entry.status == "D" and path in not_captured_then:
            report.skipped[path] = f"step {step} did not capture it ({not_captured_then[path]})"
        elif entry.status == "D":
            deletes.append(path)
        else:
            writes.append(entry)
    for path, why in not_captured_now.items():
        # e.g. a large file created during the run: no tree holds it, so no diff entry names it.
        if path not in report.skipped and not why.startswith(GITLINK_REASON):
            report.skipped[path] = f"no checkpoint holds it ({why})"
    for path in _ignored_under(shadow, target_tree, deletes):
        report.skipped[path] = f"ignored by step {step}'s ignore rules, so it may have existed then unseen"
    deletes = [p for p in deletes if p not in report.skipped]
    dirs: dict[str, bool] = {}
    # A file on disk that the current checkpoint does not hold (ignored now, say): its content is
    # in no checkpoint, so writing over it would lose it for good.
    uncaptured = [e for e in writes if e.status == "A" and _is_file(root, e.path, dirs)]
    same = _same_content(shadow, root, uncaptured)
    backups: list[str] = []
    for entry in uncaptured:
        if entry.path in same:
            report.skipped[entry.path] = f"it already has step {step}'s content"
        elif not force:
            report.skipped[entry.path] = ("a file the current checkpoint does not hold (ignored or never captured) "
                                          "is there; left as it is (--force overwrites it, keeping a copy)")
        else:
            backups.append(entry.path)
    writes = [e for e in writes if e.path not in report.skipped]
    # Every object the writes need must exist: checkout-index unlinks a file before it finds its
    # blob missing (pruned from the user's store by `git gc`, say).
    missing = shadow.missing_objects(e.new_sha for e in writes)
    if missing:
        lost = [e.path for e in writes if e.new_sha in missing]
        shown = ", ".join(display_path(p) for p in lost[:10]) + (f" and {len(lost) - 10} more" if len(lost) > 10 else "")
        raise CheckpointError(
            f"cannot restore run {run_id} to step {step}: the content of {len(lost)} file(s) is missing from the "
            f"checkpoint store and the repository's object store (pruned by `git gc`?): {shown}. Nothing was changed.")

    before = checkpointer.record(last_step + 1, current_tree, reason="before restore")
    before.seconds = time.perf_counter() - began
    report.before_step, report.before_commit = before.step, before.commit
    _log_checkpoint(paths, run_id, before, restoring_to=step, outside_changes=[json_safe_path(p) for p in outside])

    for path in deletes:
        if not _real_parents(root, path, dirs):
            report.skipped[path] = "it lies beyond a symbolic link or a file now; left as it is"
            continue
        try:
            os.unlink(root / path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            report.skipped[path] = f"could not remove it: {exc.strerror}"
            continue
        report.removed.append(path)
    _prune_empty_dirs(root, report.removed)
    if report.removed:
        shadow.git("update-index", "--force-remove", "-z", "--stdin", index=checkpointer.index,
                   input=b"".join(fs(p) + b"\0" for p in report.removed))

    if backups:
        backup_dir = _backup_dir(paths)
        for path in backups:
            copy = backup_dir / path
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / path, copy, follow_symlinks=False)
            report.backed_up[path] = str(copy)
    ready = []
    for entry in writes:
        obstacle = _obstacle(root, entry.path)
        if obstacle:
            report.skipped[entry.path] = obstacle
        else:
            ready.append(entry)
    if ready:
        records = b"".join(b"%s %s\t%s\0" % (e.new_mode.encode(), e.new_sha.encode(), fs(e.path)) for e in ready)
        shadow.git("update-index", "--replace", "-z", "--index-info", index=checkpointer.index, input=records)
        # -u: the index gets the written files' stat data, so the next checkpoint need not hash them.
        # Failures (e.g. a read-only directory) are found below by comparing trees.
        shadow.git("checkout-index", "-f", "-u", "-z", "--stdin", index=checkpointer.index, ok=(0, 1, 128),
                   input=b"".join(fs(e.path) + b"\0" for e in ready))
        report.written = [e.path for e in ready]

    after = checkpointer.take(before.step + 1, reason="after restore")
    report.after_step = after.step
    _log_checkpoint(paths, run_id, after, restored_step=step)
    still_different = shadow.changed_paths(checkpointer.last_tree or "", target_tree)
    report.failed = sorted(set(still_different) - set(report.skipped))
    report.written = [p for p in report.written if p not in report.failed]
    if step == 0:
        _restore_ignored(paths, shadow, run_id, force, report)
    return report


def _restore_ignored(paths: RepoPaths, shadow: ShadowRepo, run_id: str, force: bool, report: RestoreReport) -> None:
    """Before the run means its ignored files too: write back those captured at its start (ignored.py)
    that are gone; one that is there with other content is left as it is unless `force` (then it is
    copied to the backup directory first). Ignored files made during the run are never touched."""
    found = read_ignored(shadow, run_id)
    if found is None:
        return
    tree, manifest = found
    for path, why in manifest.get("rebuildable", {}).items():
        # Left writable for the run's builds; its content was never captured, so it is rebuilt, not restored.
        report.skipped.setdefault(path, f"not restored: {why}")
    root = paths.work_tree
    entries: list[DiffEntry] = []
    for record in shadow.git("ls-tree", "-r", "-z", tree).stdout.split(b"\0"):
        if record:
            meta, _, path = record.partition(b"\t")
            mode, _kind, sha = meta.decode().split(" ")
            entries.append(DiffEntry("000000", mode, "0" * len(sha), sha, "A", os.fsdecode(path)))
    gone: list[DiffEntry] = []
    present: list[DiffEntry] = []
    for entry in entries:
        obstacle = _obstacle(root, entry.path)  # never through a symlink, never into a nested repository
        if obstacle:
            report.skipped[entry.path] = obstacle
        elif os.path.lexists(root / entry.path):
            present.append(entry)
        else:
            gone.append(entry)
    same = _same_content(shadow, root, present) | _same_links(shadow, root, present)
    changed = [e for e in present if e.path not in same]
    if not force:
        for entry in changed:
            report.skipped[entry.path] = ("an ignored file changed since the run started; left as it is "
                                          "(--force overwrites it, keeping a copy)")
        changed = []
    writes = gone + changed
    missing = shadow.missing_objects(e.new_sha for e in writes)
    for entry in writes:
        if entry.new_sha in missing:
            report.skipped[entry.path] = "its content is no longer in the checkpoint store"
    writes = [e for e in writes if e.new_sha not in missing]
    if not writes:
        return
    backup_dir = _backup_dir(paths) if any(e in changed for e in writes) else None
    for entry in writes:
        if backup_dir is not None and entry in changed:
            copy = backup_dir / entry.path
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / entry.path, copy, follow_symlinks=False)
            report.backed_up[entry.path] = str(copy)
    with tempfile.TemporaryDirectory(dir=shadow.dir, prefix="ignored-restore-") as scratch:
        index = Path(scratch) / "index"
        shadow.git("read-tree", tree, index=index)
        shadow.git("checkout-index", "-f", "-z", "--stdin", index=index, ok=(0, 1, 128),
                   input=b"".join(fs(e.path) + b"\0" for e in writes))
    for entry in writes:
        if os.path.lexists(root / entry.path):
            report.written.append(entry.path)
        else:
            report.failed.append(entry.path)


def _same_links(shadow: ShadowRepo, root: Path, entries: list[DiffEntry]) -> set[str]:
    """Which of these symlink entries are there as the same symlink."""
    same = set()
    for entry in entries:
        if entry.new_mode == "120000" and os.path.islink(root / entry.path):
            target = shadow.git("cat-file", "blob", entry.new_sha).stdout
            if os.fsencode(os.readlink(root / entry.path)) == target:
                same.add(entry.path)
    return same


def _real_parents(root: Path, rel: str, dirs: dict[str, bool]) -> bool:
    """Whether every parent of `rel` is a real directory: never act through a symlink."""
    prefix = ""
    for part in rel.split("/")[:-1]:
        prefix = f"{prefix}/{part}" if prefix else part
        if prefix not in dirs:
            try:
                dirs[prefix] = stat.S_ISDIR(os.lstat(root / prefix).st_mode)
            except OSError:
                dirs[prefix] = False
        if not dirs[prefix]:
            return False
    return True


def _is_file(root: Path, rel: str, dirs: dict[str, bool]) -> bool:
    """A file or symlink (not a directory) at `rel`, reached without following symlinks."""
    if not _real_parents(root, rel, dirs):
        return False
    try:
        return not stat.S_ISDIR(os.lstat(root / rel).st_mode)
    except OSError:
        return False


def _same_content(shadow: ShadowRepo, root: Path, entries: list[DiffEntry]) -> set[str]:
    """Which of these regular files already hold exactly the entry's blob and mode."""
    regular = [e for e in entries if e.new_mode in ("100644", "100755") and stat.S_ISREG(os.lstat(root / e.path).st_mode)
               and "\n" not in e.path]
    if not regular:
        return set()
    out = shadow.git("hash-object", "--stdin-paths", input=b"".join(fs(e.path) + b"\n" for e in regular)).stdout
    same = set()
    for entry, oid in zip(regular, out.decode().split(), strict=False):
        executable = bool(os.lstat(root / entry.path).st_mode & 0o100)
        if oid == entry.new_sha and executable == (entry.new_mode == "100755"):
            same.add(entry.path)
    return same


def _backup_dir(paths: RepoPaths) -> Path:
    base = paths.gitbot_dir / "restore-backup"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        candidate = base / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            continue
    raise CheckpointError(f"cannot create a backup directory under {base}")


def _ignored_under(shadow: ShadowRepo, tree: str, paths: list[str]) -> set[str]:
    """Which of `paths` the .gitignore files of `tree` (plus info/exclude, global excludes) ignore."""
    if not paths:
        return set()
    listing = shadow.git("ls-tree", "-r", "-z", tree).stdout
    rules: list[tuple[bytes, str]] = []
    for record in listing.split(b"\0"):
        meta, _, path = record.partition(b"\t")
        if path == b".gitignore" or path.endswith(b"/.gitignore"):
            _, kind, sha = meta.decode().split(" ")
            if kind == "blob":
                rules.append((path, sha))
    with tempfile.TemporaryDirectory(dir=shadow.dir, prefix="ignore-rules-") as tmp:
        # A scratch work tree holding only that step's .gitignore files.
        scratch = Path(tmp)
        if rules:
            batch = shadow.git("cat-file", "--batch", input="".join(f"{sha}\n" for _, sha in rules).encode()).stdout
            offset = 0
            for path, _sha in rules:
                header_end = batch.index(b"\n", offset)
                size = int(batch[offset:header_end].split(b" ")[2])
                content = batch[header_end + 1:header_end + 1 + size]
                offset = header_end + 1 + size + 1
                target = scratch / os.fsdecode(path)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
        # check-ignore rejects the literal-pathspec switch; "./" keeps a leading ':' from being magic.
        asked = {(b"./" + fs(p) if p.startswith(":") else fs(p)): p for p in paths}
        out = shadow.git("check-ignore", "--no-index", "-z", "--stdin", work_tree=scratch, ok=(0, 1),
                         index=scratch / "no-index", literal_pathspecs=False,
                         input=b"".join(a + b"\0" for a in asked)).stdout
    return {asked[p] for p in out.split(b"\0") if p in asked}


def _obstacle(root: Path, rel: str) -> str | None:
    """Why writing `rel` would destroy something the run never captured, or None if it is safe."""
    parts = rel.split("/")
    current = root
    for part in parts[:-1]:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return None  # checkout-index creates the rest
        if not stat.S_ISDIR(st.st_mode):
            return f"{display_path(os.path.relpath(current, root))} is in the way and no checkpoint holds it"
        if os.path.lexists(current / ".git"):
            return "it lies inside a nested git repository"
    full = root / rel
    try:
        st = os.lstat(full)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        if os.path.lexists(full / ".git"):
            return "a nested git repository is in the way"
        try:
            os.rmdir(full)  # only succeeds when empty: nothing uncaptured is lost
        except OSError:
            return "a directory holding files the run did not capture (such as ignored files) is in the way"
    return None


def _prune_empty_dirs(root: Path, removed: list[str]) -> None:
    """Remove directories left empty by removing files (as git does); never a non-empty one."""
    for rel in sorted(removed, key=lambda p: -p.count("/")):
        parent = (root / rel).parent
        while parent != root:
            try:
                os.rmdir(parent)
            except OSError:
                break
            parent = parent.parent


def _log_checkpoint(paths: RepoPaths, run_id: str, checkpoint: Checkpoint, **extra: Any) -> None:
    if not (paths.run_dir(run_id) / "trajectory.jsonl").is_file():
        return
    record = RunRecord(paths.work_tree, run_id)
    try:
        record.event("checkpoint", **checkpoint.record_fields(), reason=checkpoint.reason, **extra)
    finally:
        record.close()
