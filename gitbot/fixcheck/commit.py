"""`fix-check --commit`: the agent's change as a commit on a new branch, verified on a checkout of it.

The patch (from the run's checkpoints) is applied on top of HEAD in a temporary index, the commit
gate (gate.py) checks the resulting tree against the run's changes and policy, and it is written
with commit-tree + update-ref: HEAD, the index and the work tree stay exactly as they were. The
commit is checked out in a temporary `git worktree` to re-run the check on exactly what was
committed; only if it passes there does the commit message say so.
"""

from __future__ import annotations

import re
import shlex
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from gitbot import git
from gitbot.errors import GitError
from gitbot.fixcheck import gate
from gitbot.fixcheck.changes import RunChanges
from gitbot.fixcheck.outcome import FixOutcome
from gitbot.fixcheck.tampering import listed

CO_AUTHOR_EMAIL = "noreply@gitbot.invalid"  # .invalid: reserved, so never someone's real address


@contextmanager
def temporary_index(repo: Path) -> Iterator[dict[str, str]]:
    """An env pointing git at a private index file, deleted afterwards. The user's index is never used."""
    with tempfile.TemporaryDirectory(prefix="gitbot-index-") as tmp:
        yield git.clean_env({"GIT_INDEX_FILE": str(Path(tmp) / "index")})


def branch_name(short_name: str, repo: Path) -> str:
    """`gitbot/fix-<short-name>`, made unique with -2, -3 … if taken."""
    slug = re.sub(r"[^a-z0-9]+", "-", short_name.lower()).strip("-")[:40].strip("-") or "check"
    base = f"gitbot/fix-{slug}"
    name, n = base, 1
    while git.out(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}", ok=range(256)):
        n += 1
        name = f"{base}-{n}"
    return name


def tree_with_patch(repo: Path, patch: bytes) -> tuple[str, str]:
    """(HEAD, the tree of HEAD with `patch` applied), built in a temporary index."""
    head = git.head_commit(repo)
    if head is None:
        raise GitError("the repository has no commit yet, so there is no branch to start the fix from")
    with temporary_index(repo) as env:
        git.out(repo, "read-tree", head, env=env)
        if patch:
            # Applying the diff (not taking the work tree whole) keeps the user's own uncommitted edits out.
            try:
                git.run(["apply", "--cached", "--binary", "-"], cwd=repo, input=patch, env=env)
            except git.GitCommandError as exc:
                raise GitError("the fix does not apply on top of HEAD without your uncommitted changes "
                               f"({exc.stderr}); it is left in the work tree") from None
        return head, git.out(repo, "write-tree", env=env)


def write_commit(repo: Path, tree: str, parent: str, message: str) -> str:
    identity = {}
    if not git.out(repo, "config", "user.email", ok=range(256)):
        # No identity configured (a fresh CI runner): commit as gitbot rather than fail after the work.
        identity = {"GIT_AUTHOR_NAME": "gitbot", "GIT_AUTHOR_EMAIL": CO_AUTHOR_EMAIL,
                    "GIT_COMMITTER_NAME": "gitbot", "GIT_COMMITTER_EMAIL": CO_AUTHOR_EMAIL}
    return git.out(repo, "commit-tree", tree, "-p", parent, "-F", "-", env=git.clean_env(identity),
                   input=message.encode("utf-8"))


def create_branch(repo: Path, short_name: str, commit: str) -> str:
    branch = branch_name(short_name, repo)
    # An empty old value: update-ref refuses if the branch appeared meanwhile (any object format).
    git.out(repo, "update-ref", "-m", "gitbot fix-check --commit", f"refs/heads/{branch}", commit, "")
    return branch


@contextmanager
def temporary_worktree(repo: Path, commit: str) -> Iterator[Path]:
    """A detached `git worktree` of `commit` in a temporary directory, removed afterwards. No hooks
    run (post-checkout), and nothing of the user's branch, index or work tree is touched."""
    with tempfile.TemporaryDirectory(prefix="gitbot-verify-") as tmp:
        path = Path(tmp) / "tree"
        git.out(repo, "-c", "core.hooksPath=/dev/null", "worktree", "add", "--detach", "--quiet", str(path), commit)
        try:
            yield path
        finally:
            git.run(["worktree", "remove", "--force", str(path)], cwd=repo, ok=range(256))
            git.run(["worktree", "prune"], cwd=repo, ok=range(256))


def commit_fix(repo: Path, fix, runner, command, timeout: float, *,
               ignored_before: frozenset[bytes] = frozenset()) -> bool:
    """Commit the agent's change on top of HEAD on a new branch, then re-run the check on a checkout of
    exactly that commit. True only when the commit was made and the check passes on it.
    `ignored_before`: gate.ignored_untracked() before the agent started (never committed)."""
    from gitbot.sandbox.command import CannotStart
    from gitbot.sandbox.runner import SandboxRefused

    extra = fix.result.extra
    extra["commit_verified"] = False
    try:
        if not fix.patch:
            raise GitError("the run's change could not be read from its checkpoints")
        head, tree = tree_with_patch(repo, fix.patch)
        # The commit gate: the applied patch must hold only what the run changed and may publish.
        gate.require_open(repo, head, tree, run_changed=RunChanges(repo, fix.result.run_id).names(),
                          policy=runner.policy, ignored_before=ignored_before)
        # First a commit object no branch points at, to check out and test; the branch gets the final one.
        trial = write_commit(repo, tree, head, commit_message(fix))
        print("gitbot: re-running the check on a checkout of the commit alone (without your uncommitted "
              "changes)", file=sys.stderr)
        with temporary_worktree(repo, trial) as checkout:
            try:
                run = runner.run_check(command, timeout, cwd=checkout)
                verified, how = run.passed, run.describe()
            except (CannotStart, SandboxRefused) as exc:
                verified, how = False, f"could not run ({exc})"
        commit = write_commit(repo, tree, head, commit_message(fix, verified=verified))
        branch = create_branch(repo, short_name(fix), commit)
    except GitError as exc:
        print(f"gitbot: could not commit the fix: {exc}", file=sys.stderr)
        extra["commit_error"] = str(exc)
        fix.message = extra["message"] = f"{fix.message}; but --commit failed: {exc}"
        return False
    extra.update({"branch": branch, "commit": commit, "commit_verified": verified,
                  "commit_check": how})
    if verified:
        print(f"gitbot: committed the fix as {commit[:12]} on new branch {branch}; the check passes on it "
              f"(your branch, index and work tree are unchanged)", file=sys.stderr)
        return True
    note = (f"the check fails on the commit alone ({how}): the fix needs changes in your work tree that "
            f"the commit does not include (uncommitted or untracked files)")
    extra["commit_message_note"] = f"committed as {commit[:12]} on {branch}, but {note}"
    extra["message"] = f"{fix.message}; but {note}"
    fix.message = extra["message"]
    print(f"gitbot: committed the fix as {commit[:12]} on new branch {branch}, but NOT VERIFIED: {note}",
          file=sys.stderr)
    return False


def commit_message(fix: FixOutcome, *, verified: bool | None = None) -> str:
    """The --commit message. `verified`: whether the check passed on the commit itself (None: not run
    yet; the message then claims nothing)."""
    model = fix.result.model if fix.result is not None else "unknown model"
    what = f" ({fix.first_failure})" if fix.first_failure else ""
    summary = (fix.result.summary or "").strip() if fix.result is not None else ""
    if verified:
        claim = "It passes on this commit: gitbot re-ran it on a checkout of exactly this commit."
    elif verified is False:
        claim = ("NOT VERIFIED: the check still fails on a checkout of this commit alone (it passed in the "
                 "work tree, which has changes this commit does not include).")
    else:
        claim = "gitbot has not yet re-run it on this commit."
    body = [f"Fix failing check: {fix.before.command}"[:72], "",
            f"`{fix.before.command}` failed{what}: {fix.before.describe()}.", claim]
    if fix.tests_modified:
        body += ["", "Note: this change edits tests or check configuration: " + ", ".join(fix.tests_modified)]
    if fix.suppressions_added:
        body += ["", "Note: this change silences the check in places: " + listed(fix.suppressions_added)]
    if summary:
        body += ["", summary[:2000]]
    if fix.result is not None:
        body += ["", f"Gitbot-Run: {fix.result.run_id}"]
    body.append(f"Co-authored-by: gitbot ({model}) <{CO_AUTHOR_EMAIL}>")
    return "\n".join(body) + "\n"


GENERIC_STEMS = {"__init__", "__main__", "index", "main", "mod", "lib", "test", "tests", "conftest"}


def short_name(fix: FixOutcome) -> str:
    """For the branch name: the module the first failure is in (`pkg/calc.py` → calc, `tests/test_calc.py`
    → calc), else the failing test's name, else the tool (`python -m pytest` → pytest)."""
    if fix.first_failure_path:
        stem = _module_stem(fix.first_failure_path)
        if stem:
            return stem
    if fix.first_failure:
        name = fix.first_failure.split("::")[-1].split(" ")[0].split("[")[0].split(".")[-1]
        name = re.sub(r"^test_?", "", name) or name
        if name and name not in GENERIC_STEMS:
            return name
    words = [w for w in shlex.split(fix.before.command) if not w.startswith("-")] \
        if fix.before.command else []
    words = [Path(w).name for w in words if not re.match(r"(python|pypy)[\d.]*$|sh$|bash$|uv$|env$",
                                                          Path(w).name)]
    return words[0] if words else "check"


def _module_stem(path: str) -> str:
    """A readable name for the module at `path`: its stem, without test_ / _test decoration; for a
    package's __init__.py, the package's name."""
    pure = PurePosixPath(path)
    parts = [p for p in (pure.parent.name, pure.name) if p]
    for candidate in reversed(parts):
        stem = candidate.split(".")[0]
        stem = re.sub(r"^test_|_tests?$|\.(test|spec)$", "", stem)
        if stem and stem not in GENERIC_STEMS and not stem.startswith("."):
            return stem
    return ""
