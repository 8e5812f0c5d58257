"""How one run's commands run: sandboxed, unsandboxed with a warning, or refused, decided once.

The agent's commands and the check that verifies its work both run through a `Runner` built from
the run's policy, so "verified" means "passes where the agent's commands ran": the same decision,
the same allow-listed environment (no API key, no tokens), the same mounts:

- in bubblewrap when the policy's `[sandbox] mode` allows it ("auto" with bwrap working, or
  "required"): read-only system, writable repository, read-only .git, no network unless the policy
  allows it, files that `read_deny` matches replaced by /dev/null, directories the edit rules
  protect whole mounted read-only;
- with mode "auto" and no working bwrap, or mode "off": the same environment, unsandboxed, with a
  fresh empty $HOME, and said loudly in the receipt;
- with mode "required" and no working bwrap: nothing runs (SandboxRefused).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from gitbot.errors import ConfigError
from gitbot.sandbox import bwrap, processes
from gitbot.sandbox.command import (
    BoundedOutput,
    CannotStart,
    CommandRun,
    display_command,
    run_command,
    split_command,
    startability_problem,
)
from gitbot.sandbox.env import build_env, framework_venv
from gitbot.sandbox.readdeny import SandboxRefusal, read_denied_files

if TYPE_CHECKING:
    from typing import TextIO

    from gitbot.policy import Policy

# What bwrap prints when the program cannot be executed inside the sandbox (then it exits 1).
BWRAP_EXEC_FAILED = "bwrap: execvp "


class SandboxRefused(ConfigError):
    """The policy's sandbox mode does not let this command run here (mode "required" without a working
    sandbox, or a sandbox that cannot be built safely for it)."""


class Runner:
    """The one place that decides how commands run under `policy`, and runs them."""

    def __init__(self, policy: Policy, repo: Path | str):
        self.policy = policy
        self.repo = Path(repo)
        self.network = bool(policy.network)
        self.mode = policy.sandbox_mode
        self.status = bwrap.probe() if self.mode != "off" else None
        self.sandboxed = bool(self.status and self.status.available)
        self.refusal: str | None = None
        if self.mode == "required" and not self.sandboxed:
            self.refusal = (f"commands must run in the sandbox ([sandbox] mode = \"required\"), but "
                            f"{self.status.description}. {bwrap.FIX_HINT}")

    @property
    def description(self) -> str:
        """One short line: where checks run (the verification block, the JSON's check_environment)."""
        network = "network" if self.network else "no network"
        if self.sandboxed:
            return f"bubblewrap sandbox, allow-listed environment, {network}"
        if self.refusal:
            return "not run: the sandbox is required but unavailable"
        if self.mode == "off":
            return "no sandbox ([sandbox] mode = \"off\"), allow-listed environment"
        return f"no sandbox ({self.status.description}; [sandbox] mode = \"auto\"), allow-listed environment"

    @property
    def receipt_line(self) -> str:
        """One line for the run result and receipt: how commands run, loudly when not sandboxed."""
        if self.mode == "off":
            return ("WARNING: commands run WITHOUT a sandbox ([sandbox] mode = \"off\"): they can read and write "
                    "anything the runner user can and reach the network; only the allow-listed environment "
                    "keeps secrets out")
        if self.sandboxed:
            network = "with network" if self.network else "no network"
            return (f"bubblewrap sandbox: read-only system, writable repository, read-only .git, empty $HOME and "
                    f"/run (no host sockets), files matching read_deny hidden, {network}, allow-listed environment")
        if self.refusal:
            return f"commands refused: {self.refusal}"
        return (f"WARNING: commands run WITHOUT a sandbox because {self.status.description} ([sandbox] mode = "
                f"\"auto\"): they can write outside the repository and reach the network; only the allow-listed "
                f"environment keeps secrets out. {bwrap.FIX_HINT}")

    # ------------------------------------------------------------------------------------------

    def run_shell(self, command: str, timeout: float, *, max_processes: int | None = None) -> CommandRun:
        """The agent's command line, through `bash -c` in the repository. Raises SandboxRefused, or
        OSError when it cannot start."""
        bash = shutil.which("bash", path="/usr/bin:/bin") or "/bin/bash"
        return self._run([bash, "-c", command], self.repo, timeout, display=command, echo=None,
                         output=BoundedOutput.in_chars(TOOL_HEAD_CHARS, TOOL_TAIL_CHARS), max_processes=max_processes)

    def run_check(self, cmd: list[str] | str, timeout: float | None, *, echo: TextIO | None = None,
                  cwd: Path | None = None, display: str | None = None) -> CommandRun:
        """A check (argv, or a string split like a shell would) in `cwd` (default: the repository;
        --commit verifies in a temporary worktree). Raises CannotStart when it cannot start, and
        SandboxRefused when the policy does not let it run."""
        where = Path(cwd) if cwd is not None else self.repo
        argv = split_command(cmd)
        shown = display or display_command(cmd)
        try:
            run = self._run(argv, where, timeout, display=shown, echo=echo, output=None, checking=True)
        except OSError as exc:
            raise CannotStart(f"cannot start the check command {argv[0]!r}: {exc}") from None
        if self.sandboxed and run.exit_code == 1 and run.output.strip().startswith(BWRAP_EXEC_FAILED) \
                and "\n" not in run.output.strip():
            raise CannotStart(
                f"the check command {argv[0]!r} cannot start in the sandbox ({run.output.strip()}). The sandbox "
                f"hides $HOME, /tmp and /run from commands, so a program that lives there (or a script's "
                f"interpreter: a virtualenv's python linked to pyenv or uv in your home) cannot run; use one "
                f"installed elsewhere (e.g. /usr/bin/python3), or set [sandbox] mode = \"off\" in the policy to "
                f"run checks and the agent's commands without the sandbox.")
        return run

    def _run(self, argv: list[str], where: Path, timeout: float | None, *, display: str, echo,
             output: BoundedOutput | None, max_processes: int | None = None,
             checking: bool = False) -> CommandRun:
        if self.refusal:
            raise SandboxRefused(self.refusal)
        home = None if self.sandboxed else tempfile.mkdtemp(prefix="gitbot-home-")
        try:
            env = build_env(repo=where) if self.sandboxed else build_env(home=home, repo=where)
            if checking:
                env["PATH"] = _without_framework_bin(env.get("PATH", ""))
                _check_startable(argv[0], where, env)
            if self.sandboxed:
                try:
                    hidden = read_denied_files(where, self.policy)
                except SandboxRefusal as exc:
                    raise SandboxRefused(f"command refused: {exc}") from None
                argv = bwrap.wrap(argv, where, network=self.network, env=env, hidden_files=tuple(hidden),
                                  read_only=tuple(self.policy.protected_directories(where)), status=self.status)
            with processes.ProcessLimit(max_processes or processes.MAX_PROCESSES) as limit:
                return run_command(argv, where, env=env, timeout=timeout, display=display, output=output,
                                echo=echo, limit=limit, sandboxed=self.sandboxed)
        finally:
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)


# What the model is shown of a command's output: at most this many characters from each end.
TOOL_HEAD_CHARS = 5_000
TOOL_TAIL_CHARS = 5_000


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
