"""Where commands run: bubblewrap, an allow-listed environment, and a process budget.

    status = probe()                 # does bwrap work on this machine? (runs it once, cached)
    env = build_env()                # PATH, LANG, TERM=dumb, PAGER=cat ... and never a secret
    argv = wrap(["bash", "-c", command], repo, network=False)

Inside the sandbox the root file system is read-only, the repository is writable, its `.git` is
read-only and `.git/gitbot` (the checkpoint store) is hidden, /tmp is fresh, the real $HOME is an
empty tmpfs, there is no network unless the policy allows it, and the process sees its own PID
namespace, so `/proc/1/environ` is the sandbox's own allow-listed environment.

Secrets live only in gitbot's process. Tools never inherit the environment: `build_env` starts
from nothing and copies a handful of harmless variables.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import resource
import shutil
import signal
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


def _clean_path(value: str) -> str:
    # Relative and empty entries mean "the current directory": the repository, which the agent writes.
    entries = [entry for entry in value.split(":") if entry.startswith("/")]
    return ":".join(dict.fromkeys(entries)) or "/usr/local/bin:/usr/bin:/bin"


def build_env(extra: dict[str, str] | None = None, *, home: str = SANDBOX_HOME) -> dict[str, str]:
    """The complete environment for a tool's process, built from an allow-list.

    `extra` adds variables set by gitbot's own code; names that look like secrets are refused."""
    env: dict[str, str] = {}
    for name in PASSTHROUGH_VARIABLES:
        value = os.environ.get(name)
        if value:
            env[name] = value
    env["PATH"] = _clean_path(env.get("PATH", ""))
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


def wrap(argv: list[str], repo: Path | str, *, network: bool, read_only: tuple[Path | str, ...] | list = (),
         env: dict[str, str] | None = None, status: SandboxStatus | None = None) -> list[str]:
    """The bwrap command line that runs `argv` in the sandbox, with the repository as the working
    directory. `read_only`: directories inside the repository to mount read-only (edit_deny dirs);
    `env`: the sandbox's whole environment (default: build_env())."""
    status = status or probe()
    bwrap = status.bwrap or _bwrap_path() or "bwrap"
    features = status.features
    repo = os.path.realpath(repo)
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]

    def tmpfs(path: str, size: int) -> list[str]:
        return (["--size", str(size)] if "size" in features else []) + ["--tmpfs", path]

    # Fresh /tmp before binding the repository, which may live under /tmp.
    args += tmpfs("/tmp", TMP_SIZE_BYTES)
    # The real home (dotfiles, ~/.ssh, cloud credentials) becomes an empty tmpfs; the repository is
    # bound afterwards, so a checkout inside the home stays visible.
    real_home = os.path.realpath(os.path.expanduser("~"))
    if real_home != "/" and not (real_home + "/").startswith("/tmp/") and os.path.isdir(real_home):
        args += tmpfs(real_home, HOME_SIZE_BYTES)
    runner_temp = os.environ.get("RUNNER_TEMP")  # GitHub Actions' per-job files, including credentials
    if runner_temp and os.path.isdir(runner_temp) and not (repo + "/").startswith(os.path.realpath(runner_temp) + "/"):
        args += tmpfs(os.path.realpath(runner_temp), 1 << 20)
    args += ["--dir", SANDBOX_HOME]
    args += ["--bind", repo, repo]
    git_dir = os.path.join(repo, ".git")
    if os.path.isdir(git_dir) and not os.path.islink(git_dir):
        args += ["--ro-bind", git_dir, git_dir]
        shadow = os.path.join(git_dir, "gitbot")
        if os.path.isdir(shadow) and not os.path.islink(shadow):
            # Hide the checkpoint store entirely: an empty, read-only directory in its place.
            args += ["--tmpfs", shadow, "--remount-ro", shadow]
        sanitized = _sanitized_git_config(os.path.join(git_dir, "config"))
        if sanitized is not None:
            args += ["--ro-bind", sanitized, os.path.join(git_dir, "config")]
    for path in read_only:
        real = os.path.realpath(path)
        if real.startswith(repo + "/") and os.path.isdir(real):
            args += ["--ro-bind", real, real]
    uid = str(_sandbox_uid())
    args += ["--unshare-user", "--uid", uid, "--gid", uid, "--cap-drop", "ALL"]
    if "disable-userns" in features:
        args += ["--disable-userns"]
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if not network:
        args += ["--unshare-net"]
    args += ["--die-with-parent", "--new-session", "--clearenv"]
    for name, value in (env if env is not None else build_env()).items():
        args += ["--setenv", name, value]
    args += ["--chdir", repo, "--", *argv]
    return args


_SANITIZED_DIR: str | None = None
_SANITIZED_LOCK = threading.Lock()


def _sanitized_git_config(path: str) -> str | None:
    """A copy of .git/config without credential lines (actions/checkout stores the job token as an
    `extraheader`), or None when there is nothing to remove."""
    global _SANITIZED_DIR
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    markers = ("extraheader", "helper", "password", "token", "askpass")
    lines = text.splitlines(keepends=True)
    kept = [line for line in lines if not any(marker in line.lower() for marker in markers)]
    if len(kept) == len(lines):
        return None
    content = "".join(kept)
    with _SANITIZED_LOCK:
        if _SANITIZED_DIR is None:
            _SANITIZED_DIR = tempfile.mkdtemp(prefix="gitbot-gitconfig-")
        target = os.path.join(_SANITIZED_DIR, hashlib.sha256(content.encode()).hexdigest()[:16])
        if not os.path.exists(target):
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(content)
    return target


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
        return (f"bubblewrap sandbox: read-only system, writable repository, read-only .git, empty $HOME, "
                f"{network}, allow-listed environment")
    if mode == "required":
        return f"commands refused: [sandbox] mode = \"required\" but {status.description}. {FIX_HINT}"
    return (f"WARNING: commands run WITHOUT a sandbox because {status.description} ([sandbox] mode = \"auto\"): "
            f"they can write outside the repository and reach the network; only the allow-listed environment "
            f"keeps secrets out. {FIX_HINT}")


# ---------------------------------------------------------------------------------------------
# Keeping gitbot's own secrets away from unsandboxed commands


def protect_process_environ() -> bool:
    """Make gitbot's process non-dumpable, so processes of the same (non-root) user cannot read
    /proc/<gitbot>/environ, where the API key and tokens are. Used before unsandboxed commands."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_dumpable = 4
        return libc.prctl(pr_set_dumpable, 0, 0, 0, 0) == 0
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
