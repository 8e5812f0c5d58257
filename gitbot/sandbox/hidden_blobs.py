"""Which blobs of a repository's object store read_deny hides: every blob that sits at a read-denied
path in any commit reachable from a ref, a reflog entry or a pseudo-ref (FETCH_HEAD, ORIG_HEAD, MERGE_HEAD
...; a stash's index and untracked-files commits included), in a tree a ref names, or in an index. A blob seen at both a denied and an allowed path is
hidden (its id is what git looks up, whatever the path). The empty blob never is: it holds nothing.

One walk finds them: `git log -c --raw` over the tips, every path it lists checked against the rules.
`-c` lists a merge's blob only where it differs from every parent (an evil merge, a conflict
resolution); any other blob a merge holds came from a parent, whose own commits are walked. The walk
is incremental: given the tips of an earlier walk, only commits they do not reach are looked at.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gitbot import git
from gitbot.errors import GitError
from gitbot.host_programs import program

EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
WALK_TIMEOUT_SECONDS = 900
# Nothing of the repository's runs while gitbot reads it (hooks, fsmonitor), and replace refs the
# user made do not stand in for the objects being looked at.
# Pseudo-refs: files beside HEAD that name commits (AUTO_MERGE a tree) which no ref or reflog may reach.
PSEUDO_REFS = ("FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD",
               "AUTO_MERGE", "BISECT_HEAD")
QUIET = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "--no-replace-objects")


class HistoryUnreadable(GitError):
    """git could not list what the history holds; nothing may be assumed about it."""


@dataclass(frozen=True)
class Tips:
    """The starting points of the history, fixed once so that the walk that finds the hidden blobs and
    the one that lists the objects to keep see the same history: every ref's value and every reflog
    entry (`commits` holds those that are commits, `trees` the trees some ref names)."""

    refs: tuple[str, ...]
    commits: tuple[str, ...]
    trees: tuple[str, ...]


def run_git(repo: str, *args: str, input: bytes | None = None, env: dict | None = None,
            timeout: float = WALK_TIMEOUT_SECONDS) -> bytes:
    try:
        done = git.run([*QUIET, "-C", repo, *args], env=env or git.clean_env(), input=input, ok=range(256),
                       timeout=timeout)
    except (OSError, GitError) as exc:
        raise HistoryUnreadable(f"git {args[0]} failed: {exc}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()[:300]
        raise HistoryUnreadable(f"git {args[0]} failed (exit {done.returncode}): {message}")
    return done.stdout


def pseudo_ref_files(common_dir: str) -> list[str]:
    """The files of the pseudo-refs, in the common git directory and each linked worktree's: what they
    name is history `git show FETCH_HEAD:.env` reads, though no ref, reflog or `--all` reaches it."""
    directories = [common_dir]
    with contextlib.suppress(OSError):
        worktrees = os.path.join(common_dir, "worktrees")
        directories += [os.path.join(worktrees, name) for name in sorted(os.listdir(worktrees))]
    return [os.path.join(directory, name) for directory in directories for name in PSEUDO_REFS]


def pseudo_ref_ids(common_dir: str) -> set[str]:
    """The object ids the pseudo-refs name (FETCH_HEAD and MERGE_HEAD: one a line, first on it)."""
    found: set[str] = set()
    for path in pseudo_ref_files(common_dir):
        try:
            with open(path, "rb") as handle:
                text = handle.read(1 << 22).decode("ascii", "replace")
        except OSError:
            continue
        for line in text.splitlines():
            word = line.split(maxsplit=1)[0] if line.strip() else ""
            if len(word) in (40, 64) and all(c in "0123456789abcdef" for c in word):
                found.add(word)
    return found


def current_tips(repo: str) -> Tips:
    refs = run_git(repo, "for-each-ref", "--format=%(objectname)").decode().split()
    head = run_git(repo, "rev-parse", "--verify", "-q", "HEAD^{object}", env=None) \
        if _has_head(repo) else b""
    common = run_git(repo, "rev-parse", "--git-common-dir").decode().strip()
    pseudo = pseudo_ref_ids(os.path.join(repo, common))
    refs = sorted(set(refs) | set(head.decode().split()) | pseudo)
    commits = set(run_git(repo, "rev-list", "--no-walk=unsorted", "--all", "--reflog").decode().split())
    trees = []
    if refs:
        request = "".join(f"{ref}^{{}}\n" for ref in refs).encode()
        peeled = run_git(repo, "cat-file", "--batch-check=%(objectname) %(objecttype)", input=request)
        lines = peeled.decode().splitlines()
        trees = [line.split()[0] for line in lines if line.endswith(" tree")]
        # A pseudo-ref's commit is walked like a ref's (an object it names that is gone is left out).
        commits |= {line.split()[0] for line in lines if line.endswith(" commit")}
    return Tips(tuple(refs), tuple(sorted(commits)), tuple(sorted(set(trees))))


def _has_head(repo: str) -> bool:
    try:
        done = git.run([*QUIET, "-C", repo, "rev-parse", "--verify", "-q", "HEAD"], env=git.clean_env(),
                       ok=range(256), timeout=30)
    except (OSError, GitError):
        return False
    return done.returncode == 0


def hidden_in_history(repo: str, denied: Callable[[str], bool], tips: Tips, seen: Iterable[str] = ()) -> set[str]:
    """The blobs at read-denied paths in the commits `tips` reach and `seen` (earlier tips) do not."""
    found: set[str] = set()
    if tips.commits:
        revisions = "".join(f"{commit}\n" for commit in tips.commits) + "".join(f"^{old}\n" for old in seen)
        # No pathspec: with one (`**/.env` cannot be narrowed to a directory) git compares every path of
        # every changed tree against it, many times slower than listing them all for the rules to judge.
        command = [program("git"), *QUIET, "-C", repo, "log", "--stdin", "--ignore-missing", "-c", "--root", "--no-renames", "--raw",
                   "--no-abbrev", "--format=", "-z"]
        _walk(command, revisions.encode(), denied, found)
    for tree in tips.trees:
        found |= _hidden_in_tree(repo, tree, denied)
    found.discard("0" * 40)
    found.discard(EMPTY_BLOB)
    return found


def _walk(command: list[str], revisions: bytes, denied: Callable[[str], bool], found: set[str]) -> None:
    """Read git's raw records as they come (-z: ":modes ids STATUS" NUL path NUL; a merge's combined
    record, "::", lists one id per parent and its own last), keeping the ids of read-denied paths."""
    verdicts: dict[bytes, bool] = {}
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=git.clean_env())
    feeder = threading.Thread(target=feed, args=(process, revisions), daemon=True)
    feeder.start()
    errors: list[bytes] = []
    drain = threading.Thread(target=lambda: errors.append(process.stderr.read()), daemon=True)
    drain.start()
    pending = b""
    record = None
    try:
        while chunk := process.stdout.read(1 << 20):
            fields = (pending + chunk).split(b"\0")
            pending = fields.pop()
            for field in fields:
                if record is None:
                    field = field.lstrip(b"\n")
                    if field.startswith(b":"):
                        record = field
                    continue
                verdict = verdicts.get(field)
                if verdict is None:
                    verdict = verdicts[field] = denied(field.decode("utf-8", "surrogateescape"))
                if verdict:
                    found.update(word.decode() for word in record.split()
                                 if len(word) in (40, 64) and not word.startswith(b":"))
                record = None
    finally:
        process.stdout.close()
        process.wait()
        feeder.join()
        drain.join()
    if process.returncode != 0:
        raise HistoryUnreadable(f"git log failed (exit {process.returncode}): "
                                f"{b''.join(errors).decode('utf-8', 'replace')[:300]}")


def feed(process: subprocess.Popen, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, OSError):
        process.stdin.write(data)
        process.stdin.close()


def _hidden_in_tree(repo: str, tree: str, denied: Callable[[str], bool]) -> set[str]:
    listing = run_git(repo, "ls-tree", "-r", "-z", "--full-tree", tree)
    return {meta.split()[2].decode() for meta, _, name in
            (entry.partition(b"\t") for entry in listing.split(b"\0") if entry)
            if meta.split()[1] == b"blob" and denied(name.decode("utf-8", "surrogateescape"))}


def index_entries(repo: str, index_files: Sequence[str]) -> list[tuple[str, str]]:
    """(blob, path) of every entry of these index files (every stage; a staged file is only here)."""
    entries = []
    for index in index_files:
        env = git.clean_env({"GIT_INDEX_FILE": index})
        listing = run_git(repo, "ls-files", "-s", "-z", env=env)
        for entry in listing.split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            parts = meta.split()
            if len(parts) == 3 and parts[0] != b"160000":
                entries.append((parts[1].decode(), name.decode("utf-8", "surrogateescape")))
    return entries

