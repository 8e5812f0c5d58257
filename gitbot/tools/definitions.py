"""list_code_definition_names and file_outline: tree-sitter definition tags, cached on disk.

The queries are data files in gitbot/tools/tags/<language>.scm (definitions only, no
references). Like Cline, a directory is scanned one level deep: the model asks again on a
subdirectory or a file, which keeps each answer small.

Parsing is most of the cost (tree-sitter parses ~5x slower than ctags reads), so only what the
answer shows is parsed: a directory's files in order until MAX_DEFINITIONS are found, the files
after that only counted. Many files to parse are split between this process and a forked child
(tools/parallel.py). Parsed tags are cached by path, size and mtime (tools/tag_cache.py), so a
second call on an unchanged tree parses nothing.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import subprocess
import time
from dataclasses import dataclass
from functools import cache, lru_cache, partial
from pathlib import Path, PurePosixPath
from typing import Any

from tree_sitter import Node, Parser, Query, QueryCursor

from gitbot.tools.base import Tool, ToolContext, ToolError, count_of
from gitbot.tools.parallel import map_split
from gitbot.tools.paths import resolve
from gitbot.tools.search import rg_binary
from gitbot.tools.tag_cache import Definition, TagCache, parent_of
from gitbot.treesitter import language_for, language_name, parser_for

MAX_DEFINITIONS = 200
MAX_FILE_BYTES = 2_000_000  # bigger "source" files are generated or minified: their tags are noise
LISTING_TIMEOUT_SECONDS = 30
PARALLEL_MIN_BYTES = 256 * 1024  # less to parse (~20 ms) and forking a second parser costs more than it saves
FIRST_CHUNK_BYTES = 32 * 1024  # a directory's first parse; each next one doubles
TAGS_DIR = Path(__file__).resolve().parent / "tags"
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


def _definitions_of(root: Path, relpaths: list[str], cache: TagCache,
                    enough: int | None = None) -> tuple[list[_FileDefinitions], list[str], int]:
    """Definitions per file in order (cache first), the files skipped for being too large, and how
    many files were left unread: with `enough`, files are parsed in order only until that many
    definitions are known (chunks grow from a few files, so a directory whose first files fill
    the answer parses little more than those)."""
    cached = cache.lookup(relpaths)
    pending: list[tuple[str, str, os.stat_result, list[Definition] | None]] = []  # None: to parse
    too_large: list[str] = []
    base = str(root)  # plain strings: the loop runs per file on every call
    for relpath in relpaths:
        try:
            status = os.stat(os.path.join(base, relpath))
        except OSError:
            continue  # vanished between listing and reading
        if status.st_size > MAX_FILE_BYTES:
            too_large.append(relpath)
            continue
        hit = cached.get(relpath)
        valid = hit is not None and hit[0] == status.st_size and hit[1] == status.st_mtime_ns
        pending.append((relpath, _supported_language(os.path.splitext(relpath)[1].lower()), status,
                        hit[2] if hit is not None and valid else None))
    results: list[_FileDefinitions] = []
    found, position, unread, budget = 0, 0, 0, FIRST_CHUNK_BYTES
    while position < len(pending):
        end, size = position + 1, pending[position][2].st_size
        if pending[position][3] is None:  # a run of files to parse, up to `budget` bytes
            while end < len(pending) and pending[end][3] is None and size < budget:
                size, end = size + pending[end][2].st_size, end + 1
            budget *= 2
        run = pending[position:end]
        fresh = iter(_parse_all(base, [(path, language) for path, language, _, known in run if known is None],
                                [status.st_size for _, _, status, known in run if known is None]))
        for relpath, language, status, definitions in run:
            if definitions is None:
                definitions = next(fresh)
                if definitions is not None:  # None: unreadable
                    cache.store(relpath, status.st_size, status.st_mtime_ns, definitions)
            if enough is not None and found >= enough:
                unread += 1  # past the answer: counted, not shown (whether or not this run parsed it)
            elif definitions is not None:
                results.append(_FileDefinitions(relpath, language, definitions))
                found += len(definitions)
        position = end
        if enough is not None and found >= enough:
            unread += len(pending) - position
            break
    return results, too_large, unread


def _parse_all(base: str, tasks: list[tuple[str, str]], sizes: list[int]) -> list[list[Definition] | None]:
    for language in {language for _, language in tasks}:  # compiled before a fork: the child has them
        _query(language), _parser(language)
    parsed_before = STATS.files_parsed
    parsed = map_split(partial(_parse_file, base), tasks, sizes, min_weight=PARALLEL_MIN_BYTES)
    STATS.files_parsed = parsed_before + sum(definitions is not None for definitions in parsed)  # the child's too
    return parsed


def _parse_file(base: str, task: tuple[str, str]) -> list[Definition] | None:
    try:
        data = Path(base, task[0]).read_bytes()
    except OSError:
        return None
    return extract_definitions(data, task[1])


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
    cache = TagCache.for_git_dir(git_dir, _cache_version())
    try:
        results, _, _ = _definitions_of(root, [path.relative_to(root).as_posix()], cache)
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
    cache = TagCache.for_git_dir(git_dir, _cache_version())
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
        results, too_large, unread = _definitions_of(root, files, cache,
                                                     enough=MAX_DEFINITIONS if absolute.is_dir() else None)
        if absolute.is_dir():
            cache.forget_missing(relpath, set(files))
    finally:
        cache.close()
    return _render(relpath, results, too_large, hidden, subdirectories, scanned=len(files), unread=unread)


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
        directory = parent_of(directory)
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
            subdirectories: list[str], scanned: int, unread: int = 0) -> str:
    with_definitions = [r for r in results if r.definitions]
    out: list[str] = []
    shown = 0
    left_definitions, left_in = 0, ""
    for result in with_definitions:
        room = MAX_DEFINITIONS - shown
        if room <= 0:  # (results stop at the file that fills the answer; the rest is `unread`)
            left_definitions += len(result.definitions)
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
            left_definitions, left_in = left_definitions + len(result.definitions) - room, result.path
    notes: list[str] = []
    if left_definitions and scanned == 1:
        notes.append(f"({count_of(left_definitions, 'more definition')} not shown; the output is capped at "
                     f"{MAX_DEFINITIONS}. Use search_files to find a particular definition.)")
    elif left_definitions or unread:
        # Files past the cap are not parsed (that is most of the cost), so they are counted, not summed.
        parts = [f"{count_of(left_definitions, 'more definition')} in {left_in}"] if left_definitions else []
        parts += [count_of(unread, "more file")] if unread else []
        notes.append(f"({' and '.join(parts)} not shown; the output is capped at {MAX_DEFINITIONS}. Call "
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
