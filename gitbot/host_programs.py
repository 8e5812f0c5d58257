"""The programs gitbot itself starts on the host (git above all, find), and the PATH they run with.

A PATH entry a sandboxed command can write would let it put a program there that gitbot then runs on
the host, unsandboxed, as the user: the repository's `node_modules/.bin` before `npm install` made it, or
a relative entry (relative to wherever gitbot runs git: the repository). So gitbot's own programs come
from `host_path()`: absolute entries only, and none inside any git work tree (the repository, wherever it
lies; the only place a sandboxed command can write that outlives it); each program is looked up there
once and kept as an absolute path, so a `git` made later in a PATH directory is never the one that runs.
(Unlike bwrap's lookup, sandbox/env.clean_path, entries in $HOME stay: a git installed only there, by
nix or in ~/.local/bin, is the user's own, and no sandboxed command can write there.) The same
PATH goes into the environment of every host-side git, which runs helpers (`ssh`, credential helpers,
`sh` for configured commands) through it.

The commands the agent and the checks run are not these: their PATH is the user's, as the sandbox keeps
it (sandbox/toolchain.py).

This module is at the bottom of the layers (git.py and the sandbox use it): it imports only the standard
library.
"""

from __future__ import annotations

import functools
import os
import shutil

FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"


def _in_work_tree(entry: str) -> bool:
    # Any repository gitbot may work on (the user's, an eval worktree, a CI clone), wherever it lies:
    # a `.git` in the entry or above it, whether the entry exists yet or not.
    for form in dict.fromkeys((os.path.normpath(entry), os.path.realpath(entry))):
        directory = form
        while True:
            if os.path.lexists(os.path.join(directory, ".git")):
                return True
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return False


@functools.cache
def _host_path(value: str) -> str:
    # Relative and empty entries mean "the current directory": whatever gitbot's git runs in, the
    # repository above all.
    kept = [entry for entry in value.split(":") if entry.startswith("/") and not _in_work_tree(entry)]
    return ":".join(dict.fromkeys(kept)) or FALLBACK_PATH


def host_path() -> str:
    """The PATH gitbot's own host-side programs are found on and run with."""
    return _host_path(os.environ.get("PATH", ""))


@functools.cache
def program(name: str) -> str:
    """`name` as an absolute path found once on host_path(); the bare name when it is not there (starting
    it then fails as "not installed", since every host-side environment carries host_path() too)."""
    found = shutil.which(name, path=host_path())
    return os.path.abspath(found) if found else name


def host_env(env: dict[str, str]) -> dict[str, str]:
    """`env` with PATH replaced by host_path(): what every host-side program gitbot starts runs with."""
    return {**env, "PATH": host_path()}
