"""Crash notes: what created.py's undo needs, kept where the next gitbot finds it if this one dies mid-command.

The runner undoes what a command did to a protected path right after it (created.py). When gitbot itself
ends while a command runs (SIGKILL, the OOM killer, a runner cancelling the job), that undo never runs, and
what the command made (`.gitbot/policy.toml`) would be the next run's policy. So before a command the runner
writes its `Watch` into the git directory's gitbot/running/ (which no command can write in the sandbox),
one note per runner, named after the process, rewritten only when the watch changed (one JSON file, not
one per command); a runner that ends removes its note. The next Runner, and `gitbot run`, fix-check and the
Action before they load the policy, run `recover`: for each note of a process that is gone, the same undo,
said loudly (what stands at such a path now may be the user's own, made after the crash: it is kept in
the git directory's gitbot/set-aside/, nothing is lost), then the note goes.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import weakref

from gitbot.sandbox.created import Watch, undo
from gitbot.sandbox.env import under
from gitbot.sandbox.mounts import git_directories
from gitbot.sandbox.planted import SET_ASIDE, CommandUndone, UndoIncomplete

RUNNING = "running"  # in the git directory's gitbot/ store, next to set-aside/
_numbers = itertools.count()
_notes: weakref.WeakSet[CrashNote] = weakref.WeakSet()  # this process's, for `remove_all`


def _started(pid: int) -> str | None:
    """The start time of process `pid` (in clock ticks since boot), or None when there is none: with the pid
    it names a process, which a pid alone does not (pids are reused)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


class CrashNote:
    """One runner's note for commands run in `root` (a real path)."""

    def __init__(self, root: str):
        self.root = root
        git_dir = git_directories(root)[0]
        self.directory = os.path.join(git_dir, "gitbot", RUNNING) if git_dir else None
        self.path = None
        if self.directory is not None:
            self.path = os.path.join(self.directory, f"{os.getpid()}-{_started(os.getpid())}-{next(_numbers)}.json")
        self._written: str | None = None
        _notes.add(self)

    def write(self, seen: Watch) -> None:
        """Note `seen` (raises OSError when it cannot: then the command must not run)."""
        if self.path is None:
            return
        text = json.dumps({"root": self.root, "links": seen.links, "missing": seen.missing})
        if text == self._written:
            return
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        scratch = f"{self.path}.tmp"
        with open(scratch, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(scratch, self.path)
        self._written = text

    def remove(self) -> None:
        if self.path is not None and self._written is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            self._written = None


def remove_all() -> None:
    """Remove this process's notes (when it is about to die with nothing left to undo, say of a SIGHUP)."""
    for note in list(_notes):
        note.remove()


def recover(repo) -> list[str]:
    """Undo what the commands of gitbots that died mid-command in `repo` may have left at its protected paths;
    says it on stderr, and returns what it said. Raises UndoIncomplete (the note kept) when something could
    not be undone."""
    real = os.path.realpath(repo)
    git_dir = git_directories(real)[0]
    directory = os.path.join(git_dir, "gitbot", RUNNING) if git_dir else None
    try:
        names = sorted(os.listdir(directory)) if directory else []
    except OSError:
        return []
    said = []
    for name in names:
        pid, _, rest = name.partition("-")
        started = rest.partition("-")[0]
        if not name.endswith(".json") or not pid.isdigit() or (_started(int(pid)) or "gone") == started:
            continue  # (a note being written, or one of a gitbot that still runs)
        path = os.path.join(directory, name)
        seen, root = _read(path, real)
        if seen is not None:
            aside = os.path.join(git_dir, "gitbot", SET_ASIDE)
            try:
                undo(root, seen, aside)
            except UndoIncomplete:
                raise
            except CommandUndone as exc:
                said.append(
                    f"gitbot: an earlier gitbot (process {pid}) ended while a command ran in {root}; undoing "
                    f"what that command may have left: {exc} (if you made it yourself after that run ended, it "
                    f"is in {aside}: move it back)")
                print(said[-1], file=sys.stderr)
        with contextlib.suppress(OSError):
            os.unlink(path)
    return said


def _read(path: str, repo: str) -> tuple[Watch | None, str]:
    """The watch a note holds, if it is well-formed and about `repo` (or a directory inside it)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        root = os.path.realpath(data["root"])
        links = {str(k): str(v) for k, v in dict(data["links"]).items()}
        missing = [str(m) for m in data["missing"]]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None, repo
    if not under(root, repo) or any(not _relative(p) for p in [*links, *missing]):
        return None, repo
    return Watch(links=links, missing=missing), root


def _relative(path: str) -> bool:
    return bool(path) and not os.path.isabs(path) and ".." not in path.split("/")


def recover_after_crash(repo) -> None:
    """`recover`, before a run loads the policy: raises ConfigError when something could not be undone."""
    from gitbot.errors import ConfigError

    try:
        recover(repo)
    except UndoIncomplete as exc:
        raise ConfigError(str(exc)) from None
