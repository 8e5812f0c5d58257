"""Confinement without namespaces, for containers where bubblewrap cannot start (a GitLab runner's
Docker job, a CI container with user namespaces off).

Bubblewrap needs a user namespace. Where it cannot create one, a command still gets, with no
namespace at all (helper.py's mode "contain"):

- **Landlock** (Linux 5.13+): it may read only the system directories, the toolchain, the repository
  and /proc, write only the repository (not its `.git`, not the protected paths, not the files
  `read_deny` matches, which it cannot read either) and a fresh $HOME and $TMPDIR, and (Landlock ABI 4+)
  bind or connect no TCP port; a process in the domain cannot read another's memory or environment
  outside it (gitbot's, its parents') and (ABI 6+) cannot signal them or reach their abstract sockets;
- **seccomp**: no socket but netlink (so no network and no container engine's unix socket) unless the
  policy allows the network, and none of the calls that reach other processes or the kernel's
  namespaces and mounts;
- **no new privileges**, and as root no capabilities.

Landlock grants by hierarchy and cannot carve a subtree out of a grant. So a directory that holds
something a command must not write (the repository's root holds `.git` and `.gitbot`) gets no
directory-wide write right: its files are writable one by one, its other subdirectories whole, and
no entry can be created, removed or renamed in it. In the repository's root a command cannot make or
delete a file (the file tools can). A directory holding something it must not read lists its names,
and its other entries are readable one by one.

What this gives less than bubblewrap, the policy treats as unsandboxed: the command judge keeps its
allow-list (git's history is not filtered, and the rest of the host's processes are visible in /proc).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from gitbot.sandbox import confine, mounts
from gitbot.sandbox.env import under
from gitbot.sandbox.toolchain import SYSTEM_DIRS, ToolchainView

# Devices a command may open for reading and writing; the rest of /dev only lists.
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
# Directories of /dev that are per-container and needed by ordinary programs (POSIX semaphores).
DEVICE_DIRECTORIES = ("/dev/shm",)
PROBE_TIMEOUT_SECONDS = 20


@dataclass
class Grants:
    """What one command may touch: (kind, real absolute path) pairs for helper.py's "contain" mode."""

    network: bool
    rules: list[tuple[str, str]] = field(default_factory=list)

    def add(self, kind: str, paths: Iterable[str]) -> None:
        self.rules.extend((kind, path) for path in paths)

    def helper_fields(self) -> list[str]:
        fields = ["1" if self.network else "0"]
        for kind in "rwfld":
            paths = [path for rule_kind, path in self.rules if rule_kind == kind]
            if paths:
                fields += [kind, str(len(paths)), *paths]
        return fields


def beneath(path: str, kind: str, excluded: set[str]) -> Iterator[tuple[str, str]]:
    """Rules granting `kind` ("r" read, "w" write) on everything under the directory `path` except the
    `excluded` real paths (and what is under them). Where an excluded path lies below, the directory
    gets no directory-wide right (for reading: listing only), its files one rule each, its other
    subdirectories recursively the same. Symbolic links get nothing: a rule on one would be a rule on
    whatever it points to."""
    if path in excluded:
        return
    if not any(under(hidden, path) for hidden in excluded):
        yield kind, path
        return
    if kind == "r":
        yield "l", path
    try:
        entries = list(os.scandir(path))
    except OSError:
        return  # what cannot be listed gets nothing
    for entry in entries:
        if entry.path in excluded or entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            yield from beneath(entry.path, kind, excluded)
        elif entry.is_file(follow_symlinks=False):
            yield ("r" if kind == "r" else "f"), entry.path


def grants(*, repo: str, home: str, tmpdir: str, toolchain: ToolchainView, network: bool,
           unreadable: Iterable[str], read_only: Iterable[str], git_dirs: Iterable[str]) -> Grants:
    """The grants of one command run in `repo` (real path). `unreadable`: repository-relative paths it
    may neither read nor write (the files read_deny matches, directories gitbot cannot look into);
    `read_only`: repository-relative paths it may read but not change (`.git`, the protected paths,
    whether they exist or not); `git_dirs`: the repository's git directories (readable, their
    `gitbot/` store hidden)."""
    result = Grants(network)
    system = [os.path.realpath(directory) for directory in SYSTEM_DIRS if os.path.isdir(directory)]
    result.add("r", dict.fromkeys(system))
    result.add("r", ["/proc"])
    result.add("l", ["/dev"])
    result.add("d", [device for device in DEVICES if os.path.exists(device)])
    result.add("w", [directory for directory in DEVICE_DIRECTORIES if os.path.isdir(directory)])
    masked = {os.path.realpath(path) for path in (*toolchain.masked, *toolchain.masked_dirs)}
    for mount in toolchain.mounts:
        source = os.path.realpath(mount.source)
        if os.path.isdir(source):
            result.rules.extend(beneath(source, "r", masked))
        elif os.path.isfile(source) and source not in masked:
            result.add("r", [source])
    hidden = {os.path.join(repo, relative) for relative in unreadable}
    stores = {os.path.join(directory, "gitbot") for directory in git_dirs}
    for directory in dict.fromkeys(git_dirs):
        if not under(directory, repo):
            result.rules.extend(beneath(directory, "r", stores))
    result.rules.extend(beneath(repo, "r", hidden | stores))
    fixed = {os.path.join(repo, relative) for relative in read_only} | hidden | stores
    result.rules.extend(beneath(repo, "w", fixed))
    result.add("w", [home, tmpdir])
    return result


def credentials_readable(repo) -> bool:
    """Whether the repository's git config holds something bubblewrap would hide (a token in a URL, an
    extraheader, a credential helper, an include): under this confinement a command can read it."""
    from gitbot.sandbox.gitconfig import sanitized_copy

    _, common = mounts.git_directories(os.path.realpath(repo))
    return common is not None and sanitized_copy(os.path.join(common, "config")) is not None


def wrap(argv: list[str], grants: Grants, limit=None) -> list[str]:
    return confine.helper_command("contain", {"fields": grants.helper_fields()}, limit) + list(argv)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: none)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return max(libc.syscall(444, None, 0, 1), 0)  # landlock_create_ruleset(NULL, 0, VERSION)


_WORKS: tuple[bool, str] | None = None


def probe() -> tuple[bool, str]:
    """(whether a command can be confined here, why not): runs `true` confined once per process."""
    global _WORKS
    if not confine.environ_protection():
        return False, "this kernel has no Landlock"
    if _WORKS is None:
        scratch = tempfile.mkdtemp(prefix="gitbot-contain-probe-")
        try:
            spec = Grants(network=False)
            spec.add("r", [os.path.realpath(d) for d in SYSTEM_DIRS if os.path.isdir(d)])
            spec.add("w", [scratch])
            completed = subprocess.run(wrap(["true"], spec), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                       env={"PATH": "/usr/bin:/bin"}, timeout=PROBE_TIMEOUT_SECONDS, check=False)
            if completed.returncode == 0:
                _WORKS = (True, "")
            else:
                why = completed.stderr.strip().removeprefix(confine.FAILURE_PREFIX).strip()
                _WORKS = (False, why or f"the confined probe exited {completed.returncode}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            _WORKS = (False, f"the confined probe could not run: {exc}")
        finally:
            os.rmdir(scratch)
    return _WORKS
