"""Every git command gitbot runs, and the named environments they run with.

    git.out(repo, "rev-parse", "HEAD")                    # the user's repository, as gitbot reads it
    git.run(["status", "-z"], cwd=repo, env=git.clean_env(), ok=(0, 1))

The environments (profiles), from the most to the least of the caller's:

- `clean_env`: the caller's environment without the variables that point git at another repository
  or index (GIT_DIR, GIT_INDEX_FILE, … that a hook inherits), with GIT_OPTIONAL_LOCKS=0 so that even
  `git status` does not rewrite the user's index, and messages in the C locale so gitbot can read
  them. gitbot's own reads and writes of the user's repository use it.
- `bot_env`: a minimal environment with the bot's identity and nothing else of the caller's (the
  Action's fetch, commit and push; a token only as an explicit extra for one command).
- `isolated_env`: no GIT_* of the caller's at all, no system or global config (HOME points at
  gitbot's own directory), never a prompt: the shadow repository's commands.

Every one of them sets GIT_LITERAL_PATHSPECS: a path gitbot hands to git is a file's name, never a
pathspec (a file named `:(glob)*` must not stand for the whole work tree). A caller that means git's
pathspec magic says so for that one command (`MAGIC_PATHSPECS`). And every one of them, like every git
`run` starts, has gitbot's own PATH (host_programs.host_path: no relative entry, none a command can write).

Standard library only (and host_programs, itself standard library only), imported lazily where it costs:
a git hook's fast path may use it.
"""

from __future__ import annotations

import os
import subprocess

from gitbot.errors import GitError, NotAGitRepository
from gitbot.host_programs import host_env, host_path, program

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path

# Set by git for hooks (`git rev-parse --local-env-vars` of git 2.39): they point git at the repository
# and the index of the commit in progress. Neither a check that runs git nor gitbot's own git commands
# may see them (under `git commit -a` a git-using test suite would write into the commit being made).
GIT_LOCAL_ENV = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
                 "GIT_CONFIG_COUNT", "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE",
                 "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS",
                 "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE",
                 "GIT_COMMON_DIR")
# What bot_env keeps of the caller's environment. A self-hosted runner behind a proxy or with its own
# certificate authority needs the proxy and CA variables to reach GitHub at all.
BOT_PASSTHROUGH = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY",
                   "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR",
                   "GIT_SSL_CAINFO", "GIT_SSL_CAPATH")
# Every environment below: pathspecs are literal names. MAGIC_PATHSPECS, added to one, turns it off.
LITERAL_PATHSPECS = {"GIT_LITERAL_PATHSPECS": "1"}
MAGIC_PATHSPECS = {"GIT_LITERAL_PATHSPECS": "0"}
# The Actions bot, whose commits GitHub shows with its avatar.
BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
BOT_IDENTITY = {"GIT_AUTHOR_NAME": BOT_NAME, "GIT_AUTHOR_EMAIL": BOT_EMAIL,
                "GIT_COMMITTER_NAME": BOT_NAME, "GIT_COMMITTER_EMAIL": BOT_EMAIL}


class GitCommandError(GitError):
    """A git command exited with a status the caller did not expect."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: bytes | str):
        self.args_ = list(args)
        self.returncode = returncode
        self.stderr = (stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr).strip()
        super().__init__(f"git {_shown(self.args_)} failed with exit code {returncode}: {self.stderr}")


def _shown(args: list[str]) -> str:
    """The subcommand and its first words, without leading `-c key=value` settings."""
    while len(args) >= 2 and args[0] == "-c":
        args = args[2:]
    return " ".join(args[:3])


# ---------------------------------------------------------------------------------------------
# The environments


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in GIT_LOCAL_ENV}
    env["PATH"] = host_path()
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["LC_ALL"] = "C"
    env.update(LITERAL_PATHSPECS)
    env.update(extra or {})
    return env


def bot_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {name: os.environ[name] for name in BOT_PASSTHROUGH if os.environ.get(name)}
    env["PATH"] = host_path()
    env.setdefault("LANG", "C.UTF-8")
    env["GIT_TERMINAL_PROMPT"] = "0"  # nobody is there to type a password: fail instead of hanging
    env.update(BOT_IDENTITY)
    env.update(LITERAL_PATHSPECS)
    env.update(extra or {})
    return env


def isolated_env(home: str | os.PathLike, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    env.update({"PATH": host_path(), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_ATTR_NOSYSTEM": "1",
                "GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1", "GIT_OPTIONAL_LOCKS": "0",
                "LC_ALL": "C", "HOME": os.fspath(home),
                "XDG_CONFIG_HOME": os.path.join(os.fspath(home), "no-xdg-config"), **LITERAL_PATHSPECS})
    env.update(extra or {})
    return env


# ---------------------------------------------------------------------------------------------
# Running


def run(args: Sequence[str], *, cwd: str | os.PathLike | None = None, env: dict[str, str] | None = None,
        input: bytes | None = None, ok: Iterable[int] = (0,), timeout: float | None = None
        ) -> subprocess.CompletedProcess[bytes]:
    """`git ARGS` with stdin closed (or fed `input`) and output captured as bytes. `env` defaults to
    clean_env(). Raises GitCommandError for an exit status not in `ok`, NotAGitRepository when `cwd`
    is not a directory or git is not installed. Whatever `env`, git is gitbot's own and so is its PATH
    (host_programs: never a program a command could have put on the user's PATH)."""
    try:
        proc = subprocess.run([program("git"), *args], cwd=cwd, env=host_env(env if env is not None else clean_env()),
                              input=input,
                              stdin=None if input is not None else subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, check=False)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise NotAGitRepository(f"{cwd} is not a directory, or git is not installed ({exc})") from None
    except subprocess.TimeoutExpired:
        raise GitCommandError(args, -1, f"timed out after {timeout:g} s") from None
    if proc.returncode not in ok:
        raise GitCommandError(args, proc.returncode, proc.stderr)
    return proc


def out(cwd: str | os.PathLike, *args: str, env: dict[str, str] | None = None, input: bytes | None = None,
        ok: Iterable[int] = (0,)) -> str:
    """The command's stdout as text, without the final newline."""
    return run(args, cwd=cwd, env=env, input=input, ok=ok).stdout.decode("utf-8", "replace").rstrip("\n")


# ---------------------------------------------------------------------------------------------
# Facts about a repository


def repo_root(path: str | os.PathLike) -> Path:
    """The top of the work tree `path` is in; NotAGitRepository otherwise."""
    from pathlib import Path

    try:
        top = out(path, "rev-parse", "--show-toplevel", ok=range(256))
    except NotAGitRepository:
        raise NotAGitRepository(f"{path} is not a directory, or git is not installed") from None
    if not top or not os.path.isabs(top):
        raise NotAGitRepository(f"{Path(path).resolve()} is not inside a git work tree (run `git init` first, "
                                f"or pass --repo)")
    return Path(top)


def git_dir(repo: str | os.PathLike) -> Path:
    """The absolute git directory of the work tree at `repo` (a linked worktree has its own)."""
    from pathlib import Path

    try:
        return Path(out(repo, "rev-parse", "--absolute-git-dir"))
    except GitCommandError:
        raise NotAGitRepository(f"{repo} is not inside a git work tree") from None


def git_path(repo: str | os.PathLike, name: str) -> Path:
    """`git rev-parse --git-path`: right for linked worktrees and a relocated common dir."""
    from pathlib import Path

    found = out(repo, "rev-parse", "--git-path", name)
    return Path(found) if os.path.isabs(found) else Path(repo) / found


def head_commit(repo: str | os.PathLike) -> str | None:
    return out(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok=(0, 1, 128)) or None


OPERATIONS = (  # (path inside the git dir, what to call it, how to finish it)
    ("rebase-merge", "a rebase", "git rebase --continue or --abort"),
    ("rebase-apply", "a rebase or `git am`", "git rebase --continue / git am --continue, or --abort"),
    ("MERGE_HEAD", "a merge", "commit the merge or git merge --abort"),
    ("CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick --continue or --abort"),
    ("REVERT_HEAD", "a revert", "git revert --continue or --abort"),
)


def operation_in_progress(repo: str | os.PathLike) -> str | None:
    """A sentence saying which multi-step git operation is unfinished, or None."""
    return _unfinished(repo, out(repo, "rev-parse", *_OPERATION_PATH_ARGS).split("\n"))


def root_and_operation(path: str | os.PathLike) -> tuple[Path, str | None]:
    """repo_root and operation_in_progress, from one git process (a passing fix-check's git facts)."""
    from pathlib import Path

    try:
        lines = out(path, "rev-parse", "--show-toplevel", *_OPERATION_PATH_ARGS, ok=range(256)).split("\n")
    except NotAGitRepository:
        raise NotAGitRepository(f"{path} is not a directory, or git is not installed") from None
    if len(lines) != 1 + len(OPERATIONS):  # not a work tree, or a path with a newline in it
        root = repo_root(path)
        return root, operation_in_progress(root)
    if not lines[0] or not os.path.isabs(lines[0]):
        raise NotAGitRepository(f"{Path(path).resolve()} is not inside a git work tree (run `git init` first, "
                                f"or pass --repo)")
    return Path(lines[0]), _unfinished(path, lines[1:])


_OPERATION_PATH_ARGS = tuple(arg for name, _what, _finish in OPERATIONS for arg in ("--git-path", name))


def _unfinished(cwd: str | os.PathLike, found: list[str]) -> str | None:
    for (_name, what, finish), path in zip(OPERATIONS, found, strict=True):
        if os.path.exists(path if os.path.isabs(path) else os.path.join(cwd, path)):
            return f"the repository is in the middle of {what} (finish it first: {finish})"
    return None