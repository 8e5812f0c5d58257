"""File rules: which repository paths the agent may read and edit.

Globs are relative to the repository root. `**` crosses directories, `*` and `?` stay inside one
path segment, `[...]` is a character class. A pattern that names a directory (`dir/**`) also covers
the directory itself. Deny rules compare case-insensitively (on a case-insensitive file system
`.ENV` is `.env`, so a deny must not be dodged by spelling); allow rules compare exactly.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from pathlib import Path

from gitbot.policy.base import Decision

GIT_DIR = ".git"
# How many entries a listing of the repository walks before it gives up (the caller then assumes the worst).
MAX_LISTED_FILES = 200_000


class GlobError(ValueError):
    """A glob that cannot be compiled; the message says what is wrong with it."""


def _char_class(pattern: str, start: int, *, path_mode: bool) -> tuple[str, int]:
    """Translate the `[...]` starting at `start`; returns (regex, index after the closing bracket)."""
    i = start + 1
    negate = i < len(pattern) and pattern[i] in "!^"
    if negate:
        i += 1
    body_start = i
    # A `]` right after the opening (or the negation) is a literal member, as in shell globs.
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 1
    if i >= len(pattern):
        raise GlobError(f"unclosed '[' at position {start + 1}")
    members = pattern[body_start:i]
    escaped = members.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
    if negate:
        # A negated class must still not match a path separator.
        regex = f"[^{escaped}/]" if path_mode else f"[^{escaped}]"
    else:
        regex = f"[{escaped}]"
    return regex, i + 1


def glob_regex(pattern: str, *, path_mode: bool = True) -> str:
    """The regex source (unanchored at the end) for a glob. path_mode: `*` stops at `/` and `**`
    crosses directories; otherwise (command words) `*` matches anything."""
    if pattern == "":
        raise GlobError("empty pattern")
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            stars = j - i
            if not path_mode:
                out.append(".*")
            elif stars >= 2 and (i == 0 or pattern[i - 1] == "/") and (j == n or pattern[j] == "/"):
                if j == n:
                    # `dir/**` (or a bare `**`): everything below, and the directory itself.
                    if out and out[-1] == "/":
                        out.pop()
                        out.append("(?:/.*)?")
                    else:
                        out.append(".*")
                else:
                    # `**/`: zero or more whole directories.
                    out.append("(?:[^/]*/)*")
                    j += 1
            else:
                out.append("[^/]*")
            i = j
        elif c == "?":
            out.append("[^/]" if path_mode else ".")
            i += 1
        elif c == "[":
            regex, i = _char_class(pattern, i, path_mode=path_mode)
            out.append(regex)
        elif c == "\\":
            if i + 1 >= n:
                raise GlobError("the pattern ends with a lone backslash")
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif c == "/":
            out.append("/")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def compile_glob(pattern: str, *, path_mode: bool = True, ignore_case: bool = False) -> re.Pattern[str]:
    """A compiled regex for a glob (see glob_regex)."""
    source = glob_regex(pattern, path_mode=path_mode)
    flags = re.IGNORECASE if ignore_case else 0
    try:
        return re.compile(source + r"\Z", flags | re.DOTALL)
    except re.error as exc:  # e.g. a reversed range [z-a]
        raise GlobError(str(exc)) from None


def has_glob_chars(word: str) -> bool:
    return any(c in word for c in "*?[")


def validate_path_glob(pattern: str) -> None:
    """Raise GlobError when a file glob cannot be a repository-relative pattern."""
    if not pattern.strip():
        raise GlobError("empty pattern")
    if pattern.startswith("/"):
        raise GlobError("file globs are relative to the repository root; drop the leading '/'")
    if pattern.startswith("./"):
        raise GlobError("file globs are already relative to the repository root; drop the leading './'")
    if ".." in pattern.split("/"):
        raise GlobError("'..' cannot appear in a file glob (rules only apply inside the repository)")
    compile_glob(pattern, path_mode=True)


@dataclass(frozen=True)
class NormalizedPath:
    """A repository-relative path ("" for the root) plus where it really leads after symlinks."""

    lexical: str
    real: str | None  # None when it could not be resolved (no repository given)


def _lexical(path: str, repo: Path | None, root: str | None) -> str:
    """The normalized repository-relative path, or raises _Outside with the reason."""
    if "\0" in path:
        raise _Outside("the path contains a NUL character")
    written = path.strip()
    if written in ("", "."):
        return ""
    if written.startswith("/"):
        if repo is None or root is None:
            raise _Outside(f"{written!r} is an absolute path; rules apply to paths relative to the repository root")
        normal = posixpath.normpath(written)
        # Accept the repository as given or as its real path (a checkout reached through a symlink).
        for base in {os.path.abspath(repo), root}:
            if normal == base or normal.startswith(base.rstrip("/") + "/"):
                written = os.path.relpath(normal, base)
                break
        else:
            raise _Outside(f"{written!r} is outside the repository")
    lexical = posixpath.normpath(written) if _NOT_NORMAL.search(written) else written
    if lexical == ".." or lexical.startswith("../"):
        raise _Outside(f"{path!r} leads outside the repository")
    return "" if lexical == "." else lexical


# A path that posixpath.normpath would change: `.` or `..` components, doubled or trailing slashes.
_NOT_NORMAL = re.compile(r"(?:^|/)\.\.?(?:/|\Z)|//|/\Z")


class _Outside(Exception):
    pass


def _has_symlink(root: str, lexical: str) -> bool:
    """Is any existing component of root/lexical a symlink? One lstat per component below the
    (already real) root. Nothing is cached: the agent's commands can replace a directory with a
    symlink at any time, and a stale answer would let a path dodge the rules of its real location.
    A component that cannot be examined (missing, not a directory) ends the walk, as it ends
    os.path.realpath's resolution."""
    lstat, is_link = os.lstat, stat.S_ISLNK
    current = root.rstrip("/")
    try:
        for part in lexical.split("/"):
            current += "/" + part
            if is_link(lstat(current).st_mode):
                return True
    except OSError:
        return False
    return False


def normalize(path: str, repo: Path | None, root: str | None = None) -> NormalizedPath | str:
    """The normalized path, or a string saying why the path is not inside the repository.
    `root` is the repository's real path when the caller already knows it."""
    if repo is not None and root is None:
        root = os.path.realpath(repo)
    try:
        lexical = _lexical(path, repo, root)
    except _Outside as outside:
        return str(outside)
    real: str | None = None
    if root is not None:
        if not lexical or not _has_symlink(root, lexical):
            real = lexical
        else:
            resolved = os.path.realpath(os.path.join(root, lexical))
            if resolved != root and not resolved.startswith(root.rstrip("/") + "/"):
                return f"{path!r} resolves (through a symlink) to {resolved}, outside the repository"
            real = os.path.relpath(resolved, root)
            real = "" if real == "." else real
    return NormalizedPath(lexical, real)


def in_git_dir(relpath: str) -> bool:
    """Is any component of the path `.git` (in any letter case)? A nested repository's `.git`, or a
    submodule's `.git` file, steers git as much as the top one."""
    return f"/{relpath.lower()}/".find(f"/{GIT_DIR}/") >= 0


def repository_files(root: str, below: str = "") -> list[tuple[str, bool]] | None:
    """Every file and symlink under `root/below` as (path relative to `root`, whether it is a
    symlink): hidden and ignored ones too, `.git` directories (in any letter case) left out, symlinks
    not followed. None when there are more than MAX_LISTED_FILES entries."""
    found: list[tuple[str, bool]] = []
    seen = 0
    stack = [below.strip("/")]
    while stack:
        relative = stack.pop()
        try:
            with os.scandir(os.path.join(root, relative) if relative else root) as entries:
                listed = list(entries)
        except OSError:
            continue
        seen += len(listed)
        if seen > MAX_LISTED_FILES:
            return None
        for entry in listed:
            if entry.name.lower() == GIT_DIR:
                continue
            path = f"{relative}/{entry.name}" if relative else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(path)
                else:
                    found.append((path, entry.is_symlink()))
            except OSError:
                continue
    return found


class _RuleSet:
    """Globs compiled into one regex (a named group per rule, so the first rule that matches is
    known): matching a path costs one or two regex matches whatever the number of rules. Rules of
    the form `**/NAME` (the common "anywhere in the tree" kind) are matched against the last path
    component alone, which spares the regex engine a backtracking walk over the directories."""

    def __init__(self, patterns: tuple[str, ...], *, ignore_case: bool):
        self.patterns = patterns
        flags = (re.IGNORECASE if ignore_case else 0) | re.DOTALL
        anywhere: list[str] = []
        anchored: list[str] = []
        for index, pattern in enumerate(patterns):
            compile_glob(pattern, path_mode=True, ignore_case=ignore_case)  # GlobError as for one rule
            name = pattern[3:] if pattern.startswith("**/") else ""
            if name and "/" not in name and "**" not in name:
                anywhere.append(f"(?P<r{index}>{glob_regex(name)})")
            else:
                anchored.append(f"(?P<r{index}>{glob_regex(pattern)})")
        self.anywhere = re.compile(f"(?:{'|'.join(anywhere)})\\Z", flags) if anywhere else None
        self.anchored = re.compile(f"(?:{'|'.join(anchored)})\\Z", flags) if anchored else None
        # The parts of each rule, for "is this directory above something the rule protects?"
        self.parts = tuple(tuple(pattern.split("/")) for pattern in patterns)
        self.ignore_case = ignore_case

    def first_match(self, path: str) -> str | None:
        found = len(self.patterns)
        if self.anchored is not None:
            match = self.anchored.match(path)
            if match is not None:
                found = int(match.lastgroup[1:])
        if self.anywhere is not None:
            match = self.anywhere.match(path[path.rfind("/") + 1:])
            if match is not None:
                found = min(found, int(match.lastgroup[1:]))
        return self.patterns[found] if found < len(self.patterns) else None

    def shelters(self, path: str) -> str | None:
        """The first rule that matches something strictly below the directory `path` *because of*
        the directory's own name (a leading `**` that would match anywhere does not count): moving,
        removing or linking to that directory reaches what the rule protects under another name."""
        components = tuple(path.split("/")) if path else ()
        for pattern, parts in zip(self.patterns, self.parts, strict=True):
            if _above_match(parts, components, self.ignore_case):
                return pattern
        return None


def _above_match(parts: tuple[str, ...], components: tuple[str, ...], ignore_case: bool) -> bool:
    @cache
    def walk(i: int, j: int, named: bool) -> bool:
        if j == len(components):
            return named and i < len(parts)
        if i == len(parts):
            return False
        part = parts[i]
        if part == "**":
            return walk(i + 1, j, named) or walk(i, j + 1, named)
        if compile_glob(part, path_mode=True, ignore_case=ignore_case).match(components[j]):
            return walk(i + 1, j + 1, True)
        return False

    if not components:
        return bool(parts)  # the repository root is above everything
    return walk(0, 0, False)


# How many decisions each FileRules remembers (per path: the decision only depends on the strings).
DECISION_CACHE_SIZE = 65_536


@dataclass(frozen=True)
class FileRules:
    read_deny: tuple[str, ...]
    edit_allow: tuple[str, ...]
    edit_deny: tuple[str, ...]
    repo: Path | None = None

    # Compiled once per FileRules (frozen: the rules cannot change under the caches).

    @cached_property
    def _root(self) -> str | None:
        return os.path.realpath(self.repo) if self.repo is not None else None

    @cached_property
    def _read_deny(self) -> _RuleSet:
        return _RuleSet(self.read_deny, ignore_case=True)

    @cached_property
    def _edit_deny(self) -> _RuleSet:
        return _RuleSet(self.edit_deny, ignore_case=True)

    @cached_property
    def _edit_allow(self) -> _RuleSet:
        return _RuleSet(self.edit_allow, ignore_case=False)

    @cached_property
    def _read_decision(self) -> Callable[[str, str | None], Decision]:
        return lru_cache(maxsize=DECISION_CACHE_SIZE)(self._judge_read)

    @cached_property
    def _edit_decision(self) -> Callable[[str, str | None], Decision]:
        return lru_cache(maxsize=DECISION_CACHE_SIZE)(self._judge_edit)

    def normalize(self, relpath: str) -> NormalizedPath | str:
        return normalize(relpath, self.repo, self._root)

    @staticmethod
    def _candidates(normalized: NormalizedPath) -> list[str]:
        paths = [normalized.lexical]
        if normalized.real is not None and normalized.real != normalized.lexical:
            paths.append(normalized.real)
        return paths

    def check_read(self, relpath: str) -> Decision:
        normalized = self.normalize(relpath)
        if isinstance(normalized, str):
            return Decision(False, normalized)
        return self._read_decision(normalized.lexical, normalized.real)

    def check_read_walked(self, relpath: str) -> Decision:
        """check_read for a path found by walking the tree without following symlinks (as ripgrep
        does): no component of it is a symlink, so only the path itself is judged, without the
        lstat of each component that check_read needs to find where a path really leads."""
        try:
            lexical = _lexical(relpath, self.repo, self._root)
        except _Outside as outside:
            return Decision(False, str(outside))
        return self._read_decision(lexical, None)

    def check_edit(self, relpath: str) -> Decision:
        normalized = self.normalize(relpath)
        if isinstance(normalized, str):
            return Decision(False, normalized)
        return self._edit_decision(normalized.lexical, normalized.real)

    def denies_read_by_name(self, relpath: str) -> bool:
        """Does read_deny (or the .git rule) cover this path by its name alone? For paths that are not
        on disk, such as those in git's history: no symlink can change where they lead."""
        return in_git_dir(relpath) or self._read_deny.first_match(relpath) is not None

    def existing_read_denied(self) -> tuple[str, ...] | None:
        """The repository's files (hidden and ignored ones too) that check_read denies now; None when
        the repository is too large to list. A file reached without a symlink is decided by its path
        alone, so only symlinks pay for the full check."""
        if self._root is None:
            return ()
        found = []
        listing = repository_files(self._root)
        if listing is None:
            return None
        for path, link in listing:
            if link:
                if not self.check_read(path).allowed:
                    found.append(path)
            elif self._read_deny.first_match(path) is not None:
                found.append(path)
        return tuple(found)

    def _judge_read(self, lexical: str, real: str | None) -> Decision:
        for path in self._candidates(NormalizedPath(lexical, real)):
            if in_git_dir(path):
                return Decision(False, f"{path} is inside .git/, which is never read (it can hold credentials)")
            rule = self._read_deny.first_match(path)
            if rule is not None:
                via = "" if path == lexical else f" (the real path of {lexical})"
                return Decision(False, f"{path}{via} matches files.read_deny rule `{rule}`")
        return Decision(True, "reading inside the repository is allowed (no files.read_deny rule matches)")

    def _judge_edit(self, lexical: str, real: str | None) -> Decision:
        if lexical == "":
            return Decision(False, "the repository root itself cannot be edited")
        allowed_by = ""
        for path in self._candidates(NormalizedPath(lexical, real)):
            via = "" if path == lexical else f" (the real path of {lexical})"
            if in_git_dir(path):
                return Decision(False, f"{path}{via} is inside .git/, which is never edited")
            rule = self._edit_deny.first_match(path)
            if rule is not None:
                return Decision(False, f"{path}{via} matches files.edit_deny rule `{rule}`")
            rule = self._edit_allow.first_match(path)
            if rule is None:
                return Decision(False, f"{path}{via} matches no files.edit_allow rule")
            allowed_by = rule
        return Decision(True, f"editing {lexical} is allowed by files.edit_allow rule `{allowed_by}`")

    def shelters(self, relpath: str) -> str | None:
        """Why changing the directory `relpath` as a whole (moving, removing, linking to it) would reach
        a path the edit rules protect, or None. The repository root shelters everything."""
        normalized = self.normalize(relpath)
        if isinstance(normalized, str):
            return normalized
        for path in self._candidates(normalized):
            if not path:
                return "the repository root holds every protected path"
            rule = self._edit_deny.shelters(path)
            if rule is not None:
                via = "" if path == normalized.lexical else f" (the real path of {normalized.lexical})"
                return f"{path}{via} is a directory above what files.edit_deny rule `{rule}` protects"
        return None

    def protected_directories(self) -> list[str]:
        """Repository-relative directories that every edit_deny rule of the form `dir/**` protects
        whole: the sandbox can mount these read-only, a real boundary under the command judge."""
        found = []
        for pattern in self.edit_deny:
            if pattern.endswith("/**"):
                prefix = pattern[:-3]
                if prefix and not has_glob_chars(prefix) and "\\" not in prefix:
                    found.append(prefix)
        return found


def shelter_matcher(patterns: Sequence[str]) -> Callable[[str], bool] | None:
    """A function telling whether a repository-relative directory path is one that these deny globs name on
    the way to what they match (`.docker` for `**/.docker/config.json`; not any directory because of a
    leading `**`, which matches below every one), as `_RuleSet.shelters` says, as fast as `path_matcher`:
    each rule's leading parts (those with a name in them) are globs of their own. None when there are none."""
    prefixes = []
    for pattern in patterns:
        parts = pattern.split("/")
        whole = parts[-1] == "**"  # (`secrets/**` is above what is below `secrets/x` too)
        prefixes += ["/".join(parts[:end]) for end in range(1, len(parts) + whole) if any(p != "**" for p in parts[:end])]
    return path_matcher(sorted(set(prefixes)))


def path_matcher(patterns: Sequence[str]) -> Callable[[str], bool] | None:
    """A function telling whether a repository-relative path (lexical, no symlinks resolved) matches one
    of these deny globs, as the deny rules match (case-insensitively), or None without globs. For
    matching many paths at once (the checkpoint store matches every tracked file against read_deny):
    `**/NAME` globs, all the defaults, are matched against the file name alone, four times faster."""
    if not patterns:
        return None
    names = [p[3:] for p in patterns if p.startswith("**/") and "/" not in p[3:] and "**" not in p[3:]]
    paths = [p for p in patterns if not (p.startswith("**/") and p[3:] in names)]

    def combined(globs: list[str]) -> re.Pattern[str] | None:
        # The whole alternation must match the whole text (`a|b\Z` would anchor only b).
        return re.compile("(?:" + "|".join(f"(?:{glob_regex(g, path_mode=True)})" for g in globs) + r")\Z",
                          re.IGNORECASE | re.DOTALL) if globs else None

    by_name, by_path = combined(names), combined(paths)

    def denied(rel: str) -> bool:
        if by_name is not None and by_name.match(rel, rel.rfind("/") + 1):
            return True
        return by_path is not None and by_path.match(rel) is not None

    return denied
