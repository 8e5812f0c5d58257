"""What the sandbox shows of the repository's surroundings: git directories (read-only, gitbot's own
store hidden, config without credentials) and the host sockets to mask in what it shows.

The repository itself is writable; its git directories (also those of a linked worktree or a
submodule) are read-only and their `gitbot/` (the checkpoint store and run records) is hidden;
a git config is replaced by a copy without credential lines (actions/checkout stores the job token
as an `extraheader`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from gitbot import git
from gitbot.errors import GitError
from gitbot.sandbox.env import clean_path, under
from gitbot.sandbox.gitconfig import sanitized_copy

GIT_PROBE_TIMEOUT_SECONDS = 10


def host_sockets(visible: list[str]) -> list[str]:
    """Unix sockets bound to a path in this network namespace that lie in a directory the sandbox
    shows (e.g. git's fsmonitor--daemon.ipc in a git directory, a socket in a toolchain directory):
    each gets /dev/null bound over it."""
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()[1:]
    except OSError:
        return []
    found = set()
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unnamed or abstract (abstract sockets belong to the network namespace)
        path = fields[7]
        if not any(under(path, directory) for directory in visible) or under(path, "/proc") or under(path, "/dev"):
            continue
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                found.add(path)
        except OSError:
            continue
    return sorted(found)


# ---------------------------------------------------------------------------------------------
# Git metadata


def git_arguments(repo: str, git_dir: str | None, common_dir: str | None) -> list[str]:
    """Read-only git directories (the repository's own and, for a linked worktree or a submodule,
    the ones its gitfile points to), their `gitbot/` hidden and their config without credentials.

    A `.git` that is a symlink cannot be protected this way (a bind follows it): the agent could
    replace the link itself."""
    args: list[str] = []
    dot_git = os.path.join(repo, ".git")
    if os.path.lexists(dot_git) and not os.path.islink(dot_git):
        # A gitfile too: rewritten, it would point git (gitbot's own, later) at a directory the agent
        # controls.
        args += ["--ro-bind", dot_git, dot_git]
    directories = [d for d in dict.fromkeys((common_dir, git_dir)) if d]
    for directory in directories:
        if directory != dot_git:
            args += ["--ro-bind", directory, directory]
    for directory in directories:
        shadow = os.path.join(directory, "gitbot")
        if os.path.isdir(shadow) and not os.path.islink(shadow):
            # Hide the checkpoint store and run records entirely: an empty, read-only directory.
            args += ["--tmpfs", shadow, "--remount-ro", shadow]
    configs = [os.path.join(common_dir, "config")] if common_dir else []
    if git_dir:
        configs.append(os.path.join(git_dir, "config.worktree"))
    for config in dict.fromkeys(configs):
        if os.path.isfile(config) and not os.path.islink(config):
            sanitized = sanitized_copy(config)
            if sanitized is not None:
                args += ["--ro-bind", sanitized, config]
    return args


SYSTEM_GIT_CONFIG = "/etc/gitconfig"


def system_git_config() -> list[str]:
    """The system-wide git config (visible with /etc) without credentials, when it has any."""
    if os.path.isfile(SYSTEM_GIT_CONFIG) and not os.path.islink(SYSTEM_GIT_CONFIG):
        sanitized = sanitized_copy(SYSTEM_GIT_CONFIG)
        if sanitized is not None:
            return ["--ro-bind", sanitized, SYSTEM_GIT_CONFIG]
    return []


def git_directories(repo: str) -> tuple[str | None, str | None]:
    """(git dir, common dir) of the work tree at `repo`, real absolute paths, or (None, None)."""
    dot_git = os.path.join(repo, ".git")
    if os.path.isdir(dot_git) and not os.path.islink(dot_git) and \
            not os.path.exists(os.path.join(dot_git, "commondir")):
        return dot_git, dot_git  # the common case, without running git
    # A minimal environment (a git from a PATH the agent cannot write) and no fsmonitor: the repository's
    # config is not trusted to run anything. safe.directory only so that a checkout owned by another user
    # still resolves.
    env = {"PATH": clean_path(os.environ.get("PATH", ""), repo), "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent"}
    try:
        found = git.run(["-c", "core.fsmonitor=false", "-c", "safe.directory=*", "rev-parse", "--path-format=absolute",
                         "--absolute-git-dir", "--git-common-dir"], cwd=repo, env=env,
                        timeout=GIT_PROBE_TIMEOUT_SECONDS)
        lines = found.stdout.decode("utf-8", "surrogateescape").splitlines()
    except GitError:
        lines = []
    if len(lines) >= 2 and all(os.path.isabs(line) for line in lines[:2]):
        return os.path.realpath(lines[0]), os.path.realpath(lines[1])
    return _read_gitfile(dot_git)


# ---------------------------------------------------------------------------------------------
# Git metadata below the root (submodules, nested repositories): read-only like the repository's own


def gitfile_directories(dot_git: str) -> tuple[str | None, str | None]:
    """(git dir, common dir) that a `.git` below the root (a directory or a gitfile) stands for, read
    without running git (whose config there is not trusted); (None, None) when it names none."""
    return _read_gitfile(dot_git)


def nested_git_arguments(repo: str, entries: list[str], visible: list[str]) -> tuple[list[str], list[str]]:
    """For the `.git` entries below the root (repository-relative): (bubblewrap arguments that hide
    each git directory's `gitbot/` and show its config without credentials, the git directories inside
    the repository that their gitfiles point to and the work-tree files and directories their config,
    commondir or hooks link to, to be made read-only like the entries themselves).
    `visible`: the directories the sandbox shows (the repository, its own git directories): a git
    directory anywhere else is not there to cover."""
    args: list[str] = []
    targets: list[str] = []
    top = os.path.join(repo, ".git")
    for relative in entries:
        dot_git = os.path.join(repo, relative)
        # A `.git` symlink (Android's `repo` layout) names its git directory like a gitfile: that is made
        # read-only too (the link itself no mount can pin; the directories above it are, layout.py).
        directories = [d for d in dict.fromkeys(gitfile_directories(dot_git)) if d]
        for directory in directories:
            if not any(under(directory, shown) for shown in visible):
                continue
            if directory != dot_git and under(directory, repo) and not under(directory, top):
                targets.append(os.path.relpath(directory, repo))
            shadow = os.path.join(directory, "gitbot")
            if os.path.isdir(shadow) and not os.path.islink(shadow):
                args += ["--tmpfs", shadow, "--remount-ro", shadow]
            for name in ("config", "config.worktree"):
                config = os.path.join(directory, name)
                if os.path.isfile(config) and not os.path.islink(config):
                    sanitized = sanitized_copy(config)
                    if sanitized is not None:
                        args += ["--ro-bind", sanitized, config]
            for link in _links_out(directory):
                # What git reads through a link out of its (read-only) directory into the work tree, a command
                # could write there (a core.fsmonitor the user's next `git status` runs): its target is made
                # read-only too, and a config is shown without credentials like one in place.
                real = os.path.realpath(link)
                if real == repo or not under(real, repo) or under(real, top) or not os.path.exists(real):
                    continue
                if os.path.basename(link).startswith("config") and os.path.isfile(real):
                    sanitized = sanitized_copy(real)
                    if sanitized is not None:
                        args += ["--ro-bind", sanitized, real]
                targets.append(os.path.relpath(real, repo))
    return args, sorted(set(targets))


# What git reads from a git directory that can make it run something or read another git directory.
_EXECUTABLE_METADATA = ("config", "config.worktree", "commondir", "hooks")


def _links_out(directory: str) -> list[str]:
    """The symlinks among a git directory's config, config.worktree, commondir, hooks and hooks' entries."""
    found = [os.path.join(directory, name) for name in _EXECUTABLE_METADATA
             if os.path.islink(os.path.join(directory, name))]
    hooks = os.path.join(directory, "hooks")
    if os.path.isdir(hooks) and not os.path.islink(hooks):
        try:
            with os.scandir(hooks) as entries:
                found += [entry.path for entry in entries if entry.is_symlink()]
        except OSError:
            pass
    return found


def _read_gitfile(dot_git: str) -> tuple[str | None, str | None]:
    """What git would find without running it: `.git` as a directory, or a `gitdir:` file."""
    if os.path.isdir(dot_git):
        git_dir = os.path.realpath(dot_git)
    else:
        try:
            text = Path(dot_git).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None, None
        if not text.startswith("gitdir:"):
            return None, None
        git_dir = os.path.realpath(os.path.join(os.path.dirname(dot_git), text[len("gitdir:"):].strip()))
        if not os.path.isdir(git_dir):
            return None, None
    common_dir = git_dir
    with contextlib.suppress(OSError):
        pointer = Path(git_dir, "commondir").read_text(encoding="utf-8", errors="replace").strip()
        if pointer and os.path.isdir(os.path.join(git_dir, pointer)):
            common_dir = os.path.realpath(os.path.join(git_dir, pointer))
    return git_dir, common_dir
