"""How one run's commands run: sandboxed, unsandboxed with a warning, or refused, decided once.

The agent's commands and the check that verifies its work both run through a `Runner` built from
the run's policy and the user's environment, so "verified" means "passes where the agent's commands
ran": the same decision, the same allow-listed environment (no API key, no tokens), the same toolchain,
the same mounts:

- in bubblewrap when the policy's `[sandbox] mode` allows it ("auto" with bwrap working, or
  "required"): the system and the user's toolchain read-only, nothing else of the host, the
  repository writable with .git and the protected paths read-only, read_deny files masked, no network
  unless the policy allows it, never root on the host (layout.py, toolchain.py, confine.py);
- where bubblewrap cannot start (a container without user namespaces) but Landlock and seccomp work:
  contained (contain.py): it reads only the system, the toolchain and the repository less its read_deny
  files, writes only the repository less .git and the protected paths, no network, no other process;
  a lesser sandbox, so the command judge keeps its allow-list (`sandboxed` stays False);
- with mode "auto" and neither, or mode "off": the same environment and PATH, unsandboxed,
  with a fresh empty $HOME, in a Landlock domain without capabilities (confine.py), said loudly in
  the receipt;
- with mode "required" and neither: nothing runs (SandboxRefused).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from gitbot.errors import ConfigError
from gitbot.sandbox import (
    bwrap,
    confine,
    contain,
    crashnote,
    created,
    diagnose,
    layout,
    mounts,
    processes,
    remembered,
    unmasked,
)
from gitbot.sandbox.command import (
    BoundedOutput,
    CannotStart,
    CommandRun,
    display_command,
    run_command,
    split_command,
)
from gitbot.sandbox.env import build_env, without_framework_venv
from gitbot.sandbox.filtered_store import FilteredStore, StoreNotReady, StoreView
from gitbot.sandbox.launcher import Launcher
from gitbot.sandbox.planted import CommandUndone, GitMetadataGuard, UndoIncomplete
from gitbot.sandbox.readdeny import DeniedFiles, SandboxRefusal
from gitbot.sandbox.toolchain import ToolchainView, build_view
from gitbot.sandbox.warm import WarmSandbox, waiting

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
        # Without bubblewrap, the confinement that needs no namespace (a container's usual lot).
        self.contained = self.mode != "off" and not self.sandboxed and contain.probe()[0]
        self.environ_protected = self.sandboxed or self.contained or confine.environ_protection()
        # What no checkpoint can bring back (ignored directories over the caps, large files, nested
        # repositories): read-only for every command of the run (`keep_read_only`).
        self.kept: tuple[str, ...] = ()
        # Per directory commands run in: the read-denied files there, kept up to date between commands.
        self._denied_files: dict[str, DeniedFiles] = {}
        # Per directory commands run in: what git metadata they found there, to undo what they plant.
        self._guards: dict[str, GitMetadataGuard] = {}
        # Per directory commands run in: the note that lets the next gitbot undo a command this one could not
        # (crashnote.py), removed when this runner ends.
        self._notes: dict[str, crashnote.CrashNote] = {}
        # The object store commands see, read_deny's blobs left out; prepared from now on, in the background.
        self.history = history_store(self.repo, self.policy) if self.sandboxed else None
        if self.history is not None:
            self.history.start()
            self.policy = dataclasses.replace(self.policy, history_hidden_by_sandbox=True)
        # Starts this runner's commands, one at a time (launcher.py); made for the first command.
        self._launcher: Launcher | None = None
        self._launcher_failed = False
        self._launch_lock = threading.Lock()
        # The sandbox made ready for the next command while the model thinks (warm.py): it holds
        # `_launch_lock` until a command takes it over or it is discarded. Made by `_preparing`.
        self._warm: WarmSandbox | None = None
        self._preparing: threading.Thread | None = None
        self._warm_lock = threading.Lock()
        self.refusal: str | None = None
        if self.mode == "required" and not self.sandboxed and not self.contained:
            self.refusal = (f"commands must run in the sandbox ([sandbox] mode = \"required\"), but "
                            f"{self.status.description}, and the confinement without namespaces does not work "
                            f"either ({contain.probe()[1]}). {bwrap.FIX_HINT}")
        elif self.mode == "required" and self.contained and contain.credentials_readable(self.repo):
            self.refusal = ("commands must run in the sandbox ([sandbox] mode = \"required\"); bubblewrap cannot "
                            f"start here ({self.status.description}), and under the confinement that can, commands "
                            "could read the credentials in the repository's .git/config (only bubblewrap can "
                            "hide them). Remove them from .git/config (use a credential helper).")
        try:  # what a command of a gitbot that died mid-command may have left (crashnote.py)
            crashnote.recover(self.repo)
        except UndoIncomplete as exc:
            self.refusal = str(exc)

    @property
    def description(self) -> str:
        """One short line: where checks run (the verification block, the JSON's check_environment)."""
        network = "network" if self.network else "no network"
        if self.sandboxed:
            return f"bubblewrap sandbox, your toolchain read-only, allow-listed environment, {network}"
        if self.contained and not self.refusal:
            return f"Landlock and seccomp confinement (no bubblewrap here), allow-listed environment, {network}"
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
        if self.contained:
            network = "with network" if self.network else "no network"
            config = ("; the repository's .git/config holds credentials, which commands CAN read here"
                      if contain.credentials_readable(self.repo) else "")
            return (f"confined without namespaces because {self.status.description}: Landlock (reads only the "
                    f"system, your toolchain and the repository without its read_deny files; writes only the "
                    f"repository without .git and the protected paths, and not its top-level entries) and "
                    f"seccomp ({network}, no ptrace), allow-listed environment, empty $HOME and $TMPDIR; the "
                    f"command policy's allow-list applies as without a sandbox{config}. {bwrap.FIX_HINT}")
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
                         output=BoundedOutput.in_chars(TOOL_HEAD_CHARS, TOOL_TAIL_CHARS), max_processes=max_processes,
                         shell_command=command)

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
             checking: bool = False, shell_command: str | None = None) -> CommandRun:
        if self.refusal:
            raise SandboxRefused(self.refusal)
        inner = argv
        warm = None
        real = os.path.realpath(where)
        view = self.toolchain if real == os.path.realpath(self.repo) else self.toolchain.elsewhere(self.repo)
        home = None if self.sandboxed else tempfile.mkdtemp(prefix="gitbot-home-")
        tmpdir = tempfile.mkdtemp(prefix="gitbot-tmp-") if self.contained else None
        seen = created.Watch()
        guard = self._guards.get(real) or self._guards.setdefault(real, GitMetadataGuard(real))
        index = self._index(real)
        try:
            # Before any walk: the preparation walks the same indexes. Ours now, with `_launch_lock`.
            warm = self._take_warm()
            if self.sandboxed:
                env = build_env(repo=where, toolchain=view, home=bwrap.sandbox_home(view, real))
            else:
                env = build_env(home=home, repo=where, toolchain=view)
            if tmpdir is not None:
                env.update(TMPDIR=tmpdir, TMP=tmpdir, TEMP=tmpdir)
            if checking:
                problem = diagnose.cannot_start(argv[0], str(where), self.user_environ.get("PATH", ""), view,
                                                os.path.realpath(where), self.sandboxed)
                if problem is not None:
                    raise CannotStart(problem)
            try:
                hidden, unreadable = index.current(), index.unreadable
            except SandboxRefusal as exc:
                if self.sandboxed or self.contained:
                    raise SandboxRefused(f"command refused: {exc}") from None
            nested_git = guard.before(index)
            # The way to each protected path, undone after the command where it changed (created.py).
            seen = created.watch(real, [*self.protected_paths(), *created.nested_protected(nested_git)])
            try:
                self._note(real).write(seen)
            except OSError as exc:  # without it, a gitbot that dies mid-command would leave what it made
                raise SandboxRefused(f"command refused: gitbot cannot write its crash note ({exc})") from None
            if self.sandboxed:
                store = self.store_view(where, hidden)
            in_root = shell_command is not None and self.sandboxed and real == os.path.realpath(self.repo)
            if warm is not None and not (in_root and warm.launcher.alive()):
                self._drop(warm)
                warm = None
            launcher = warm.launcher if warm is not None else self._launcher_for_command()
            with contextlib.ExitStack() as finish:
                if launcher is not None:
                    finish.callback(self._launch_lock.release)
                candidate, warm = warm, None  # the lock is released by `finish` from here on
                limit = finish.enter_context(processes.ProcessLimit(max_processes or processes.MAX_PROCESSES,
                                                                    launcher=launcher))
                if candidate is not None:
                    finish.callback(candidate.discard)  # unless it ran the command
                if self.sandboxed:
                    argv = self._wrap(argv, where, env, hidden, unreadable, view, limit, nested_git,
                                      store)
                elif self.contained:
                    argv = contain.wrap(argv, self.grants(real, view, home, tmpdir, [*hidden, *unreadable],
                                                          nested_git, created.confined(seen, nested_git)), limit)
                else:
                    argv = confine.unsandboxed(argv, limit)
                started = self._hand_over(candidate, argv, where, env, limit, shell_command)
                # The masks as bubblewrap makes them (for a warm start: as it made them, while the model thought).
                masks = (candidate.masks if started is not None else
                         unmasked.states(real, self._masked(real, hidden, unreadable)) if self.sandboxed else {})
                try:
                    run = run_command(argv, where, env=env, timeout=timeout, display=display, output=output,
                                      echo=echo, limit=limit, sandboxed=self.sandboxed, process=started)
                except BaseException:
                    with contextlib.suppress(Exception):  # the interruption is what gets reported
                        try:
                            _undo(real, seen, guard, index)  # interrupted: what it planted still goes
                        except UndoIncomplete as exc:
                            self.refusal = str(exc)  # fail closed, as below
                            raise
                    raise
        finally:
            if warm is not None:  # taken, and something failed before the command started
                self._drop(warm)
            for scratch in (home, tmpdir):
                if scratch is not None:
                    shutil.rmtree(scratch, ignore_errors=True)
        moved = unmasked.changed(real, masks)
        if moved:  # a mask may have come off while it ran: what it printed may hold what was hidden
            run.output, run.truncated = unmasked.withheld(moved), False
        if self.sandboxed and _setup_failed(run):
            bwrap.forget_probe()  # what worked when the probe ran does not now: the next process probes again
        # Before anything else reads the work tree (the step's checkpoint, the user's git, the next policy
        # load): raises CommandUndone when the command made what it must not, after undoing it.
        try:
            _undo(real, seen, guard, index)
        except UndoIncomplete as exc:
            self.refusal = str(exc)  # fail closed: what could not be undone may be run by the next command too
            raise
        if run.exit_code == confine.EXIT_FAILED and run.output.startswith(confine.FAILURE_PREFIX):
            raise SandboxRefused(f"the sandbox could not be set up for this command: "
                                 f"{run.output.strip().removeprefix(confine.FAILURE_PREFIX).strip()}")
        if in_root and launcher is not None:
            self._prepare_next(inner, max_processes)
        return run


    def _wrap(self, argv: list[str], where: Path, env: dict[str, str], hidden, unreadable,
              view: ToolchainView, limit: processes.ProcessLimit, nested_git, store) -> list[str]:
        """The sandbox's command line, for a command and a warm sandbox alike (they must match to the byte)."""
        directories = [*self.policy.file_rules.protected_directories(), *created.nested_protected(nested_git)]
        return bwrap.wrap(argv, where, network=self.network, env=env, hidden_files=tuple(hidden),
                          hidden_directories=tuple(unreadable), read_only=tuple(directories), status=self.status,
                          toolchain=view, limit=limit, nested_git=nested_git, store=store,
                          kept=self.kept if where.resolve() == self.repo.resolve() else ())

    # -- the sandbox made ready while the model thinks (warm.py) ---------------------------------

    def _hand_over(self, warm: WarmSandbox | None, argv: list[str], where: Path, env: dict[str, str],
                   limit: processes.ProcessLimit, command: str | None):
        """The warm sandbox running `command`, when it is exactly what a cold start of `argv` would be;
        None (and the warm one killed) otherwise: then it starts cold."""
        if warm is None:
            return None
        # A NUL would end the waiter's read early and run what comes before it: a cold start refuses it.
        ready = command is not None and "\0" not in command and warm.fits(argv, where, env, limit) and warm.mounted()
        started = warm.go(command) if ready else None
        if started is None:
            warm.discard()
        return started

    def _take_warm(self) -> WarmSandbox | None:
        """The warm sandbox, once its preparation is over; whoever takes it holds `_launch_lock` with it,
        and must use it or `_drop` it."""
        self._prepared()
        with self._warm_lock:
            warm, self._warm = self._warm, None
        return warm

    def _prepared(self) -> None:
        """Wait for the preparation, which walks the indexes the caller is about to (they are not shared
        between threads)."""
        with self._warm_lock:
            preparing, self._preparing = self._preparing, None
        if preparing is not None:
            preparing.join()

    def _drop(self, warm: WarmSandbox) -> None:
        try:
            warm.discard()
        finally:
            self._launch_lock.release()

    def discard_warm(self) -> None:
        """Something other than a command may change the tree (a file tool, a restore, the policy): the
        sandbox made ready for the next command goes. Not what keeps it safe (the checks before the
        hand-over are, `WarmSandbox.fits` and `mounted`), but it would only be discarded then."""
        warm = self._take_warm()
        if warm is not None:
            self._drop(warm)

    def _prepare_next(self, inner: list[str], max_processes: int | None) -> None:
        """Start making the next command's sandbox ready, in the background (the model thinks meanwhile)."""
        thread = threading.Thread(target=self._prepare, args=(waiting(inner), max_processes),
                                  name="gitbot-warm-sandbox", daemon=True)
        with self._warm_lock:
            self._preparing = thread
        thread.start()

    def _prepare(self, argv: list[str], max_processes: int | None) -> None:
        # What `_run` does for a command in the root up to its start; nothing here may touch the repository.
        # Any failure leaves no warm sandbox: the next command starts cold, and meets it there if it lasts.
        time.sleep(0)  # the GIL back to the command's thread, waiting in start() for this one (5 ms otherwise)
        if not self._launch_lock.acquire(blocking=False):
            return  # another command runs (it would share the launcher's cgroup)
        warm = None
        try:
            launcher = self._launcher
            real = os.path.realpath(self.repo)
            if launcher is None or not launcher.alive():
                return
            view = self.toolchain
            env = build_env(repo=self.repo, toolchain=view, home=bwrap.sandbox_home(view, real))
            index = self._index(real)
            hidden, unreadable = index.current(), index.unreadable
            nested_git = self._guards[real].before(index)
            store = self.store_view(self.repo, hidden)
            limit = processes.ProcessLimit(max_processes or processes.MAX_PROCESSES, launcher=launcher).__enter__()
            try:
                wrapped = self._wrap(argv, self.repo, env, hidden, unreadable, view, limit, nested_git, store)
                roots = [real, *(d for d in mounts.git_directories(real) if d)]
                masks = unmasked.states(real, self._masked(real, hidden, unreadable))
                warm = WarmSandbox.start(launcher, wrapped, self.repo, env, limit, roots, masks)
            finally:
                if warm is None:
                    limit.__exit__(None, None, None)
        except Exception:  # noqa: BLE001 - see above
            warm = None
        finally:
            if warm is None:
                self._launch_lock.release()
        with self._warm_lock:
            self._warm = warm

    @staticmethod
    def _masked(real: str, hidden: list[str], unreadable: list[str]) -> list[str]:
        """What the sandbox hides by mounting over it in `real`: the read_deny files, the directories
        hidden whole, and the git config (shown without its credentials)."""
        _git_dir, common_dir = mounts.git_directories(real)
        return [*hidden, *unreadable, *([os.path.join(common_dir, "config")] if common_dir else [])]

    def _launcher_for_command(self) -> Launcher | None:
        """The launcher, started if need be and held for one command (release `_launch_lock` after
        it); None when another command of this runner is running (they would share its cgroup) or it
        cannot start here: then the command starts with a helper of its own, as before."""
        if self._launcher_failed or not self._launch_lock.acquire(blocking=False):
            return None
        if self._launcher is not None and self._launcher.alive():
            return self._launcher
        if self._launcher is not None:
            self._launcher.close()
        launcher = Launcher()
        try:
            launcher.start()
        except OSError:  # LauncherUnavailable, or no socket to be had
            self._launcher_failed = True
            self._launch_lock.release()
            return None
        self._launcher = launcher
        weakref.finalize(self, launcher.close)
        return launcher

    def _note(self, real: str) -> crashnote.CrashNote:
        note = self._notes.get(real)
        if note is None:
            note = self._notes[real] = crashnote.CrashNote(real)
            weakref.finalize(self, note.remove)  # (also when gitbot exits: atexit)
        return note

    def close(self) -> None:
        """Stop this runner's launcher and its warm sandbox, and remove its crash notes (also done when the
        runner is collected, or gitbot exits: the launcher kills what it started when gitbot's socket closes)."""
        self.discard_warm()
        for note in self._notes.values():
            note.remove()
        if self._launcher is not None:
            self._launcher.close()
            self._launcher = None

    def grants(self, real: str, view: ToolchainView, home: str, tmpdir: str, unreadable: list[str],
               nested_git: list[str], watched: list[str] = ()) -> contain.Grants:
        """What a contained command run in `real` may read and write (contain.py): not the files
        `unreadable` names, and the git metadata, top-level and nested, and the protected paths only read."""
        git_dirs = [directory for directory in mounts.git_directories(real) if directory]
        _, targets = mounts.nested_git_arguments(real, nested_git, [real])
        return contain.grants(repo=real, home=home, tmpdir=tmpdir, toolchain=view, network=self.network,
                              unreadable=unreadable,
                              read_only=[".git", *nested_git, *targets, *self.kept, *self.protected_paths(),
                                         *watched],
                              git_dirs=git_dirs)

    def keep_read_only(self, paths) -> None:
        """From now on, commands cannot delete, move or change these repository paths (relative to it):
        what the run's checkpoints cannot restore. Many in one directory make it read-only whole. The
        file tools refuse them too, through `self.policy` (the caller's ToolContext must take it up)."""
        self.discard_warm()
        self.kept = tuple(layout.fewer_mounts(paths))
        # `dir/**/*` and not `dir/**`: the latter would make it a protected directory, which no command may
        # create when missing (created.py); these are read-only while they exist, and nothing to keep once gone.
        wanted = [pattern for path in self.kept for pattern in (_literal_glob(path), f"{_literal_glob(path)}/**/*")]
        missing = tuple(pattern for pattern in wanted if pattern not in self.policy.edit_deny)
        if missing:
            self.policy = dataclasses.replace(self.policy, edit_deny=(*self.policy.edit_deny, *missing))

    def protected_paths(self) -> list[str]:
        """Repository paths the sandbox pins read-only for every command; where one is missing, what a
        command makes there is set aside after it (created.py)."""
        return [*layout.ALWAYS_PROTECTED_DIRS, *self.policy.file_rules.protected_directories(),
                *layout.ALWAYS_PROTECTED_FILES]

    def store_view(self, where: Path | None = None, hidden: list[str] = ()) -> StoreView | None:
        """The filtered object store for a command in `where` whose `hidden` files read as empty (None:
        nothing is hidden, the real store is shown); raises SandboxRefused while it is not ready after a
        bounded wait."""
        if self.history is None:
            return None
        try:
            view = self.history.view()
        except StoreNotReady as exc:
            raise SandboxRefused(f"command refused: {exc}") from None
        real = os.path.realpath(where if where is not None else self.repo)
        if view is None or not hidden or real != os.path.realpath(self.repo):
            return view
        git_dir, _common = mounts.git_directories(real)
        copy = self.history.masked_index(git_dir, hidden) if git_dir else None
        return dataclasses.replace(view, index=(copy, os.path.join(git_dir, "index"))) if copy else view

    def denied_files(self, where: Path) -> tuple[list[str], list[str]]:
        """(the files under `where` the policy hides from commands, the directories there hidden whole
        because gitbot cannot look into them), as of now (readdeny.py)."""
        self._prepared()
        index = self._index(os.path.realpath(where))
        return index.current(), index.unreadable

    def _index(self, real: str) -> DeniedFiles:
        index = self._denied_files.get(real)
        if index is None:
            index = self._denied_files[real] = DeniedFiles(real, self.policy)
        return index


def history_store(repo: Path, policy: Policy) -> FilteredStore | None:
    """The filtered object store for commands in `repo`, or None when read_deny is empty or the
    repository has no git directory of its own to keep it in."""
    if not policy.read_deny:
        return None
    real = os.path.realpath(repo)
    _git_dir, common_dir = mounts.git_directories(real)
    if common_dir is None or not os.path.isdir(os.path.join(common_dir, "objects")):
        return None
    return FilteredStore(real, common_dir, tuple(policy.read_deny), policy.file_rules.denies_read_by_name)


def _undo(real: str, seen: created.Watch, guard: GitMetadataGuard, index: DeniedFiles) -> None:
    """Undo what a command must not have left: a change on the way to a protected path (created.py), git
    metadata or a denied-name link planted. Each is undone whatever the others raised; then the command fails
    with all they said. Anything but CommandUndone from one (an OSError, a bug) is UndoIncomplete: what it
    did not undo may be in the tree, so the run stops (fail closed)."""
    found: list[CommandUndone] = []
    # (The git metadata first: a nested repository's directory swapped for a symlink is its to refuse, before
    # created.py sets the symlink aside.)
    for step in (lambda: guard.after(index), lambda: created.undo(real, seen, guard.aside)):
        try:
            step()
        except CommandUndone as exc:
            found.append(exc)
        except Exception as exc:  # noqa: BLE001 - reported, and closes the run
            found.append(UndoIncomplete(f"gitbot could NOT check or undo all a command left in {real} "
                                        f"({type(exc).__name__}: {exc}); it runs no further command in this run"))
    if found:
        first = next((exc for exc in found if isinstance(exc, UndoIncomplete)), found[0])
        raise type(first)(" ".join(str(exc) for exc in [first, *(exc for exc in found if exc is not first)]))


def _setup_failed(run: CommandRun) -> bool:
    """Whether bubblewrap (or the helper before it) could not set up the sandbox for this command."""
    if run.exit_code == confine.EXIT_FAILED and run.output.startswith(confine.FAILURE_PREFIX):
        return True
    return run.exit_code == 1 and run.output.startswith("bwrap: ") and \
        not run.output.startswith(diagnose.BWRAP_EXEC_FAILED)


def _literal_glob(path: str) -> str:
    """A policy glob that matches exactly `path`: its wildcard characters as one-character classes."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


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
