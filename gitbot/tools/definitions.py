"""list_code_definition_names and file_outline: tree-sitter definition tags, cached on disk.

The queries are data files in gitbot/tools/tags/<language>.scm (definitions only, no
references). Like Cline, a directory is scanned one level deep: the model asks again on a
subdirectory or a file, which keeps each answer small.

Parsed tags are cached in `<git dir>/gitbot/cache/definitions.sqlite`, keyed by the
repository-relative path and validated by size and mtime_ns, so a second call on an unchanged
tree parses nothing. SQLite rather than one JSON file: a directory's rows are read without
loading the whole cache, and concurrent runs on one repository are serialised by SQLite's own
locking. The cache is an optimisation only: when it is locked, unreadable or corrupt, the
tool parses and (for a corrupt file) replaces it with a fresh one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from tree_sitter import Node, Parser, Query, QueryCursor

from gitbot.tools.base import Tool, ToolContext, ToolError, count_of
from gitbot.tools.paths import resolve
from gitbot.tools.search import rg_binary
from gitbot.treesitter import language_for, language_name, parser_for

MAX_DEFINITIONS = 200
MAX_FILE_BYTES = 2_000_000  # bigger "source" files are generated or minified: their tags are noise
LISTING_TIMEOUT_SECONDS = 30
TAGS_DIR = Path(__file__).resolve().parent / "tags"
CACHE_PATH_IN_GIT_DIR = Path("gitbot") / "cache" / "definitions.sqlite"
CACHE_SCHEMA = 1  # bump when the cached row format changes

# Which query file serves which grammar (tsx uses the TypeScript queries).
QUERY_FILES = {"python": "python", "javascript": "javascript", "typescript": "typescript",
               "tsx": "typescript", "go": "go", "rust": "rust", "java": "java", "c": "c", "cpp": "cpp",
               "ruby": "ruby", "bash": "bash"}
# A definition nested in one of these is a member: a function there is reported as a method.
CLASS_LIKE = {"class", "struct", "union", "enum", "interface", "trait", "impl", "record"}
# These nest definitions (shown indented) without turning functions into methods.
NAMESPACE_LIKE = {"module", "namespace"}
# Anything defined inside a function body is a local detail and left out.
FUNCTION_LIKE = {"function", "method", "constructor"}
# How a kind reads in the languages whose keyword differs from the kind's name.
KEYWORDS = {"python": {"function": "def", "method": "def"}, "ruby": {"function": "def", "method": "def"}}


class Definition(NamedTuple):  # a NamedTuple: thousands are rebuilt from the cache per call
    line: int  # 1-based line of the definition's name
    kind: str  # class, function, method, struct, interface, trait, impl, type, enum, module, ...
    name: str
    depth: int  # how many class-like or namespace-like definitions enclose it


class ParseStats:
    """Counts real work, so tests and benchmarks can tell a cache hit from a parse or a listing."""

    files_parsed = 0
    directories_listed = 0


STATS = ParseStats()


# ---------------------------------------------------------------- extraction

# One representative extension per grammar, to reach languages.py's lookups by name.
_SUFFIX_OF = {"python": ".py", "javascript": ".js", "typescript": ".ts", "tsx": ".tsx", "go": ".go",
              "rust": ".rs", "java": ".java", "c": ".c", "cpp": ".cpp", "ruby": ".rb", "bash": ".sh"}


@cache
def _query(language: str) -> Query | None:
    query_file = QUERY_FILES.get(language)
    grammar = language_for(f"x{_SUFFIX_OF[language]}") if query_file else None
    if query_file is None or grammar is None:
        return None
    return Query(grammar, (TAGS_DIR / f"{query_file}.scm").read_text(encoding="utf-8"))


@cache
def _parser(language: str) -> Parser | None:
    return parser_for(f"x{_SUFFIX_OF[language]}")


def supports(path: str | PurePosixPath | Path) -> bool:
    return _supported_language(os.path.splitext(path)[1].lower()) is not None


@cache
def _supported_language(suffix: str) -> str | None:
    """The grammar name for a file extension when definitions can be extracted from it."""
    language = language_name(f"x{suffix}")
    return language if language in QUERY_FILES and _query(language) is not None else None


@dataclass
class _Tag:
    start: int  # byte range of the whole definition: decides nesting
    end: int
    line: int
    kind: str
    name: str


def extract_definitions(source: bytes, language: str) -> list[Definition]:
    """Parse `source` and return its definitions in file order."""
    query, parser = _query(language), _parser(language)
    if query is None or parser is None:
        return []
    STATS.files_parsed += 1
    tree = parser.parse(source)
    tags: dict[int, _Tag] = {}
    for _, captures in QueryCursor(query).matches(tree.root_node):
        kind = next((key.removeprefix("definition.") for key in captures if key.startswith("definition.")),
                    None)
        if kind is None or "name" not in captures:
            continue
        node, name_node = captures[f"definition.{kind}"][0], captures["name"][0]
        name = _node_text(name_node)
        if "scope" in captures:
            name = f"{_node_text(captures['scope'][0])}.{name}"
        if "trait" in captures:
            name = f"{_node_text(captures['trait'][0])} for {name}"
        # Keyed by the name's position: two patterns matching one definition yield one tag.
        tags.setdefault(name_node.start_byte,
                        _Tag(node.start_byte, node.end_byte, name_node.start_point.row + 1, kind, name))
    return _nest(list(tags.values()))


def _node_text(node: Node) -> str:
    return " ".join((node.text or b"").decode("utf-8", "replace").split())


def _nest(tags: list[_Tag]) -> list[Definition]:
    tags.sort(key=lambda tag: (tag.start, -tag.end))
    enclosing: list[_Tag] = []
    found: list[Definition] = []
    for tag in tags:
        while enclosing and not _contains(enclosing[-1], tag):
            enclosing.pop()
        if any(outer.kind in FUNCTION_LIKE for outer in enclosing):
            continue  # local helpers and callbacks: noise at the outline level
        kind = tag.kind
        if kind in ("function", "prototype") and any(outer.kind in CLASS_LIKE for outer in enclosing):
            kind = "method"
        depth = sum(outer.kind in CLASS_LIKE or outer.kind in NAMESPACE_LIKE for outer in enclosing)
        found.append(Definition(tag.line, kind, tag.name, depth))
        enclosing.append(tag)
    # A C/C++ prototype next to the function's own definition only repeats it.
    defined = {d.name for d in found if d.kind in FUNCTION_LIKE}
    found = [d for d in found if not (d.kind == "prototype" and d.name in defined)]
    found.sort(key=lambda d: d.line)
    return found


def _contains(outer: _Tag, inner: _Tag) -> bool:
    # Equal ranges are siblings (`const a = () => 1, b = () => 2` is one declaration node).
    return outer.start <= inner.start and inner.end <= outer.end and (outer.start, outer.end) != (
        inner.start, inner.end)


# ---------------------------------------------------------------- the cache

@lru_cache(maxsize=1)
def _cache_version() -> str:
    """Changes whenever a query, the grammar versions or the row format change: old rows are dropped."""
    digest = hashlib.sha256(str(CACHE_SCHEMA).encode())
    for query_file in sorted(TAGS_DIR.glob("*.scm")):
        digest.update(query_file.name.encode() + query_file.read_bytes())
    for package in ["tree-sitter", *sorted({f"tree-sitter-{q}" for q in QUERY_FILES.values()})]:
        try:
            digest.update(f"{package}={importlib.metadata.version(package)}".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{package}=missing".encode())
    return digest.hexdigest()[:16]


_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tags (path TEXT PRIMARY KEY, dir TEXT NOT NULL, size INTEGER NOT NULL,
                                 mtime_ns INTEGER NOT NULL, definitions TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS tags_by_dir ON tags (dir);
CREATE TABLE IF NOT EXISTS listings (dir TEXT PRIMARY KEY, key TEXT NOT NULL, files TEXT NOT NULL);
"""


class TagCache:
    """Definitions by (path, size, mtime_ns), and directory listings by what they depend on, in one
    SQLite file. Every failure means "no cache", never an error."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[str, str, int, int, str]] = []
        self._pending_listings: list[tuple[str, str, str]] = []
        if path is not None:
            self._db = self._open(path)

    @classmethod
    def for_git_dir(cls, git_dir: Path | None) -> TagCache:
        return cls(git_dir / CACHE_PATH_IN_GIT_DIR if git_dir is not None else None)

    def _open(self, path: Path) -> sqlite3.Connection | None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return self._connect(path)
        except sqlite3.DatabaseError:
            # Not a database (truncated, overwritten): build a fresh one beside it and swap it in
            # with an atomic rename, so a concurrent reader sees either the old file or the new one.
            try:
                fresh = path.with_name(f"{path.name}.{os.getpid()}.tmp")
                fresh.unlink(missing_ok=True)
                self._connect(fresh).close()
                os.replace(fresh, path)
                return self._connect(path)
            except (sqlite3.Error, OSError):
                return None
        except OSError:
            return None

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=2.0, isolation_level=None)
        try:
            version = _cache_version()
            db.executescript(_TABLES)
            row = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
            if row is None or row[0] != version:
                with db:
                    db.execute("BEGIN IMMEDIATE")
                    db.execute("DELETE FROM tags")
                    db.execute("DELETE FROM listings")
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (version,))
        except sqlite3.OperationalError:
            # Locked by another writer for longer than the timeout: read what we can, skip the upkeep.
            pass
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def lookup(self, paths: Iterable[str]) -> dict[str, tuple[int, int, list[Definition]]]:
        """Cached rows for these repository-relative paths (by their directories: one query each)."""
        if self._db is None:
            return {}
        wanted = set(paths)
        found: dict[str, tuple[int, int, list[Definition]]] = {}
        try:
            for directory in {_parent(p) for p in wanted}:
                for path, size, mtime_ns, data in self._db.execute(
                        "SELECT path, size, mtime_ns, definitions FROM tags WHERE dir = ?", (directory,)):
                    if path in wanted:
                        found[path] = (size, mtime_ns, list(map(Definition._make, json.loads(data))))
        except (sqlite3.Error, ValueError, TypeError):
            return {}
        return found

    def store(self, path: str, size: int, mtime_ns: int, definitions: list[Definition]) -> None:
        rows = [[d.line, d.kind, d.name, d.depth] for d in definitions]
        self._pending.append((path, _parent(path), size, mtime_ns, json.dumps(rows, separators=(",", ":"))))

    def listing(self, directory: str, key: str) -> list[str] | None:
        """The files of `directory` as last listed, if what the listing depends on is unchanged."""
        if self._db is None:
            return None
        try:
            row = self._db.execute("SELECT key, files FROM listings WHERE dir = ?", (directory,)).fetchone()
            return json.loads(row[1]) if row is not None and row[0] == key else None
        except (sqlite3.Error, ValueError):
            return None

    def store_listing(self, directory: str, key: str, files: list[str]) -> None:
        self._pending_listings.append((directory, key, json.dumps(files)))

    def forget_missing(self, directory: str, present: set[str]) -> None:
        """Drop rows of files that left `directory`, so the cache does not grow without bound."""
        if self._db is None:
            return
        try:
            stale = [path for (path,) in self._db.execute("SELECT path FROM tags WHERE dir = ?", (directory,))
                     if path not in present]
            if stale:
                with self._db:
                    self._db.executemany("DELETE FROM tags WHERE path = ?", [(p,) for p in stale])
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self._db is None:
            return
        try:
            if self._pending or self._pending_listings:
                with self._db:
                    self._db.execute("BEGIN IMMEDIATE")
                    self._db.executemany("INSERT OR REPLACE INTO tags VALUES (?, ?, ?, ?, ?)", self._pending)
                    self._db.executemany("INSERT OR REPLACE INTO listings VALUES (?, ?, ?)",
                                         self._pending_listings)
        except sqlite3.Error:
            pass  # another run holds the lock: these files get parsed again next time
        finally:
            self._pending.clear()
            self._pending_listings.clear()
            self._db.close()
            self._db = None


def _parent(relpath: str) -> str:
    parent, slash, _ = relpath.rpartition("/")
    return parent if slash else "."


def find_git_dir(start: Path) -> tuple[Path, Path] | None:
    """(work tree root, git dir) for a path, like `git rev-parse --absolute-git-dir` without the subprocess.

    Handles worktrees and submodules, whose `.git` is a file saying `gitdir: <path>`.
    """
    for directory in (start, *start.parents):
        dot_git = directory / ".git"
        if dot_git.is_dir():
            return directory, dot_git
        if dot_git.is_file():
            try:
                text = dot_git.read_text(encoding="utf-8").strip()
            except OSError:
                return None
            if text.startswith("gitdir:"):
                target = Path(text.removeprefix("gitdir:").strip())
                return directory, (directory / target).resolve()
            return None
    return None


# ---------------------------------------------------------------- definitions of files

@dataclass
class _FileDefinitions:
    path: str
    language: str
    definitions: list[Definition]


def _definitions_of(root: Path, relpaths: list[str],
                    cache: TagCache) -> tuple[list[_FileDefinitions], list[str]]:
    """Definitions per file (cache first) and the files skipped for being too large."""
    cached = cache.lookup(relpaths)
    results: list[_FileDefinitions] = []
    too_large: list[str] = []
    base = str(root)
    for relpath in relpaths:
        absolute = os.path.join(base, relpath)  # plain strings: this loop runs per file on every call
        try:
            status = os.stat(absolute)
        except OSError:
            continue  # vanished between listing and reading
        if status.st_size > MAX_FILE_BYTES:
            too_large.append(relpath)
            continue
        language = _supported_language(os.path.splitext(relpath)[1].lower())
        hit = cached.get(relpath)
        if hit is not None and hit[0] == status.st_size and hit[1] == status.st_mtime_ns:
            definitions = hit[2]
        else:
            try:
                with open(absolute, "rb") as source:
                    definitions = extract_definitions(source.read(), language)
            except OSError:
                continue
            cache.store(relpath, status.st_size, status.st_mtime_ns, definitions)
        results.append(_FileDefinitions(relpath, language, definitions))
    return results, too_large


def file_outline(path: Path) -> list[tuple[int, str, str]]:
    """(line, kind, name) of each definition in one file, for read_file's outline of a large file.

    Methods have kind "method"; nesting depth is not included. Uses the repository's tag cache
    when the file is inside a git work tree. Unsupported or unreadable files give [].
    """
    path = Path(path).resolve()
    if not supports(path):
        return []
    located = find_git_dir(path.parent)
    if located is None:
        try:
            source = path.read_bytes()
        except OSError:
            return []
        language = _supported_language(path.suffix.lower())
        return [(d.line, d.kind, d.name) for d in extract_definitions(source, language)]
    root, git_dir = located
    cache = TagCache.for_git_dir(git_dir)
    try:
        results, _ = _definitions_of(root, [path.relative_to(root).as_posix()], cache)
    finally:
        cache.close()
    return [(d.line, d.kind, d.name) for d in results[0].definitions] if results else []


# ---------------------------------------------------------------- the tool

def list_code_definition_names(ctx: ToolContext, args: dict[str, Any]) -> str:
    absolute, relpath = resolve(ctx, args.get("path", "."), must_exist=True)
    root = ctx.repo.resolve()
    if not absolute.is_file() and not absolute.is_dir():
        raise ToolError(f"{relpath} is neither a file nor a directory")
    if absolute.is_file() and not supports(relpath):
        raise ToolError(f"{relpath}: no definition support for this file type; supported languages: "
                        f"{', '.join(sorted(QUERY_FILES))}. Use read_file to read it.")
    located = find_git_dir(root)
    git_dir = located[1] if located else None
    cache = TagCache.for_git_dir(git_dir)
    try:
        hidden = 0
        subdirectories: list[str] = []
        if absolute.is_file():
            files = [relpath]
        else:
            files = []
            for file in _list_directory(ctx, root, git_dir, relpath, cache):
                if ctx.policy.check_read(file):
                    files.append(file)
                else:
                    hidden += 1
            subdirectories = sorted(entry.name + "/" for entry in os.scandir(absolute)
                                    if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."))
        results, too_large = _definitions_of(root, files, cache)
        if absolute.is_dir():
            cache.forget_missing(relpath, set(files))
    finally:
        cache.close()
    return _render(relpath, results, too_large, hidden, subdirectories, scanned=len(files))


# ---------------------------------------------------------------- directory listings

# rg's ignore files, read in the listed directory and each parent up to the repository root.
IGNORE_FILE_NAMES = (".gitignore", ".ignore", ".rgignore")
# A directory modified this close to its listing could change again within the same timestamp tick
# without its mtime moving (git's "racy clean" problem), so such a listing is not cached.
RACY_LISTING_NS = 1_000_000_000


def _list_directory(ctx: ToolContext, root: Path, git_dir: Path | None, relpath: str,
                    cache: TagCache) -> list[str]:
    """Supported source files directly in the directory, as rg sees them (.gitignore honoured, hidden
    files skipped), from the cache while the directory and the ignore rules are unchanged.

    Starting rg costs a few milliseconds, most of a warm call, while a dozen stats prove the
    listing unchanged: the directory's mtime moves whenever an entry is added, removed or renamed.
    """
    key = _listing_key(root, git_dir, relpath)
    if key is not None:
        cached = cache.listing(relpath, json.dumps(key))
        if cached is not None:
            return cached
    files = _run_listing(ctx, relpath)
    STATS.directories_listed += 1
    if key is not None and time.time_ns() - key[0] > RACY_LISTING_NS:
        cache.store_listing(relpath, json.dumps(key), files)
    return files


def _listing_key(root: Path, git_dir: Path | None, relpath: str) -> list[Any] | None:
    """The stats a directory's listing depends on: its mtime and every ignore file that applies."""
    base = str(root)
    try:
        key: list[Any] = [os.stat(os.path.join(base, relpath)).st_mtime_ns]
    except OSError:
        return None
    directory = relpath
    while True:
        for name in IGNORE_FILE_NAMES:
            key.append(_stamp(os.path.join(base, directory, name)))
        if directory == ".":
            break
        directory = _parent(directory)
    global_config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "git"
    for path in (global_config / "ignore", global_config / "config", Path.home() / ".gitconfig"):
        key.append(_stamp(str(path)))
    if git_dir is not None:  # info/exclude, and config in case it names another core.excludesFile
        key += [_stamp(str(git_dir / "info" / "exclude")), _stamp(str(git_dir / "config"))]
    return key


def _stamp(path: str) -> list[int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return [status.st_mtime_ns, status.st_size]


def _run_listing(ctx: ToolContext, relpath: str) -> list[str]:
    # rg applies git's ignore rules exactly as search_files does, so both tools see the same files.
    # Always an explicit path: without one, rg lists stdin whenever stdin is not a terminal.
    command = [rg_binary(), "--files", "--no-config", "--max-depth", "1", "--sort", "path", "--", relpath]
    try:
        done = subprocess.run(command, cwd=ctx.repo, check=False, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=LISTING_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired as error:
        raise ToolError(f"listing {relpath} took longer than {LISTING_TIMEOUT_SECONDS} s") from error
    if done.returncode not in (0, 1):
        raise ToolError(f"could not list {relpath}: {done.stderr.decode('utf-8', 'replace').strip()}")
    paths = (line.removeprefix("./") for line in done.stdout.decode("utf-8", "replace").splitlines())
    return [path for path in paths if path and supports(path)]


def _render(relpath: str, results: list[_FileDefinitions], too_large: list[str], hidden: int,
            subdirectories: list[str], scanned: int) -> str:
    with_definitions = [r for r in results if r.definitions]
    out: list[str] = []
    shown = 0
    left_definitions = left_files = 0
    for result in with_definitions:
        room = MAX_DEFINITIONS - shown
        if room <= 0:
            left_definitions += len(result.definitions)
            left_files += 1
            continue
        if out:
            out.append("")
        out.append(f"{result.path}:")
        keywords = KEYWORDS.get(result.language, {})
        for definition in result.definitions[:room]:
            label = keywords.get(definition.kind, definition.kind)
            out.append(f"{definition.line:>4} | {'  ' * definition.depth}{label} {definition.name}")
        shown += min(room, len(result.definitions))
        if len(result.definitions) > room:
            left_definitions += len(result.definitions) - room
            left_files += 1
    notes: list[str] = []
    if left_definitions and scanned == 1:
        notes.append(f"({count_of(left_definitions, 'more definition')} not shown; the output is capped at "
                     f"{MAX_DEFINITIONS}. Use search_files to find a particular definition.)")
    elif left_definitions:
        left = f"{count_of(left_definitions, 'more definition')} in {count_of(left_files, 'file')}"
        notes.append(f"({left} not shown; the output is capped at {MAX_DEFINITIONS}. Call "
                     f"list_code_definition_names on a single file to see its definitions.)")
    if too_large:
        notes.append(f"(Skipped, larger than {MAX_FILE_BYTES // 1_000_000} MB: {', '.join(too_large)}.)")
    if hidden:
        notes.append(f"({count_of(hidden, 'file')} hidden by the policy.)")
    if not out:
        place = "the repository root" if relpath == "." else relpath
        if scanned == 0:
            message = f"No source files in a supported language directly in {place}."
        else:
            message = f"No definitions found in {count_of(scanned, 'source file')} in {place}."
        if subdirectories:
            listed = ", ".join(subdirectories[:20]) + (" …" if len(subdirectories) > 20 else "")
            message += f" Only the top level is scanned; subdirectories: {listed}"
        return "\n".join([message, *notes])
    return "\n".join(out + ([""] + notes if notes else []))


LIST_CODE_DEFINITION_NAMES = Tool(
    name="list_code_definition_names",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string",
                     "description": "A directory (its files, not its subdirectories) or one source file, "
                                    "relative to the repository root."},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    function=list_code_definition_names,
    changes_files=False,
)
