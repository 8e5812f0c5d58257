"""Files the policy does not let the agent read, found in the work tree so the sandbox can hide them.

Every command needs the list, and walking a tree the size of Linux (78,000 files) costs more than a
`git status`, so `DeniedFiles` keeps an index instead: per directory, its change stamp (device,
inode, ctime, mtime), its subdirectories and its files read_deny matches. Creating, removing or
renaming an entry changes its directory's ctime, and no process can set a ctime back (`touch -d`
sets the mtime and moves the ctime forward), so each call lstat()s every directory and reads again
only those whose stamp moved: a denied file created since the last call, by a command, a file tool
or anyone else, is found, and one in a directory renamed into place too (its new parent changed,
and a directory the index has not seen is read whole). A directory whose ctime lies within
RACY_SECONDS before the walk began is read again on the next call as well: file system clocks tick
coarsely, and a change in the same tick as the listing would leave the stamp as it was (git's
"racy" entries). So the index is exactly as strict as listing the whole tree for every command.
The stamps come first, in one pass over the directories the last walk went through: when none
moved, the walk would go the same way and read nothing, so the index stands (on git/git that is
~230 lstat() calls); a directory read again takes the decisions for the names its last listing
held (a decision depends only on the path), so only new names are matched.
A directory the walk cannot look into (a command running as gitbot's user can take away the permission
to list or enter one and give it back in the next command; a path can be deeper than the system can
name) is reported in `unreadable`, and the sandbox shows it empty and read-only.

The index is kept in the git directory's gitbot store (which commands cannot see, and .git is
read-only to them), so the next gitbot process (a hook, fix-check, a resumed run) starts from it;
a store written for other rules or another work tree is not used.

Not covered: content in git's object store (`git show HEAD:.env`, `git log -p`) cannot be masked
this way; the command judge and output redaction have to cover that.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time

from gitbot.gitmeta import GIT_DIR_MEMBERS, GIT_ENTRY, looks_like_git_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from gitbot.policy import Policy

# The longest path the system can name, with its terminating NUL (Linux's PATH_MAX).
PATH_MAX_BYTES = 4096
# More files the read_deny rules match than this: refuse the command instead of running it unmasked.
MAX_MASKED_FILES = 2000
# More entries than this below the directory a user's `.docker -> dockercfg` leads to: it is hidden whole
# rather than listed again each time the tree changes (see `_through_links`).
MAX_LINKED_ENTRIES = 5000
# A directory changed less than this long before a walk began is read again on the next walk: the
# coarsest timestamps in use (1 s on ext4 with small inodes, 2 s on FAT) and clock ticks fit in it.
RACY_SECONDS = 2.5
STORE_NAME = "read-deny-index.json"  # in <git dir>/gitbot/
_STORE_VERSION = 5  # 2: a `.git` below the root is walked; 3: git metadata below the root is noted; 4: denied-name links;
# 5: links above denied names, FIFOs and sockets at denied names


_GIT_NAMES = frozenset((GIT_ENTRY, *GIT_DIR_MEMBERS))  # the names `looks_like_git_dir` and the `.git` check ask about


class SandboxRefusal(Exception):
    """The sandbox cannot be built safely for this command; the message says why."""


class _Directory:
    __slots__ = ("children", "decided", "denied", "git", "links", "pipes", "stamp", "subdirs", "unreadable")

    def __init__(self, stamp: tuple[int, int, int, int] | None, subdirs: list[str], denied: list[str],
                 unreadable: bool = False, git: list[str] | None = None, decided: dict[str, bool] | None = None,
                 links: list[list[str]] | None = None, pipes: list[list] | None = None):
        self.stamp = stamp  # None: read it again on the next walk
        self.subdirs = subdirs
        self.denied = denied
        # Git metadata seen in the listing (gitmeta.py): a `.git` entry in it, or the directory itself
        # when it is shaped like a git directory. Noted by the same walk, so finding it costs nothing more.
        self.git = git or []
        # Symlinks at names read_deny matches, as [relative, target]: not hidden (a link is judged by where it
        # leads), but one a command makes is undone (planted.py): the host would write a secret through it.
        # So are symlinks at a directory a rule names on the way to a denied file (`.docker` for
        # `**/.docker/config.json`): the host's `docker login` would write the token through it.
        self.links = links or []
        # FIFOs and sockets at denied names, as [relative, inode]: the host's write of a secret there would
        # wait for a command to read it; one a command makes is undone too (planted.py).
        self.pipes = pipes or []
        self.unreadable = unreadable  # not wholly listed (then stamp is None: looked at again each walk)
        self.children: list[tuple[str, str]] | None = None  # (relative, absolute) of the subdirectories
        # The read_deny decision for each file name of the listing, kept once a directory is read a second
        # time (the directory a command wrote in is, after that command): a decision depends only
        # on the path and the rules, so a name listed again is not matched again. None on the first read,
        # so a first walk of a large tree keeps no name it will not need.
        self.decided = decided


class DeniedFiles:
    """The regular files, FIFOs and sockets under `root` (hidden and gitignored ones too; no symlink followed,
    the root's `.git` not entered) whose repository-relative path `policy` does not let the agent read, and
    those a rule denies by a name through a user's symlink above them (`_through_links`).

    `store`: keep the index in the repository's git directory between processes."""

    def __init__(self, root: str | os.PathLike, policy: Policy, *, store: bool = True):
        self.root = os.path.realpath(root)
        self.rules, self._denied = _matcher(policy)
        self._shelters = _shelter_matcher(policy)
        self._dirs: dict[str, _Directory] = {}
        self._store_path = _store_path(self.root) if store and self.rules is not None else None
        self._loaded = False
        # Directories the last walk could not look into (no permission, a path too long to name):
        # what they hold is unknown, so the sandbox hides each whole (repository-relative, "" the root).
        self.unreadable: list[str] = []
        # Git metadata below the root as of the last walk (repository-relative): `.git` entries and
        # directories shaped like git directories (sandbox/planted.py, mounts.py).
        self.git_metadata: list[str] = []
        # Other names of denied files that have more than one (hard links), as of the last walk: hidden
        # too, since read_deny judges names and a link under another name shows the same content.
        self.hard_links: dict[str, str] = {}  # other name -> the denied name it shares a file with
        # Symlinks at denied names, as of the last walk (see _Directory.links): relative -> target.
        self.denied_links: dict[str, str] = {}
        # FIFOs and sockets at denied names, as of the last walk (see _Directory.pipes): relative -> inode.
        self.denied_pipes: dict[str, int] = {}
        self._found: list[str] = []  # the denied files as of the last walk (without their other names)
        # The last walk's directories (absolute paths, in the order it went) and their stamps (None: read it
        # again): what the next walk compares first.
        self._order: list[str] = []
        self._stamps: list[tuple[int, int, int, int] | None] = []

    @property
    def directories(self):
        """The directories (repository-relative, "" the root) as of the last walk: a mapping the next walk
        replaces rather than changes, so a caller may keep it to compare with the walk after."""
        return self._dirs

    def current(self) -> list[str]:
        """The denied files now (repository-relative paths); `unreadable` says what else to hide.
        Raises SandboxRefusal when there are more than MAX_MASKED_FILES."""
        if not self._loaded:
            self._loaded = True
            self._dirs = self._load()
        walk_began = time.time_ns()
        racy_after = walk_began - int(RACY_SECONDS * 1e9)
        # First every directory the last walk went through, in one pass: when each is the same directory
        # with the same stamp, the walk below would read none of them and go exactly the same way (each
        # one's subdirectories are as listed), so the index stands as it is; when those that moved, read
        # again, hold the same subdirectories, it would go the same way too and read just those. Otherwise
        # the walk takes up these lstat() results (made after it began, like its own) and these listings.
        taken: dict[str, os.stat_result] = {}
        fresh: dict[str, _Directory] = {}
        if self._order:
            try:
                stats = list(map(os.lstat, self._order))
            except OSError:
                stats = []  # one is gone or out of reach: the walk finds which
            if stats:
                now = [(st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns) if stat.S_ISDIR(st.st_mode) else False
                       for st in stats]
                if now == self._stamps or self._same_way(now, racy_after, fresh):
                    return self._result()
                taken = dict(zip(self._order, stats))
        old, new = self._dirs, {}
        changed = len(old) == 0
        root = self.root
        stack = [("", root)]
        order: list[str] = []
        pop, extend, lstat, is_dir, known, early = stack.pop, stack.extend, os.lstat, stat.S_ISDIR, old.get, taken.pop
        unreadable = set()
        while stack:
            relative, absolute = pop()
            try:
                st = early(absolute, None) or lstat(absolute)
            except (FileNotFoundError, NotADirectoryError):
                changed = True
                continue  # gone since its parent was listed
            except OSError:
                # Listed in its parent, yet not reachable (a path longer than the system can name, a
                # parent that can be listed but not entered): a command could still reach it, relatively.
                changed = True
                unreadable.add(relative.rpartition("/")[0])
                continue
            if not is_dir(st.st_mode):
                changed = True
                continue
            stamp = (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns)
            entry = known(relative)
            if relative in fresh:  # read just now, from this stamp
                was, entry = entry, fresh.pop(relative)
                changed = changed or _holds_other(was, entry)
            elif entry is None or entry.stamp != stamp:
                was, entry = entry, self._read(relative, stamp if st.st_ctime_ns < racy_after else None, entry)
                # The stored copy is rewritten only when what a directory holds changed: a stamp alone
                # (a file made and removed) only costs the next process one listing.
                changed = changed or was is None or _holds_other(was, entry)
            new[relative] = entry
            order.append(absolute)
            if entry.unreadable:
                unreadable.add(relative)
            if entry.subdirs:
                children = entry.children
                if children is None:
                    prefix = f"{relative}/" if relative else ""
                    children = entry.children = [(prefix + name, f"{absolute}/{name}") for name in entry.subdirs]
                extend(children)
        # A directory to read again on the next walk (stamp None) never compares equal there.
        self._order, self._stamps = order, [entry.stamp for entry in new.values()]
        self._walked(new, changed or len(new) != len(old), sorted(unreadable))
        return self._result()

    def _same_way(self, now: list, racy_after: int, fresh: dict[str, _Directory]) -> bool:
        """Read again the directories whose stamp is not `now`'s (`fresh` gets them); when each still holds
        the subdirectories it held and can be read whole, bring the index up to date (True): the walk would
        go the way the last one did and read exactly these."""
        if self.unreadable:
            return False  # (one may stand for a subdirectory out of reach, which only the walk looks at again)
        old, stamps = self._dirs, list(self._stamps)
        relatives = list(old)  # (the last walk's order: the mapping was filled as it went)
        changed = False
        for position, stamp in enumerate(now):
            if stamp == stamps[position]:
                continue
            if stamp is False:
                return False  # not a directory now
            relative = relatives[position]
            was = old[relative]
            entry = fresh[relative] = self._read(relative, stamp if stamp[2] < racy_after else None, was)
            if entry.unreadable or was.unreadable or entry.subdirs != was.subdirs:
                return False
            entry.children = was.children
            stamps[position] = entry.stamp
            changed = changed or _holds_other(was, entry)
        new = dict(old)  # (a new mapping: a caller may hold the last one, see `directories`)
        new.update(fresh)
        self._stamps = stamps
        self._walked(new, changed, [])
        return True

    def _walked(self, new: dict[str, _Directory], changed: bool, unreadable: list[str]) -> None:
        self._dirs = new
        if changed:
            self._save()
        self._found = [path for entry in new.values() if entry.denied for path in entry.denied]
        self.unreadable = unreadable
        self.git_metadata = sorted(path for entry in new.values() if entry.git for path in entry.git)
        self.denied_links = {path: target for entry in new.values() if entry.links for path, target in entry.links}
        self.denied_pipes = {path: inode for entry in new.values() if entry.pipes for path, inode in entry.pipes}
        # A FIFO or socket at a denied name is hidden too: the user's (a secrets manager may serve `.env` as
        # a FIFO) would hand the secret to a command's `cat .env`.
        self._found += self.denied_pipes
        self._through_links()
        self.hard_links = self._other_names(self._found)

    def _result(self) -> list[str]:
        found = self._found + sorted(self.hard_links)
        if len(found) + len(self.unreadable) > MAX_MASKED_FILES:
            raise SandboxRefusal(
                f"more than {MAX_MASKED_FILES} files in the repository match files.read_deny; the sandbox "
                f"hides each one and will not run a command with that many (narrow the read_deny rules or "
                f"remove the files)")
        return found

    def _through_links(self) -> None:
        """Add what a rule denies by a name through a user's symlink above it (`dockercfg/config.json`, reached
        as `.docker/config.json` through `.docker -> dockercfg`, for `**/.docker/config.json`), by real paths:
        files to hide, and symlinks, FIFOs and sockets to note (a command's is set aside, planted.py: the
        host's write through `.docker` would go on through them). A link above a denied name a command makes
        is set aside itself. The walk follows no symlink, so the directory a link leads to (inside the
        repository) is listed here, each time the tree changed: a large one is hidden whole instead (noted
        in `unreadable`)."""
        found: list[str] = []
        for relative in list(self.denied_links):
            if self._denied(relative):
                continue  # a link at a denied name: judged by where it leads
            real = os.path.realpath(f"{self.root}/{relative}")
            if not (real == self.root or real.startswith(f"{self.root}/")) or not os.path.isdir(real):
                continue  # outside the repository (not shown to commands), dangling, or no directory
            target = real[len(self.root) + 1:]
            if target.partition("/")[0] == GIT_ENTRY:
                continue  # the git directory: not walked, commands only read it (mounts.py)
            prefix = f"{target}/" if target else ""
            listed, stack = 0, [("", real)]
            while stack and listed <= MAX_LINKED_ENTRIES:
                below, path = stack.pop()
                with contextlib.suppress(OSError), os.scandir(path) as entries:
                    for entry in entries:
                        listed += 1
                        name = f"{below}/{entry.name}" if below else entry.name
                        if name == GIT_ENTRY and not target:
                            continue  # the repository's own
                        with contextlib.suppress(OSError):
                            if entry.is_dir(follow_symlinks=False):
                                stack.append((name, entry.path))
                            elif self._denied(f"{relative}/{name}"):
                                if entry.is_file(follow_symlinks=False):
                                    found.append(prefix + name)
                                elif entry.is_symlink():
                                    self.denied_links[prefix + name] = os.readlink(entry.path)
                                elif _is_pipe(entry):
                                    self.denied_pipes[prefix + name] = entry.inode()
                                    found.append(prefix + name)
            if listed > MAX_LINKED_ENTRIES:
                self.unreadable = sorted({*self.unreadable, target})
        self._found += sorted(set(found) - set(self._found))

    def _other_names(self, denied: list[str]) -> dict[str, str]:
        """The other names, anywhere in the tree, of the denied files that are hard-linked. Costs an
        lstat() per denied file, and a listing of every directory only while one has a link count above
        one (rare: a command that made such a link fails, sandbox/planted.py)."""
        linked: dict[int, tuple[int, str]] = {}
        for relative in denied:
            try:
                st = os.lstat(f"{self.root}/{relative}")
            except OSError:
                continue
            if st.st_nlink > 1 and stat.S_ISREG(st.st_mode):
                linked[st.st_ino] = (st.st_dev, relative)
        if not linked:
            return {}
        names = set(denied)
        found = {}
        for relative in self._dirs:
            prefix = f"{relative}/" if relative else ""
            with contextlib.suppress(OSError), os.scandir(f"{self.root}/{relative}" if relative else self.root) as entries:
                for entry in entries:
                    # d_ino comes with the listing; only a match costs an lstat().
                    if entry.inode() not in linked or prefix + entry.name in names or (not relative and entry.name == ".git"):
                        continue
                    with contextlib.suppress(OSError):
                        st = entry.stat(follow_symlinks=False)
                        device, partner = linked.get(st.st_ino, (None, ""))
                        if stat.S_ISREG(st.st_mode) and device == st.st_dev:
                            found[prefix + entry.name] = partner
        return found

    def _read(self, relative: str, stamp: tuple[int, int, int, int] | None, was: _Directory | None) -> _Directory:
        """A listing of the directory; `was`: what the last one found, whose decisions are taken up."""
        subdirs: list[str] = []
        denied: list[str] = []
        links: list[list[str]] = []
        pipes: list[list] = []
        names: set[str] = set()  # of those that make git metadata (all it is asked about below)
        prefix = f"{relative}/" if relative else ""
        path = f"{self.root}/{relative}" if relative else self.root
        matches, shelters = self._denied, self._shelters
        # Decisions are kept only for the rules' own matcher (a policy's check_read may look at more than a path).
        decided = {} if was is not None and self.rules is not None else None
        before = (was.decided or {}) if decided is not None else {}
        # Listing needs read permission and deciding what an entry is may need search permission; gitbot
        # as root has both everywhere, otherwise a command (running as the same user) can chmod either back.
        unreadable = not os.access(path, os.R_OK | os.X_OK)
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    name = entry.name
                    if name in _GIT_NAMES:
                        names.add(name)
                        if name == GIT_ENTRY and not relative:
                            # The repository's own: read-only to commands. A `.git` further down (a nested
                            # repository's, or one a command made) is walked like the rest.
                            continue
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            subdirs.append(name)
                        elif entry.is_file(follow_symlinks=False):
                            hidden = before.get(name)
                            if hidden is None:
                                hidden = matches(prefix + name)
                            if decided is not None:
                                decided[name] = hidden
                            if hidden:
                                denied.append(prefix + name)
                                if len(os.fsencode(path)) + 1 + len(os.fsencode(name)) >= PATH_MAX_BYTES:
                                    # No mount can cover a path the system cannot name: the directory,
                                    # which it can, is hidden whole instead.
                                    unreadable = True
                        elif entry.is_symlink():
                            hidden = before.get(name)
                            if hidden is None:
                                hidden = matches(prefix + name)
                            if decided is not None:
                                decided[name] = hidden
                            if not hidden and shelters is not None:
                                # (kept apart from the name's own decision: a file there later is not denied)
                                hidden = before.get(name + "/")
                                if hidden is None:
                                    hidden = shelters(prefix + name)
                                if decided is not None:
                                    decided[name + "/"] = hidden
                            if hidden:
                                links.append([prefix + name, os.readlink(entry.path)])
                        else:  # a FIFO or a socket (a command cannot make a device node)
                            hidden = before.get(name)
                            if hidden is None:
                                hidden = matches(prefix + name)
                            if decided is not None:
                                decided[name] = hidden
                            if hidden and _is_pipe(entry):  # (not an entry gone while listed)
                                pipes.append([prefix + name, entry.inode()])
                    except OSError:
                        unreadable = True  # (an entry gone while listed is neither, without an error)
        except (FileNotFoundError, NotADirectoryError):
            stamp = None  # gone since its stamp was taken: its parent has changed too
        except OSError:
            unreadable = True
        git = [prefix + GIT_ENTRY] if relative and GIT_ENTRY in names else []
        if relative and looks_like_git_dir(names) and relative.rpartition("/")[2] != GIT_ENTRY:  # (noted above)
            git.append(relative)
        return _Directory(None if unreadable else stamp, subdirs, denied, unreadable, git, decided, links, pipes)

    # -- the copy in the git directory -----------------------------------------------------------

    def _load(self) -> dict[str, _Directory]:
        if self._store_path is None:
            return {}
        import json

        try:
            with open(self._store_path, encoding="utf-8", errors="surrogateescape") as handle:
                data = json.load(handle)
            if data.get("version") != _STORE_VERSION or data.get("root") != self.root or \
                    data.get("rules") != list(self.rules) or \
                    _code_fingerprint() is None or data.get("code") != _code_fingerprint():
                return {}
            return {relative: _Directory(tuple(stamp) if stamp else None, list(subdirs), list(denied), git=list(git),
                                         links=[[str(path), str(target)] for path, target in links],
                                         pipes=[[str(path), int(inode)] for path, inode in pipes])
                    for relative, (stamp, subdirs, denied, git, links, pipes) in data["dirs"].items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return {}  # none yet, or unreadable: walk the tree once

    def _save(self) -> None:
        if self._store_path is None:
            return
        import json

        data = {"version": _STORE_VERSION, "root": self.root, "rules": list(self.rules), "code": _code_fingerprint(),
                "dirs": {relative: [entry.stamp, entry.subdirs, entry.denied, entry.git, entry.links, entry.pipes]
                         for relative, entry in self._dirs.items()}}
        temporary = f"{self._store_path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self._store_path), exist_ok=True)
            with open(temporary, "w", encoding="utf-8", errors="surrogateescape") as handle:
                json.dump(data, handle, separators=(",", ":"))
            os.replace(temporary, self._store_path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _matcher(policy: Policy) -> tuple[tuple[str, ...] | None, Callable[[str], bool]]:
    """(the read_deny rules the decisions depend on, or None when they are the policy's own code;
    whether a file found in the walk is denied). A file reached without a symlink is decided by its
    path alone, so for the standard policy the rules' matcher is exactly check_read."""
    from gitbot.policy import Policy as StandardPolicy
    from gitbot.policy.files import GlobError, path_matcher

    if type(policy).check_read is StandardPolicy.check_read:
        rules = tuple(policy.read_deny)
        try:
            matcher = path_matcher(rules)
        except (GlobError, TypeError, AttributeError):
            matcher = None
        else:
            return rules, matcher or (lambda relative: False)
    return None, lambda relative: not policy.check_read(relative).allowed


def _shelter_matcher(policy: Policy) -> Callable[[str], bool] | None:
    """Which directory names a read_deny rule names on the way to a denied file (policy/files.py); the rules
    the policy lists, whatever decides the files themselves."""
    from gitbot.policy.files import GlobError, shelter_matcher

    try:
        return shelter_matcher(tuple(getattr(policy, "read_deny", ()) or ()))
    except (GlobError, TypeError):
        return None


def _is_pipe(entry: os.DirEntry) -> bool:
    try:
        mode = entry.stat(follow_symlinks=False).st_mode
    except FileNotFoundError:
        return False  # gone since it was listed
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _holds_other(was: _Directory, entry: _Directory) -> bool:
    """Does a directory's new listing hold other things the index keeps (so the stored copy is rewritten)?"""
    return was.subdirs != entry.subdirs or was.denied != entry.denied or was.git != entry.git \
        or was.links != entry.links or was.pipes != entry.pipes


def _code_fingerprint() -> int | None:
    """The code that decided what a stored index says (this module and the policy's glob matching): an
    index kept by another gitbot (before an upgrade that matches differently) is not used."""
    from gitbot.policy import files
    from gitbot.sandbox.remembered import code_fingerprint

    return code_fingerprint(__file__, files.__file__)


def _store_path(root: str) -> str | None:
    from gitbot.sandbox.mounts import git_directories

    git_dir, _common = git_directories(root)
    return os.path.join(git_dir, "gitbot", STORE_NAME) if git_dir else None


def read_denied_files(repo: str | os.PathLike, policy: Policy) -> list[str]:
    """Repository files (hidden and gitignored ones too, the root's `.git` aside) that `policy.check_read`
    denies, found by walking the whole tree once. Raises SandboxRefusal when there are more than
    MAX_MASKED_FILES."""
    return DeniedFiles(repo, policy, store=False).current()
