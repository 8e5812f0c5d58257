"""The shadow repository and the git calls around it.

The shadow is a bare repository at `<git-dir>/gitbot/shadow`. Every command against it runs
with GIT_DIR=shadow, GIT_WORK_TREE=<the user's work tree> and GIT_INDEX_FILE=<a private index>,
so the user's index, HEAD, branches, stash and reflogs are never written. Its object store
borrows the user's through `objects/info/alternates` (read-only): blobs the user already has
are not hashed or stored again, and the shadow's own writes land in the shadow's objects dir.

Isolation: user/system git config is not read (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null,
HOME pointed at the shadow), hooks are off (core.hooksPath=/dev/null), inherited GIT_* variables
are dropped, the identity is fixed and git never prompts. The few settings that change what git
sees in the work tree (ignore files, line endings, file modes) are copied from the user's
effective config into the shadow's config, so "what is captured" matches what `git status`
shows the user.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitbot import git
from gitbot.checkpoints.errors import CheckpointError, UnknownRun
from gitbot.errors import NotAGitRepository
from gitbot.git import GitCommandError
from gitbot.host_programs import program

REF_ROOT = "refs/gitbot"
MANIFEST_PREFIX = "gitbot-manifest: "
GITLINK_MODE = "160000"

IDENTITY = {
    "GIT_AUTHOR_NAME": "gitbot checkpoint", "GIT_AUTHOR_EMAIL": "checkpoint@gitbot.invalid",
    "GIT_COMMITTER_NAME": "gitbot checkpoint", "GIT_COMMITTER_EMAIL": "checkpoint@gitbot.invalid",
}

# Settings of the user's effective config that change how git reads the work tree. Copying them
# keeps the shadow's view equal to the user's; everything else (aliases, hooks, filters that run
# programs, credential helpers) stays out.
_COPIED_CORE_SETTINGS = ("autocrlf", "eol", "filemode", "symlinks", "ignorecase", "precomposeunicode")


@dataclass(frozen=True)
class RepoPaths:
    work_tree: Path  # top of the user's work tree
    git_dir: Path  # this work tree's git dir (a linked worktree has its own)
    common_dir: Path  # where objects and info/exclude live
    object_format: str

    @property
    def gitbot_dir(self) -> Path:
        return self.git_dir / "gitbot"

    @property
    def shadow_dir(self) -> Path:
        return self.gitbot_dir / "shadow"

    @property
    def user_index(self) -> Path:
        return self.git_dir / "index"

    def run_dir(self, run_id: str) -> Path:
        return self.gitbot_dir / "runs" / run_id


def discover(repo: Path | str) -> RepoPaths:
    """Where the user's repository keeps things; NotAGitRepository when `repo` is not in a work tree."""
    repo = Path(repo)
    if not repo.is_dir():
        raise NotAGitRepository(f"{repo} is not a directory")
    try:
        out = git.run(["rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir",
                       "--git-common-dir", "--show-object-format"], cwd=repo)
    except GitCommandError as exc:
        raise NotAGitRepository(f"{repo} is not inside a git work tree ({exc.stderr})") from exc
    lines = out.stdout.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) < 4 or not lines[0]:
        raise NotAGitRepository(f"{repo} has no work tree (a bare repository?)")
    return RepoPaths(Path(lines[0]), Path(lines[1]), Path(lines[2]), lines[3] or "sha1")


def user_head(paths: RepoPaths) -> tuple[str, str] | None:
    """The user's HEAD commit and its tree, in one call; None before the first commit."""
    # The trailing "--" keeps a file named like the revisions from making them ambiguous.
    proc = git.run(["rev-parse", "HEAD^{commit}", "HEAD^{tree}", "--"], cwd=paths.work_tree,
                   ok=(0, 1, 128))
    lines = proc.stdout.decode().split()
    if proc.returncode != 0 or len(lines) < 2:
        return None  # no commits yet
    return lines[0], lines[1]


@functools.cache
def _builtin_fsmonitor_available() -> bool:
    # The built-in fsmonitor daemon exists on macOS and Windows builds of git; Linux 2.39 has none.
    proc = subprocess.run([program("git"), "version", "--build-options"], check=False, capture_output=True, text=True,
                          env=git.clean_env())
    return "fsmonitor--daemon" in proc.stdout


def _quote_config(value: str) -> str:
    if "\n" in value or "\0" in value:
        raise CheckpointError(f"cannot use a config value containing a newline: {value!r}")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ShadowRepo:
    """The shadow repository of one work tree, and the environment its commands run with."""

    def __init__(self, paths: RepoPaths, *, create: bool = True):
        self.paths = paths
        self.dir = paths.shadow_dir
        self.exists = (self.dir / "HEAD").is_file()
        self.user_settings: dict[str, str] = {}
        if create:
            self._ensure()
            self.exists = True
        # No ~/.gitconfig, ~/.config/git/{config,ignore,attributes}: HOME is the shadow itself.
        self._base_env = git.isolated_env(self.dir, {
            **IDENTITY,
            "GIT_DIR": str(self.dir),
            "GIT_WORK_TREE": str(paths.work_tree),
            # Every pathspec we pass is a file name; '*' or ':(' in a name must not become magic.
            "GIT_LITERAL_PATHSPECS": "1",
        })
        # The private index is ours to write: status must keep its refreshed stat data and its
        # untracked cache, or every scan redoes both (a full scan costs 1.2x `git status` instead of 0.8x).
        del self._base_env["GIT_OPTIONAL_LOCKS"]

    # -- running git -------------------------------------------------------------------------

    def env(self, index: Path | None = None, work_tree: Path | None = None,
            literal_pathspecs: bool = True) -> dict[str, str]:
        env = dict(self._base_env)
        if not literal_pathspecs:
            del env["GIT_LITERAL_PATHSPECS"]
        # With no private index, point at one that never exists so the user's is never read.
        env["GIT_INDEX_FILE"] = str(index if index is not None else self.dir / "no-index")
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        return env

    def git(self, *args: str, index: Path | None = None, input: bytes | None = None, ok: Iterable[int] = (0,),
            work_tree: Path | None = None, literal_pathspecs: bool = True) -> subprocess.CompletedProcess[bytes]:
        return git.run(args, env=self.env(index, work_tree, literal_pathspecs), cwd=work_tree or self.paths.work_tree,
                       input=input, ok=ok)

    def out(self, *args: str, index: Path | None = None, input: bytes | None = None) -> str:
        return self.git(*args, index=index, input=input).stdout.decode().strip()

    # -- set-up ------------------------------------------------------------------------------

    def _ensure(self) -> None:
        if not (self.dir / "HEAD").is_file():
            self.dir.parent.mkdir(parents=True, exist_ok=True)
            # --template= : no sample hooks or description copied into the shadow.
            env = git.isolated_env(self.dir.parent)
            git.run(["init", "--bare", "-q", "--template=", f"--object-format={self.paths.object_format}",
                     "-b", "gitbot-shadow", str(self.dir)], env=env)
        self.user_settings = self._user_settings()
        self._sync_file(self.dir / "config", self._config_text(self.user_settings))
        # Borrow the user's objects (absolute path, rewritten if the repository moved).
        self._sync_file(self.dir / "objects" / "info" / "alternates", f"{self.paths.common_dir / 'objects'}\n")
        # The user's info/exclude, byte for byte (a copy with the same content keeps git's
        # untracked cache valid when it compares exclude files by hash).
        try:
            exclude = (self.paths.common_dir / "info" / "exclude").read_bytes()
        except OSError:
            exclude = b""
        self._sync_file(self.dir / "info" / "exclude", exclude)

    @staticmethod
    def _sync_file(path: Path, content: str | bytes) -> None:
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
        try:
            if path.read_bytes() == data:
                return
        except OSError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)

    def _user_settings(self) -> dict[str, str]:
        """The user's effective values of the settings we copy, plus their global excludes and attributes files."""
        keys = "|".join(("excludesfile", "attributesfile") + _COPIED_CORE_SETTINGS)
        proc = git.run(["config", "-z", "--type=path", "--get-regexp", rf"^core\.({keys})$"],
                       env=git.clean_env(), cwd=self.paths.work_tree, ok=(0, 1))
        settings: dict[str, str] = {}
        for record in proc.stdout.split(b"\0"):
            if b"\n" in record:
                key, value = record.split(b"\n", 1)
                settings[key.decode().removeprefix("core.")] = os.fsdecode(value)
        # git's default global excludes/attributes files, resolved with the user's own environment.
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ.get("HOME", "/nonexistent"), ".config")
        for key, name in (("excludesfile", "ignore"), ("attributesfile", "attributes")):
            if settings.get(key):
                settings[key] = str(self.paths.work_tree / settings[key])
            elif (Path(base) / "git" / name).is_file():
                settings[key] = str(Path(base) / "git" / name)
        return settings

    def _config_text(self, settings: dict[str, str]) -> str:
        sha256 = self.paths.object_format != "sha1"
        core = [
            f"repositoryformatversion = {1 if sha256 else 0}",
            "bare = true",
            "logAllRefUpdates = false",
            "hooksPath = /dev/null",
            "untrackedCache = true",
            # Each checkpoint rewrites the private index; a split index writes only what changed.
            "splitIndex = true",
            f"fsmonitor = {'true' if _builtin_fsmonitor_available() else 'false'}",
            "safecrlf = false",
        ]
        for key in _COPIED_CORE_SETTINGS:
            if key in settings:
                core.append(f"{key} = {_quote_config(settings[key])}")
        if "excludesfile" in settings:
            core.append(f"excludesFile = {_quote_config(settings['excludesfile'])}")
        sections = {
            "core": core,
            # The untracked cache only serves a run whose flags match this setting (-uall).
            "status": ["showUntrackedFiles = all"],
            "advice": ["addEmbeddedRepo = false", "addIgnoredFile = false", "detachedHead = false",
                       "statusHints = false"],
            "commit": ["gpgSign = false"],
            "gc": ["auto = 0"],
            "submodule": ["recurse = false"],
            # Each run seeds its own index, whose shared part is several MB on a big repository;
            # unused ones go after a day (an index that lost its shared part is re-seeded).
            "splitIndex": ["maxPercentChange = 20", "sharedIndexExpire = 1.day.ago"],
        }
        if sha256:
            sections["extensions"] = [f"objectFormat = {self.paths.object_format}"]
        lines = ["# Written by gitbot for its checkpoint shadow repository; rewritten on every use."]
        for name, entries in sections.items():
            lines.append(f"[{name}]")
            lines.extend(f"\t{entry}" for entry in entries)
        return "\n".join(lines) + "\n"

    # -- writing checkpoints -----------------------------------------------------------------
    # A checkpoint's commit object and refs are written here directly rather than by spawning
    # `git commit-tree` and `git update-ref`: two processes are most of a checkpoint's cost on a
    # small repository. Both formats are git's stable on-disk ones (a zlib-compressed loose
    # object; a loose ref file replaced atomically), in a repository whose format we chose:
    # created by `git init` with the files ref backend, never packed (gc.auto = 0).

    def write_commit(self, tree: str, parent: str | None, message: str) -> str:
        stamp = f"{int(time.time())} +0000"
        name, email = IDENTITY["GIT_COMMITTER_NAME"], IDENTITY["GIT_COMMITTER_EMAIL"]
        body = (f"tree {tree}\n" + (f"parent {parent}\n" if parent else "")
                + f"author {name} <{email}> {stamp}\ncommitter {name} <{email}> {stamp}\n\n{message}")
        return self._write_loose_object("commit", body.encode("utf-8", "surrogateescape"))

    def _write_loose_object(self, kind: str, body: bytes) -> str:
        data = f"{kind} {len(body)}".encode() + b"\0" + body
        oid = hashlib.new("sha256" if self.paths.object_format == "sha256" else "sha1", data).hexdigest()
        target = self.dir / "objects" / oid[:2] / oid[2:]
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            tmp = target.parent / f"tmp_obj_{os.getpid()}_{oid[2:10]}"
            tmp.write_bytes(zlib.compress(data))
            tmp.chmod(0o444)
            os.replace(tmp, target)
        return oid

    def set_refs(self, updates: dict[str, str]) -> None:
        """Point each ref (a name under refs/, or HEAD for a detached HEAD) at an object id."""
        scratch = self.dir / "tmp"
        scratch.mkdir(exist_ok=True)
        for ref, oid in updates.items():
            if ref != "HEAD" and not ref.startswith(f"{REF_ROOT}/"):
                raise ValueError(f"not a checkpoint ref: {ref}")
            path = self.dir / ref
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = scratch / f"ref.{os.getpid()}.{secrets.token_hex(4)}"  # outside refs/, where git would list it
            tmp.write_text(oid + "\n")
            os.replace(tmp, path)

    # -- objects borrowed from the user's store -----------------------------------------------

    def keep_objects(self, oids: Iterable[str]) -> int:
        """Make the shadow's own store hold these objects (found in the user's, through the alternates),
        so the user's `git gc` cannot take them away: blobs only the user's index references (staged,
        never committed) are unreachable in their repository and pruned at once by `gc --prune=now`.
        A loose object is hard-linked (copied across file systems); packed ones go into one new pack.
        Returns how many objects were added."""
        own = self.dir / "objects"
        theirs = self.paths.common_dir / "objects"
        packed: list[str] = []
        added = 0
        for oid in dict.fromkeys(oids):
            target = own / oid[:2] / oid[2:]
            if target.exists():
                continue
            source = theirs / oid[:2] / oid[2:]
            if not source.is_file():
                packed.append(oid)
                continue
            target.parent.mkdir(exist_ok=True)
            try:
                os.link(source, target)
            except FileExistsError:
                continue
            except OSError:
                tmp = target.parent / f"tmp_obj_{os.getpid()}_{oid[2:10]}"
                shutil.copyfile(source, tmp)
                os.replace(tmp, target)
            added += 1
        if packed:
            # Without --local, pack-objects also packs what it reads through the alternates.
            self.git("pack-objects", "-q", "--window=0", str(own / "pack" / "pack"),
                     input="".join(f"{oid}\n" for oid in packed).encode())
            added += len(packed)
        return added

    def missing_objects(self, oids: Iterable[str]) -> set[str]:
        """Which of these objects neither the shadow nor the user's store (alternates) holds."""
        wanted = list(dict.fromkeys(oids))
        if not wanted:
            return set()
        out = self.git("cat-file", "--batch-check", input="".join(f"{oid}\n" for oid in wanted).encode()).stdout
        return {line.split(" ", 1)[0] for line in out.decode().splitlines() if line.endswith(" missing")}

    # -- reading checkpoints -----------------------------------------------------------------

    def run_steps(self, run_id: str) -> dict[int, str]:
        """step -> checkpoint commit, for every ref refs/gitbot/<run_id>/<step>."""
        if not self.exists:
            return {}
        if not (self.dir / "packed-refs").exists():
            # The refs are loose files this module writes (set_refs): read them without starting git.
            return self._loose_steps(self.dir / REF_ROOT / run_id)
        prefix = f"{REF_ROOT}/{run_id}/"
        out = self.git("for-each-ref", "--format=%(refname) %(objectname)", prefix).stdout.decode()
        steps: dict[int, str] = {}
        for line in out.splitlines():
            ref, _, commit = line.partition(" ")
            tail = ref[len(prefix):]
            if tail.isdigit():
                steps[int(tail)] = commit
        return steps

    def _loose_steps(self, directory: Path) -> dict[int, str]:
        try:
            names = os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return {}  # a new run
        steps: dict[int, str] = {}
        for name in names:
            if name.isdigit() and name.isascii():
                oid = (directory / name).read_text(encoding="ascii", errors="replace").strip()
                if len(oid) in (40, 64) and all(c in "0123456789abcdef" for c in oid):
                    steps[int(name)] = oid
        return steps

    def runs(self) -> list[str]:
        if not self.exists:
            return []
        out = self.git("for-each-ref", "--format=%(refname)", f"{REF_ROOT}/").stdout.decode()
        return sorted({line.split("/")[2] for line in out.splitlines() if line.count("/") >= 3})

    def read_commit(self, commit: str) -> tuple[str, dict[str, Any]]:
        """(tree, manifest) of a checkpoint commit."""
        text = self.git("cat-file", "commit", commit).stdout.decode("utf-8", "surrogateescape")
        tree = text.split("\n", 1)[0].split(" ", 1)[1]
        manifest: dict[str, Any] = {}
        for line in text.splitlines():
            if line.startswith(MANIFEST_PREFIX):
                manifest = json.loads(line[len(MANIFEST_PREFIX):])
        return tree, manifest

    def changed_paths(self, old_tree: str, new_tree: str) -> list[str]:
        out = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-only", old_tree, new_tree).stdout
        return [os.fsdecode(p) for p in out.split(b"\0") if p]

    def diff_entries(self, old_tree: str, new_tree: str) -> list[DiffEntry]:
        out = self.git("diff-tree", "-r", "-z", "--no-renames", old_tree, new_tree).stdout
        fields = out.split(b"\0")
        entries = []
        for i in range(0, len(fields) - 1, 2):
            meta = fields[i].decode()
            if not meta.startswith(":"):
                break
            old_mode, new_mode, old_sha, new_sha, status = meta[1:].split(" ")
            entries.append(DiffEntry(old_mode, new_mode, old_sha, new_sha, status[0], os.fsdecode(fields[i + 1])))
        return entries


@dataclass(frozen=True)
class DiffEntry:
    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    status: str  # A, D, M, T
    path: str


def fs(path: str) -> bytes:
    return os.fsencode(path)


# ---------------------------------------------------------------------------------------------
# Runs in the shadow: their ids (ref names) and how each run checkpointed


def modes_file(shadow_dir: Path, run_id: str) -> Path:
    return shadow_dir / "modes" / f"{run_id}.json"


def per_response_from(paths: RepoPaths, run_id: str) -> int | None:
    """The first step a run checkpointed only once per model response (None: per step throughout).
    Steps from there on have no checkpoint of their own unless a response ended at them."""
    try:
        data = json.loads(modes_file(paths.shadow_dir, run_id).read_text())
    except (OSError, ValueError):
        return None
    value = data.get("per_response_from") if isinstance(data, dict) else None
    return value if isinstance(value, int) else None


def validate_run_id(run_id: str) -> str:
    ok = (isinstance(run_id, str) and 0 < len(run_id) <= 200 and run_id[0].isalnum()
          and all(c.isalnum() or c in "._-" for c in run_id) and ".." not in run_id
          and not run_id.endswith(".lock"))
    if not ok:
        raise UnknownRun(f"{run_id!r} is not a valid run id (letters, digits, '.', '_', '-')")
    return run_id
