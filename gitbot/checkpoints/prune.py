"""Deleting old runs: their checkpoint refs, private indexes and run records, then the objects
only they used (`git gc --prune=now` in the shadow repository; the user's repository is never
gc'd, written or read for this).

A run is deleted when it is not among the `keep` most recently active runs and, if
`older_than_days` is given, was last active longer ago than that. Nothing is deleted while
another gitbot process holds the repository's lock (a run in progress). Restore backups
(`<git-dir>/gitbot/restore-backup/`) hold the user's own files and are never deleted here.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gitbot import git
from gitbot.checkpoints.errors import UnknownRun
from gitbot.checkpoints.history import known_runs
from gitbot.checkpoints.lock import RunLock
from gitbot.checkpoints.shadow import REF_ROOT, RepoPaths, ShadowRepo, discover, modes_file, validate_run_id

DEFAULT_KEEP = 20
# Shared parts of split private indexes that no index has read for this long are dropped (git
# itself would drop them at the next index write: splitIndex.sharedIndexExpire in the shadow).
_SHARED_INDEX_EXPIRE_SECONDS = 24 * 3600


@dataclass
class PruneReport:
    pruned: list[str] = field(default_factory=list)  # run ids, oldest first
    kept: list[str] = field(default_factory=list)
    refs_deleted: int = 0
    bytes_before: int = 0  # the shadow repository plus the run records
    bytes_after: int = 0
    dry_run: bool = False
    stale_lock: dict[str, Any] | None = None

    @property
    def bytes_freed(self) -> int:
        return max(0, self.bytes_before - self.bytes_after)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "bytes_freed": self.bytes_freed}

    def summary(self) -> str:
        if not self.pruned:
            return f"Nothing to prune: {len(self.kept)} run(s), all kept."
        verb = "Would delete" if self.dry_run else "Deleted"
        shown = ", ".join(self.pruned[:10]) + (f" and {len(self.pruned) - 10} more" if len(self.pruned) > 10 else "")
        lines = [(f"{verb} {len(self.pruned)} run(s) ({self.refs_deleted} checkpoint ref(s), their private "
                  f"indexes and run records): {shown}."),
                 f"Kept {len(self.kept)} run(s)."]
        if not self.dry_run:
            lines.append(f"Freed {_human(self.bytes_freed)} ({_human(self.bytes_before)} -> "
                         f"{_human(self.bytes_after)} in the checkpoint repository and run records).")
        return "\n".join(lines)


def prune(repo: Path | str, *, keep: int = DEFAULT_KEEP, older_than_days: float | None = None,
          dry_run: bool = False) -> PruneReport:
    if keep < 0:
        raise ValueError(f"keep must be >= 0, not {keep}")
    if older_than_days is not None and older_than_days < 0:
        raise ValueError(f"older_than_days must be >= 0, not {older_than_days}")
    paths = discover(repo)
    report = PruneReport(dry_run=dry_run)
    if not paths.gitbot_dir.is_dir():
        return report
    with RunLock(paths.work_tree, run_id=None) as lock:  # LockHeld while a run is in progress
        report.stale_lock = lock.stale
        shadow = ShadowRepo(paths, create=False)
        activity = _last_activity(paths, shadow)
        runs = sorted((r for r in known_runs(paths) if _valid(r)), key=lambda r: (activity.get(r, 0.0), r),
                      reverse=True)
        cutoff = None if older_than_days is None else time.time() - older_than_days * 86400
        doomed = [r for r in runs[keep:] if cutoff is None or activity.get(r, 0.0) < cutoff]
        report.pruned = sorted(doomed, key=lambda r: (activity.get(r, 0.0), r))
        report.kept = [r for r in runs if r not in doomed]
        refs = _refs_of(shadow, doomed)
        report.refs_deleted = len(refs)
        if dry_run or not doomed:
            return report
        report.bytes_before = _disk_usage(paths)
        if refs:
            shadow.git("update-ref", "--no-deref", "--stdin", "-z",
                       input=b"".join(b"delete %s\0\0" % ref.encode() for ref in refs))
        for run in doomed:
            for path in (shadow.dir / "indexes").glob(f"{run}*") if shadow.exists else ():
                if path.name == run or path.name.startswith(run + "."):
                    path.unlink(missing_ok=True)
            modes_file(shadow.dir, run).unlink(missing_ok=True)
            shutil.rmtree(paths.run_dir(run), ignore_errors=True)
        if shadow.exists:
            _repoint_head(shadow, report.kept)
            _drop_unused_shared_indexes(shadow)
            _gc(shadow)
        report.bytes_after = _disk_usage(paths)
    return report


def _valid(run_id: str) -> bool:
    try:
        validate_run_id(run_id)
    except UnknownRun:
        return False
    return True


def _last_activity(paths: RepoPaths, shadow: ShadowRepo) -> dict[str, float]:
    """run id -> when it last did something: its newest checkpoint, or its record's last write."""
    activity: dict[str, float] = {}
    if shadow.exists:
        out = shadow.git("for-each-ref", "--format=%(refname) %(committerdate:unix)", f"{REF_ROOT}/").stdout.decode()
        for line in out.splitlines():
            ref, _, stamp = line.rpartition(" ")
            parts = ref.split("/")
            if len(parts) >= 4 and stamp.isdigit():
                activity[parts[2]] = max(activity.get(parts[2], 0.0), float(stamp))
    base = paths.gitbot_dir / "runs"
    if base.is_dir():
        for run_dir in base.iterdir():
            for name in ("trajectory.jsonl", "result.json"):
                try:
                    mtime = (run_dir / name).stat().st_mtime
                except OSError:
                    continue
                activity[run_dir.name] = max(activity.get(run_dir.name, 0.0), mtime)
    return activity


def _refs_of(shadow: ShadowRepo, runs: list[str]) -> list[str]:
    if not runs or not shadow.exists:
        return []
    out = shadow.git("for-each-ref", "--format=%(refname)", *(f"{REF_ROOT}/{run}/" for run in runs)).stdout
    return out.decode().split()


def _repoint_head(shadow: ShadowRepo, kept: list[str]) -> None:
    """The shadow's detached HEAD must not keep a deleted run's commits alive: point it at a kept
    run's newest checkpoint, or back at the unborn branch it started on."""
    for run in kept:
        steps = shadow.run_steps(run)
        if steps:
            shadow.set_refs({"HEAD": steps[max(steps)]})
            return
    tmp = shadow.dir / f"HEAD.{os.getpid()}.tmp"
    tmp.write_text("ref: refs/heads/gitbot-shadow\n")
    os.replace(tmp, shadow.dir / "HEAD")


def _drop_unused_shared_indexes(shadow: ShadowRepo) -> None:
    indexes = shadow.dir / "indexes"
    any_index = indexes.is_dir() and any(p.is_file() and "." not in p.name for p in indexes.iterdir())
    cutoff = time.time() - _SHARED_INDEX_EXPIRE_SECONDS
    for shared in shadow.dir.glob("sharedindex.*"):
        try:
            if not any_index or shared.stat().st_mtime < cutoff:
                shared.unlink()
        except OSError:
            pass


def _gc(shadow: ShadowRepo) -> None:
    env = shadow.env()
    env.pop("GIT_WORK_TREE", None)  # the shadow alone: nothing here looks at a work tree
    # -l (implied by gc's repack) never copies the user's objects in; prune only ever deletes from
    # the shadow's own object directory, never from the alternates. Refs stay loose (see shadow.py).
    git.run(["-c", "gc.packRefs=false", "-c", "gc.writeCommitGraph=false", "gc", "--quiet", "--prune=now"],
            env=env, cwd=shadow.dir)


def _disk_usage(paths: RepoPaths) -> int:
    total = 0
    seen: set[tuple[int, int]] = set()
    for top in (paths.shadow_dir, paths.gitbot_dir / "runs"):
        for dirpath, _, filenames in os.walk(top):
            for name in filenames:
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_size
    return total


def _human(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"
