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
`.gitbot/` and AGENTS.md always) cannot be created, replaced, renamed or moved aside: an existing one
is a read-only mount point (a mount point cannot be renamed or removed), and so is each directory
between it and the repository root (bound onto itself), so no parent can be renamed away either. One
that does not exist gets an empty read-only placeholder at its first missing component, which
bubblewrap creates in the repository as the mount point; the runner removes it when the command is
done (`placeholders`).
"""

from __future__ import annotations

import os
import stat

from gitbot import pids
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
    """The first component of repo/relative that does not exist (where a placeholder goes), or None
    when the whole path exists. A symlink on the way counts as existing (it is not followed)."""
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


def protected_arguments(repo: str, directories, files, features: frozenset[str], *, kept=(),
                        held=()) -> list[str]:
    """Read-only mounts (or placeholders) for protected directories and files, their parents pinned.

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
        missing = first_missing(repo, relative)
        if missing is None:
            if os.path.islink(target) or os.path.realpath(target) != target:
                # A bind would follow the link: pin what it leads to when that is inside the repository
                # (the link itself no mount can pin; the runner puts it back if a command replaces it), and
                # the directories above the link, so that none is swapped for a symlink leading elsewhere.
                pin_parents(relative)
                real = os.path.realpath(target)
                inside = _clean_relative(repo, real) if under(real, repo) else None
                if kind != "kept" and inside and (os.path.isfile(real) or os.path.isdir(real)):
                    pin_parents(inside)
                    bind_read_only(real, real)
                continue
            pin_parents(relative)
            if kind == "kept" or kind == "dir" and os.path.isdir(target) or kind == "file" and os.path.isfile(target):
                bind_read_only(target, target)
            continue
        if kind == "kept":
            continue  # gone already: nothing left to keep
        if covered(missing):
            continue  # inside a read-only directory: nothing can be made there, and no mount point either
        blocker = os.path.dirname(missing)
        if blocker != repo and not os.path.isdir(blocker):
            # A file stands where a directory on the way must be (no mount point can go below it): pin the
            # file instead, so that no command can swap it for the directory and write there.
            if os.path.isfile(blocker) and not os.path.islink(blocker):
                pin_parents(os.path.relpath(blocker, repo))
                bind_read_only(blocker, blocker)
            continue
        pin_parents(os.path.relpath(missing, repo))
        if missing == target and kind == "file":
            bind_read_only("/dev/null", target)
        else:
            args += tmpfs(missing, SMALL_SIZE_BYTES, features) + ["--remount-ro", missing]
            read_only.append(missing)
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


def placeholders(repo: str, protected) -> list[str]:
    """The paths `protected_arguments` makes bubblewrap create in the repository for the `protected`
    directories and files (mount points for placeholders), to remove after the command when they were
    not there before."""
    found = []
    for path in protected:
        relative = _clean_relative(repo, path)
        missing = first_missing(repo, relative) if relative else None
        if missing is not None:
            found.append(missing)
    return sorted(set(found))


PLACEHOLDER_RECORDS = "sandbox-placeholders"  # in the git directory's gitbot/ store (hidden from commands)


def _records_dir(repo: str) -> str | None:
    from gitbot.sandbox.mounts import git_directories

    git_dir, _common = git_directories(repo)
    return os.path.join(git_dir, "gitbot", PLACEHOLDER_RECORDS) if git_dir else None


def record_placeholders(repo: str, paths: list[str]) -> str | None:
    """Note the placeholders a command is about to get, so that they are removed even if gitbot is
    killed before the command ends (`remove_stale_placeholders`, on the next start). Returns the note."""
    directory = _records_dir(repo) if paths else None
    if directory is None:
        return None
    import json

    try:
        os.makedirs(directory, exist_ok=True)
        note = os.path.join(directory, f"{os.getpid()}.json")
        with open(note, "w", encoding="utf-8") as handle:
            json.dump(paths, handle)
        return note
    except OSError:
        return None


def remove_stale_placeholders(repo: str) -> None:
    """Remove placeholders that commands of a gitbot process that no longer runs left behind."""
    import json

    directory = _records_dir(repo)
    try:
        notes = os.listdir(directory) if directory else []
    except OSError:
        return
    for name in notes:
        pid = name.removesuffix(".json")
        if not pid.isdigit() or (int(pid) != os.getpid() and pids.alive(int(pid))):
            continue
        note = os.path.join(directory, name)
        try:
            with open(note, encoding="utf-8") as handle:
                paths = [p for p in json.load(handle) if isinstance(p, str) and under(p, repo)]
        except (OSError, ValueError):
            paths = []
        remove_placeholders(paths)
        finished(note)


def finished(note: str | None) -> None:
    if note is not None:
        try:
            os.unlink(note)
        except OSError:
            pass


def remove_placeholders(paths: list[str]) -> None:
    """Remove placeholder mount points bubblewrap left in the repository: only an empty directory or
    an empty regular file, so nothing anyone wrote is ever removed."""
    for path in paths:
        try:
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode):
                os.rmdir(path)  # fails unless empty
            elif stat.S_ISREG(st.st_mode) and st.st_size == 0:
                os.unlink(path)
        except OSError:
            continue
