"""What the sandbox's file system holds: the bubblewrap arguments for everything but the namespaces.

Inside, the root is empty and read-only except for what is put there:

- the system (SYSTEM_DIRS: /usr, /etc, /bin, /lib*, /sys, /nix, /snap), read-only, and a fresh /proc
  whose /proc/sys (and sysrq-trigger, irq, bus) are read-only;
- a fresh /tmp, /var/tmp and /run, and an empty $HOME at the real home's path;
- the user's toolchain (toolchain.py), read-only, with credential files in it masked;
- the repository, writable, with its git directories read-only (mounts.py), the protected paths below
  read-only, and files the policy's read_deny matches shown empty (bwrap.py).

So host paths outside the repository, the toolchain and the system directories are not there at all:
another user's home, /root, /opt, /srv, /var (a self-hosted runner's `.credentials` and `_work/_temp`,
docker's state), /run's sockets.

Protected paths (the policy's `dir/**` edit_deny directories, in-repository toolchain directories,
`.gitbot/` and AGENTS.md always) cannot be replaced, renamed or moved aside: an existing one is a
read-only mount point (a mount point cannot be renamed or removed), and so is each directory between it
and the repository root (bound onto itself), so no parent can be renamed away either. One that does not
exist gets no mount, and nothing is made in the repository for it (a mount point there would change the
user's tree around every command): a command can create it, and the runner sets aside what it made right
after the command (created.py).
"""

from __future__ import annotations

import os
import stat

from gitbot.sandbox.env import under
from gitbot.sandbox.toolchain import CREDENTIAL_FILES, SYSTEM_DIRS, ToolchainView

# Size caps for the sandbox's memory-backed directories (only with a bwrap that supports --size).
TMP_SIZE_BYTES = 1 << 30
HOME_SIZE_BYTES = 256 << 20
SMALL_SIZE_BYTES = 1 << 20
# Parts of /proc that change the host (sysctls, sysrq): read-only inside, whoever the user is.
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
# Paths inside every repository that only the user may change: the policy and instruction files.
ALWAYS_PROTECTED_DIRS = (".gitbot",)
ALWAYS_PROTECTED_FILES = ("AGENTS.md",)


def tmpfs(path: str, size: int, features: frozenset[str]) -> list[str]:
    return (["--size", str(size)] if "size" in features else []) + ["--tmpfs", path]


def system_arguments(*, network: bool, empty: str) -> list[str]:
    """`empty`: an empty regular file, shown instead of /etc's credential files."""
    args: list[str] = []
    for directory in SYSTEM_DIRS:
        kind = _kind(directory)  # (one lstat: this runs for every command)
        if kind == stat.S_IFLNK:
            args += ["--symlink", os.readlink(directory), directory]
        elif kind == stat.S_IFDIR:
            args += ["--ro-bind", directory, directory]
    args += etc_credential_masks(empty)
    args += ["--dev", "/dev", "--proc", "/proc"]
    for path in PROC_READ_ONLY:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    if network:
        # Name resolution may need /etc/resolv.conf, which often points into /run (systemd-resolved's
        # stub-resolv.conf): put back that one file, not its directory (which holds a socket).
        resolv = os.path.realpath("/etc/resolv.conf")
        if not any(under(resolv, d) for d in SYSTEM_DIRS) and os.path.isfile(resolv):
            args += ["--ro-bind", resolv, resolv]
    return args


def etc_credential_masks(empty: str) -> list[str]:
    """/etc is bound whole, but CI images keep registry tokens there (`/etc/pip.conf`'s index-url with a
    password, `/etc/npmrc`'s _authToken, /etc/netrc): those are shown empty (not /dev/null, which cannot be
    read on the sandbox's nodev mounts, and a config a tool cannot read can stop it). A certificate
    setting there is lost with them; the sandbox's own config can set it again."""
    args: list[str] = []
    try:
        # One listing instead of an lstat per name: most of these are not there.
        present = sorted(CREDENTIAL_FILES.intersection(os.listdir("/etc")))
    except OSError:
        present = sorted(CREDENTIAL_FILES)
    for path in (*(os.path.join("/etc", name) for name in present), "/etc/xdg/pip/pip.conf"):
        if os.path.islink(path):
            # masked where it leads, if that is shown at all (a mount follows the link)
            path = os.path.realpath(path)
            if not any(under(path, directory) for directory in SYSTEM_DIRS):
                continue
        if os.path.isdir(path):
            args += ["--tmpfs", path]
        elif os.path.exists(path):
            args += ["--ro-bind", empty, path]
    return args


def _kind(path: str) -> int | None:
    """The file type of `path` itself (stat.S_IFLNK for a symlink), or None when there is nothing."""
    try:
        return stat.S_IFMT(os.lstat(path).st_mode)
    except OSError:
        return None


def scratch_arguments(home: str, repo: str, features: frozenset[str]) -> tuple[list[str], list[str]]:
    """Fresh /tmp, /var/tmp, /run and an empty home. Returns (args, the directories they cover)."""
    args = tmpfs("/tmp", TMP_SIZE_BYTES, features) + tmpfs("/var/tmp", TMP_SIZE_BYTES, features)
    args += tmpfs("/run", SMALL_SIZE_BYTES, features)
    covered = ["/tmp", "/var/tmp", "/run", "/var/run"]
    if home not in ("/", "") and not under(home, repo):
        args += tmpfs(home, HOME_SIZE_BYTES, features)
        covered.append(home)
    return args, covered


def toolchain_arguments(view: ToolchainView) -> list[str]:
    args: list[str] = []
    for mount in view.mounts:
        args += ["--symlink", mount.source, mount.dest] if mount.link else ["--ro-bind", mount.source, mount.dest]
    return args


def credential_masks(view: ToolchainView, features: frozenset[str]) -> list[str]:
    args: list[str] = []
    for directory in view.masked_dirs:
        args += tmpfs(directory, SMALL_SIZE_BYTES, features) + ["--remount-ro", directory]
    for path in view.masked:
        args += ["--ro-bind", "/dev/null", path]
    return args


# ---------------------------------------------------------------------------------------------
# Protected paths in the repository


def first_missing(repo: str, relative: str) -> str | None:
    """The first component of repo/relative that does not exist, or None when the whole path exists
    (a symlink itself counts as existing; `created.watch` follows it)."""
    path = repo
    for part in relative.split("/"):
        path = os.path.join(path, part)
        if not os.path.lexists(path):
            return path
    return None


def _clean_relative(repo: str, path: str | os.PathLike) -> str | None:
    text = os.fspath(path)
    absolute = text if os.path.isabs(text) else os.path.join(repo, text)
    normal = os.path.normpath(absolute)
    if not under(normal, repo) or normal == repo:
        return None
    relative = normal[len(repo.rstrip("/")) + 1:]  # (os.path.relpath, for a path under a real `repo`)
    if relative.split("/", 1)[0] == ".git":
        return None
    return relative


def protected_arguments(repo: str, directories, files, *, kept=(), held=()) -> list[str]:
    """Read-only mounts for the protected directories and files that exist, their parents pinned.

    `kept`: paths that must survive every command (what no restore can bring back): read-only and
    pinned where they exist, nothing where they do not. `held`: files masked later (read_deny), whose
    parents are pinned so that no command can move them away with their directory.

    One pass, outer paths first, and nothing is mounted at or above a path already made read-only:
    a later bind of a parent takes its contents from the host and would hide the mounts inside it."""
    args: list[str] = []
    pinned: set[str] = set()
    read_only: list[str] = []  # mounted read-only here: nothing at or below them needs a mount or a pin

    def covered(path: str) -> bool:
        return any(under(path, done) for done in read_only)

    def pin_parents(relative: str) -> None:
        path = repo
        for part in relative.split("/")[:-1]:
            path = os.path.join(path, part)
            if covered(path):
                return  # a writable pin here would undo it (a nested .git inside a protected directory)
            if path in pinned:
                continue  # pinned for another path; the ones below it may not be
            if os.path.islink(path) or not os.path.isdir(path):
                return
            pinned.add(path)
            args.extend(["--bind", path, path])

    def bind_read_only(source: str, target: str) -> None:
        if not covered(target):
            args.extend(["--ro-bind", source, target])
            read_only.append(target)

    entries = [(rel, "dir") for rel in dict.fromkeys(filter(None, (_clean_relative(repo, d) for d in directories)))]
    entries += [(rel, "file") for rel in dict.fromkeys(filter(None, (_clean_relative(repo, f) for f in files)))]
    entries += [(rel, "kept") for rel in dict.fromkeys(filter(None, (_clean_relative(repo, k) for k in kept)))]
    entries += [(rel, "held") for rel in dict.fromkeys(filter(None, (_clean_relative(repo, h) for h in held)))]
    for relative, kind in sorted(entries, key=lambda item: item[0].count("/")):
        target = os.path.join(repo, relative)
        if covered(target):
            continue  # inside a read-only mount already
        if kind == "held":
            pin_parents(relative)
            continue
        if first_missing(repo, relative) is not None:
            continue  # missing: no mount, and no mount point made for it (created.py undoes what a command makes)
        if os.path.islink(target) or os.path.realpath(target) != target:
            # A bind would follow the link: pin what it leads to when that is inside the repository
            # (the link itself no mount can pin; the runner puts it back if a command replaces it), and
            # the directories above the link, so that none is swapped for a symlink leading elsewhere.
            pin_parents(relative)
            real = os.path.realpath(target)
            inside = _clean_relative(repo, real) if under(real, repo) else None
            if kind != "kept" and inside and os.path.exists(real):
                pin_parents(inside)
                bind_read_only(real, real)
            continue
        pin_parents(relative)
        # Whatever its kind: a protected directory's name held by a file (or a file's by a directory) would
        # otherwise be replaced by the protected thing itself.
        bind_read_only(target, target)
    return args


MAX_KEPT_MOUNTS = 200


def fewer_mounts(paths, limit: int = MAX_KEPT_MOUNTS) -> list[str]:
    """`paths` (relative to the repository) as at most about `limit` paths to keep read-only: where there
    are more, the directory holding the most of them stands in for them (it is kept read-only whole)."""
    kept = sorted(set(paths))
    while len(kept) > limit:
        parents: dict[str, int] = {}
        for path in kept:
            parent = path.rpartition("/")[0]
            if parent:
                parents[parent] = parents.get(parent, 0) + 1
        if not parents:
            break  # all at the top: one mount each
        busiest = max(parents, key=lambda parent: (parents[parent], parent.count("/")))
        kept = sorted({p for p in kept if not under(p, busiest)} | {busiest})
    return kept
