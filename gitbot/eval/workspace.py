"""Where an instance's code comes from and where it is worked on: a `git worktree` per use.

The source is the local checkout given with --repo, or a clone of the instance's `repo` (a path or bundle
beside the instances file, else github.com/<repo>), made once under OUTDIR/repos. A worktree is detached
at a commit in a directory of its own, with no hooks run; adding and removing it touches nothing of the
source's branches, index or work tree. Each worktree is its own repository root for gitbot: its own git
directory, so its own run lock and checkpoint store.
"""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gitbot import git
from gitbot.errors import GitError

NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
# Commits the eval makes in its own worktrees (the held-back tests applied, for --check-from-tests).
IDENTITY = {"GIT_AUTHOR_NAME": "gitbot eval", "GIT_AUTHOR_EMAIL": "eval@gitbot.invalid",
            "GIT_COMMITTER_NAME": "gitbot eval", "GIT_COMMITTER_EMAIL": "eval@gitbot.invalid",
            "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}
_clone_lock = threading.Lock()
# `git worktree add/remove/prune` of one source edit its worktrees list: one at a time per process.
_worktree_lock = threading.Lock()


class InstanceProblem(Exception):
    """This instance cannot be run as given (a missing commit, a patch that does not apply …)."""


def source_repository(repo_field: str, *, local: Path | None, beside: Path, cache: Path) -> Path:
    """The repository to make worktrees from. Raises InstanceProblem."""
    if local is not None:
        return local
    candidate = (beside / repo_field).resolve() if not Path(repo_field).is_absolute() else Path(repo_field)
    if candidate.is_dir() and (candidate / ".git").exists():
        return candidate
    if candidate.is_file() or candidate.is_dir():
        url = str(candidate)  # a bundle or a bare repository
    elif re.fullmatch(r"[\w.-]+/[\w.-]+", repo_field):
        url = f"https://github.com/{repo_field}.git"
    else:
        raise InstanceProblem(f"repo {repo_field!r} is neither a path beside the instances file nor owner/name; "
                              "pass --repo DIR")
    target = cache / (re.sub(r"[^\w.-]+", "_", repo_field).strip("_") + ".git")
    with _clone_lock:
        if not (target / "HEAD").exists():
            partial = target.with_name(target.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            try:
                git.out(cache.parent if cache.exists() else Path("/"), *NO_HOOKS, "clone", "--quiet", "--bare",
                        url, str(partial), env=git.bot_env())
            except GitError as exc:
                raise InstanceProblem(f"cannot clone {url}: {exc}") from None
            partial.rename(target)
    return target


def has_commit(source: Path, commit: str) -> bool:
    if not re.fullmatch(r"[0-9a-fA-F]{4,64}", commit):
        return False
    return git.run(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=source, ok=range(256)).returncode == 0


def resolve_commit(source: Path, commit: str) -> str:
    if not has_commit(source, commit):
        raise InstanceProblem(f"base_commit {commit} is not in {source} (fetch it, or pass --repo with a "
                              "checkout that has it)")
    return git.out(source, "rev-parse", f"{commit}^{{commit}}")


@contextmanager
def worktree(source: Path, commit: str, where: Path) -> Iterator[Path]:
    """A detached worktree of `commit` at `where` (which must not exist), removed afterwards."""
    add_worktree(source, commit, where)
    try:
        yield where
    finally:
        remove_worktree(source, where)


def add_worktree(source: Path, commit: str, where: Path) -> None:
    where.parent.mkdir(parents=True, exist_ok=True)
    with _worktree_lock:
        try:
            git.out(source, *NO_HOOKS, "worktree", "add", "--detach", "--quiet", str(where), commit)
        except GitError as exc:
            raise InstanceProblem(f"cannot check out {commit[:12]}: {exc}") from None


def remove_worktree(source: Path, where: Path) -> None:
    with _worktree_lock:
        git.run(["worktree", "remove", "--force", str(where)], cwd=source, ok=range(256))
        shutil.rmtree(where, ignore_errors=True)
        git.run(["worktree", "prune"], cwd=source, ok=range(256))


def reset_tree(tree: Path, commit: str) -> None:
    """The worktree exactly at `commit`: tracked files checked out, everything else (untracked, ignored,
    nested repositories) removed."""
    git.out(tree, *NO_HOOKS, "checkout", "--quiet", "--force", "--detach", commit)
    git.out(tree, "clean", "-ffdxq")


def apply_patch(tree: Path, patch: str, what: str) -> None:
    """`git apply` in a worktree (index untouched). Raises InstanceProblem naming `what` did not apply."""
    if not patch.strip():
        return
    data = patch if patch.endswith("\n") else patch + "\n"
    proc = git.run(["apply", "--binary", "--whitespace=nowarn", "-"], cwd=tree, input=data.encode("utf-8"),
                   ok=range(256))
    if proc.returncode != 0:
        raise InstanceProblem(f"{what} does not apply: {proc.stderr.decode('utf-8', 'replace').strip()[:500]}")


def commit_tree_state(tree: Path, message: str) -> str:
    """Commit everything in the worktree (on no branch) and check that commit out; returns it."""
    env = git.clean_env(IDENTITY)
    git.out(tree, "add", "-A", env=env)
    tree_id = git.out(tree, "write-tree", env=env)
    commit = git.out(tree, "commit-tree", tree_id, "-p", "HEAD", "-m", message, env=env)
    git.out(tree, *NO_HOOKS, "checkout", "--quiet", "--detach", commit, env=env)
    return commit


# Files a run leaves that are no part of a change.
CACHE_EXCLUDES = (":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.pyc", ":(exclude,glob)**/.pytest_cache/**")


def changes_since(tree: Path, start: str, *, leave_out: list[str] = ()) -> str:
    """The worktree's change from `start` (tracked and untracked files, .gitignore respected), as a patch
    `git apply` takes; `leave_out`: paths not to include. Read through a throwaway index: the worktree's
    own index is not touched."""
    index = git.git_dir(tree) / "gitbot-eval-index"
    # The excludes below are pathspec magic, which git.py's environments turn off unless asked.
    env = git.clean_env({"GIT_INDEX_FILE": str(index), **git.MAGIC_PATHSPECS})
    try:
        git.out(tree, "read-tree", start, env=env)
        git.out(tree, "add", "-A", "--", ".", *CACHE_EXCLUDES, env=env)
        excludes = [f":(exclude,literal){path}" for path in leave_out]
        proc = git.run(["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", start, "--", ".", *excludes],
                       cwd=tree, env=env)
        return proc.stdout.decode("utf-8", "replace")
    finally:
        index.unlink(missing_ok=True)


def patch_paths(patch: str) -> list[str]:
    """The paths a patch touches (both sides of a rename)."""
    paths: list[str] = []
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            match = re.match(r"diff --git a/(.+?) b/(.+)$", line)
            if match:
                for path in match.groups():
                    if path not in paths:
                        paths.append(path)
    return paths
