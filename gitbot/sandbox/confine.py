"""Fewer privileges for every command than gitbot has: never root on the host, never gitbot's parents'
environment.

- Sandboxed, as root (a root self-hosted runner, a container, a VM): bubblewrap in a user namespace
  would map host root to the sandbox's uid, so root's files (/etc/shadow, /proc/sys/kernel/core_pattern)
  would be the sandbox user's. Instead `unprivileged` starts bubblewrap as SANDBOX_HOST_UID, a uid no
  account uses, with the repository id-mapped so that uid can write it and what it writes is stored
  as root's (helper.py, mode "drop"). Where id-mapped mounts do not work (an old kernel, a file system
  without support), the probe fails and the sandbox counts as unavailable.
- Not sandboxed (mode "off", or "auto" without bubblewrap): `unsandboxed` puts the command in a
  Landlock domain, so it cannot read /proc/<pid>/environ of gitbot or the shell that started it (a CI
  step's API key), and as root drops every capability. Without Landlock that cannot be guaranteed:
  `environ_protection()` says so, the receipt says so, and the Action refuses to run unsandboxed.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path

from gitbot.sandbox.env import under
from gitbot.sandbox.scratch import process_directory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitbot.sandbox.processes import ProcessLimit

SANDBOX_HOST_UID = 2_000_000_000
# How the helper says it could not set something up (then the command did not start).
EXIT_FAILED = 125
FAILURE_PREFIX = "gitbot-sandbox:"
HELPER_SOURCE = (Path(__file__).with_name("helper.py")).read_text(encoding="utf-8")
# bubblewrap options whose first argument is a path on the host (the rest: destinations, names).
BIND_OPTIONS = frozenset({"--bind", "--ro-bind", "--dev-bind", "--bind-try", "--ro-bind-try", "--dev-bind-try"})
# How many arguments each bubblewrap option takes, to walk a command line without misreading one.
OPTION_ARITY = {**dict.fromkeys((*BIND_OPTIONS, "--symlink", "--setenv", "--chmod", "--file", "--bind-data",
                                  "--ro-bind-data", "--bind-fd", "--ro-bind-fd"), 2),
                **dict.fromkeys(("--size", "--tmpfs", "--dir", "--proc", "--dev", "--remount-ro", "--uid", "--gid",
                                 "--hostname", "--chdir", "--cap-drop", "--cap-add", "--perms", "--unsetenv",
                                 "--mqueue", "--seccomp", "--userns", "--pidns", "--args"), 1)}
_STAGE: str | None = None
_STAGE_LOCK = threading.Lock()


def helper_command(mode: str, spec: dict, limit: ProcessLimit | None = None) -> list[str]:
    """The helper's command line up to the command's argv (see helper.py for the arguments). `limit`:
    the command's process limit, which the helper then sets itself (run it with that limit)."""
    # The interpreter gitbot runs on, by its real path (a venv's python may sit in the repository),
    # isolated and without site: the helper needs only the standard library.
    python = os.path.realpath(sys.executable)
    fields = limit.helper_fields() if limit is not None else ["-", "-", "-"]
    if mode == "drop":
        fields += [str(spec["uid"]), spec["stage"], str(len(spec["idmap"]))]
        for source, name in spec["idmap"]:
            fields += [source, name]
        fields.append(str(len(spec["bind"])))
        for source, name, is_dir in spec["bind"]:
            fields += [source, name, "1" if is_dir else "0"]
    elif mode == "confine":
        fields.append("1" if spec.get("landlock") else "0")
    elif mode == "contain":
        fields += spec["fields"]
    return [python, "-I", "-S", "-c", HELPER_SOURCE, mode, *fields, "--"]


# ---------------------------------------------------------------------------------------------
# Sandboxed: never root on the host


def helper_arguments(argv: list[str]) -> list[str] | None:
    """The helper's own arguments (MODE SPEC... -- ARGV...) when `argv` is a helper command line
    (`helper_command`), else None."""
    if len(argv) > 5 and argv[1:4] == ["-I", "-S", "-c"] and argv[4] == HELPER_SOURCE:
        return argv[5:]
    return None


def stage_directory() -> str:
    """An empty directory the helper mounts its staging tmpfs on (in its own mount namespace only)."""
    global _STAGE
    with _STAGE_LOCK:
        if _STAGE is None or not os.path.isdir(_STAGE):
            # In /tmp whatever $TMPDIR is (the sandbox's uid reaches it); removed at exit, or by the next run.
            _STAGE = process_directory("stage", base="/tmp")
        return _STAGE


def real_path(path: str) -> str:
    """os.path.realpath, as the kernel resolves it (an O_PATH open): one call instead of an lstat per
    component, which every bind of every command paid."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return os.path.realpath(path)  # missing: resolved as far as it goes
    try:
        resolved = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)
    finally:
        os.close(fd)
    return resolved if resolved.startswith("/") and not resolved.endswith(" (deleted)") else os.path.realpath(path)


_REACHABLE: dict[str, bool] = {}


def reachable_by_others(path: str) -> bool:
    """Whether a uid with no relation to the file owners can reach `path` (search permission for
    "others" on every directory above it). Remembered per directory for the process: staging a path
    that became reachable still works, and one that stopped being reachable fails to bind, loudly."""
    parent = os.path.dirname(real_path(path))
    known = _REACHABLE.get(parent)
    if known is None:
        known = _REACHABLE[parent] = _reachable(parent)
    return known


def _reachable(parent: str) -> bool:
    while True:
        try:
            mode = os.stat(parent).st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
        if parent == "/":
            return True
        parent = os.path.dirname(parent)


def unprivileged(bwrap_argv: list[str], *, idmapped: list[str], limit: ProcessLimit | None = None) -> list[str]:
    """`bwrap_argv` as it must be started from this process: as it is for an ordinary user; as root,
    behind the helper that hands the sandbox an unprivileged host uid (see the module docstring).
    `idmapped`: the directories the sandbox writes (the repository) or git must own (git directories
    outside it)."""
    if os.geteuid() != 0:
        return bwrap_argv
    stage = stage_directory()
    roots = {real: _stage_name("i", real) for real in dict.fromkeys(real_path(path) for path in idmapped)}
    binds: dict[str, tuple[str, bool]] = {}
    rewritten = [bwrap_argv[0]]
    index = 1
    while index < len(bwrap_argv):
        option = bwrap_argv[index]
        if option == "--":
            rewritten += bwrap_argv[index:]
            break
        arity = OPTION_ARITY.get(option, 0)
        values = bwrap_argv[index + 1:index + 1 + arity]
        if option in BIND_OPTIONS:
            values = [_staged(values[0], roots, binds, stage), values[1]]
        rewritten += [option, *values]
        index += 1 + arity
    spec = {"uid": SANDBOX_HOST_UID, "stage": stage, "idmap": [[path, name] for path, name in roots.items()],
            "bind": [[path, name, is_dir] for path, (name, is_dir) in binds.items()]}
    return helper_command("drop", spec, limit) + rewritten


def _stage_name(kind: str, real: str) -> str:
    """The staging name of `real`: by its identity, so the launcher, which stages each source once for
    all its commands, mounts a path again once it names another file (helper.py `Stage`)."""
    st = os.stat(real)
    return f"{kind}-{st.st_dev:x}-{st.st_ino:x}"


def _staged(source: str, roots: dict[str, str], binds: dict[str, tuple[str, bool]], stage: str) -> str:
    real = real_path(source)
    for root, name in roots.items():
        if under(real, root):
            return os.path.join(stage, name, os.path.relpath(real, root)) if real != root else os.path.join(stage, name)
    if reachable_by_others(real):
        return source
    if real not in binds:
        try:
            binds[real] = (_stage_name("b", real), os.path.isdir(real))
        except OSError:
            return source  # nothing there to stage: bubblewrap says so, or skips it (a -try bind)
    return os.path.join(stage, binds[real][0])


# ---------------------------------------------------------------------------------------------
# Not sandboxed: not gitbot's parents' environment, no capabilities


_LANDLOCK: bool | None = None


def environ_protection() -> bool:
    """Whether commands run outside the sandbox can be kept from other processes' environ (Landlock
    works here). Probed once, by running the helper."""
    global _LANDLOCK
    if _LANDLOCK is None:
        import subprocess

        try:
            completed = subprocess.run(helper_command("probe", {}), capture_output=True, text=True, timeout=20,
                                       stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"}, check=False)
            _LANDLOCK = completed.stdout.strip() == "landlock"
        except (OSError, subprocess.TimeoutExpired):
            _LANDLOCK = False
    return _LANDLOCK


def unsandboxed(argv: list[str], limit: ProcessLimit | None = None) -> list[str]:
    """`argv` behind the helper that confines a command run without the sandbox."""
    return helper_command("confine", {"landlock": environ_protection()}, limit) + list(argv)
