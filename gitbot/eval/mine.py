"""`gitbot eval mine`: SWE-bench instances from the user's own history.

A commit (first-parent, newest first) is a candidate when it changes code and tests (history.py). It
becomes an instance when, in a scratch worktree and through the sandbox like every check:
  1. on the commit the whole suite runs twice in a row: a test must pass both times to count as passing
     (a test whose result differs between the two is flaky and is used for nothing);
  2. on its parent with only the test changes applied the suite runs once: the tests that fail (or are
     missing) there and pass twice on the commit are FAIL_TO_PASS (SWE-bench's rule: mostly the changed
     tests, also an old test the fix repairs); the tests that pass in all three runs are
     PASS_TO_PASS; a test that passes before and fails after is left out of both.
No FAIL_TO_PASS: not an instance. The suite runs three times per candidate and never for other commits.
One worktree serves all candidates: each is checked out in it with `git checkout --force` and `git clean
-fd`, which keeps ignored files (caches, as in a developer's checkout) and is faster than a new worktree;
state a test leaks into an ignored file is exactly what the two runs on the commit catch.
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from gitbot import git
from gitbot.eval import testcmd
from gitbot.eval.history import Commit, first_parent_commits
from gitbot.eval.instances import Instance
from gitbot.eval.statement import linked_issues, problem_statement
from gitbot.eval.workspace import NO_HOOKS, InstanceProblem, apply_patch, worktree
from gitbot.sandbox.command import DEFAULT_TIMEOUT_SECONDS


def mine(repo: Path, *, max_commits: int = 50, test_cmd: str | None = None, policy_file: Path | None = None,
         say: Callable[[str], None] = lambda text: None) -> list[Instance]:
    from gitbot.policy import load_policy
    from gitbot.sandbox.runner import Runner

    repo = git.repo_root(repo)
    policy = load_policy(repo, policy_file)
    candidates = [commit for commit in first_parent_commits(repo, max_commits) if commit.is_candidate]
    say(f"{len(candidates)} candidate commit(s) change code and tests")
    instances: list[Instance] = []
    scratch = Path(tempfile.mkdtemp(prefix="gitbot-mine-"))
    try:
        with worktree(repo, candidates[0].sha if candidates else "HEAD", scratch / "tree") as tree:
            runner = Runner(policy, tree)
            for commit in candidates:
                instance, why = _validate(repo, tree, runner, commit, test_cmd)
                say(f"{commit.sha[:12]}: {'instance, ' + why if instance else 'skipped: ' + why}")
                if instance is not None:
                    instances.append(instance)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return instances


def _validate(repo: Path, tree: Path, runner, commit: Commit, test_cmd: str | None) -> tuple[Instance | None, str]:
    parent = commit.parents[0]
    test_patch = _diff(repo, parent, commit.sha, commit.test_files)
    code_patch = _diff(repo, parent, commit.sha, [p for p in commit.files if p not in commit.test_files])
    try:
        _checkout(tree, commit.sha)
        after = [_suite(runner, tree, test_cmd) for _ in range(2)]
        _checkout(tree, parent)
        apply_patch(tree, test_patch, "the test changes")
        before = _suite(runner, tree, test_cmd)
    except InstanceProblem as exc:
        return None, str(exc)
    passing_after = {t for t in after[0] if after[0][t] and after[1].get(t, False)}
    flaky = {t for t in set(after[0]) | set(after[1]) if after[0].get(t) != after[1].get(t)}
    fail_to_pass = sorted(t for t in passing_after if not before.get(t, False))
    if not fail_to_pass:
        reason = "no test fails before and passes after"
        return None, reason + (f" (flaky: {', '.join(sorted(flaky)[:3])})" if flaky else "")
    pass_to_pass = sorted(t for t in passing_after if before.get(t, False))
    message = git.out(repo, "log", "-1", "--format=%B", commit.sha)
    if len(commit.parents) > 1:
        # A merge: "Merge pull request #5 from …" says nothing of the problem; its body (a pull request's
        # title) and the messages of the commits it brought in do, and may name the issue.
        body = message.partition("\n")[2].strip()
        merged = git.out(repo, "log", "--reverse", "--format=%B", f"{parent}..{commit.sha}^2")
        message = f"{body}\n\n{merged}".strip()
    when = git.out(repo, "log", "-1", "--format=%cI", commit.sha)
    extra = {"created_at": dt.datetime.fromisoformat(when).astimezone(dt.UTC).isoformat(), "version": "",
             "environment_setup_commit": parent, "hints_text": "", "linked_issues": linked_issues(message)}
    instance = Instance(instance_id=f"{repo.name}-{commit.sha[:12]}", repo=repo.name, base_commit=parent,
                        problem_statement=problem_statement(message, code_patch, commit.code_files),
                        test_patch=test_patch, fail_to_pass=fail_to_pass, pass_to_pass=pass_to_pass,
                        patch=code_patch, test_cmd=test_cmd, extra=extra)
    return instance, f"{len(fail_to_pass)} FAIL_TO_PASS, {len(pass_to_pass)} PASS_TO_PASS"


def _diff(repo: Path, a: str, b: str, paths: list[str]) -> str:
    if not paths:
        return ""
    # git.py's environments make every pathspec a literal name.
    return git.run(["diff", "--binary", "--no-color", "--no-ext-diff", "--no-renames", a, b, "--", *paths],
                   cwd=repo).stdout.decode("utf-8", "replace")


def _checkout(tree: Path, commit: str) -> None:
    git.out(tree, *NO_HOOKS, "checkout", "--quiet", "--force", "--detach", commit)
    git.out(tree, "clean", "-fdq")


def _suite(runner, tree: Path, test_cmd: str | None) -> dict[str, bool]:
    from gitbot.sandbox.command import CannotStart
    from gitbot.sandbox.runner import SandboxRefused

    try:
        run = runner.run_check(testcmd.test_command(test_cmd, []), DEFAULT_TIMEOUT_SECONDS)
    except (CannotStart, SandboxRefused) as exc:
        raise InstanceProblem(f"the tests cannot run: {exc}") from None
    if run.timed_out:
        raise InstanceProblem(f"the test suite timed out ({run.describe()})")
    return testcmd.outcomes(run.output)
