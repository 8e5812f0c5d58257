"""Seeding a run's private index, the part that runs beside its first status.

A run's index starts as a copy of the user's (snapshot.py). What that copy holds and a
checkpoint must not trust is found by one `ls-files -s -v` pass: gitlinks (recorded by
reference), assume-unchanged and skip-worktree bits (set by the user for their own reasons, or by
a sparse checkout: they would hide changes), and entries the policy denies reading (never
stored). On an 80,000-file index that pass and its matching cost a third of a `git status`, so it
runs while the first status does: both only read the seed (status writes its refreshed index by
rename, which leaves the listing's file intact), and the fixes are applied after.
"""

from __future__ import annotations

import atexit
import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gitbot import git
from gitbot.checkpoints.shadow import GITLINK_MODE, ShadowRepo
from gitbot.git import GitCommandError
from gitbot.host_programs import program

log = logging.getLogger(__name__)

LISTING_ARGS = ("ls-files", "-z", "-s", "-v")
# `ls-files -s -v` records of plain cached files and symlinks (tag H, any stage): the common case.
_ORDINARY_RECORDS = (b"H 100644 ", b"H 100755 ", b"H 120000 ")


class Background:
    """A git command against a private index, running while this process does something else; its
    output goes to files so that a full pipe never stalls it."""

    def __init__(self, shadow: ShadowRepo, index: Path, args: tuple[str, ...], *,
                 write_index: bool = True) -> None:
        self._args = list(args)
        self._outcome: bytes | GitCommandError | None = None
        self._stdout, self._stderr = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115 - closed in output() or discard()
        env = shadow.env(index)
        if not write_index:
            env["GIT_OPTIONAL_LOCKS"] = "0"  # status leaves the index as it is
        self._process = subprocess.Popen([program("git"), *self._args], env=env, cwd=shadow.paths.work_tree,
                                         stdin=subprocess.DEVNULL, stdout=self._stdout, stderr=self._stderr)

    def output(self) -> bytes:
        """Its stdout once it ends; GitCommandError when it failed. The same again on a later call: a
        refresh may have been waited for already (by `finish_writers`, when the run lock went)."""
        if self._outcome is None:
            try:
                returncode = self._process.wait()
                self._stdout.seek(0)
                self._stderr.seek(0)
                self._outcome = (GitCommandError(self._args, returncode, self._stderr.read()) if returncode
                                 else self._stdout.read())
            finally:
                self._close()
        if isinstance(self._outcome, GitCommandError):
            raise self._outcome
        return self._outcome

    def discard(self) -> None:
        self._process.kill()
        self._process.wait()
        self._close()

    def _close(self) -> None:
        _UNFINISHED.discard(self)
        self._stdout.close()
        self._stderr.close()


# Background commands that write an index: waited for when the run lock is released and when the process
# exits, so no git is left writing an index after the run (another gitbot may re-seed it then).
_UNFINISHED: set[Background] = set()


def wait_at_exit(background: Background) -> None:
    _UNFINISHED.add(background)


@atexit.register
def finish_writers() -> None:
    for background in list(_UNFINISHED):
        try:
            background.output()
        except (GitCommandError, OSError):
            pass


@dataclass
class SeedFixes:
    """What the first scan must fix in a freshly seeded index."""

    records: list[bytes]  # the `ls-files -s -v` records of the seeded index
    has_attributes: bool  # a .gitattributes file is tracked (entries may be filtered)
    gitlinks: list[tuple[bytes, str]] = field(default_factory=list)  # (path, commit)
    assume_unchanged: list[bytes] = field(default_factory=list)
    skip_worktree: list[bytes] = field(default_factory=list)
    denied: set[bytes] = field(default_factory=set)  # entries the policy denies reading


def read_seed_listing(out: bytes, denied: Callable[[str], bool] | None) -> SeedFixes:
    """The fixes an `ls-files -z -s -v` listing of the seeded index calls for."""
    records = out.split(b"\0")
    fixes = SeedFixes(records, has_attributes=b"\t.gitattributes\0" in out or b"/.gitattributes\0" in out)
    # Nearly every record is "H <mode> <sha> <stage>\t<path>" for a file or symlink: nothing to do.
    # Only the rest is parsed (this runs once per run, over every entry of a big index).
    for record in (r for r in records if r and not r.startswith(_ORDINARY_RECORDS)):
        meta, _, path = record.partition(b"\t")
        tag, mode, sha = meta[:1], meta[2:8].decode(), meta[9:].split(b" ")[0].decode()
        if mode == GITLINK_MODE:
            fixes.gitlinks.append((path, sha))
        if tag.islower():
            fixes.assume_unchanged.append(path)
        if tag in (b"S", b"s"):
            fixes.skip_worktree.append(path)
    if denied is not None:
        fixes.denied = {path for path in dict.fromkeys(r.partition(b"\t")[2] for r in records if r)
                        if denied(os.fsdecode(path))}
    return fixes


def filtered_index_info(repo: Path, fixes: SeedFixes) -> tuple[bytes, list[bytes]]:
    """`update-index --index-info` records that re-add, without stat data, the seeded entries with a
    `filter` attribute (not gitlinks, not denied ones), and their paths."""
    # `:(attr:filter)` would only match `filter` set without a value; a driver name (filter=lfs)
    # is "specified", so: everything except where the attribute is unspecified.
    proc = git.run(["-c", "core.fsmonitor=false", "ls-files", "-z", "--", ".", ":(exclude,attr:!filter)"],
                   cwd=repo, env=git.clean_env(git.MAGIC_PATHSPECS), ok=(0, 1, 128))
    if proc.returncode != 0:
        log.warning("could not list files with a filter attribute: %s", proc.stderr.decode("utf-8", "replace"))
        return b"", []
    filtered = {p for p in proc.stdout.split(b"\0") if p} - fixes.denied
    entries: dict[bytes, tuple[bytes, bytes]] = {}
    for record in fixes.records if filtered else ():
        meta, _, path = record.partition(b"\t")
        if path in filtered and meta[2:8] != GITLINK_MODE.encode():
            entries[path] = (meta[2:8], meta[9:].split(b" ")[0])
    return b"".join(b"%s %s\t%s\0" % (mode, sha, path) for path, (mode, sha) in entries.items()), list(entries)


def prune_old_indexes(directory: Path, keep: str, max_age_seconds: float = 24 * 3600) -> None:
    """Drop other runs' private indexes unused for a day: they only speed up a run in progress
    (restoring an old run re-seeds one), and on a big repository each is several MB."""
    cutoff = time.time() - max_age_seconds
    for path in directory.iterdir():
        if path.name != keep and not path.name.startswith(keep + "."):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
            except OSError:
                pass
