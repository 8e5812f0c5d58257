"""What changed in the work tree since the last look, from inotify, so that the checkpoint after a
command asks git about those paths only instead of comparing every file (on Linux-sized trees that
comparison, an lstat of every tracked file, is most of a command step's cost).

The watcher is trusted only where inotify sees every change, and says "unknown" (None) otherwise, when
the caller scans the whole tree as before:
- every directory of the work tree is watched (added before it is listed, so nothing created in between
  is missed); a directory created or moved in later is watched and listed when its event is read (and
  the answer is unknown, as below);
- a file changed through another hard link raises no event for this name (nor does making or removing
  that link). So no file of the tree may have another link when the watcher trusts its events: one with
  more than one, found by the walk or named as changed, stops the watcher (as below); a file made in
  the meantime (possibly as a link) that is then removed or renamed over, under any name it had (or may
  have had: a swap of two names looks like two renames), or a directory made or moved
  (what happened inside before it was watched, or under its old watch, is not seen), makes the answer
  unknown (a sandbox's setup makes nothing in the tree: only what a command or a file tool did is seen);
- nested repositories and submodules (their HEAD lives in a git directory nobody watches), a full event
  queue, a directory that cannot be read or watched, the root itself changing: unknown, and the watcher
  stops (every later checkpoint scans in full);
- the first answer after the watcher is ready is unknown too: the scan that follows is the baseline its
  events are relative to; so is one after a .gitignore or .gitattributes changed (what git makes of
  files that did not change may have).
Events are read only when a checkpoint starts; a change after that is read by the next one, and a path
named twice is only looked at again. It is meant for sandboxed commands: their processes are gone
when the checkpoint starts, and they can write the repository only through its own paths.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct
import threading
from collections.abc import Iterable

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x1000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
# Watched through /proc/self/fd/N of a directory opened without following links: that link is followed.
WATCHED = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
           | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name
_READ_BYTES = 256 * 1024
# Past this many changed paths a scoped look costs what the whole scan does.
MAX_PATHS = 2000
# The paths go to git status as arguments: far below ARG_MAX (2 MB with an 8 MB stack, the environment
# included), past which it would not start at all.
MAX_PATH_BYTES = 256 * 1024
# inotify watches are the user's, shared with their editor's: a tree with more directories (a vendored
# node_modules) is scanned in full rather than take them all.
MAX_DIRECTORIES = 50_000

# Files that change what git makes of paths that did not change: an edited .gitignore can make an old
# file untracked-and-visible. After a change to one, the whole tree is looked at.
RULES_FILES = (".gitignore", ".gitattributes")

_libc: ctypes.CDLL | None = None


def _inotify() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


class Unknown(Exception):
    """What changed cannot be told from the events (see the module docstring)."""

    @classmethod
    def hard_linked(cls, relative: str) -> Unknown:
        return cls(f"{relative} has other hard links, changed without an event of their own")


class TreeWatcher:
    """Changes under `repo` (its top-level `.git` aside), as repository-relative paths."""

    def __init__(self, repo: str, fd: int, rules: frozenset[str] = frozenset()):
        self.repo = repo
        self._fd = fd
        self._rules = rules  # besides RULES_FILES, wherever they are
        self._lock = threading.Lock()
        self._paths: dict[int, str] = {}  # watch descriptor -> directory, relative ("" = the root)
        self._gone: set[int] = set()  # watches removed on purpose: their last events mean nothing
        self._ready = False  # every directory is watched
        self._baseline = False  # a scan followed the first answer after that
        self._during_scan: set[str] = set()  # changed while the last scan ran (see after_scan)
        # Since the last answer: names bound to a file (created, or renamed to) and maybe still bound, and why
        # the events do not tell everything that changed (see the module docstring).
        self._fresh: set[str] = set()
        self._unseen: str | None = None
        self._closing = False
        self.stopped: str | None = None  # why the watcher gave up, once it has
        self._walker = threading.Thread(target=self._watch_tree, name="gitbot-watch", daemon=True)
        self._walker.start()

    @classmethod
    def start(cls, repo: str | os.PathLike[str], rules: Iterable[str] = ()) -> TreeWatcher | None:
        """A watcher for `repo`, which watches the tree's directories in the background (a walk of them);
        None where inotify is unavailable. `rules`: repository-relative paths of more files like RULES_FILES (a global excludes file that
        lies in the tree), after a change to which, or to a parent, the whole tree is looked at."""
        try:
            fd = _inotify().inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        return cls(os.path.realpath(repo), fd, frozenset(_with_parents(rules)))

    def _watch_tree(self) -> None:
        # Only this thread touches the watches until it sets _ready, under the lock.
        try:
            self._watch_below("", links_checked_after=True)
            # Once every directory is watched, a link made anywhere has an event; one made before is found
            # here (one made and gone before is the baseline scan's to see: the content it changed is there).
            _no_hard_links(self.repo, lambda: self._closing)
        except Unknown as exc:
            with self._lock:
                self._stop(str(exc))
            return
        with self._lock:
            self._ready = True

    def wait_ready(self) -> bool:
        """Wait for the walk; whether the watcher works."""
        self._walker.join()
        return self._fd >= 0

    def changes(self) -> list[str] | None:
        """The paths changed since the last call (sorted), or None when that is unknown: then the caller
        must look at the whole tree, starting after this call."""
        with self._lock:
            if self._fd < 0 or not self._ready:
                return None
            try:
                changed = self._read_events()
                during_scan, self._during_scan = self._during_scan, set()
                changed |= during_scan
                unseen, self._unseen = self._unseen, None
                self._fresh.clear()
                # Even for the baseline: a link that outlives this answer must not be trusted later.
                self._check_links(changed)
                if not self._baseline:
                    self._baseline = True
                    return None
                if unseen:
                    return None
                if "" in changed or len(changed) > MAX_PATHS or any(self._rules_file(path) for path in changed) \
                        or sum(len(os.fsencode(path)) + 1 for path in changed) > MAX_PATH_BYTES:
                    return None
            except Unknown as exc:
                self._stop(str(exc))
                return None
            return sorted(changed)

    def after_scan(self) -> None:
        """Call when the scan that followed `changes()` has read the tree: what changed meanwhile is
        looked at again next time, as a path that may have been seen either way."""
        with self._lock:
            if self._fd < 0 or not self._ready:
                return
            try:
                self._during_scan |= self._read_events()
            except Unknown as exc:
                self._stop(str(exc))

    def close(self) -> None:
        self._closing = True
        self._walker.join()
        with self._lock:
            self._stop("closed")

    # -- inside the lock ------------------------------------------------------------------------

    def _stop(self, why: str) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.stopped = self.stopped or why
        self._paths.clear()

    def _watch(self, relative: str) -> int | None:
        """Watch the directory `relative` and return an fd of it to list, or None when it is not a
        directory (any more): its parent's events name it. Opened without following a symlink, and
        watched and listed through that fd, so a directory swapped for a link meanwhile is never
        entered."""
        path = os.path.join(self.repo, relative) if relative else self.repo
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a symlink
                return None
            raise Unknown(f"cannot open {relative or '.'}: {exc.strerror}") from None
        wd = _inotify().inotify_add_watch(self._fd, f"/proc/self/fd/{fd}".encode(), WATCHED)
        if wd < 0:
            code = ctypes.get_errno()
            os.close(fd)
            raise Unknown(f"cannot watch {relative or '.'}: {os.strerror(code)}")
        self._gone.discard(wd)
        self._paths[wd] = relative
        if len(self._paths) > MAX_DIRECTORIES:
            os.close(fd)
            raise Unknown(f"more than {MAX_DIRECTORIES} directories")
        return fd

    def _watch_below(self, relative: str, links_checked_after: bool = False) -> None:
        """Watch `relative` and every directory below it: each one before it is listed; a file with other
        hard links found there stops the watcher, unless `links_checked_after` (the first walk: a `find`
        looks for them all at once, out of this process)."""
        pending = [relative]
        while pending:
            if self._closing:
                raise Unknown("closed")
            directory = pending.pop()
            fd = self._watch(directory)
            if fd is None:
                continue
            try:
                self._list(directory, fd, pending, links_checked_after)
            finally:
                os.close(fd)  # after the entries are read: their types and stats are asked through it

    def _list(self, directory: str, fd: int, pending: list[str], links_checked_after: bool) -> None:
        try:
            entries = list(os.scandir(fd))
        except OSError as exc:
            raise Unknown(f"cannot list {directory or '.'}: {exc.strerror}") from None
        for entry in entries:
            child = f"{directory}/{entry.name}" if directory else entry.name
            if entry.name == ".git":
                if directory:
                    raise Unknown(f"a nested repository at {directory}")
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(child)
                elif not links_checked_after and entry.stat(follow_symlinks=False).st_nlink > 1:
                    raise Unknown.hard_linked(child)
            except FileNotFoundError:
                continue  # gone again: its event names it
            except OSError as exc:
                raise Unknown(f"cannot look at {child}: {exc.strerror}") from None

    def _read_events(self) -> set[str]:
        """The paths named by the queued events."""
        changed: set[str] = set()
        while True:
            try:
                data = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                return changed
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size
                name = os.fsdecode(data[offset:offset + length].rstrip(b"\0"))
                offset += length
                self._event(wd, mask, name, changed)

    def _event(self, wd: int, mask: int, name: str, changed: set[str]) -> None:
        if mask & IN_Q_OVERFLOW:
            raise Unknown("the event queue overflowed")
        if mask & IN_UNMOUNT:
            raise Unknown("a watched file system was unmounted")
        directory = self._paths.get(wd)
        if mask & IN_IGNORED:
            self._paths.pop(wd, None)
            self._gone.discard(wd)
            return
        if directory is None:
            if wd in self._gone:
                return  # a directory moved away: its new place is looked at whole
            raise Unknown(f"an event for an unknown watch ({wd})")
        if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
            if directory == "":
                raise Unknown("the repository directory itself was moved or deleted")
            return  # its parent's event names it
        path = f"{directory}/{name}" if directory and name else (name or directory)
        if name == ".git":
            if directory:
                raise Unknown(f"a nested repository at {directory}")
            return  # the repository's own git directory: nothing a checkpoint captures
        changed.add(path)
        self._note_binding(path, mask)
        if not mask & IN_ISDIR:
            return
        if mask & IN_MOVED_FROM:
            # Still watched where it went, under names that are no longer right (a deleted directory's
            # watches end by themselves).
            self._forget_below(path)
        elif mask & (IN_CREATE | IN_MOVED_TO):
            self._watch_below(path)

    def _note_binding(self, path: str, mask: int) -> None:
        """Keep track of what the events cannot tell (`_unseen`): a file made since the last answer may be
        another link to an old file, written through; once that name is gone, nothing names the old one."""
        if mask & IN_ISDIR:
            if mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM):
                self._unseen = self._unseen or f"directory {path} made or moved"
        elif mask & (IN_CREATE | IN_MOVED_TO):
            if mask & IN_MOVED_TO and path in self._fresh:  # renamed over (a name is only created where there is none)
                self._unseen = self._unseen or f"{path}, made since the last look, replaced"
            self._fresh.add(path)  # a file renamed here is looked at here, as what was made
        elif mask & IN_DELETE:
            if path in self._fresh:
                self._unseen = self._unseen or f"{path}, made since the last look, removed"
            self._fresh.discard(path)
        # A name renamed away stays noted: swapped with another (renameat2's RENAME_EXCHANGE: from a, to b,
        # from b, to a, the events of `mv a b && mv b a`), it is still bound, to what the other name had.

    def _forget_below(self, relative: str) -> None:
        prefix = relative + "/"
        for wd, directory in list(self._paths.items()):
            if directory == relative or directory.startswith(prefix):
                del self._paths[wd]
                self._gone.add(wd)
                _inotify().inotify_rm_watch(self._fd, wd)

    def _rules_file(self, path: str) -> bool:
        return path.rpartition("/")[2] in RULES_FILES or path in self._rules

    def _check_links(self, changed: set[str]) -> None:
        for relative in changed:
            try:
                st = os.lstat(os.path.join(self.repo, relative))
            except OSError:
                continue
            if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                raise Unknown.hard_linked(relative)


def _with_parents(paths: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        relative = os.path.normpath(path)
        while relative not in ("", ".", "/") and not relative.startswith(("../", "/")) and relative != "..":
            found.add(relative)
            relative = os.path.dirname(relative)
    return found


def _no_hard_links(repo: str, closing) -> None:
    """Raise Unknown when a file of the tree (its git directory aside) has more than one link. `closing()`:
    whether the watcher is being closed (then find is stopped: a run that ends must not wait for it)."""
    import subprocess
    import tempfile

    from gitbot.host_programs import program

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            find = subprocess.Popen([program("find"), ".", "(", "-name", ".git", "-prune", ")", "-o",
                                     "(", "!", "-type", "d", "-links", "+1", "-print", "-quit", ")"],
                                    cwd=repo, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        except OSError as exc:
            raise Unknown(f"cannot look for hard links: {exc}") from None
        while True:
            try:
                returncode = find.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                if closing():
                    find.kill()
                    find.wait()
                    raise Unknown("closed") from None
        out.seek(0)
        err.seek(0)
        found, problem = out.read().strip(), err.read().decode(errors="replace").strip()
    if returncode != 0:
        raise Unknown(f"cannot look for hard links: {problem}")
    if found:
        linked = os.fsdecode(found).removeprefix("./")
        raise Unknown.hard_linked(linked)


def watch_for(shadow, repo: str | os.PathLike[str]) -> TreeWatcher | None:
    """A watcher for a checkpointed run's work tree (`shadow`: its ShadowRepo, whose git reads the user's
    settings), or None where git's view cannot be followed from events:
    - core.ignorecase: git matches index entries and untracked files without regard to case, but a
      pathspec with it, so a status limited to A.txt would not see a.txt, which the entry A.txt hid;
    - the user's global excludes and attributes files, where the tree holds them (a home directory kept in
      git holds ~/.config/git/ignore), count as rules files, named as set and as resolved."""
    found = shadow.git("config", "--type=bool", "--get", "core.ignorecase", ok=(0, 1)).stdout
    if found.strip() == b"true":
        return None
    top = os.fspath(repo)
    rules = []
    for key in ("excludesfile", "attributesfile"):
        path = shadow.user_settings.get(key)
        for spelling in (path, path and os.path.realpath(path)):
            if spelling and spelling.startswith(f"{top}/"):
                rules.append(spelling.removeprefix(f"{top}/"))
    return TreeWatcher.start(repo, rules)
