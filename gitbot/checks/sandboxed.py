"""Run a check the way the agent's commands run: through the sandbox, per the run's policy.

`gitbot fix-check` runs its check (the first run, the confirmation re-run and the verification) and
the git hook its confirmation and verification through `CheckSandbox.run`, so the check and the
agent see the same world, and "verified" means "passes where the agent's commands ran":

- the allow-listed environment of `gitbot.sandbox.build_env` (PATH without entries inside the
  repository, /tmp or $HOME; no API key, no tokens, nothing secret-looking);
- in bubblewrap when the policy's `[sandbox] mode` allows it ("auto" with bwrap working, or
  "required"): read-only system, writable repository, read-only .git, no network unless the policy
  allows it, files that `read_deny` matches replaced by /dev/null;
- with mode "auto" and no working bwrap, or mode "off": the same environment, unsandboxed;
- with mode "required" and no working bwrap: the check is not run at all (CheckSandboxError).

Only a check that really failed costs the import of the sandbox: this module is not on the hook's
fast path.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from gitbot.checks.runner import (
    CheckCommandError,
    CheckRun,
    display_command,
    framework_venv,
    run_check,
    split_command,
    startability_problem,
)

# What bwrap prints when the program cannot be executed inside the sandbox (then it exits 1).
BWRAP_EXEC_FAILED = re.compile(r"bwrap: execvp [^\n]*")


class CheckSandboxError(CheckCommandError):
    """The check cannot be run the way the policy says commands run (e.g. the sandbox is required
    but does not work here)."""


class CheckSandbox:
    """How the checks of one run are run. `description` says it in one line (for the receipt)."""

    def __init__(self, policy, repo: Path):
        from gitbot import sandbox

        self.policy = policy
        self.repo = Path(repo)
        self.network = bool(getattr(policy, "network", False))
        self.mode = getattr(policy, "sandbox_mode", "auto")
        self.sandboxed = False
        self.refusal: str | None = None
        status = None
        if self.mode != "off":
            status = sandbox.probe()
            if status.available:
                self.sandboxed = True
            elif self.mode == "required":
                self.refusal = (f"checks run in the sandbox, like the agent's commands ([sandbox] mode = "
                                f"\"required\"), but {status.description}. {sandbox.FIX_HINT}")
        network = "network" if self.network else "no network"
        if self.sandboxed:
            self.description = f"bubblewrap sandbox, allow-listed environment, {network}"
        elif self.mode == "off":
            self.description = "no sandbox ([sandbox] mode = \"off\"), allow-listed environment"
        elif status is not None and not self.refusal:
            self.description = (f"no sandbox ({status.description}; [sandbox] mode = \"auto\"), "
                                f"allow-listed environment")
        else:
            self.description = "not run: the sandbox is required but unavailable"

    def run(self, cmd: list[str] | str, timeout: float | None, *, echo=None, repo: Path | None = None,
            display: str | None = None) -> CheckRun:
        """Run the check in `repo` (default: the run's repository; --commit verifies in a temporary
        worktree). Raises CheckCommandError when it cannot start, CheckSandboxError when the policy
        does not let it run."""
        from gitbot import sandbox

        if self.refusal:
            raise CheckSandboxError(self.refusal)
        where = Path(repo) if repo is not None else self.repo
        argv = split_command(cmd)
        home = None if self.sandboxed else tempfile.mkdtemp(prefix="gitbot-home-")
        try:
            env = sandbox.build_env(repo=where) if self.sandboxed else sandbox.build_env(home=home, repo=where)
            env["PATH"] = _without_framework_bin(env.get("PATH", ""))
            _check_startable(argv[0], where, env)
            if self.sandboxed:
                try:
                    hidden = sandbox.read_denied_files(where, self.policy)
                except sandbox.SandboxRefusal as exc:
                    raise CheckSandboxError(f"cannot run the check in the sandbox: {exc}") from None
                read_only = self.policy.protected_directories(where) \
                    if hasattr(self.policy, "protected_directories") else []
                argv = sandbox.wrap(argv, where, network=self.network, read_only=tuple(read_only), env=env,
                                    hidden_files=tuple(hidden))
            with sandbox.ProcessLimit() as limit:
                run = run_check(limit.launcher(argv), where, timeout, env=env, echo=echo,
                                display=display or display_command(cmd))
            if self.sandboxed and run.exit_code == 1 and BWRAP_EXEC_FAILED.fullmatch(run.output.strip()):
                raise CheckCommandError(
                    f"the check command {split_command(cmd)[0]!r} cannot start in the sandbox "
                    f"({run.output.strip()}). The sandbox hides $HOME, /tmp and /run from commands, so a program "
                    f"that lives there (or a script's interpreter: a virtualenv's python linked to pyenv or "
                    f"uv in your home) cannot run; use one installed elsewhere (e.g. /usr/bin/python3), or "
                    f"set [sandbox] mode = \"off\" in the policy to run checks and the agent's commands "
                    f"without the sandbox.")
            return run
        finally:
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)


def _without_framework_bin(path: str) -> str:
    venv = framework_venv()
    if venv is None:
        return path
    bin_dir = os.path.join(os.path.realpath(venv), "bin")
    return os.pathsep.join(entry for entry in path.split(os.pathsep)
                           if not (entry and os.path.realpath(entry) == bin_dir))


def _check_startable(program: str, cwd: Path, env: dict[str, str]) -> None:
    """A check that cannot start is a configuration error (exit 2, no model call), found before the
    sandbox turns it into an ordinary failing exit status."""
    path = env.get("PATH", "")
    problem = startability_problem(
        program, cwd, path,
        not_on_path_hint=(f". gitbot runs checks in the agent's environment, whose PATH leaves out directories "
                          f"inside the repository, /tmp and your home (PATH={path}); is it installed? Otherwise "
                          f"name it by its path (e.g. .venv/bin/{program})."))
    if problem is not None:
        raise problem