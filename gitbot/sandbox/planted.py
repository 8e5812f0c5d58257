"""Git metadata a command plants in the repository: found right after the command, and undone before
any git of the user's can read it.

The user's own git reads more than the top-level `.git` (gitbot/gitmeta.py), and a config it reads
can make it run a program (`core.fsmonitor`, a pager, a diff driver) on the host, as the user. In the
sandbox every `.git` below the root, and the git directory its gitfile names, is read-only and its
config sanitized (mounts.py), so a command can only make new metadata; without the sandbox a command
can also rewrite what exists, which cannot be prevented there, only found and undone afterwards.

After each command, compared with the state the run found (and then the state each command left):
- a new `.git` (directory, gitfile or symlink) anywhere below the root: removed;
- a new directory shaped like a git directory: removed; an existing one that became so: the entries
  that made it so, which the command wrote, removed;
- a `.git` file or symlink that changed, or the config of a git directory the run found (nested ones
  and the repository's own): put back as it was;
- a `.gitmodules` that now has a setting that makes git run something (`update = !cmd`, a URL git
  would hand to a remote helper that runs commands, an option-like URL or path): put back as it was.
- a git-shaped directory the run found, swapped for something else (a symlink to a host directory,
  say): that set aside, and the directory moved back from where the command put it.
Then the command counts as failed (GitMetadataPlanted says what was found and what was undone). All of
this happens before the command's checkpoint, so none of it reaches a checkpoint or a commit.

Each item is undone on its own, by one rename into the git directory's gitbot/ store (or a removal that
walks descriptors, never recursion, however deep the tree), never through a symlink above it (a command
may have swapped a directory for one leading anywhere on the host). What cannot be undone that way fails
closed: UndoIncomplete, and the runner refuses every later command of the run.

Where the existing metadata is comes free from the read-deny walk (readdeny.py), which already lists
every directory whose change time moved; so the check costs one more stamp walk per command.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import dataclass, field

from gitbot.gitmeta import GIT_DIR_MEMBERS, GIT_ENTRY, HEAD
from gitbot.sandbox import readdeny
from gitbot.sandbox.gitconfig import parse_entries
from gitbot.sandbox.mounts import git_directories, gitfile_directories
from gitbot.textsafe import one_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitbot.sandbox.readdeny import DeniedFiles

GITMODULES = ".gitmodules"
SET_ASIDE = "set-aside"  # in the git directory's gitbot/ store, which commands cannot see
CLOCK_TICK_NS = 50_000_000
CONFIG_NAMES = ("config", "config.worktree")
# What of a git directory the run found is compared and put back: its configs, and the pointer that makes
# git read another directory's config.
COMPARED_FILES = (*CONFIG_NAMES, "commondir")
# ...and the directories whose files git runs or reads as settings: every file in them is compared, and one
# the command added is set aside.
COMPARED_DIRECTORIES = ("hooks", "info")
# URL schemes that make git start a program named in the URL: ext:: runs a shell command, fd:: reads
# file descriptors the caller set up; neither belongs in a submodule.
RISKY_URL_TRANSPORTS = ("ext::", "fd::")


class CommandUndone(Exception):
    """A command changed what it must not; gitbot undid it, and the command counts as failed. The message
    says what, for the model (and the terminal and the record: the paths in it are the command's, so no
    control character of theirs is kept raw)."""

    def __init__(self, message: str):
        super().__init__(one_line(message))


class GitMetadataPlanted(CommandUndone):
    """A command made git metadata the user's git would read; it was undone."""


class UndoIncomplete(GitMetadataPlanted):
    """Something a command planted could not be undone (or not without following a symlink the command may
    have made): what it left may run on the user's machine, so gitbot runs no further command (fail closed)."""


@dataclass
class _State:
    """What of the repository's git metadata a check compares: identities and the bytes to put back."""
    entries: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # relative -> (mode, dev, ino)
    pointers: dict[str, tuple[bool, bytes]] = field(default_factory=dict)  # .git file/symlink -> (link, content)
    configs: dict[str, tuple[tuple, bytes | None]] = field(default_factory=dict)  # absolute -> (stamp, content)
    listings: dict[str, set[str]] = field(default_factory=dict)  # absolute hooks/, info/ -> the names in it
    gitmodules: tuple[tuple, bytes | None] = ((), None)


def _stamp(path: str) -> tuple:
    try:
        st = os.lstat(path)
    except OSError:
        return ()
    return _stamp_of(st)


def _stamp_of(st: os.stat_result) -> tuple:
    return (st.st_mode, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


class GitMetadataGuard:
    """Finds and undoes the git metadata commands plant under one work tree (`root`, a real path)."""

    def __init__(self, root: str):
        self.root = root
        self._state: _State | None = None
        own = git_directories(root)
        self._own_git_dirs = {d for d in own if d}
        # Where what a command made is moved (never deleted: it may hold the user's files, moved in).
        self.aside = os.path.join(own[0], "gitbot", SET_ASIDE) if own[0] else None
        self._before_dirs = None
        self._links_before: set[str] = set()
        self._denied_links_before: dict[str, str] = {}
        self._denied_pipes_before: dict[str, int] = {}
        self._began_ns = 0
        self.stuck: str | None = None  # set when an undo failed: every later command is refused
        # What the last snapshot read of each file, by its stamp (see `_content`).
        self._contents: dict[str, tuple[tuple, bytes]] = {}

    def before(self, index: DeniedFiles) -> list[str]:
        """Call with the index just walked, right before a command (what changed since the last one was
        not the command's: the user's own `git remote add` is never undone). Returns the `.git` entries
        below the root that exist now (for the sandbox to make read-only)."""
        if self.stuck:
            raise UndoIncomplete(self.stuck)
        self._state = self._snapshot(index.git_metadata)
        self._before_dirs = index.directories
        self._links_before = set(index.hard_links)
        self._denied_links_before = index.denied_links
        self._denied_pipes_before = index.denied_pipes
        # A file system's clock lags the system's by up to a tick: what the command wrote at its start may
        # carry a change time a little before this.
        self._began_ns = time.time_ns() - CLOCK_TICK_NS
        return [rel for rel in self._state.entries if rel.rpartition("/")[2] == GIT_ENTRY]

    def after(self, index: DeniedFiles) -> None:
        """Call after the command. Undoes what it planted and raises GitMetadataPlanted, or returns."""
        state, self._state = self._state, None
        if state is None:
            return
        with contextlib.suppress(Exception):
            index.current()  # raises only when too many files are read-denied; the walk is done by then
        undone: list[str] = []
        failed: list[str] = []

        def attempt(what: str, undo, into: list[str] = undone) -> None:
            # Each item on its own: one that cannot be undone must not leave the others in place.
            try:
                into.extend(undo())
            except Exception as exc:  # noqa: BLE001 - any failure is reported, and closes the run
                failed.append(f"{what}: {exc}")

        new = {rel: _identity(os.path.join(self.root, rel)) for rel in index.git_metadata if rel not in state.entries}
        for rel, identity in state.entries.items():
            attempt(rel, lambda rel=rel, identity=identity: self._restore_entry(rel, identity, state, new))
        for rel in new:
            attempt(rel, lambda rel=rel: self._remove_new(rel))
        real: set[str] = set()  # directories of these files found real (no symlink on the way) in this check
        for path, (stamp, content) in state.configs.items():
            attempt(self._relative(path), lambda path=path, stamp=stamp, content=content:
                    self._restore_file(path, stamp, content, real))
        for directory, names in state.listings.items():
            for name in _names(directory):
                if name not in names:
                    path = os.path.join(directory, name)
                    attempt(self._relative(path), lambda path=path: [
                        f"{self._relative(path)} (new, {set_aside(path, self.root, self.aside)})"])
        attempt(GITMODULES, lambda: self._check_gitmodules(state))
        linked = [rel for rel in index.hard_links if rel not in self._links_before]
        if linked:
            # Undo the name the command made: the other one when the denied file was there before (the
            # user's `.env`), else the denied one (a `.env` linked to a file of the user's).
            denied_before = {path for entry in self._before_dirs.values() for path in entry.denied}
            for rel in linked:
                partner = index.hard_links[rel]
                attempt(rel, lambda rel=rel, partner=partner: _remove(
                    os.path.join(self.root, rel if partner in denied_before else partner)) or [])
        # A symlink at a denied name is not hidden (it is judged by where it leads), but the host writes through
        # it: the user's `cp .env.example .env` would put the secret into whatever file the command chose.
        redirected = [rel for rel, target in index.denied_links.items() if self._denied_links_before.get(rel) != target]
        links_undone: list[str] = []  # not git metadata: said apart (`_denied_link_message`)
        for rel in redirected:
            attempt(rel, lambda rel=rel: self._undo_denied_link(rel), links_undone)
        piped = self._made_pipes(index)
        for rel in piped:
            attempt(rel, lambda rel=rel: self._undo_denied_pipe(rel), links_undone)
        if failed:
            self.stuck = (
                "gitbot could NOT undo all the git metadata a command made, which git on the user's machine "
                "could run a program from: " + "; ".join(failed) + (f" (undone: {'; '.join(undone)})" if undone else "")
                + (f" (undone: {'; '.join(links_undone)})" if links_undone else "")
                + ". gitbot runs no further command in this run; look at these paths in "
                f"{self.root} before running git there.")
            raise UndoIncomplete(self.stuck)
        if linked:
            raise CommandUndone(
                f"the command made a hard link to a file the policy does not let you read ({', '.join(linked)}): "
                f"a link shows that file's content under another name, so gitbot removed it and counts the "
                f"command as failed" + (f"; it also made git metadata, undone: {'; '.join(undone)}" if undone else ""))
        if redirected:
            raise CommandUndone(_denied_link_message(redirected, undone))
        if piped:
            raise CommandUndone(_made_pipes_message(piped, undone))
        if undone:
            raise GitMetadataPlanted(
                "the command made git metadata that git on the user's machine would read (and could run a "
                "program from), so gitbot undid it and counts the command as failed: " + "; ".join(undone) +
                ". Commands must not create `.git` files or directories, git directories, or `.gitmodules` "
                "settings that run programs, nor change a git config.")

    def _undo_denied_link(self, rel: str) -> list[str]:
        path = os.path.join(self.root, rel)
        how = set_aside(path, self.root, self.aside)
        was = self._denied_links_before.get(rel)
        if was is not None:  # the user's link, re-pointed: put back as it was
            os.symlink(was, path)
        return [f"{rel} (a symlink at a read-denied name, {how})"]

    def _made_pipes(self, index: DeniedFiles) -> list[str]:
        """The FIFOs and sockets at denied names the command made (the user's own, there before, stay): the
        host's `cp .env.example .env` would block until a later command's `cat .env` took the secret."""
        return [rel for rel, inode in index.denied_pipes.items() if self._denied_pipes_before.get(rel) != inode]

    def _undo_denied_pipe(self, rel: str) -> list[str]:
        set_aside(os.path.join(self.root, rel), self.root, self.aside)
        return []  # (said in its own message, not among the git metadata undone)

    # -- what is there ---------------------------------------------------------------------------

    def _relative(self, path: str) -> str:
        """`path` relative to the work tree, for a message (os.path.relpath's cost only outside it)."""
        inside = path.startswith(self.root) and path[len(self.root):len(self.root) + 1] == "/"
        return path[len(self.root) + 1:] if inside else os.path.relpath(path, self.root)

    def _content(self, path: str, stamp: tuple, kept: dict[str, tuple[tuple, bytes]]) -> bytes | None:
        """The bytes of the file at `path`, whose stamp (`_stamp`, taken just now) is `stamp`: read again only
        when the stamp moved since the last snapshot read it. A write changes the change time, which no
        process can set back, so an unmoved stamp means unchanged bytes; but a write in the same clock tick
        as the read could leave the stamp as it was, so bytes whose stamp is that recent are not kept (as
        readdeny.py does with directories). `kept` collects what the next snapshot may take up."""
        if not stamp:
            return _read(path)
        known = self._contents.get(path)
        if known is not None and known[0] == stamp:
            kept[path] = known
            return known[1]
        content = _read(path)
        if content is not None and stamp[5] < time.time_ns() - int(readdeny.RACY_SECONDS * 1e9):
            kept[path] = (stamp, content)
        return content

    def _snapshot(self, metadata: list[str]) -> _State:
        state = _State()
        kept: dict[str, tuple[tuple, bytes]] = {}
        git_dirs = set(self._own_git_dirs)
        for rel in metadata:
            path = os.path.join(self.root, rel)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            state.entries[rel] = (stat.S_IFMT(st.st_mode), st.st_dev, st.st_ino)
            if rel.rpartition("/")[2] != GIT_ENTRY:
                git_dirs.add(path)  # a git-shaped directory
            elif stat.S_ISLNK(st.st_mode):
                with contextlib.suppress(OSError):
                    state.pointers[rel] = (True, os.fsencode(os.readlink(path)))
            elif stat.S_ISREG(st.st_mode):
                content = self._content(path, _stamp_of(st), kept)
                if content is not None:
                    state.pointers[rel] = (False, content)
            if rel.rpartition("/")[2] == GIT_ENTRY:  # a symlink's target too (inside the repository or not)
                git_dirs.update(d for d in gitfile_directories(path) if d)
        for directory in git_dirs:
            for name in COMPARED_FILES:
                config = os.path.join(directory, name)
                stamp = _stamp(config)
                state.configs[config] = (stamp, self._content(config, stamp, kept))
            for name in COMPARED_DIRECTORIES:
                listed = state.listings[os.path.join(directory, name)] = set(_names(os.path.join(directory, name)))
                for entry in listed:
                    path = os.path.join(directory, name, entry)
                    stamp = _stamp(path)
                    if stamp and stat.S_ISREG(stamp[0]):  # a symlink (a user's shared hook) is theirs to change
                        state.configs[path] = (stamp, self._content(path, stamp, kept))
        gitmodules = os.path.join(self.root, GITMODULES)
        stamp = _stamp(gitmodules)
        state.gitmodules = (stamp, self._content(gitmodules, stamp, kept))
        self._contents = kept
        return state

    # -- undoing ---------------------------------------------------------------------------------

    def _remove_new(self, rel: str) -> list[str]:
        path = os.path.join(self.root, rel)
        if rel.rpartition("/")[2] == GIT_ENTRY or rel not in self._before_dirs:
            return [f"{rel} (new, {set_aside(path, self.root, self.aside)})"]
        # A directory that was there before the command and is shaped like a git directory now: take
        # away what the command wrote of the entries that decide it, and leave the rest alone.
        made = [name for name in GIT_DIR_MEMBERS if _changed_since(os.path.join(path, name), self._began_ns)]
        moved = [set_aside(os.path.join(path, name), self.root, self.aside) for name in made or [HEAD]]
        return [f"{rel} (made a git directory; " + ", ".join(f"{name} {how}" for name, how in zip(made or [HEAD], moved))
                + ")"]

    def _restore_entry(self, rel: str, identity: tuple[int, int, int], state: _State,
                       new: dict[str, tuple | None]) -> list[str]:
        path = os.path.join(self.root, rel)
        _require_real(os.path.dirname(path))  # a directory above it swapped for a symlink: never follow it
        try:
            st = os.lstat(path)
        except OSError:
            return []  # gone: nothing for git to read there
        pointer = state.pointers.get(rel)
        if pointer is None:
            if (stat.S_IFMT(st.st_mode), st.st_dev, st.st_ino) == identity:
                return []  # the same directory: its config is compared on its own
            # Swapped (for a symlink, say, that would lead the config's put-back outside the repository):
            # what stands there goes, and the directory comes back from where the command moved it.
            how = set_aside(path, self.root, self.aside)
            moved = next((other for other, seen in new.items() if seen == identity), None)
            if moved is None:
                return [f"{rel} (replaced; {how})"]
            _require_real(os.path.dirname(os.path.join(self.root, moved)))
            os.rename(os.path.join(self.root, moved), path)
            del new[moved]
            return [f"{rel} (replaced; {how}; moved back from {moved})"]
        link, content = pointer
        now_link = stat.S_ISLNK(st.st_mode)
        with contextlib.suppress(OSError):
            if link and now_link and os.fsencode(os.readlink(path)) == content:
                return []
            if not link and stat.S_ISREG(st.st_mode) and _read(path) == content:
                return []
        set_aside(path, self.root, self.aside)
        if link:
            os.symlink(os.fsdecode(content), path)
        else:
            _put_back(path, content)
        return [f"{rel} (changed, put back)"]

    def _restore_file(self, path: str, stamp: tuple, content: bytes | None, real: set[str]) -> list[str]:
        directory = os.path.dirname(path)
        if directory not in real:  # (putting a file back changes no directory above another: asked once each)
            _require_real(directory)
            real.add(directory)
        if _stamp(path) == stamp or _read(path) == content:
            return []
        _put_back(path, content, stat.S_IMODE(stamp[0]) if stamp else None)
        return [f"{self._relative(path)} (git metadata, put back)"]

    def _check_gitmodules(self, state: _State) -> list[str]:
        path = os.path.join(self.root, GITMODULES)
        stamp, content = state.gitmodules
        if _stamp(path) == stamp or not os.path.lexists(path):
            return []
        # A link could lead git to a file the checks here never see change: never one a command made.
        risky = ["a symlink"] if os.path.islink(path) else risky_gitmodules_settings(path) if os.path.isfile(path) else []
        if not risky:
            return []
        moved = set_aside(path, self.root, self.aside)
        if content is not None:
            _put_back(path, content)
        return [f"{GITMODULES} ({', '.join(risky)}; {moved if content is None else 'put back'})"]


def _made_pipes_message(piped: list[str], undone: list[str]) -> str:
    return (f"the command made a FIFO or socket at a name the policy does not let you read ({', '.join(piped)}): "
            f"whatever later writes that file would hand its content to the next command that reads it, so gitbot "
            f"moved it out of the work tree and counts the command as failed"
            + (f"; it also made git metadata, undone: {'; '.join(undone)}" if undone else ""))


def risky_gitmodules_settings(path: str) -> list[str]:
    """The keys of a `.gitmodules` file whose values make git run something, or look like an option to
    the programs git hands them to. A file git cannot parse is not risky (git will not read it either)."""
    entries = parse_entries(path) or []
    found = []
    for key, value in entries:
        section, _, rest = key.partition(".")
        name = rest.rpartition(".")[2].lower()
        if section.lower() != "submodule" or value is None:
            continue
        text = value.strip()
        if name == "update" and text.startswith("!") or \
                name == "url" and (text.lower().startswith(RISKY_URL_TRANSPORTS) or text.startswith("-")) or \
                name == "path" and (text.startswith("-") or GIT_ENTRY in text.lower().split("/")):
            found.append(key)
    return found


def risky_gitmodules_text(text: str) -> list[str]:
    """`risky_gitmodules_settings` for a `.gitmodules` about to be written (the file tools' check)."""
    import tempfile

    fd, path = tempfile.mkstemp(prefix="gitbot-gitmodules-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(text)
        return risky_gitmodules_settings(path)
    finally:
        os.unlink(path)


def _denied_link_message(redirected: list[str], metadata_undone: list[str]) -> str:
    """What the model is told of symlinks it made at read-denied names (and of git metadata, only if it made
    some too: a denied-name link is not metadata)."""
    return (f"the command made a symlink at a name the policy does not let you read ({', '.join(redirected)}): "
            f"whatever later writes that file would write through the link into a file you can read, so gitbot "
            f"moved it out of the work tree and counts the command as failed"
            + (f"; it also made git metadata, undone: {'; '.join(metadata_undone)}" if metadata_undone else ""))


def _changed_since(path: str, began_ns: int) -> bool:
    try:
        return os.lstat(path).st_ctime_ns >= began_ns
    except OSError:
        return False


def set_aside(path: str, root: str, aside: str | None) -> str:
    """Move what a command made at `path` out of the work tree, into `aside` (kept, since a command may have
    moved the user's own files into it); removed only without a place to keep it. Says which, for a message.
    Never through a symlink above `path` (raises OSError), and one rename however deep the tree."""
    parent = os.path.dirname(path)
    _require_real(parent)
    if not os.path.lexists(path):
        return "gone"
    _owner_writable(parent)
    if aside is not None:
        with contextlib.suppress(OSError):
            name = os.path.relpath(path, root).replace("/", "%")
            target = os.path.join(aside, f"{time.time_ns()}-{name}")
            os.makedirs(aside, mode=0o700, exist_ok=True)
            _owner_writable(path)  # a directory moved to another parent needs write on itself (its `..`)
            os.rename(path, target)
            return f"moved out of the work tree, kept in the git directory's gitbot/{SET_ASIDE}/"
    _remove(path)
    return "removed"


def _require_real(directory: str) -> None:
    """Raise when a component of `directory` (an absolute real path, as it was before the command) is a
    symlink now: what gitbot would write or remove there could be anywhere on the host."""
    if os.path.realpath(directory) != directory:
        raise OSError(f"{directory} now leads through a symlink; gitbot does not follow it")


def _owner_writable(path: str) -> None:
    """Give back to a directory of ours the owner's write and search permission a command took away
    (`chmod 555` would otherwise keep what it planted in it)."""
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o700 != 0o700:
            os.chmod(path, stat.S_IMODE(st.st_mode) | 0o700)


def _identity(path: str) -> tuple | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (stat.S_IFMT(st.st_mode), st.st_dev, st.st_ino)


def _remove(path: str) -> None:
    """Remove a file, symlink or directory tree, never following a symlink."""
    parent = os.path.dirname(path)
    _require_real(parent)
    _owner_writable(parent)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except IsADirectoryError:
        _remove_tree(path)


DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _remove_tree(path: str) -> None:
    """Remove a directory tree by file descriptors, one open at a time and without recursion: a tree too deep
    for shutil.rmtree (or for a path) is removed all the same, and no symlink in it is followed."""
    names = [os.path.basename(path)]
    fd = _enter(os.open(os.path.dirname(path), DIRECTORY_FLAGS), names[0])
    try:
        while True:
            sub = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        sub = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fd)
            if sub is not None:
                names.append(sub)
                fd = _enter(fd, sub)
                continue
            parent = os.open("..", DIRECTORY_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(names.pop(), dir_fd=fd)
            if not names:
                return
    finally:
        os.close(fd)


def _enter(parent: int, name: str) -> int:
    """The directory `name` in `parent` opened (after giving it back the owner's permissions a command may
    have taken away); closes `parent`."""
    try:
        with contextlib.suppress(OSError):
            handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
            try:
                if stat.S_ISDIR(os.fstat(handle).st_mode):
                    os.chmod(f"/proc/self/fd/{handle}", 0o700)  # the inode opened, never a symlink's target
            finally:
                os.close(handle)
        return os.open(name, DIRECTORY_FLAGS, dir_fd=parent)
    finally:
        os.close(parent)


def _names(directory: str) -> list[str]:
    """The names in `directory` when it is one (not a symlink to one), else none."""
    try:
        return os.listdir(directory) if stat.S_ISDIR(os.lstat(directory).st_mode) else []
    except OSError:
        return []


def _put_back(path: str, content: bytes | None, mode: int | None = None) -> None:
    """Write `content` at `path` (replacing whatever is there; with `mode`, a hook's executable bit say), or
    remove it when it was absent. Never through a symlink (raises OSError)."""
    if content is None:
        _remove(path)
        return
    _require_real(os.path.dirname(path))
    if os.path.isdir(path) and not os.path.islink(path):
        _remove(path)
    temporary = f"{path}.gitbot-{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
        if mode is not None:
            os.fchmod(handle.fileno(), mode)
    os.replace(temporary, path)
