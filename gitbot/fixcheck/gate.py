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
from gitbot.textsafe import printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitbot.policy.model import Policy

GITLINK_MODE = b"160000"
# What only the user may change, in every repository (the sandbox pins the same paths read-only).
PROTECTED_DIRS = (".gitbot",)
PROTECTED_FILES = ("agents.md",)


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
    text = printable(os.fsdecode(path))
    return text.replace("\n", "\\n").replace("\t", "\\t")


def build_tree(repo: Path, base: str, paths: Iterable[bytes], env: dict[str, str]) -> str:
    """The tree of `base` with `paths` taken from the work tree as they are now (added, changed, or
    removed where they are gone), built in a temporary index: the user's index is never touched."""
    names = [p for p in dict.fromkeys(paths) if p]
    with tempfile.TemporaryDirectory(prefix="gitbot-gate-") as tmp:
        env = {**env, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git.run(["read-tree", base], cwd=repo, env=env)
        if names:
            # --stdin -z: each name is a file's name, never a pathspec, an option or a glob.
            git.run(["-c", "core.fsmonitor=false", "update-index", "--add", "--remove", "-z", "--stdin"],
                    cwd=repo, env=env, input=b"".join(name + b"\0" for name in names))
        return git.out(repo, "write-tree", env=env)


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


def closed_by(repo: Path, base: str, tree: str, *, run_changed: Iterable[bytes], policy: Policy,
              env: dict[str, str] | None = None) -> list[Stopped]:
    """Every path of the change from `base` to `tree` that may not leave, with the reason; empty when
    the whole change may be committed."""
    changed = set(run_changed)
    stopped = []
    for mode, path in tree_changes(repo, base, tree, env):
        reason = why_not(path, mode, changed, policy)
        if reason:
            stopped.append(Stopped(shown(path), reason))
    return stopped


def why_not(path: bytes, mode: bytes, run_changed: set[bytes], policy: Policy) -> str | None:
    name = os.fsdecode(path)
    parts = [part.lower() for part in name.split("/")]
    if any(part.rstrip(". ") == ".git" or part == "git~1" for part in parts):  # and its 8.3 short name
        return "a .git path is never committed"
    if parts[0] in PROTECTED_DIRS and len(parts) > 1 or name.lower() in PROTECTED_FILES:
        return "gitbot's policy and instruction files are changed only by people"
    if mode == GITLINK_MODE:
        return "a submodule or nested repository, not a file"
    if path not in run_changed:
        return "the run did not change it"
    if policy.file_rules.denies_read_by_name(name) or not policy.check_read(name).allowed:
        return "it matches files.read_deny"
    decision = policy.check_edit(name)
    if not decision.allowed:
        return "the policy does not allow editing it"
    return None


def require_open(repo: Path, base: str, tree: str, *, run_changed: Iterable[bytes], policy: Policy,
                 env: dict[str, str] | None = None) -> None:
    """GateClosed unless every change from `base` to `tree` may be committed."""
    stopped = closed_by(repo, base, tree, run_changed=run_changed, policy=policy, env=env)
    if stopped:
        raise GateClosed(stopped)
