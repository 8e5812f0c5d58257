"""The git side of fixing a check, without touching the user's index, branch or unstaged work.

- What the agent changed comes from the run's shadow checkpoints (`gitbot.checkpoints`): step 0 is
  the work tree before the agent started, the last checkpoint is the work tree when it stopped.
  `RunChanges` reads them (the changed paths, a file's content before and after, and the change as
  a binary patch built with plumbing, so no diff.* setting of the user's can change it). Nothing is
  written into the user's object store for that.
- `commit_on_new_branch`: the agent's patch applied on top of HEAD in a temporary index and written
  with commit-tree + update-ref: HEAD, the index and the work tree stay exactly as they were. The
  new commit can be checked out in a temporary `git worktree` (`temporary_worktree`) to re-run the
  check on exactly what was committed.

Every git command runs with the repository-locating variables a hook inherits (GIT_DIR,
GIT_INDEX_FILE, …) removed, so that git works on the repository at `repo` and never on the index
of a commit in progress, and with GIT_OPTIONAL_LOCKS=0 so that even `git status` does not rewrite
the index's stat cache.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gitbot.checks.runner import GIT_LOCAL_ENV
from gitbot.errors import GitError, NotAGitRepository

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
CO_AUTHOR_EMAIL = "noreply@gitbot.invalid"  # .invalid: reserved, so never someone's real address
# Interpreter caches: running a Python check rewrites them, and they are never part of a fix.
CACHE_PATTERNS = (re.compile(r"(^|/)__pycache__/"), re.compile(r"\.py[co]$"))
# Plumbing only, and every option that could change the patch set explicitly.
PATCH_ARGS = ("diff-tree", "-p", "--binary", "--full-index", "--no-renames", "--no-color", "--no-ext-diff",
              "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/")


def clean_git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCAL_ENV}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env.update(extra or {})
    return env


def git(repo: Path, *args: str, env: dict[str, str] | None = None, input: bytes | None = None,
        check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, env=clean_git_env(env), input=input, capture_output=True,
                          check=False)
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout.decode("utf-8", "replace")


def repo_root(path: Path) -> Path:
    try:
        proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path, env=clean_git_env(),
                              capture_output=True, text=True, check=False)
    except (FileNotFoundError, NotADirectoryError):
        raise NotAGitRepository(f"{path} is not a directory, or git is not installed") from None
    if proc.returncode != 0 or not proc.stdout.strip():
        raise NotAGitRepository(f"{Path(path).resolve()} is not inside a git work tree")
    return Path(proc.stdout.strip())


def git_path(repo: Path, name: str) -> Path:
    """`git rev-parse --git-path`: right for linked worktrees and a relocated common dir."""
    out = git(repo, "rev-parse", "--git-path", name).strip()
    return (repo / out) if not os.path.isabs(out) else Path(out)


OPERATIONS = (  # (path inside the git dir, what to call it, how to finish it)
    ("rebase-merge", "a rebase", "git rebase --continue or --abort"),
    ("rebase-apply", "a rebase or `git am`", "git rebase --continue / git am --continue, or --abort"),
    ("MERGE_HEAD", "a merge", "commit the merge or git merge --abort"),
    ("CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick --continue or --abort"),
    ("REVERT_HEAD", "a revert", "git revert --continue or --abort"),
)


def operation_in_progress(repo: Path) -> str | None:
    """A sentence saying which multi-step git operation is unfinished, or None."""
    for name, what, finish in OPERATIONS:
        if git_path(repo, name).exists():
            return f"the repository is in the middle of {what} (finish it first: {finish})"
    return None


def head_commit(repo: Path) -> str | None:
    out = git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).strip()
    return out or None


def is_cache_path(path: str) -> bool:
    return any(pattern.search(path) for pattern in CACHE_PATTERNS)


# ---------------------------------------------------------------- what the agent changed


class RunChanges:
    """What a run changed, from its checkpoints: step 0 (before the agent) to the last checkpoint.

    Read-only: the checkpoints live in the shadow repository at `<git-dir>/gitbot/shadow` (see
    gitbot.checkpoints), which borrows the user's objects; reading them writes nothing anywhere."""

    def __init__(self, repo: Path, run_id: str):
        from gitbot.checkpoints import list_checkpoints

        self.repo = Path(repo)
        self.run_id = run_id
        commits = [row["checkpoint"] for row in list_checkpoints(repo, run_id) if row.get("checkpoint")]
        self.first = commits[0] if commits else None
        self.last = commits[-1] if commits else None
        git_dir = git(repo, "rev-parse", "--absolute-git-dir").strip()
        self.shadow = Path(git_dir) / "gitbot" / "shadow"

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update({"GIT_DIR": str(self.shadow), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
                    "HOME": str(self.shadow), "XDG_CONFIG_HOME": str(self.shadow / "no-xdg-config"),
                    "GIT_INDEX_FILE": str(self.shadow / "no-index"), "GIT_NO_REPLACE_OBJECTS": "1",
                    "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
        proc = subprocess.run(["git", *args], cwd=self.repo, env=env, capture_output=True, check=False)
        if check and proc.returncode != 0:
            raise GitError(f"git {' '.join(args[:2])} on the run's checkpoints failed: "
                           f"{proc.stderr.decode('utf-8', 'replace').strip()}")
        return proc

    @property
    def changed(self) -> bool:
        return self.first is not None and self.last is not None and self.first != self.last

    def paths(self) -> list[str]:
        """Changed paths, interpreter caches left out."""
        if not self.changed:
            return []
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--name-only", self.first, self.last).stdout
        names = [os.fsdecode(p) for p in out.split(b"\0") if p]
        return [p for p in names if not is_cache_path(p)]

    def patch(self) -> bytes:
        """The run's change as a binary patch (full index lines, a/ b/ prefixes, no renames)."""
        if not self.changed:
            return b""
        return self._git(*PATCH_ARGS, self.first, self.last).stdout

    def file_before(self, path: str) -> bytes | None:
        return self._blob(self.first, path)

    def file_after(self, path: str) -> bytes | None:
        return self._blob(self.last, path)

    def _blob(self, commit: str | None, path: str) -> bytes | None:
        if commit is None:
            return None
        proc = self._git("cat-file", "blob", f"{commit}:{path}", check=False)
        return proc.stdout if proc.returncode == 0 else None


def added_lines(patch: bytes) -> Iterator[tuple[str, int, str]]:
    """(path, line number in the new file, text) of every added line of a unified patch."""
    path: str | None = None
    line_no = 0
    in_hunk = False
    for raw in patch.split(b"\n"):
        line = raw.decode("utf-8", "replace")
        if line.startswith("diff --git "):
            path, in_hunk = None, False
        elif not in_hunk and line.startswith("+++ "):
            target = _unquote(line[4:].rstrip("\t"))
            path = None if target == "/dev/null" else target.removeprefix("b/")
        elif line.startswith("@@ "):
            m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
            in_hunk = bool(m)
            line_no = int(m.group(1)) if m else 0
        elif in_hunk and path is not None:
            if line.startswith("+"):
                yield path, line_no, line[1:]
                line_no += 1
            elif line.startswith(" "):
                line_no += 1
            elif not line.startswith(("-", "\\")):
                in_hunk = False


def _unquote(name: str) -> str:
    """A path as git quotes it in patch headers ("b/na\\tme", octal escapes for non-ASCII bytes)."""
    if not (len(name) >= 2 and name[0] == name[-1] == '"'):
        return name
    out = bytearray()
    body = name[1:-1].encode("utf-8", "surrogateescape")
    escapes = {ord("n"): 10, ord("t"): 9, ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("r"): 13, ord("v"): 11,
               ord("\\"): 92, ord('"'): 34}
    i = 0
    while i < len(body):
        c = body[i]
        if c == 92 and i + 1 < len(body):
            nxt = body[i + 1]
            if 48 <= nxt <= 55 and i + 3 < len(body):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out.append(escapes.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return out.decode("utf-8", "surrogateescape")


# ---------------------------------------------------------------- committing the fix


@contextmanager
def temporary_index(repo: Path) -> Iterator[dict[str, str]]:
    """An env pointing git at a private index file, deleted afterwards. The user's index is never used."""
    with tempfile.TemporaryDirectory(prefix="gitbot-index-") as tmp:
        yield {"GIT_INDEX_FILE": str(Path(tmp) / "index")}


def branch_name(short_name: str, repo: Path) -> str:
    """`gitbot/fix-<short-name>`, made unique with -2, -3 … if taken."""
    slug = re.sub(r"[^a-z0-9]+", "-", short_name.lower()).strip("-")[:40].strip("-") or "check"
    base = f"gitbot/fix-{slug}"
    name, n = base, 1
    while git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}", check=False).strip():
        n += 1
        name = f"{base}-{n}"
    return name


def tree_with_patch(repo: Path, patch: bytes) -> tuple[str, str]:
    """(HEAD, the tree of HEAD with `patch` applied), built in a temporary index."""
    head = head_commit(repo)
    if head is None:
        raise GitError("the repository has no commit yet, so there is no branch to start the fix from")
    with temporary_index(repo) as env:
        git(repo, "read-tree", head, env=env)
        if patch:
            # Applying the diff (not taking the work tree whole) keeps the user's own uncommitted edits out.
            proc = subprocess.run(["git", "apply", "--cached", "--binary", "-"], cwd=repo, input=patch,
                                  env=clean_git_env(env), capture_output=True, check=False)
            if proc.returncode != 0:
                why = proc.stderr.decode("utf-8", "replace").strip()
                raise GitError("the fix does not apply on top of HEAD without your uncommitted changes "
                               f"({why}); it is left in the work tree")
        return head, git(repo, "write-tree", env=env).strip()


def write_commit(repo: Path, tree: str, parent: str, message: str) -> str:
    commit_env = {}
    if not git(repo, "config", "user.email", check=False).strip():
        # No identity configured (a fresh CI runner): commit as gitbot rather than fail after the work.
        commit_env = {"GIT_AUTHOR_NAME": "gitbot", "GIT_AUTHOR_EMAIL": CO_AUTHOR_EMAIL,
                      "GIT_COMMITTER_NAME": "gitbot", "GIT_COMMITTER_EMAIL": CO_AUTHOR_EMAIL}
    return git(repo, "commit-tree", tree, "-p", parent, "-F", "-", env=commit_env,
               input=message.encode("utf-8")).strip()


def create_branch(repo: Path, short_name: str, commit: str) -> str:
    branch = branch_name(short_name, repo)
    # An empty old value: update-ref refuses if the branch appeared meanwhile (any object format).
    git(repo, "update-ref", "-m", "gitbot fix-check --commit", f"refs/heads/{branch}", commit, "")
    return branch


@contextmanager
def temporary_worktree(repo: Path, commit: str) -> Iterator[Path]:
    """A detached `git worktree` of `commit` in a temporary directory, removed afterwards. No hooks
    run (post-checkout), and nothing of the user's branch, index or work tree is touched."""
    with tempfile.TemporaryDirectory(prefix="gitbot-verify-") as tmp:
        path = Path(tmp) / "tree"
        git(repo, "-c", "core.hooksPath=/dev/null", "worktree", "add", "--detach", "--quiet", str(path), commit)
        try:
            yield path
        finally:
            git(repo, "worktree", "remove", "--force", str(path), check=False)
            git(repo, "worktree", "prune", check=False)
