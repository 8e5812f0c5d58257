"""Resolution, judged by gitbot and not by the agent.

After the agent is done and its change has been read as a patch, its worktree is made the base commit again,
exactly (`git checkout --force`, `git clean -ffdx`: nothing the agent left, tracked, untracked or ignored,
survives); the patch is applied, the files the held-back test patch touches are put back as they are at the
base commit and the test patch is applied fresh from the instance, so edits the agent made to those tests
count for nothing. FAIL_TO_PASS and PASS_TO_PASS run there, through the sandbox (the tests execute code the
agent wrote); the instance is resolved only when every one of them passes. The same tree without the agent's
patch is how an instance is checked before any model call: its FAIL_TO_PASS must fail there and its
PASS_TO_PASS pass. One worktree serves the check, the agent and the judge: a worktree is the harness's
largest cost.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from gitbot import git
from gitbot.eval import testcmd
from gitbot.eval.instances import Instance
from gitbot.eval.workspace import InstanceProblem, apply_patch, patch_paths, reset_tree
from gitbot.sandbox.command import DEFAULT_TIMEOUT_SECONDS, CommandRun

OUTPUT_TAIL_CHARS = 4_000


@dataclass
class Verdict:
    resolved: bool
    why: str
    failing: list[str] = field(default_factory=list)  # FAIL_TO_PASS / PASS_TO_PASS ids that did not pass
    command: str = ""
    output_tail: str = ""

    def to_dict(self) -> dict:
        return {"resolved": self.resolved, "why": self.why, "failing": self.failing, "command": self.command,
                "output_tail": self.output_tail}


def put_back_tests(tree: Path, instance: Instance, base: str) -> None:
    """The held-back tests, fresh from the instance: the files they touch as at `base`, then the patch."""
    for path in patch_paths(instance.test_patch):
        _refuse_links_above(tree, path)
        if git.run(["cat-file", "-e", f"{base}:{path}"], cwd=tree, ok=range(256)).returncode == 0:
            git.out(tree, "checkout", base, "--", path)
        else:  # a file the test patch creates: whatever the agent put there (a file, a link, a directory) goes
            target = tree / path
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
    apply_patch(tree, instance.test_patch, "the test patch")


def _refuse_links_above(tree: Path, path: str) -> None:
    """A directory of the path replaced by a symbolic link (the agent's patch can add one) would make the
    removal below act outside the tree."""
    where = tree
    for part in Path(path).parts[:-1]:
        where = where / part
        if where.is_symlink():
            raise InstanceProblem(f"{where.relative_to(tree)} is a symbolic link: the held-back test "
                                  f"{path} cannot be put back")


def run_tests(tree: Path, instance: Instance, policy, timeout: float | None = None) -> tuple[CommandRun, dict]:
    """FAIL_TO_PASS and PASS_TO_PASS in one run, in `tree`, the way the agent's commands run."""
    from gitbot.sandbox.command import CannotStart
    from gitbot.sandbox.runner import Runner, SandboxRefused

    command = testcmd.test_command(instance.test_cmd, [*instance.fail_to_pass, *instance.pass_to_pass])
    try:
        run = Runner(policy, tree).run_check(command, timeout or DEFAULT_TIMEOUT_SECONDS)
    except (CannotStart, SandboxRefused) as exc:
        raise InstanceProblem(f"the tests cannot run: {exc}") from None
    return run, testcmd.outcomes(run.output)


def check_before(tree: Path, instance: Instance, base: str, policy) -> CommandRun:
    """The instance on its base commit with the held-back tests (see check_tests_fail), in `tree`, which is
    the base commit again afterwards. Raises InstanceProblem."""
    try:
        put_back_tests(tree, instance, base)
        return check_tests_fail(tree, instance, policy)
    finally:
        reset_tree(tree, base)


def check_tests_fail(tree: Path, instance: Instance, policy) -> CommandRun:
    """In `tree` (the held-back tests in place, no fix): FAIL_TO_PASS must fail and PASS_TO_PASS pass.
    Returns that run (a --check-from-tests task is built from it). Raises InstanceProblem."""
    run, seen = run_tests(tree, instance, policy)
    passing_already = [t for t in instance.fail_to_pass if seen.get(t, False)]
    if passing_already:
        raise InstanceProblem(f"FAIL_TO_PASS test(s) pass before any fix: {', '.join(passing_already[:5])}; "
                              "the instance shows nothing")
    broken = testcmd.failing(instance.pass_to_pass, seen)
    if broken:
        raise InstanceProblem(f"PASS_TO_PASS test(s) fail before any change ({', '.join(broken[:5])}): the "
                              f"tests do not run here as they should ({run.describe()})")
    return run


def judge(tree: Path, instance: Instance, base: str, model_patch: str, policy) -> Verdict:
    """In `tree` (the agent's worktree, its change already read): the base commit, the patch, the tests."""
    reset_tree(tree, base)
    try:
        apply_patch(tree, model_patch, "the model's patch")
        put_back_tests(tree, instance, base)
    except InstanceProblem as exc:
        return Verdict(False, str(exc))
    run, seen = run_tests(tree, instance, policy)
    failing = testcmd.failing([*instance.fail_to_pass, *instance.pass_to_pass], seen)
    tail = run.output[-OUTPUT_TAIL_CHARS:]
    if not failing:
        return Verdict(True, "all FAIL_TO_PASS and PASS_TO_PASS tests pass", [], run.command, tail)
    f2p = [t for t in failing if t in instance.fail_to_pass]
    why = (f"{len(f2p)} of {len(instance.fail_to_pass)} FAIL_TO_PASS still fail" if f2p else
           f"{len(failing)} PASS_TO_PASS broke") + f": {', '.join(failing[:3])}"
    return Verdict(False, why, failing, run.command, tail)
