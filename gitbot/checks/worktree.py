"""The git side of fixing a check, without touching the user's index, branch or unstaged work.

- `snapshot(repo)`: a tree object of the work tree as it is (tracked and untracked, not ignored),
  built in a temporary index, so "what did the agent change" is a plain `git diff` of two trees.
- `commit_on_new_branch`: the agent's changes as one commit on top of HEAD, on a new branch, built
  in a temporary index and written with commit-tree + update-ref: HEAD, the index and the work tree
  stay exactly as they were.

Every git command runs with the repository-locating variables a hook inherits (GIT_DIR,
GIT_INDEX_FILE, …) removed, so that git works on the repository at `repo` and never on the index
of a commit in progress, and with GIT_OPTIONAL_LOCKS=0 so that even `git status` does not rewrite
the index's stat cache.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Set by git for hooks; all would redirect our commands away from the repository at `repo`.
# (`git rev-parse --local-env-vars` of git 2.39)
GIT_LOCAL_ENV = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
                 "GIT_CONFIG_COUNT", "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE",
                 "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS",
                 "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE",
                 "GIT_COMMON_DIR")
# Interpreter caches: running a Python check rewrites them, and they are never part of a fix.
SNAPSHOT_EXCLUDES = (":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.py[co]")
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
CO_AUTHOR_EMAIL = "noreply@gitbot.invalid"  # .invalid: reserved, so never someone's real address


class GitError(Exception):
    pass


class NotAGitRepository(GitError):
    pass


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


def _rel_to_git_dir(repo: Path) -> Path:
    return git_path(repo, "index")


@contextmanager
def temporary_index(repo: Path, seed_from_user_index: bool = False) -> Iterator[dict[str, str]]:
    """An env pointing git at a private index file, deleted afterwards. The user's index is only read."""
    with tempfile.TemporaryDirectory(prefix="gitbot-index-") as tmp:
        index = Path(tmp) / "index"
        user_index = _rel_to_git_dir(repo)
        if seed_from_user_index and user_index.exists():
            # Its stat cache lets `git add -A` skip rehashing unchanged files; the copy is ours to change.
            shutil.copyfile(user_index, index)
        yield {"GIT_INDEX_FILE": str(index)}


def snapshot(repo: Path) -> str:
    """The id of a tree object holding the work tree as it is now (ignored files and caches excluded)."""
    with temporary_index(repo, seed_from_user_index=True) as env:
        git(repo, "add", "-A", "--", ".", *SNAPSHOT_EXCLUDES, env=env)
        return git(repo, "write-tree", env=env).strip()


def changed_paths(repo: Path, before: str, after: str) -> list[str]:
    out = git(repo, "diff", "--name-only", "--no-renames", "-z", before, after)
    return [p for p in out.split("\0") if p]


def file_at(repo: Path, tree: str, path: str) -> bytes | None:
    proc = subprocess.run(["git", "cat-file", "blob", f"{tree}:{path}"], cwd=repo, env=clean_git_env(),
                          capture_output=True, check=False)
    return proc.stdout if proc.returncode == 0 else None


def head_commit(repo: Path) -> str | None:
    out = git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).strip()
    return out or None


def branch_name(short_name: str, repo: Path) -> str:
    """`gitbot/fix-<short-name>`, made unique with -2, -3 … if taken."""
    slug = re.sub(r"[^a-z0-9]+", "-", short_name.lower()).strip("-")[:40].strip("-") or "check"
    base = f"gitbot/fix-{slug}"
    name, n = base, 1
    while git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}", check=False).strip():
        n += 1
        name = f"{base}-{n}"
    return name


def commit_on_new_branch(repo: Path, before: str, after: str, *, short_name: str,
                         message: str) -> tuple[str, str]:
    """Commit the change before→after on top of HEAD as a new branch; returns (branch, commit)."""
    head = head_commit(repo)
    if head is None:
        raise GitError("the repository has no commit yet, so there is no branch to start the fix from")
    patch = subprocess.run(["git", "diff", "--binary", "--no-renames", before, after], cwd=repo,
                           env=clean_git_env(), capture_output=True, check=True).stdout
    with temporary_index(repo) as env:
        git(repo, "read-tree", head, env=env)
        if patch:
            # Applying the diff (not taking `after` whole) keeps the user's own uncommitted edits out of it.
            proc = subprocess.run(["git", "apply", "--cached", "--binary", "-"], cwd=repo, input=patch,
                                  env=clean_git_env(env), capture_output=True, check=False)
            if proc.returncode != 0:
                why = proc.stderr.decode("utf-8", "replace").strip()
                raise GitError("the fix does not apply on top of HEAD without your uncommitted changes "
                               f"({why}); it is left in the work tree")
        tree = git(repo, "write-tree", env=env).strip()
    commit_env = {}
    if not git(repo, "config", "user.email", check=False).strip():
        # No identity configured (a fresh CI runner): commit as gitbot rather than fail after the work.
        commit_env = {"GIT_AUTHOR_NAME": "gitbot", "GIT_AUTHOR_EMAIL": CO_AUTHOR_EMAIL,
                      "GIT_COMMITTER_NAME": "gitbot", "GIT_COMMITTER_EMAIL": CO_AUTHOR_EMAIL}
    commit = git(repo, "commit-tree", tree, "-p", head, "-F", "-", env=commit_env,
                 input=message.encode("utf-8")).strip()
    branch = branch_name(short_name, repo)
    # The all-zero old value makes update-ref refuse if the branch appeared meanwhile.
    git(repo, "update-ref", "-m", "gitbot fix-check --commit", f"refs/heads/{branch}", commit, "0" * 40)
    return branch, commit
