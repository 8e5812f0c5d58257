"""bubblewrap: does it work here, and the command line that runs a command inside it.

What the file system holds is layout.py (the system read-only, the user's toolchain read-only, the
repository writable, nothing else of the host) with mounts.py (git directories). Here: the
namespaces. No network unless the policy allows it; its own PID namespace, so `/proc/1/environ` is
the sandbox's own allow-listed environment and no ancestor's environ is reachable; uid 1000 inside,
no capabilities, no nested user namespaces; and never root on the host (confine.py).
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from gitbot.sandbox import confine, helper, layout
from gitbot.sandbox.env import SANDBOX_HOME, build_env, clean_path, protect_process_environ, under
from gitbot.sandbox.mounts import (
    git_arguments,
    git_directories,
    host_sockets,
    nested_git_arguments,
    system_git_config,
)
from gitbot.sandbox.objects import store_arguments
from gitbot.sandbox.remembered import code_fingerprint, user_cache_dir
from gitbot.sandbox.scratch import process_directory
from gitbot.sandbox.toolchain import SYSTEM_DIRS, ToolchainView, build_view

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitbot.sandbox.filtered_store import StoreView
    from gitbot.sandbox.processes import ProcessLimit

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


SANDBOX_UID = 1000  # the uid (and gid) commands see inside; on the host they are never root (confine.py)


def sandbox_home(view: ToolchainView, repo: str) -> str:
    """$HOME inside: the real home's path (an empty tmpfs there, with the toolchain bound back), so
    tools that look under ~ find what they find in the user's shell; a fixed path when that is
    impossible (no home, or a home inside the repository)."""
    home = view.home
    if not home or home == "/" or under(home, repo):
        return SANDBOX_HOME
    return home


def wrap(argv: list[str], repo: Path | str, *, network: bool, read_only: tuple[Path | str, ...] | list = (),
         protected_files: tuple[str, ...] | list[str] = (), env: dict[str, str] | None = None,
         status: SandboxStatus | None = None, hidden_files: tuple[str, ...] | list[str] = (),
         hidden_directories: tuple[str, ...] | list[str] = (), toolchain: ToolchainView | None = None,
         limit: ProcessLimit | None = None, nested_git: tuple[str, ...] | list[str] = (),
         store: StoreView | None = None, kept: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The command line that runs `argv` in the sandbox, with the repository as the working directory.

    `read_only` and `protected_files`: directories and files inside the repository that are protected
    (the policy's edit_deny directories, in-repository toolchain directories; `.gitbot/` and AGENTS.md
    always): read-only and pinned where they exist, nothing where they do not (layout.py). `hidden_files`:
    files inside the repository shown empty and read-only (read_deny matches, see `read_denied_files`).
    `hidden_directories`: directories inside the repository shown empty and read-only (those gitbot
    cannot look into, so cannot tell what they hold). `kept`: paths inside the repository that no
    restore could bring back, read-only and pinned where they exist.
    `toolchain`: what of the host the commands need (default: computed from gitbot's environment).
    `env`: the sandbox's whole environment (default: build_env() for that toolchain). `limit`: the
    command's process limit, when it is to be run with one (the helper may apply it, see confine.py).
    `nested_git`: the `.git` entries below the root (submodules, nested repositories; repository-relative):
    read-only and pinned like protected paths, with the git directories they name inside the repository,
    whose `gitbot/` is hidden and config sanitized (mounts.py).
    `store`: the filtered object store to show instead of the real one (objects.py), if any."""
    protect_process_environ()
    status = status or probe()
    bwrap = status.bwrap or _bwrap_path() or "bwrap"
    features = status.features
    repo = os.path.realpath(repo)
    view = toolchain if toolchain is not None else build_view(os.environ, repo)
    home = sandbox_home(view, repo)
    empty = empty_file()
    args = [bwrap, *layout.system_arguments(network=network, empty=empty)]
    scratch, covered = layout.scratch_arguments(home, repo, features)
    args += scratch
    if home == SANDBOX_HOME:
        args += ["--dir", SANDBOX_HOME]
    args += layout.toolchain_arguments(view)
    args += ["--bind", repo, repo]
    git_dirs = git_directories(repo)
    emptied_files = set()
    for path in hidden_files:
        real = os.path.realpath(path if os.path.isabs(path) else os.path.join(repo, path))
        if under(real, repo) and real != repo and (os.path.isfile(real) or _is_pipe(real)):
            emptied_files.add(real)
    present = [rel for rel in nested_git if os.path.lexists(os.path.join(repo, rel))]
    nested, targets = nested_git_arguments(repo, present, [repo, *(d for d in git_dirs if d)])
    nested_dirs = [rel for rel in present if os.path.isdir(os.path.join(repo, rel))
                   and not os.path.islink(os.path.join(repo, rel))]
    nested_files = [rel for rel in present if rel not in nested_dirs]
    nested_files += [rel for rel in targets if not os.path.isdir(os.path.join(repo, rel))]
    targets = [rel for rel in targets if os.path.isdir(os.path.join(repo, rel))]
    # Before the git directories: these pin directories of the work tree, and a later bind of a
    # directory would hide mounts made inside it before.
    args += layout.protected_arguments(repo, [*layout.ALWAYS_PROTECTED_DIRS, *read_only, *nested_dirs, *targets],
                                       [*layout.ALWAYS_PROTECTED_FILES, *protected_files, *nested_files],
                                       kept=kept, held=sorted(emptied_files))
    args += git_arguments(repo, *git_dirs)
    # Inside the read-only mounts just made (a nested .git; a submodule's git directory under .git/modules),
    # so after them.
    args += nested
    args += store_arguments(store)
    args += system_git_config()
    # Files last: a directory bound above would otherwise cover them again.
    # A hidden file reads as an empty regular file (git hashes it like any other, so `git diff` and
    # `status` still work where one is tracked); a socket is covered by /dev/null.
    visible = [d for d in SYSTEM_DIRS if d not in covered] + [m.dest for m in view.mounts] + \
        [repo, *(d for d in git_dirs if d)]
    sockets = set(host_sockets(visible)) - emptied_files
    for path in sorted(emptied_files | sockets):
        args += ["--ro-bind", empty if path in emptied_files else "/dev/null", path]
    # After the files: an empty tmpfs covers whatever is below it. The topmost only (below one, nothing is left).
    emptied: list[str] = []
    for path in sorted(os.path.realpath(os.path.join(repo, d)) for d in hidden_directories):
        if under(path, repo) and os.path.isdir(path) and not any(under(path, done) for done in emptied):
            emptied.append(path)
            args += ["--tmpfs", path, "--remount-ro", path]
    args += layout.credential_masks(view, features)
    args += ["--remount-ro", "/"]
    uid = str(SANDBOX_UID)
    args += ["--unshare-user", "--uid", uid, "--gid", uid, "--cap-drop", "ALL"]
    if "disable-userns" in features:
        args += ["--disable-userns"]
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if not network:
        args += ["--unshare-net"]
    args += ["--die-with-parent", "--new-session", "--clearenv"]
    for name, value in (env if env is not None else build_env(repo=repo, toolchain=view, home=home)).items():
        args += ["--setenv", name, value]
    if os.geteuid() != 0 and limit is not None and os.uname().machine in helper.ARCHES:
        # As root the helper adds it (confine.unprivileged). Files made here are gitbot's user's: a setuid
        # one would let any local user act as that user.
        args += ["--seccomp", str(limit.pass_fd(helper.seccomp_fd(helper.SETID, os.MFD_CLOEXEC)))]
    args += ["--chdir", repo, "--", *argv]
    return confine.unprivileged(args, idmapped=[repo, *(d for d in dict.fromkeys(git_dirs) if d and not under(d, repo))],
                                limit=limit)


_EMPTY_LOCK = threading.Lock()


def _is_pipe(path: str) -> bool:
    """A FIFO or socket at `path` (a read_deny one: a secrets manager may serve `.env` as a FIFO)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def empty_file() -> str:
    """A read-only empty regular file on the host, bound over hidden files: one per process, in its
    scratch directory (removed when it exits), made again if it is gone or is anything else now (written
    to, made writable, replaced by a symlink)."""
    directory = process_directory("empty")
    path = os.path.join(directory, "empty")
    with _EMPTY_LOCK:
        try:
            info = os.lstat(path)
            if (stat.S_ISREG(info.st_mode) and not info.st_size and stat.S_IMODE(info.st_mode) == 0o444
                    and info.st_uid == os.geteuid()):
                return path
            os.unlink(path)
        except FileNotFoundError:
            pass
        with open(path, "xb"):
            pass
        os.chmod(path, 0o444)
        return path


_PROBE_LOCK = threading.Lock()
_PROBE_RESULT: SandboxStatus | None = None
PROBE_CACHE_NAME = "sandbox-probe.json"  # in $XDG_CACHE_HOME/gitbot
# What else decides whether bubblewrap works: user namespaces allowed, and AppArmor's say on them.
_PROBE_SYSCTLS = ("/proc/sys/kernel/random/boot_id", "/proc/sys/user/max_user_namespaces",
                  "/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
                  "/proc/sys/kernel/apparmor_restrict_unprivileged_unconfined")


def probe(*, refresh: bool = False) -> SandboxStatus:
    """Whether bubblewrap works here, found by running it once with the real flags. Remembered for
    the process, and a success for the machine (`_machine_key`): a bubblewrap, kernel, boot, user or
    user-namespace setting that differs, or a command that bubblewrap failed to set up
    (`forget_probe`), makes the next process run it again."""
    global _PROBE_RESULT
    with _PROBE_LOCK:
        if _PROBE_RESULT is None or refresh:
            bwrap = _bwrap_path()
            key = _machine_key(bwrap) if bwrap else None
            _PROBE_RESULT = None if refresh or key is None else _remembered(bwrap, key)
            if _PROBE_RESULT is None:
                _PROBE_RESULT = _probe()
                if key is not None:
                    _remember(_PROBE_RESULT, key)
        return _PROBE_RESULT


def _probe_cache_path() -> str | None:
    base = user_cache_dir()
    return os.path.join(base, PROBE_CACHE_NAME) if base else None


def _machine_key(bwrap: str) -> str | None:
    """Everything a probe's outcome depends on, as one string; None when it cannot be told."""
    import zlib

    real = os.path.realpath(bwrap)
    try:
        st = os.stat(real)
    except OSError:
        return None
    parts = [real, str(st.st_dev), str(st.st_ino), str(st.st_size), str(st.st_mtime_ns), str(st.st_ctime_ns),
             " ".join(os.uname()), str(os.geteuid()), str(os.getegid()), os.path.realpath(sys.executable)]
    for path in _PROBE_SYSCTLS:
        try:
            with open(path, encoding="ascii", errors="replace") as handle:
                parts.append(handle.read().strip())
        except OSError:
            parts.append("-")
    # The helper runs as part of every sandboxed command as root: a different helper is a different probe.
    parts.append(f"{len(confine.HELPER_SOURCE)}:{zlib.crc32(confine.HELPER_SOURCE.encode()):08x}")
    # And another gitbot probed with other code (it may not have looked for a feature this one uses).
    code = code_fingerprint(__file__)
    if code is None:
        return None
    parts.append(f"{code:08x}")
    return "\0".join(parts)


def _remembered(bwrap: str, key: str) -> SandboxStatus | None:
    path = _probe_cache_path()
    if path is None:
        return None
    import json

    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        if data.get("key") != key or data.get("bwrap") != bwrap:
            return None
        features = frozenset(f for f in data.get("features", ()) if f in ("size", "disable-userns"))
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return SandboxStatus(True, "bubblewrap works", bwrap, "", features)


def _remember(status: SandboxStatus, key: str) -> None:
    """Keep a success (only: a failure is probed again, so a fixed machine is seen at once)."""
    path = _probe_cache_path()
    if path is None:
        return
    if not status.available:
        forget_probe()
        return
    import json

    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump({"key": key, "bwrap": status.bwrap, "features": sorted(status.features)}, handle)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def forget_probe() -> None:
    """Bubblewrap failed to set up a command: the next process probes again."""
    path = _probe_cache_path()
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _probe() -> SandboxStatus:
    bwrap = _bwrap_path()
    if bwrap is None:
        return SandboxStatus(False, "bubblewrap (bwrap) is not installed", error="bwrap not found on PATH")
    features = _features(bwrap)
    trial = SandboxStatus(True, "", bwrap, features=features)
    # On disk rather than in /tmp where possible: as root the probe also id-maps the directory, which
    # tmpfs supports only since Linux 6.3, while repositories live on disk.
    scratch_parent = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="gitbot-probe-", dir=scratch_parent) as scratch:
        argv = wrap(["/bin/sh", "-c", "echo sandbox-ok > probe.txt"], scratch, network=False, status=trial)
        try:
            completed = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS,
                                       stdin=subprocess.DEVNULL, env=build_env(), check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return SandboxStatus(False, f"bubblewrap failed to start: {exc}", bwrap, str(exc), features)
        written = Path(scratch, "probe.txt")
        if completed.returncode != 0 or not written.exists():
            error = (completed.stderr or completed.stdout).strip() or f"exit status {completed.returncode}"
            if error.startswith(confine.FAILURE_PREFIX):
                return SandboxStatus(False, "gitbot runs as root, and giving sandboxed commands an unprivileged user "
                                     f"failed here ({error}); that needs id-mapped mounts (Linux 5.12 or later, a "
                                     "local file system): run gitbot as an ordinary user instead", bwrap, error,
                                     features)
            return SandboxStatus(False, f"bubblewrap does not work here: {error}", bwrap, error, features)
    return SandboxStatus(True, "bubblewrap works", bwrap, "", features)
