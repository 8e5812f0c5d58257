"""What a run starts with that its checkpoints do not hold, made safe from the run's commands.

Checkpoints follow git's view: ignored files are not in them (a `.venv` of 50,000 files would cost
more per step than the step). But an ignored file is often what the user cannot make again: a
`config.local.py`, a data file, a filled-in settings file. So at the start of a run (step 0):

- ignored files are captured once, into a commit of their own at `refs/gitbot/<run>/ignored`, within
  a budget (IGNORED_FILES_CAP files, IGNORED_BYTES_CAP bytes, each under the checkpoint size cap; an
  ignored directory only whole, and only with at most DIRECTORY_FILES_CAP files): restoring the run
  to step 0 writes them back;
- whatever neither that commit nor step 0 holds (an ignored directory or file over a cap, a file over
  the size cap, an unreadable or special file, a nested repository or submodule) is *unrestorable*:
  the sandbox keeps it read-only for the whole run, so no command can delete, move or change it;
- except what the capture leaves out inside a *rebuildable* directory (`[sandbox] rebuildable`:
  `target/`, `node_modules/`, `.venv/`, ...): a build must write there, and what it writes is made
  again by the next build, so it stays writable and is recorded as not restored. Keeping it read-only
  would lose nothing but make `cargo build` or `npm install` fail in every run; capturing a
  50,000-file `node_modules` would cost more than the run. Only directories git ignores whole (listed
  collapsed): what git tracks or shows as untracked is the user's work, and step 0 holds it or keeps it
  read-only; and never a directory holding a git repository (its uncommitted work is the user's).
  Opt-in: `[sandbox] rebuildable` is empty by default (policy/defaults.py says why).

Files the policy's read_deny matches are never stored: they are unrestorable too (and the sandbox masks
them besides, and pins their directories, so they cannot be moved away either).
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gitbot.checkpoints.capture import READ_DENY_REASON
from gitbot.checkpoints.seeding import Background
from gitbot.checkpoints.shadow import MANIFEST_PREFIX, REF_ROOT, ShadowRepo, fs
from gitbot.git import GitCommandError

IGNORED_REF = "ignored"  # refs/gitbot/<run>/ignored: not a step (run_steps reads only numbers)
IGNORED_FILES_CAP = 5_000
IGNORED_BYTES_CAP = 100 * 1024 * 1024
DIRECTORY_FILES_CAP = 1_000
# Ignored entries, directories collapsed (`.venv/` and not its 50,000 files), read with the user's ignore rules.
NESTED_REPOSITORY_REASON = "an ignored directory holding a git repository"
LISTING_ARGS = ("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory",
                "--no-empty-directory")


@dataclass
class IgnoredCapture:
    commit: str
    captured: list[str] = field(default_factory=list)  # files the commit holds
    unrestorable: dict[str, str] = field(default_factory=dict)  # path -> why it is kept read-only instead
    rebuildable: dict[str, str] = field(default_factory=dict)  # path -> why it is writable and not restored


def ignored_ref(run_id: str) -> str:
    return f"{REF_ROOT}/{run_id}/{IGNORED_REF}"


def start_listing(shadow: ShadowRepo) -> Background | None:
    """The listing of ignored entries, started while the first checkpoint's scan runs. It reads the
    user's own index (only reads: ls-files writes no index) to tell tracked from untracked."""
    try:
        return Background(shadow, shadow.paths.user_index, LISTING_ARGS, write_index=False)
    except OSError:
        return None


def capture_ignored(shadow: ShadowRepo, index: Path, run_id: str, *, size_cap_bytes: int,
                    denied: Callable[[str], bool] | None, listing: Background | None = None,
                    rebuildable: Callable[[str, bool, set[str]], str | None] | None = None) -> IgnoredCapture:
    """Capture the ignored files of the work tree into the run's `ignored` commit, within the budget;
    name the rest unrestorable, or rebuildable where `rebuildable` (policy/rebuildable.py) places them
    in a directory a build makes again. `listing`: from `start_listing`, else listed now against `index`."""
    entries = None
    if listing is not None:
        try:
            entries = listing.output()
        except GitCommandError:
            entries = None  # e.g. a split index, whose shared part git looks for beside the shadow: list again
    if entries is None:
        entries = shadow.git(*LISTING_ARGS, index=index).stdout
    budget = _Budget(files=IGNORED_FILES_CAP, bytes=IGNORED_BYTES_CAP)
    chosen: list[str] = []
    unrestorable: dict[str, str] = {}
    root = shadow.paths.work_tree
    directories: list[str] = []
    files: list[str] = []
    for raw in entries.split(b"\0"):
        if not raw:
            continue
        rel = os.fsdecode(raw)
        if rel.endswith("/"):
            directories.append(rel.rstrip("/"))
        elif not any(rel.startswith(d + "/") for d in directories):  # else listed inside a directory listed whole
            files.append(rel)
    # The user's own ignored files get the budget first; build output only what is left of it.
    listed_directories = set(directories)
    if rebuildable is not None:
        files.sort(key=lambda rel: rebuildable(rel, False, listed_directories) is not None)
        directories.sort(key=lambda rel: rebuildable(rel, True, listed_directories) is not None)
    for rel in files:
        _judge_file(root, rel, size_cap_bytes, denied, budget, chosen, unrestorable)
    for directory in directories:
        _judge_directory(root, directory, size_cap_bytes, denied, budget, chosen, unrestorable)
    tree = _write_tree(shadow, chosen, unrestorable)
    rebuilt = _rebuildable(unrestorable, listed_directories, rebuildable)
    manifest = {"run": run_id, "captured": len(chosen), "unrestorable": unrestorable, "rebuildable": rebuilt}
    message = f"gitbot: ignored files at the start of run {run_id}\n\n{MANIFEST_PREFIX}{json.dumps(manifest, sort_keys=True)}\n"
    commit = shadow.write_commit(tree, None, message)
    shadow.set_refs({ignored_ref(run_id): commit})
    return IgnoredCapture(commit, chosen, unrestorable, rebuilt)


def read_ignored(shadow: ShadowRepo, run_id: str) -> tuple[str, dict] | None:
    """(tree, manifest) of the run's ignored capture; None for a run that has none (an older gitbot's)."""
    ref = shadow.dir / ignored_ref(run_id)
    try:
        commit = ref.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        proc = shadow.git("rev-parse", "-q", "--verify", f"{ignored_ref(run_id)}^{{commit}}", ok=(0, 1, 128))
        commit = proc.stdout.decode().strip()
        if proc.returncode != 0 or not commit:
            return None
    return shadow.read_commit(commit)


def unrestorable_at_start(shadow: ShadowRepo, run_id: str) -> dict[str, str]:
    """Paths there at the start of the run that no restore can bring back (path -> why): what step 0
    did not capture, and what the ignored capture left out (read_deny files among them)."""
    start = shadow.run_steps(run_id).get(0)
    found: dict[str, str] = {}
    if start is not None:
        _, manifest = shadow.read_commit(start)
        found.update(manifest.get("not_captured", {}))
    ignored = read_ignored(shadow, run_id)
    if ignored is not None:
        found.update(ignored[1].get("unrestorable", {}))
    return found


def rebuildable_at_start(shadow: ShadowRepo, run_id: str) -> dict[str, str]:
    """Ignored paths there at the start of the run that it left writable and does not restore (path ->
    why): what the capture could not hold inside a `[sandbox] rebuildable` directory."""
    ignored = read_ignored(shadow, run_id)
    return dict(ignored[1].get("rebuildable", {})) if ignored is not None else {}


# ---------------------------------------------------------------------------------------------


def _rebuildable(unrestorable: dict[str, str], directories: set[str],
                 rebuildable: Callable[[str, bool, set[str]], str | None] | None) -> dict[str, str]:
    """Move out of `unrestorable` what lies in a rebuildable directory git ignores whole (`directories`:
    those it listed), and return it, path -> why. Never a read_deny file (it stays masked and pinned),
    and never a directory holding a git repository: that repository's uncommitted work and untracked
    files are the user's, and nothing captured them."""
    if rebuildable is None:
        return {}
    moved: dict[str, str] = {}
    for path, why in list(unrestorable.items()):
        if why in (READ_DENY_REASON, NESTED_REPOSITORY_REASON):
            continue
        directory = rebuildable(path, path in directories, directories)
        if directory is not None:
            moved[path] = (f"{why}; in {directory}/, which [sandbox] rebuildable names: left writable for "
                           "builds, and a build makes it again")
            del unrestorable[path]
    return moved


@dataclass
class _Budget:
    files: int
    bytes: int

    def take(self, files: int, size: int) -> bool:
        if files > self.files or size > self.bytes:
            return False
        self.files -= files
        self.bytes -= size
        return True


def _why_not(root: Path, rel: str, st: os.stat_result, size_cap_bytes: int) -> str | None:
    if stat.S_ISLNK(st.st_mode):
        return None
    if not stat.S_ISREG(st.st_mode):
        return "ignored, not a regular file or symlink"
    if st.st_size > size_cap_bytes:
        return f"ignored, {st.st_size} bytes, over the {size_cap_bytes}-byte cap"
    if not os.access(root / rel, os.R_OK):
        return "ignored and not readable"
    return None


def _judge_file(root: Path, rel: str, size_cap_bytes: int, denied, budget: _Budget, chosen: list[str],
                unrestorable: dict[str, str]) -> None:
    if denied is not None and denied(rel):
        unrestorable[rel] = READ_DENY_REASON
        return
    try:
        st = os.lstat(root / rel)
    except OSError:
        return  # gone since the listing
    why = _why_not(root, rel, st, size_cap_bytes)
    if why is None and not budget.take(1, st.st_size if stat.S_ISREG(st.st_mode) else 0):
        why = f"ignored, beyond the start-of-run capture's budget ({IGNORED_FILES_CAP} files, {IGNORED_BYTES_CAP} bytes)"
    if why is None:
        chosen.append(rel)
    else:
        unrestorable[rel] = why


def _judge_directory(root: Path, directory: str, size_cap_bytes: int, denied, budget: _Budget, chosen: list[str],
                     unrestorable: dict[str, str]) -> None:
    """An ignored directory is captured whole or kept read-only whole: the walk stops at the first sign
    that it is too big, before looking at any file (so a `.venv` costs a thousand directory entries,
    not its 50,000 files)."""
    limit = min(DIRECTORY_FILES_CAP, budget.files)
    found: list[os.DirEntry] = []
    pending = [directory]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(root / current) as entries:
                listed = list(entries)
        except OSError:
            unrestorable[directory] = "an ignored directory that cannot be listed"
            return
        for entry in listed:
            if entry.name == ".git":
                unrestorable[directory] = NESTED_REPOSITORY_REASON
                return
            if entry.is_dir(follow_symlinks=False):
                pending.append(f"{current}/{entry.name}")
                continue
            found.append(entry)
            if len(found) > limit:
                unrestorable[directory] = (f"an ignored directory of more than {limit} files (the start-of-run "
                                           "capture's cap)")
                return
    files: list[str] = []
    special: dict[str, str] = {}
    total = 0
    for entry in found:
        rel = os.path.relpath(entry.path, root)
        if denied is not None and denied(rel):
            special[rel] = READ_DENY_REASON
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        why = _why_not(root, rel, st, size_cap_bytes)
        if why is not None:
            special[rel] = why
            continue
        files.append(rel)
        total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    if not budget.take(len(files), total):
        unrestorable[directory] = (f"an ignored directory of {total} bytes in {len(files)} files, over what is "
                                   "left of the start-of-run capture's budget")
        return
    chosen.extend(files)
    unrestorable.update(special)


def _write_tree(shadow: ShadowRepo, chosen: list[str], unrestorable: dict[str, str]) -> str:
    """The tree of `chosen` (hashed into the shadow's store), from a scratch index of its own."""
    with tempfile.TemporaryDirectory(dir=shadow.dir, prefix="ignored-index-") as scratch:
        index = Path(scratch) / "index"
        if chosen:
            try:
                # --remove: a file gone since the listing is simply left out.
                shadow.git("update-index", "--add", "--remove", "-z", "--stdin", index=index,
                           input=b"".join(fs(p) + b"\0" for p in chosen))
            except GitCommandError as exc:  # e.g. a file made unreadable meanwhile: keep all of them read-only
                for path in chosen:
                    unrestorable[path] = f"ignored; could not be captured ({exc.stderr.strip()[:200]})"
                chosen.clear()
        return shadow.out("write-tree", index=index)
