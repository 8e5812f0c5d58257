"""bubblewrap: does it work here, and the command line that runs a command inside it.

Inside, the root file system is read-only, the repository is writable, /tmp is fresh, the real
$HOME and /run are empty tmpfs (no host sockets such as /run/docker.sock), files the policy's
read_deny matches are replaced by /dev/null, there is no network unless the policy allows it, and
the process sees its own PID namespace, so `/proc/1/environ` is the sandbox's own allow-listed
environment. The mounts for git directories and sockets are in mounts.py.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from gitbot.sandbox.env import SANDBOX_HOME, build_env, clean_path, protect_process_environ, under
from gitbot.sandbox.mounts import git_arguments, git_directories, host_sockets

# Size caps for the sandbox's memory-backed directories (only with a bwrap that supports --size).
TMP_SIZE_BYTES = 1 << 30
HOME_SIZE_BYTES = 256 << 20
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


def _bwrap_path() -> str | None:
    # Never a bwrap inside the working directory (a repository could ship one).
    cwd = os.getcwd()
    for directory in clean_path(os.environ.get("PATH", "")).split(":"):
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
    git_dirs = git_directories(repo)
    args += git_arguments(repo, *git_dirs)
    for path in read_only:
        real = os.path.realpath(path)
        if real.startswith(repo + "/") and os.path.isdir(real):
            args += ["--ro-bind", real, real]
    # Files last: a directory bound above would otherwise cover them again.
    masked = set()
    for path in hidden_files:
        real = os.path.realpath(path if os.path.isabs(path) else os.path.join(repo, path))
        if under(real, repo) and real != repo and os.path.isfile(real):
            masked.add(real)
    for path in host_sockets(hidden_dirs, visible=[repo, *(d for d in git_dirs if d)]):
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
