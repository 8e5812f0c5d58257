"""The definitions cache: parsed tags per file and directory listings, in one SQLite file.

It lives in `<git dir>/gitbot/cache/definitions.sqlite`. Rows are keyed by the repository-relative
path and validated by size and mtime_ns, so a second call on an unchanged tree parses nothing.
SQLite rather than one JSON file: a directory's rows are read without loading the whole cache,
and concurrent runs on one repository are serialised by SQLite's own locking. The cache is an
optimisation only: when it is locked, unreadable or corrupt, callers parse and (for a corrupt
file) it is replaced with a fresh one. `version` (from the queries and grammar versions) drops
every row when it changes.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

CACHE_PATH_IN_GIT_DIR = Path("gitbot") / "cache" / "definitions.sqlite"


class Definition(NamedTuple):  # a NamedTuple: thousands are rebuilt from the cache per call
    line: int  # 1-based line of the definition's name
    kind: str  # class, function, method, struct, interface, trait, impl, type, enum, module, ...
    name: str
    depth: int  # how many class-like or namespace-like definitions enclose it


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

    def __init__(self, path: Path | None, version: str) -> None:
        self.path = path
        self._version = version
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[str, str, int, int, str]] = []
        self._pending_listings: list[tuple[str, str, str]] = []
        if path is not None:
            self._db = self._open(path)

    @classmethod
    def for_git_dir(cls, git_dir: Path | None, version: str) -> TagCache:
        return cls(git_dir / CACHE_PATH_IN_GIT_DIR if git_dir is not None else None, version)

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

    def _connect(self, path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=2.0, isolation_level=None)
        try:
            version = self._version
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
            for directory in {parent_of(p) for p in wanted}:
                for path, size, mtime_ns, data in self._db.execute(
                        "SELECT path, size, mtime_ns, definitions FROM tags WHERE dir = ?", (directory,)):
                    if path in wanted:
                        found[path] = (size, mtime_ns, list(map(Definition._make, json.loads(data))))
        except (sqlite3.Error, ValueError, TypeError):
            return {}
        return found

    def store(self, path: str, size: int, mtime_ns: int, definitions: list[Definition]) -> None:
        rows = [[d.line, d.kind, d.name, d.depth] for d in definitions]
        self._pending.append((path, parent_of(path), size, mtime_ns, json.dumps(rows, separators=(",", ":"))))

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


def parent_of(relpath: str) -> str:
    """The directory part of a repository-relative path ("." at the top)."""
    parent, slash, _ = relpath.rpartition("/")
    return parent if slash else "."

