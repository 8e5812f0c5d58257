"""How one run's commands run: sandboxed, unsandboxed with a warning, or refused, decided once.

The agent's commands and the check that verifies its work both run through a `Runner` built from
the run's policy and the user's environment, so "verified" means "passes where the agent's commands
ran": the same decision, the same allow-listed environment (no API key, no tokens), the same toolchain,
the same mounts:

- in bubblewrap when the policy's `[sandbox] mode` allows it ("auto" with bwrap working, or
  "required"): the system and the user's toolchain read-only, nothing else of the host, the
  repository writable with .git and the protected paths read-only, read_deny files masked, no network
  unless the policy allows it, never root on the host (layout.py, toolchain.py, confine.py);
- with mode "auto" and no working bwrap, or mode "off": the same environment and PATH, unsandboxed,
  with a fresh empty $HOME, in a Landlock domain without capabilities (confine.py), said loudly in
  the receipt;
- with mode "required" and no working bwrap: nothing runs (SandboxRefused).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from gitbot.errors import ConfigError
from gitbot.sandbox import bwrap, confine, diagnose, layout, processes, remembered
from gitbot.sandbox.command import (
    BoundedOutput,
    CannotStart,
    CommandRun,
    display_command,
    run_command,
    split_command,
)
from gitbot.sandbox.env import build_env, without_framework_venv
from gitbot.sandbox.planted import (
    CommandUndone,
    GitMetadataGuard,
    UndoIncomplete,
    protected_links,
    put_back_links,
)
from gitbot.sandbox.readdeny import DeniedFiles, SandboxRefusal
from gitbot.sandbox.toolchain import ToolchainView, build_view

if TYPE_CHECKING:
    from typing import TextIO

    from gitbot.policy import Policy

class SandboxRefused(ConfigError):
    """The policy's sandbox mode does not let this command run here (mode "required" without a working
    sandbox, or a sandbox that cannot be built safely for it)."""


class Runner:
    """The one place that decides how commands run under `policy`, and runs them.

    `environ`: the user's environment, whose toolchain the commands get (default: gitbot's own)."""

    def __init__(self, policy: Policy, repo: Path | str, *, environ: dict[str, str] | None = None):
        self.repo = Path(repo)
        self.network = bool(policy.network)
        self.mode = policy.sandbox_mode
        # The pre-commit framework's private venv is gitbot's, not the project's: not on the commands' PATH.
        self.user_environ = without_framework_venv(dict(os.environ if environ is None else environ))
        self.toolchain = build_view(self.user_environ, self.repo, policy.sandbox_read_only)
        # Before the probe reads what it remembered: never from where the commands can write.
        remembered.writable_by_commands(self.repo)
        # The policy as enforced: what the sandbox keeps read-only, the file tools may not edit either.
        self.policy = protected_policy(policy, self.toolchain)
        self.status = bwrap.probe() if self.mode != "off" else None
        self.sandboxed = bool(self.status and self.status.available)
        self.environ_protected = self.sandboxed or confine.environ_protection()
        if self.sandboxed:
            layout.remove_stale_placeholders(os.path.realpath(self.repo))
        # Per directory commands run in: the read-denied files there, kept up to date between commands.
        self._denied_files: dict[str, DeniedFiles] = {}
        # Per directory commands run in: what git metadata they found there, to undo what they plant.
        self._guards: dict[str, GitMetadataGuard] = {}
        self.refusal: str | None = None
        if self.mode == "required" and not self.sandboxed:
            self.refusal = (f"commands must run in the sandbox ([sandbox] mode = \"required\"), but "
                            f"{self.status.description}. {bwrap.FIX_HINT}")

    @property
    def description(self) -> str:
        """One short line: where checks run (the verification block, the JSON's check_environment)."""
        network = "network" if self.network else "no network"
        if self.sandboxed:
            return f"bubblewrap sandbox, your toolchain read-only, allow-listed environment, {network}"
        if self.refusal:
            return "not run: the sandbox is required but unavailable"
        if self.mode == "off":
            return "no sandbox ([sandbox] mode = \"off\"), allow-listed environment"
        return f"no sandbox ({self.status.description}; [sandbox] mode = \"auto\"), allow-listed environment"

    @property
    def receipt_line(self) -> str:
        """One line for the run result and receipt: how commands run, loudly when not sandboxed."""
        environ = ("" if self.environ_protected else
                   "; gitbot CANNOT keep the commands from reading its own and its parent processes' environment "
                   "here (no Landlock), so a key in the shell that started gitbot is readable")
        if self.mode == "off":
            return ("WARNING: commands run WITHOUT a sandbox ([sandbox] mode = \"off\"): they can read and write "
                    "anything the runner user can and reach the network; only the allow-listed environment "
                    f"keeps secrets out{environ}")
        if self.sandboxed:
            network = "with network" if self.network else "no network"
            shown = ", ".join(sorted({m.dest for m in self.toolchain.mounts})) or "none"
            return (f"bubblewrap sandbox: read-only system, writable repository, read-only .git, empty $HOME and "
                    f"/tmp, no other host paths; your toolchain read-only ({shown}); files matching read_deny "
                    f"hidden, {network}, allow-listed environment, an unprivileged user")
        if self.refusal:
            return f"commands refused: {self.refusal}"
        return (f"WARNING: commands run WITHOUT a sandbox because {self.status.description} ([sandbox] mode = "
                f"\"auto\"): they can write outside the repository and reach the network; only the allow-listed "
                f"environment keeps secrets out{environ}. {bwrap.FIX_HINT}")

    # ------------------------------------------------------------------------------------------

    def run_shell(self, command: str, timeout: float, *, max_processes: int | None = None) -> CommandRun:
        """The agent's command line, through `bash -c` in the repository. Raises SandboxRefused,
        CommandUndone (it planted git metadata or replaced a protected path; undone), or OSError when it
        cannot start."""
        bash = shutil.which("bash", path="/usr/bin:/bin") or "/bin/bash"
        return self._run([bash, "-c", command], self.repo, timeout, display=command, echo=None,
                         output=BoundedOutput.in_chars(TOOL_HEAD_CHARS, TOOL_TAIL_CHARS), max_processes=max_processes)

    def run_check(self, cmd: list[str] | str, timeout: float | None, *, echo: TextIO | None = None,
                  cwd: Path | None = None, display: str | None = None) -> CommandRun:
        """A check (argv, or a string split like a shell would) in `cwd` (default: the repository;
        --commit verifies in a temporary worktree). Raises CannotStart when it cannot start (not found,
        not executable, or hidden by the sandbox), and SandboxRefused when the policy does not let it run."""
        where = Path(cwd) if cwd is not None else self.repo
        argv = split_command(cmd)
        shown = display or display_command(cmd)
        try:
            run = self._run(argv, where, timeout, display=shown, echo=echo, output=None, checking=True)
        except OSError as exc:
            raise CannotStart(f"cannot start the check command {argv[0]!r}: {exc}") from None
        except CommandUndone as exc:
            # The check ran code that planted git metadata or replaced a protected path (undone): it
            # failed, and says why.
            return CommandRun(shown, 1, f"gitbot: {exc}\n", 0.0, sandboxed=self.sandboxed)
        if self.sandboxed and run.exit_code == 1 and run.output.strip().startswith(diagnose.BWRAP_EXEC_FAILED) \
                and "\n" not in run.output.strip():
            raise CannotStart(self.environment_problem(argv, run) or run.output.strip())
        return run

    def environment_problem(self, cmd: list[str] | str, run: CommandRun) -> str | None:
        """Why a failed run of a check failed for a reason the repository cannot fix, or None."""
        argv = split_command(cmd)
        return diagnose.environment_problem(argv, run.exit_code, run.output, str(self.repo), str(self.repo),
                                            self.user_environ.get("PATH", ""), self.toolchain)

    def _run(self, argv: list[str], where: Path, timeout: float | None, *, display: str, echo,
             output: BoundedOutput | None, max_processes: int | None = None,
             checking: bool = False) -> CommandRun:
        if self.refusal:
            raise SandboxRefused(self.refusal)
        view = self.toolchain if where.resolve() == self.repo.resolve() else self.toolchain.elsewhere(self.repo)
        home = None if self.sandboxed else tempfile.mkdtemp(prefix="gitbot-home-")
        placeholders: list[str] = []
        links: dict[str, str] = {}
        note = None
        real = os.path.realpath(where)
        guard = self._guards.get(real) or self._guards.setdefault(real, GitMetadataGuard(real))
        index = self._index(real)
        try:
            if self.sandboxed:
                env = build_env(repo=where, toolchain=view, home=bwrap.sandbox_home(view, os.path.realpath(where)))
            else:
                env = build_env(home=home, repo=where, toolchain=view)
            if checking:
                problem = diagnose.cannot_start(argv[0], str(where), self.user_environ.get("PATH", ""), view,
                                                os.path.realpath(where), self.sandboxed)
                if problem is not None:
                    raise CannotStart(problem)
            try:
                hidden, unreadable = index.current(), index.unreadable
            except SandboxRefusal as exc:
                if self.sandboxed:
                    raise SandboxRefused(f"command refused: {exc}") from None
            nested_git = guard.before(index)
            if self.sandboxed:
                directories = self.policy.file_rules.protected_directories()
                placeholders = layout.placeholders(os.path.realpath(where), self.protected_paths())
                links = protected_links(real, self.protected_paths())
                note = layout.record_placeholders(os.path.realpath(where), placeholders)
            with processes.ProcessLimit(max_processes or processes.MAX_PROCESSES) as limit:
                if self.sandboxed:
                    argv = bwrap.wrap(argv, where, network=self.network, env=env, hidden_files=tuple(hidden),
                                      hidden_directories=tuple(unreadable), read_only=tuple(directories),
                                      status=self.status, toolchain=view, limit=limit, nested_git=nested_git)
                else:
                    argv = confine.unsandboxed(argv, limit)
                try:
                    run = run_command(argv, where, env=env, timeout=timeout, display=display, output=output,
                                      echo=echo, limit=limit, sandboxed=self.sandboxed)
                except BaseException:
                    with contextlib.suppress(Exception):
                        put_back_links(real, links, guard.aside)
                    with contextlib.suppress(Exception):
                        guard.after(index)  # interrupted: what the command planted still goes
                    raise
        finally:
            layout.remove_placeholders(placeholders)
            layout.finished(note)
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)
        if self.sandboxed and _setup_failed(run):
            bwrap.forget_probe()  # what worked when the probe ran does not now: the next process probes again
        # Before anything else reads the work tree (the step's checkpoint, the user's git): raises
        # GitMetadataPlanted when the command made git metadata, after undoing it.
        try:
            try:
                put_back_links(real, links, guard.aside)
            finally:
                guard.after(index)
        except UndoIncomplete as exc:
            self.refusal = str(exc)  # fail closed: what could not be undone may be run by the next command too
            raise
        if run.exit_code == confine.EXIT_FAILED and run.output.startswith(confine.FAILURE_PREFIX):
            raise SandboxRefused(f"the sandbox could not be set up for this command: "
                                 f"{run.output.strip().removeprefix(confine.FAILURE_PREFIX).strip()}")
        return run


    def protected_paths(self) -> list[str]:
        """Repository paths the sandbox pins read-only for every command; where one is missing, its
        setup makes a mount point there, removed after the command (layout.py)."""
        return [*layout.ALWAYS_PROTECTED_DIRS, *self.policy.file_rules.protected_directories(),
                *layout.ALWAYS_PROTECTED_FILES]

    def denied_files(self, where: Path) -> tuple[list[str], list[str]]:
        """(the files under `where` the policy hides from commands, the directories there hidden whole
        because gitbot cannot look into them), as of now (readdeny.py)."""
        index = self._index(os.path.realpath(where))
        return index.current(), index.unreadable

    def _index(self, real: str) -> DeniedFiles:
        index = self._denied_files.get(real)
        if index is None:
            index = self._denied_files[real] = DeniedFiles(real, self.policy)
        return index


def _setup_failed(run: CommandRun) -> bool:
    """Whether bubblewrap (or the helper before it) could not set up the sandbox for this command."""
    if run.exit_code == confine.EXIT_FAILED and run.output.startswith(confine.FAILURE_PREFIX):
        return True
    return run.exit_code == 1 and run.output.startswith("bwrap: ") and \
        not run.output.startswith(diagnose.BWRAP_EXEC_FAILED)


def protected_policy(policy: Policy, view: ToolchainView) -> Policy:
    """`policy` with what gitbot always protects added to edit_deny: the policy and instruction files,
    and the toolchain directories inside the repository that stay on PATH (so nothing the agent writes
    there can shadow a program)."""
    wanted = [f"{directory}/**" for directory in layout.ALWAYS_PROTECTED_DIRS]
    wanted += list(layout.ALWAYS_PROTECTED_FILES)
    wanted += [f"{directory}/**" for directory in view.protected]
    missing = tuple(pattern for pattern in wanted if pattern not in policy.edit_deny)
    if not missing:
        return policy
    return dataclasses.replace(policy, edit_deny=(*policy.edit_deny, *missing))


# What the model is shown of a command's output: at most this many characters from each end.
TOOL_HEAD_CHARS = 5_000
TOOL_TAIL_CHARS = 5_000
