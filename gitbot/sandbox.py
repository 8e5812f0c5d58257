"""Where commands run: bubblewrap, an allow-listed environment, and a process budget.

    status = probe()                 # does bwrap work on this machine? (runs it once, cached)
    env = build_env()                # PATH, LANG, TERM=dumb, PAGER=cat ... and never a secret
    argv = wrap(["bash", "-c", command], repo, network=False)

Inside the sandbox the root file system is read-only, the repository is writable, its git
directories (also those of a linked worktree or submodule) are read-only and their `gitbot/`
(the checkpoint store and run records) is hidden, /tmp is fresh, the real $HOME and /run are empty
tmpfs (no host sockets such as /run/docker.sock), files the policy's read_deny matches are replaced
by /dev/null, there is no network unless the policy allows it, and the process sees its own PID
namespace, so `/proc/1/environ` is the sandbox's own allow-listed environment.

Secrets live only in gitbot's process. Tools never inherit the environment: `build_env` starts
from nothing and copies a handful of harmless variables.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from gitbot.policy import Policy

SANDBOX_HOME = "/tmp/gitbot-home"
# Copied from gitbot's environment when set; nothing else is.
PASSTHROUGH_VARIABLES = ("PATH", "LANG", "LC_ALL", "TZ", "CI")
FIXED_ENVIRONMENT = {
    "TERM": "dumb",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "NO_COLOR": "1",
    "CLICOLOR": "0",
    "PY_COLORS": "0",
    # Progress bars and prompts are noise (or a hang) for a non-interactive agent.
    "PIP_PROGRESS_BAR": "off",
    "PIP_NO_INPUT": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "npm_config_progress": "false",
    "npm_config_fund": "false",
    "npm_config_update_notifier": "false",
    "CARGO_TERM_PROGRESS_WHEN": "never",
    "DEBIAN_FRONTEND": "noninteractive",
    # Anything that would open an editor gets one that exits at once.
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_EDITOR": "true",
    "GIT_MERGE_AUTOEDIT": "no",
    "GIT_TERMINAL_PROMPT": "0",
    # Command-line-level git configuration (beats any config file): no bare repositories found by
    # discovery (a directory the agent wrote could carry core.fsmonitor), no hooks, no ext:: transport.
    "GIT_CONFIG_COUNT": "4",
    "GIT_CONFIG_KEY_0": "safe.bareRepository",
    "GIT_CONFIG_VALUE_0": "explicit",
    "GIT_CONFIG_KEY_1": "core.hooksPath",
    "GIT_CONFIG_VALUE_1": "/dev/null",
    "GIT_CONFIG_KEY_2": "protocol.ext.allow",
    "GIT_CONFIG_VALUE_2": "never",
    "GIT_CONFIG_KEY_3": "core.fsmonitor",
    "GIT_CONFIG_VALUE_3": "false",
}
DEFAULT_LANG = "C.UTF-8"

# Size caps for the sandbox's memory-backed directories (only with a bwrap that supports --size).
TMP_SIZE_BYTES = 1 << 30
HOME_SIZE_BYTES = 256 << 20
# Per-file size cap for commands (RLIMIT_FSIZE), so a runaway writer cannot fill the disk.
MAX_FILE_BYTES = 4 << 30
# Processes one command may have at once (fork bombs).
MAX_PROCESSES = 512

PROBE_TIMEOUT_SECONDS = 20
FIX_HINT = (
    "To fix the runner: install bubblewrap (`sudo apt-get install -y bubblewrap`); on Ubuntu 24.04 "
    "(GitHub's ubuntu-latest), unprivileged user namespaces are blocked by AppArmor, so add a step "
    "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` before gitbot (or install an "
    "unconfined AppArmor profile for /usr/bin/bwrap). Or set [sandbox] mode = \"auto\" to run commands "
    "unsandboxed, with a warning in the receipt."
)


@dataclass(frozen=True)
class SandboxStatus:
    available: bool
    description: str
    bwrap: str | None = None
    error: str = ""
    features: frozenset[str] = field(default_factory=frozenset)  # "size", "disable-userns"


# ---------------------------------------------------------------------------------------------
# The environment


def _secret_like(name: str) -> bool:
    from gitbot.secrets import SECRET_ENV_NAMES, SECRET_NAME_HINTS

    upper = name.upper()
    return upper in SECRET_ENV_NAMES or any(hint in upper for hint in SECRET_NAME_HINTS)


def _under(path: str, directory: str) -> bool:
    directory = directory.rstrip("/")
    return bool(directory) and (path == directory or path.startswith(directory + "/"))


def _writable_roots(repo: Path | str | None) -> list[str]:
    """Directories the agent (or anything else on the runner) can write programs into: a PATH entry
    there would let a program the agent wrote shadow a real one (`grep` in `.venv/bin`)."""
    roots = ["/tmp", "/var/tmp", "/dev/shm"]
    for candidate in (repo, os.environ.get("GITHUB_WORKSPACE"), os.path.expanduser("~")):
        if candidate:
            roots.append(str(candidate))
    found = set()
    for root in roots:
        if os.path.isabs(root):
            found.add(os.path.normpath(root))
            found.add(os.path.realpath(root))
    found.discard("/")
    return sorted(found)


def _clean_path(value: str, repo: Path | str | None = None) -> str:
    # Relative and empty entries mean "the current directory": the repository, which the agent writes.
    # Entries inside the repository, /tmp, /var/tmp or $HOME (`$GITHUB_WORKSPACE/.venv/bin`,
    # `node_modules/.bin`, `~/.local/bin`) hold programs the agent can write, so they go too.
    roots = _writable_roots(repo)
    entries = []
    for entry in value.split(":"):
        if not entry.startswith("/"):
            continue
        forms = {os.path.normpath(entry), os.path.realpath(entry)}
        if any(_under(form, root) for form in forms for root in roots):
            continue
        entries.append(entry)
    return ":".join(dict.fromkeys(entries)) or "/usr/local/bin:/usr/bin:/bin"


def build_env(extra: dict[str, str] | None = None, *, home: str = SANDBOX_HOME,
              repo: Path | str | None = None) -> dict[str, str]:
    """The complete environment for a tool's process, built from an allow-list.

    `extra` adds variables set by gitbot's own code; names that look like secrets are refused.
    `repo`: the repository the command runs in (PATH entries inside it are dropped)."""
    # Every command is prepared through here: make gitbot's own /proc/<pid>/environ unreadable first.
    protect_process_environ()
    env: dict[str, str] = {}
    for name in PASSTHROUGH_VARIABLES:
        value = os.environ.get(name)
        if value:
            env[name] = value
    env["PATH"] = _clean_path(env.get("PATH", ""), repo)
    env.setdefault("LANG", DEFAULT_LANG)
    env.update(FIXED_ENVIRONMENT)
    env["HOME"] = home
    for name, value in (extra or {}).items():
        if _secret_like(name):
            raise ValueError(f"refusing to pass {name} to a tool: it looks like a secret")
        env[name] = str(value)
    _assert_no_secrets(env)
    return env


def _assert_no_secrets(env: dict[str, str]) -> None:
    from gitbot.secrets import Secrets

    known = Secrets.from_environment()
    for name, value in env.items():
        for secret in known.values:
            if secret in value:
                raise ValueError(f"refusing to pass {name} to a tool: its value contains a secret")


# ---------------------------------------------------------------------------------------------
# bubblewrap


def _bwrap_path() -> str | None:
    # Never a bwrap inside the working directory (a repository could ship one).
    cwd = os.getcwd()
    for directory in _clean_path(os.environ.get("PATH", "")).split(":"):
        candidate = os.path.join(directory, "bwrap")
        if os.access(candidate, os.X_OK) and not os.path.realpath(candidate).startswith(cwd + os.sep):
            return candidate
    return None


def _features(bwrap: str) -> frozenset[str]:
    try:
        help_text = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10,
                                   check=False, stdin=subprocess.DEVNULL, env=build_env()).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    found = set()
    if "--size" in help_text:
        found.add("size")
    if "--disable-userns" in help_text:
        found.add("disable-userns")
    return frozenset(found)


def _sandbox_uid() -> int:
    # Inside the sandbox gitbot's own uid, but never root: root there keeps capabilities over the
    # namespace's mounts. 1000 is the conventional first user.
    uid = os.getuid()
    return uid if uid != 0 else 1000


# Host directories that hold unix sockets (docker.sock, containerd, systemd, D-Bus): replaced by an
# empty tmpfs. `/var/run` only when it is a real directory (usually it is a symlink to /run).
SOCKET_DIRECTORIES = ("/run", "/var/run")
# More files the read_deny rules match than this: refuse the command instead of running it unmasked.
MAX_MASKED_FILES = 2000
GIT_PROBE_TIMEOUT_SECONDS = 10


class SandboxRefusal(Exception):
    """The sandbox cannot be built safely for this command; the message says why."""


def wrap(argv: list[str], repo: Path | str, *, network: bool, read_only: tuple[Path | str, ...] | list = (),
         env: dict[str, str] | None = None, status: SandboxStatus | None = None,
         hidden_files: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The bwrap command line that runs `argv` in the sandbox, with the repository as the working
    directory. `read_only`: directories inside the repository to mount read-only (edit_deny dirs);
    `hidden_files`: files inside the repository replaced by /dev/null (read_deny matches, see
    `read_denied_files`); `env`: the sandbox's whole environment (default: build_env())."""
    protect_process_environ()
    status = status or probe()
    bwrap = status.bwrap or _bwrap_path() or "bwrap"
    features = status.features
    repo = os.path.realpath(repo)
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    hidden_dirs = ["/tmp"]  # replaced by a tmpfs below: nothing of the host's is left there

    def tmpfs(path: str, size: int) -> list[str]:
        return (["--size", str(size)] if "size" in features else []) + ["--tmpfs", path]

    # Fresh /tmp before binding the repository, which may live under /tmp.
    args += tmpfs("/tmp", TMP_SIZE_BYTES)
    # The real home (dotfiles, ~/.ssh, cloud credentials) becomes an empty tmpfs; the repository is
    # bound afterwards, so a checkout inside the home stays visible.
    real_home = os.path.realpath(os.path.expanduser("~"))
    if real_home != "/" and not (real_home + "/").startswith("/tmp/") and os.path.isdir(real_home):
        args += tmpfs(real_home, HOME_SIZE_BYTES)
        hidden_dirs.append(real_home)
    runner_temp = os.environ.get("RUNNER_TEMP")  # GitHub Actions' per-job files, including credentials
    if runner_temp and os.path.isdir(runner_temp) and not (repo + "/").startswith(os.path.realpath(runner_temp) + "/"):
        args += tmpfs(os.path.realpath(runner_temp), 1 << 20)
        hidden_dirs.append(os.path.realpath(runner_temp))
    # Host unix sockets: /run/docker.sock (on GitHub's runners the runner user may use it, a full host
    # escape), containerd, D-Bus, systemd. A network namespace does not stop a unix socket.
    for directory in SOCKET_DIRECTORIES:
        if os.path.isdir(directory) and not os.path.islink(directory):
            args += tmpfs(directory, 1 << 20)
            hidden_dirs.append(directory)
    if network:
        # With the network on, name resolution may need /etc/resolv.conf, which often points into /run
        # (systemd-resolved's stub-resolv.conf): put back that one file, not its directory (which
        # holds a socket).
        resolv = os.path.realpath("/etc/resolv.conf")
        if resolv.startswith("/run/") and os.path.isfile(resolv):
            args += ["--ro-bind", resolv, resolv]
    args += ["--dir", SANDBOX_HOME]
    args += ["--bind", repo, repo]
    git_dirs = _git_directories(repo)
    args += _git_arguments(repo, *git_dirs)
    for path in read_only:
        real = os.path.realpath(path)
        if real.startswith(repo + "/") and os.path.isdir(real):
            args += ["--ro-bind", real, real]
    # Files last: a directory bound above would otherwise cover them again.
    masked = set()
    for path in hidden_files:
        real = os.path.realpath(path if os.path.isabs(path) else os.path.join(repo, path))
        if _under(real, repo) and real != repo and os.path.isfile(real):
            masked.add(real)
    for path in _host_sockets(hidden_dirs, visible=[repo, *(d for d in git_dirs if d)]):
        masked.add(path)
    for path in sorted(masked):
        args += ["--ro-bind", "/dev/null", path]
    uid = str(_sandbox_uid())
    args += ["--unshare-user", "--uid", uid, "--gid", uid, "--cap-drop", "ALL"]
    if "disable-userns" in features:
        args += ["--disable-userns"]
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if not network:
        args += ["--unshare-net"]
    args += ["--die-with-parent", "--new-session", "--clearenv"]
    for name, value in (env if env is not None else build_env(repo=repo)).items():
        args += ["--setenv", name, value]
    args += ["--chdir", repo, "--", *argv]
    return args


def _host_sockets(hidden_dirs: list[str], visible: list[str]) -> list[str]:
    """Unix sockets bound to a path in this network namespace that the tmpfs mounts do not already
    hide (e.g. /var/snap/lxd/common/lxd/unix.socket, git's fsmonitor--daemon.ipc in a git directory
    bound back from under /tmp): each gets /dev/null bound over it. `visible`: directories bound into
    the sandbox again after `hidden_dirs` were hidden."""
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
        hidden = any(_under(path, directory) for directory in hidden_dirs) and \
            not any(_under(path, directory) for directory in visible)
        if hidden or _under(path, "/proc") or _under(path, "/dev"):
            continue
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                found.add(path)
        except OSError:
            continue
    return sorted(found)


# ---------------------------------------------------------------------------------------------
# Git metadata


def _git_arguments(repo: str, git_dir: str | None, common_dir: str | None) -> list[str]:
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
            sanitized = _sanitized_git_config(config)
            if sanitized is not None:
                args += ["--ro-bind", sanitized, config]
    return args


def _git_directories(repo: str) -> tuple[str | None, str | None]:
    """(git dir, common dir) of the work tree at `repo`, real absolute paths, or (None, None)."""
    dot_git = os.path.join(repo, ".git")
    if os.path.isdir(dot_git) and not os.path.islink(dot_git) and \
            not os.path.exists(os.path.join(dot_git, "commondir")):
        return dot_git, dot_git  # the common case, without running git
    git = shutil.which("git", path=_clean_path(os.environ.get("PATH", ""), repo))
    if git:
        # A minimal environment and no fsmonitor: the repository's config is not trusted to run
        # anything. safe.directory only so that a checkout owned by another user still resolves.
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent"}
        try:
            completed = subprocess.run(
                [git, "-c", "core.fsmonitor=false", "-c", "safe.directory=*", "-C", repo, "rev-parse",
                 "--path-format=absolute", "--absolute-git-dir", "--git-common-dir"],
                capture_output=True, text=True, timeout=GIT_PROBE_TIMEOUT_SECONDS, env=env,
                stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired):
            completed = None
        lines = completed.stdout.splitlines() if completed and completed.returncode == 0 else []
        if len(lines) >= 2 and all(os.path.isabs(line) for line in lines[:2]):
            return os.path.realpath(lines[0]), os.path.realpath(lines[1])
    return _read_gitfile(dot_git)


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


_SANITIZED_DIR: str | None = None
_SANITIZED_LOCK = threading.Lock()
# Lines of a git config that carry credentials or pull in other files.
_CREDENTIAL_MARKERS = ("extraheader", "helper", "password", "token", "askpass", "cookiefile")
_INCLUDE_SECTION = re.compile(r"\s*\[\s*include(if)?\b", re.IGNORECASE)
_SECTION = re.compile(r"\s*\[")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*)://([^/@\s\"'\]]*)@")


def _strip_userinfo(match: re.Match[str]) -> str:
    # scheme://user:password@host and http(s)://token@host lose the userinfo; ssh://git@host keeps its
    # user name (not a secret).
    scheme, userinfo = match.group(1), match.group(2)
    if ":" in userinfo or scheme.lower() in ("http", "https", "ftp", "ftps"):
        return f"{scheme}://"
    return match.group(0)


def sanitize_git_config(text: str) -> str:
    """A git config without credentials: no extraheader/helper/cookiefile/password/token lines, no
    userinfo in URLs (`url`, `pushurl`, `insteadOf`, section names), no include/includeIf sections
    (they could pull in a file the sandbox does not sanitize)."""
    kept: list[str] = []
    in_include = False
    dropping_continuation = False
    for line in text.splitlines(keepends=True):
        continued = line.rstrip("\r\n").endswith("\\")
        if dropping_continuation:
            dropping_continuation = continued
            continue
        line = _URL_USERINFO.sub(_strip_userinfo, line)
        header = bool(_SECTION.match(line))
        if header:
            in_include = bool(_INCLUDE_SECTION.match(line))
        lower = line.lower()
        if in_include or (not header and any(marker in lower for marker in _CREDENTIAL_MARKERS)):
            dropping_continuation = continued
            continue
        kept.append(line)
    return "".join(kept)


def _sanitized_git_config(path: str) -> str | None:
    """A copy of a git config file without credential lines (actions/checkout stores the job token
    as an `extraheader`), or None when there is nothing to remove."""
    global _SANITIZED_DIR
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    content = sanitize_git_config(text)
    if content == text:
        return None
    with _SANITIZED_LOCK:
        if _SANITIZED_DIR is None:
            _SANITIZED_DIR = tempfile.mkdtemp(prefix="gitbot-gitconfig-")
        target = os.path.join(_SANITIZED_DIR, hashlib.sha256(content.encode()).hexdigest()[:16])
        if not os.path.exists(target):
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(content)
    return target


# ---------------------------------------------------------------------------------------------
# Files the policy does not let the agent read


def read_denied_files(repo: Path | str, policy: Policy) -> list[str]:
    """Repository files (hidden and gitignored ones too, `.git` aside) that `policy.check_read`
    denies: the sandbox replaces each with /dev/null, so `cat .env` or `grep -r SECRET .` cannot read
    them. Raises SandboxRefusal when there are more than MAX_MASKED_FILES.

    Not covered: content in git's object store (`git show HEAD:.env`, `git log -p`) cannot be masked
    this way; the command judge and output redaction have to cover that."""
    root = os.path.realpath(repo)
    prefilter = _read_deny_prefilter(policy)
    denied = []
    for relpath in _repository_files(root):
        if prefilter is not None and not prefilter.match(relpath):
            continue
        if not policy.check_read(relpath):
            denied.append(relpath)
            if len(denied) > MAX_MASKED_FILES:
                raise SandboxRefusal(
                    f"more than {MAX_MASKED_FILES} files in the repository match files.read_deny; the sandbox "
                    f"hides each one and will not run a command with that many (narrow the read_deny rules or "
                    f"remove the files)")
    return denied


def _read_deny_prefilter(policy: Policy) -> re.Pattern[str] | None:
    """The read_deny globs as one regex, when it decides exactly what the policy's own check_read
    decides for a file reached without symlinks (then check_read runs only on the matches); None
    when every file must go through check_read."""
    from gitbot.policy import Policy as StandardPolicy
    from gitbot.policy.files import GlobError, compile_glob

    if type(policy).check_read is not StandardPolicy.check_read:
        return None
    try:
        compiled = [compile_glob(pattern, path_mode=True, ignore_case=True) for pattern in policy.read_deny]
    except (GlobError, TypeError, AttributeError):
        return None
    if not compiled:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{c.pattern})" for c in compiled), re.IGNORECASE | re.DOTALL)


def _repository_files(root: str) -> list[str]:
    """Every regular file under `root` (relative paths), hidden and ignored ones included, without
    following symlinks or entering `.git` directories. ripgrep lists them in parallel."""
    from gitbot.ripgrep import RipgrepMissing, rg_binary

    try:
        rg = rg_binary()
    except RipgrepMissing:
        rg = None
    if rg:
        try:
            completed = subprocess.run(
                [rg, "--files", "--hidden", "--no-ignore", "--no-config", "--no-follow", "--no-messages",
                 "--glob", "!.git", "--null", "."],
                cwd=root, capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
                stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired):
            completed = None
        # rg exits 1 when there are no files, 2 when some could not be read (still listing the rest).
        if completed is not None and completed.returncode in (0, 1, 2):
            names = completed.stdout.decode("utf-8", "surrogateescape").split("\0")
            return [name.removeprefix("./") for name in names if name]
    found = []
    stack = [""]
    while stack:
        relative = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, relative) if relative else root))
        except OSError:
            continue
        for entry in entries:
            if entry.name == ".git":
                continue
            path = f"{relative}/{entry.name}" if relative else entry.name
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    stack.append(path)
                elif entry.is_file(follow_symlinks=False):
                    found.append(path)
    return found


_PROBE_LOCK = threading.Lock()
_PROBE_RESULT: SandboxStatus | None = None


def probe(*, refresh: bool = False) -> SandboxStatus:
    """Whether bubblewrap works here, found by running it once with the real flags (cached)."""
    global _PROBE_RESULT
    with _PROBE_LOCK:
        if _PROBE_RESULT is None or refresh:
            _PROBE_RESULT = _probe()
        return _PROBE_RESULT


def _probe() -> SandboxStatus:
    bwrap = _bwrap_path()
    if bwrap is None:
        return SandboxStatus(False, "bubblewrap (bwrap) is not installed", error="bwrap not found on PATH")
    features = _features(bwrap)
    trial = SandboxStatus(True, "", bwrap, features=features)
    with tempfile.TemporaryDirectory(prefix="gitbot-probe-") as scratch:
        argv = wrap(["/bin/sh", "-c", "echo sandbox-ok > probe.txt"], scratch, network=False, status=trial)
        try:
            completed = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS,
                                       stdin=subprocess.DEVNULL, env=build_env(), check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return SandboxStatus(False, f"bubblewrap failed to start: {exc}", bwrap, str(exc), features)
        written = Path(scratch, "probe.txt")
        if completed.returncode != 0 or not written.exists():
            error = (completed.stderr or completed.stdout).strip() or f"exit status {completed.returncode}"
            return SandboxStatus(False, f"bubblewrap does not work here: {error}", bwrap, error, features)
    return SandboxStatus(True, "bubblewrap works", bwrap, "", features)


def describe(policy: Policy) -> str:
    """One line for the run result and receipt: how commands run under this policy, loudly when
    they are not sandboxed."""
    mode = policy.sandbox_mode
    if mode == "off":
        return ("WARNING: commands run WITHOUT a sandbox ([sandbox] mode = \"off\"): they can read and write "
                "anything the runner user can and reach the network; only the allow-listed environment "
                "keeps secrets out")
    status = probe()
    network = "with network" if policy.network else "no network"
    if status.available:
        return (f"bubblewrap sandbox: read-only system, writable repository, read-only .git, empty $HOME and "
                f"/run (no host sockets), files matching read_deny hidden, {network}, allow-listed environment")
    if mode == "required":
        return f"commands refused: [sandbox] mode = \"required\" but {status.description}. {FIX_HINT}"
    return (f"WARNING: commands run WITHOUT a sandbox because {status.description} ([sandbox] mode = \"auto\"): "
            f"they can write outside the repository and reach the network; only the allow-listed environment "
            f"keeps secrets out. {FIX_HINT}")


# ---------------------------------------------------------------------------------------------
# Keeping gitbot's own secrets away from unsandboxed commands


_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3
_LIBC: ctypes.CDLL | None = None


def protect_process_environ() -> bool:
    """Make gitbot's process non-dumpable, so processes of the same (non-root) user cannot read
    /proc/<gitbot>/environ, where the API key and tokens are. Called whenever a command is prepared
    (sandboxed or not); cheap and idempotent: one prctl to check, a second only when needed (the
    kernel resets the flag when the process changes credentials)."""
    global _LIBC
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(None, use_errno=True)
        if _LIBC.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) == 0:
            return True
        return _LIBC.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


# ---------------------------------------------------------------------------------------------
# The process budget


def _processes_of_uid(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def _own_cgroup_dirs() -> list[tuple[str, str]]:
    """(kind, directory) of this process's cgroups that can hold a pids limit: ("v1", pids dir) or
    ("v2", unified dir)."""
    try:
        membership = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    v1_root = v2_root = None
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields = left.split()
        fstype, *rest = right.split()
        if fstype == "cgroup2" and v2_root is None:
            v2_root = fields[4]
        elif fstype == "cgroup" and rest and "pids" in rest[-1].split(","):
            v1_root = fields[4]
    found = []
    for line in membership:
        number, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(",") and v1_root:
            found.append(("v1", os.path.join(v1_root, path.lstrip("/"))))
        elif number == "0" and controllers == "" and v2_root:
            found.append(("v2", os.path.join(v2_root, path.lstrip("/"))))
    return found


class ProcessLimit:
    """At most `max_processes` processes for one command, by the strongest means available here:
    a pids cgroup (exact, also for root), and RLIMIT_NPROC (works for non-root users; root ignores it).
    Also caps file size. Use as a context manager; `launcher(argv)` prefixes the command."""

    _counter = 0
    _counter_lock = threading.Lock()

    def __init__(self, max_processes: int = MAX_PROCESSES, max_file_bytes: int = MAX_FILE_BYTES):
        self.max_processes = max_processes
        self.max_file_bytes = max_file_bytes
        self.cgroup: str | None = None
        self.cgroup_kind = ""
        self.nproc: int | None = None

    def __enter__(self) -> Self:
        self.cgroup = self._make_cgroup()
        if os.geteuid() != 0:
            _soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
            wanted = _processes_of_uid(os.getuid()) + self.max_processes
            self.nproc = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        return self

    def _make_cgroup(self) -> str | None:
        with ProcessLimit._counter_lock:
            ProcessLimit._counter += 1
            name = f"gitbot-{os.getpid()}-{ProcessLimit._counter}"
        for kind, parent in _own_cgroup_dirs():
            directory = os.path.join(parent, name)
            try:
                os.mkdir(directory)
            except OSError:
                continue
            if kind == "v2" and not os.path.exists(os.path.join(directory, "pids.max")):
                try:
                    with open(os.path.join(parent, "cgroup.subtree_control"), "w") as handle:
                        handle.write("+pids")
                except OSError:
                    pass
            try:
                with open(os.path.join(directory, "pids.max"), "w") as handle:
                    handle.write(str(self.max_processes))
            except OSError:
                _remove_cgroup(directory)
                continue
            self.cgroup_kind = kind
            return directory
        return None

    @property
    def description(self) -> str:
        if self.cgroup:
            return f"at most {self.max_processes} processes (pids cgroup)"
        if self.nproc:
            return f"at most {self.nproc} processes for the user (RLIMIT_NPROC)"
        return "no process limit available (running as root without a writable pids cgroup)"

    def launcher(self, argv: list[str]) -> list[str]:
        """argv prefixed by a tiny shell that joins the cgroup and sets the limits, then execs it
        (a preexec_fn would be unsafe in a threaded process)."""
        script = ('if [ -n "$1" ]; then echo $$ > "$1" || exit 126; fi; '
                  'if [ -n "$2" ]; then ulimit -u "$2" || exit 126; fi; '
                  'ulimit -f "$3" || exit 126; shift 3; exec "$@"')
        procs = os.path.join(self.cgroup, "cgroup.procs") if self.cgroup else ""
        blocks = str(self.max_file_bytes // 1024)  # bash counts -f in 1024-byte blocks
        bash = shutil.which("bash", path="/usr/bin:/bin") or "/bin/bash"
        return [bash, "-c", script, "gitbot-launch", procs, str(self.nproc or ""), blocks, *argv]

    def pids(self) -> list[int]:
        """The command's processes that are still running."""
        if not self.cgroup:
            return []
        try:
            with open(os.path.join(self.cgroup, "cgroup.procs")) as handle:
                return live_processes(int(line) for line in handle if line.strip())
        except OSError:
            return []

    def signal_all(self, signum: int) -> None:
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signum)

    def __exit__(self, *exc_info) -> None:
        if not self.cgroup:
            return
        deadline = time.monotonic() + 5
        while self.pids() and time.monotonic() < deadline:
            self.signal_all(signal.SIGKILL)
            time.sleep(0.02)
        _remove_cgroup(self.cgroup)
        self.cgroup = None


def live_processes(pids) -> list[int]:
    """The pids that are still running (not zombies waiting for their reaper)."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The state follows the parenthesised command name, which may itself contain ") ".
        if stat[stat.rindex(b")") + 2:][:1] != b"Z":
            alive.append(pid)
    return alive


def _remove_cgroup(directory: str) -> None:
    for _ in range(50):
        try:
            os.rmdir(directory)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
