"""The commit gate: the one check every door out passes before a tree is committed or pushed.

The doors are the Action's commit (forge/work.py), a conversation's commit on a pull request
(forge/iterate.py) and `fix-check --commit` (fixcheck/commit.py). Each builds the exact tree it is
about to commit, then asks `closed_by(...)`: the tree is compared with its base (`git diff-tree -r -z
--no-renames`), and every added, changed or removed path must be

- one the run changed (its checkpoints say so: a file a check or an earlier workflow step left in
  the work tree is not the run's change),
- editable under the run's policy (edit_allow, edit_deny),
- outside read_deny (a `.env` is never committed, even if the run wrote it),
- not one gitbot protects whatever the policy says: `.git` at any depth, `.gitbot/`, `AGENTS.md`,
  and a submodule or nested repository (a gitlink is a pointer into another repository, not a file).

Anything else stops the commit whole: nothing of a tree gitbot did not mean to make leaves. What
stops it is named by its path (made safe to show), never by its content.

Paths are git's bytes throughout and reach git on stdin with -z (`update-index --stdin`), never as
pathspecs on a command line: a file named `:(glob)*`, `*`, `-rf` or with a newline is that name and
nothing more (git.py's environments also set GIT_LITERAL_PATHSPECS for every other caller).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gitbot import git
from gitbot.errors import GitError
from gitbot.fixcheck.changes import RunChanges, tree_entries
from gitbot.textsafe import one_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitbot.policy.model import Policy

GITLINK_MODE = b"160000"
# What only the user may change, in every repository (the sandbox pins the same paths read-only).
PROTECTED_DIRS = (".gitbot",)
PROTECTED_FILES = ("agents.md",)
# Code points HFS+ ignores in names, as git's is_hfs_dotgit does: `.g\u200cit` is `.git` on a Mac.
IGNORED_BEFORE = "it was there, ignored, before the run: the run's checkpoints cannot tell it from an earlier step's"
HFS_IGNORED = dict.fromkeys([0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])


@dataclass(frozen=True)
class Stopped:
    path: str  # shown, never the content: no control character, newline or undecodable byte left raw
    reason: str

    def where(self) -> str:
        return f"{self.path} ({self.reason})"


class GateClosed(GitError):
    """The tree about to be committed holds a change the run may not publish: nothing was committed."""

    def __init__(self, stopped: list[Stopped]):
        self.stopped = stopped
        listed = "; ".join(item.where() for item in stopped[:10])
        more = f"; and {len(stopped) - 10} more" if len(stopped) > 10 else ""
        super().__init__(f"nothing was committed: the change would include {listed}{more}")


def shown(path: bytes) -> str:
    """A path as text for a report or a terminal: undecodable bytes, newlines and escapes made visible."""
    return one_line(os.fsdecode(path))


def build_tree(repo: Path, base: str, paths: Iterable[bytes], changes: RunChanges, env: dict[str, str]) -> str:
    """The tree of `base` with each of `paths` as the run's checkpoints have it (first to last), built in a
    temporary index: the user's index is never touched, and the work tree is never read. What a check
    wrote after the agent stopped, or an earlier step before it started, is not the run's change.

    A path the run found different from `base` (an earlier workflow step edited it) gets only the run's
    own edit, merged three-way onto `base`'s version; GateClosed when that cannot be done cleanly."""
    names = [p for p in dict.fromkeys(paths) if p]
    before, after = changes.entries(changes.first), changes.entries(changes.last)
    at_base = tree_entries(git.run(["ls-tree", "-r", "-z", "--full-tree", base], cwd=repo, env=env).stdout)
    lines = []
    for name in names:  # `base` is a full object name: the null id has its length
        entry = _run_entry(repo, name, before.get(name), after.get(name), at_base.get(name), changes, env)
        mode, sha = entry if entry else (b"0", b"0" * len(base))  # mode 0: removed from the index
        lines.append(mode + b" " + sha + b"\t" + name + b"\0")
    with tempfile.TemporaryDirectory(prefix="gitbot-gate-") as tmp:
        env = {**env, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git.run(["read-tree", base], cwd=repo, env=env)
        if lines:
            # --index-info -z: each name is a file's name, never a pathspec, an option or a glob.
            git.run(["update-index", "-z", "--index-info"], cwd=repo, env=env, input=b"".join(lines))
        return git.out(repo, "write-tree", env=env)


Entry = tuple[bytes, bytes]  # (mode, object name)


def _run_entry(repo: Path, name: bytes, before: Entry | None, after: Entry | None, at_base: Entry | None,
               changes: RunChanges, env: dict[str, str]) -> Entry | None:
    """What `name` becomes in the commit: the run's last version when the run started from `base`'s,
    else the run's edit merged onto `base`'s version (None: removed)."""
    if before == at_base or before == after:
        return _copied(repo, after, changes, env) if before != after else at_base
    if before is None or after is None or at_base is None or not before[0] == after[0] == at_base[0] \
            or before[0] not in (b"100644", b"100755"):
        raise GateClosed([Stopped(shown(name), "an earlier step changed it before the run, and the run's own "
                                               "change cannot be told apart from it")])
    with tempfile.TemporaryDirectory(prefix="gitbot-merge-") as tmp:
        files = []
        for label, entry, where in (("ours", at_base, None), ("base", before, changes), ("theirs", after, changes)):
            path = Path(tmp) / label
            path.write_bytes(changes.blob(entry[1]) if where else git.run(["cat-file", "blob", entry[1].decode()],
                                                                           cwd=repo, env=env).stdout)
            files.append(str(path))
        merged = git.run(["merge-file", "-p", "-q", *files], cwd=repo, env=env, ok=range(256))
    if merged.returncode != 0:
        raise GateClosed([Stopped(shown(name), "an earlier step changed it before the run, and the run's own "
                                               "change does not merge cleanly onto the committed version")])
    return after[0], _stored(repo, merged.stdout, env)


def _copied(repo: Path, entry: Entry | None, changes: RunChanges, env: dict[str, str]) -> Entry | None:
    """`entry` of the shadow repository, its blob written into the user's (a gitlink has none)."""
    if entry is None or entry[0] == GITLINK_MODE:
        return entry
    return entry[0], _stored(repo, changes.blob(entry[1]), env)


def _stored(repo: Path, data: bytes, env: dict[str, str]) -> bytes:
    return git.run(["hash-object", "-w", "-t", "blob", "--no-filters", "--stdin"], cwd=repo, env=env,
                   input=data).stdout.strip()


def tree_changes(repo: Path, base: str, tree: str, env: dict[str, str] | None = None) -> list[tuple[bytes, bytes]]:
    """(new mode, path) of every path that differs between `base` and `tree` (a removed path has mode
    000000)."""
    out = git.run(["diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", base, tree], cwd=repo,
                  env=env).stdout
    fields = out.split(b"\0")
    changes = []
    # Records are ":oldmode newmode oldsha newsha status" NUL path NUL.
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if meta.startswith(b":"):
            changes.append((meta[1:].split(b" ")[1], path))
    return changes


def ignored_untracked(repo: Path) -> frozenset[bytes]:
    """The untracked files (and wholly ignored directories, as `dir/`) git ignores now: taken before the
    agent starts, what an earlier step or the check left there. The checkpoints do not hold them, so a
    run that only un-ignores one (rewrites .gitignore) would otherwise count it as the run's new file."""
    out = git.run(["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"], cwd=repo,
                  env=git.clean_env()).stdout
    return frozenset(p for p in out.split(b"\0") if p)


def was_ignored(path: bytes, ignored: frozenset[bytes]) -> bool:
    """`path`, or a directory above it, is in `ignored` (as ignored_untracked lists them)."""
    if path in ignored:
        return True
    parts = path.split(b"/")
    return any(b"/".join(parts[:i]) + b"/" in ignored for i in range(1, len(parts)))


def closed_by(repo: Path, base: str, tree: str, *, run_changed: Iterable[bytes], policy: Policy,
              env: dict[str, str] | None = None, ignored_before: frozenset[bytes] = frozenset()) -> list[Stopped]:
    """Every path of the change from `base` to `tree` that may not leave, with the reason; empty when
    the whole change may be committed. `ignored_before`: ignored_untracked() before the agent started."""
    changed = set(run_changed)
    stopped = []
    for mode, path in tree_changes(repo, base, tree, env):
        reason = IGNORED_BEFORE if mode != b"000000" and was_ignored(path, ignored_before) else None
        reason = reason or why_not(path, mode, changed, policy)
        if reason:
            stopped.append(Stopped(shown(path), reason))
    return stopped


def why_not(path: bytes, mode: bytes, run_changed: set[bytes], policy: Policy) -> str | None:
    name = os.fsdecode(path)
    parts = [part.translate(HFS_IGNORED).lower() for part in name.split("/")]
    if any(part.rstrip(". ") == ".git" or part == "git~1" for part in parts):  # and its 8.3 short name
        return "a .git path is never committed"
    if parts[0] in PROTECTED_DIRS and len(parts) > 1 or "/".join(parts) in PROTECTED_FILES:
        return "gitbot's policy and instruction files are changed only by people"
    if mode == GITLINK_MODE:
        return "a submodule or nested repository, not a file"
    if path not in run_changed:
        return "the run did not change it"
    # Also as a Mac (HFS+) checkout would name it: `.e\u200cnv` is `.env` there.
    for spelling in dict.fromkeys((name, name.translate(HFS_IGNORED))):
        if policy.file_rules.denies_read_by_name(spelling) or not policy.check_read(spelling).allowed:
            return "it matches files.read_deny"
    decision = policy.check_edit(name)
    if not decision.allowed:
        return "the policy does not allow editing it"
    return None


def require_open(repo: Path, base: str, tree: str, *, run_changed: Iterable[bytes], policy: Policy,
                 env: dict[str, str] | None = None, ignored_before: frozenset[bytes] = frozenset()) -> None:
    """GateClosed unless every change from `base` to `tree` may be committed."""
    stopped = closed_by(repo, base, tree, run_changed=run_changed, policy=policy, env=env,
                        ignored_before=ignored_before)
    if stopped:
        raise GateClosed(stopped)
