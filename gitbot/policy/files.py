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
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gitbot.policy.base import Decision

GIT_DIR = ".git"


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


@lru_cache(maxsize=4096)
def compile_glob(pattern: str, *, path_mode: bool = True, ignore_case: bool = False) -> re.Pattern[str]:
    """A compiled regex for a glob. path_mode: `*` stops at `/` and `**` crosses directories;
    otherwise (command words) `*` matches anything."""
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
    flags = re.IGNORECASE if ignore_case else 0
    try:
        return re.compile("".join(out) + r"\Z", flags | re.DOTALL)
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


def normalize(path: str, repo: Path | None) -> NormalizedPath | str:
    """The normalized path, or a string saying why the path is not inside the repository."""
    if "\0" in path:
        return "the path contains a NUL character"
    written = path.strip()
    if written in ("", "."):
        written = "."
    root = os.path.realpath(repo) if repo is not None else None
    if os.path.isabs(written):
        if repo is None:
            return f"{written!r} is an absolute path; rules apply to paths relative to the repository root"
        normal = posixpath.normpath(written)
        # Accept the repository as given or as its real path (a checkout reached through a symlink).
        for base in {os.path.abspath(repo), root}:
            if normal == base or normal.startswith(base.rstrip("/") + "/"):
                written = os.path.relpath(normal, base)
                break
        else:
            return f"{written!r} is outside the repository"
    lexical = posixpath.normpath(written)
    if lexical == "..":
        return f"{path!r} leads outside the repository"
    if lexical.startswith("../"):
        return f"{path!r} leads outside the repository"
    if lexical == ".":
        lexical = ""
    real: str | None = None
    if root is not None:
        resolved = os.path.realpath(os.path.join(root, lexical))
        if resolved != root and not resolved.startswith(root.rstrip("/") + "/"):
            return f"{path!r} resolves (through a symlink) to {resolved}, outside the repository"
        real = os.path.relpath(resolved, root)
        real = "" if real == "." else real
    return NormalizedPath(lexical, real)


def in_git_dir(relpath: str) -> bool:
    first = relpath.split("/", 1)[0]
    return first.lower() == GIT_DIR


@dataclass(frozen=True)
class FileRules:
    read_deny: tuple[str, ...]
    edit_allow: tuple[str, ...]
    edit_deny: tuple[str, ...]
    repo: Path | None = None

    def _first_match(self, patterns: tuple[str, ...], path: str, *, ignore_case: bool) -> str | None:
        for pattern in patterns:
            if compile_glob(pattern, path_mode=True, ignore_case=ignore_case).match(path):
                return pattern
        return None

    def _candidates(self, normalized: NormalizedPath) -> list[str]:
        paths = [normalized.lexical]
        if normalized.real is not None and normalized.real != normalized.lexical:
            paths.append(normalized.real)
        return paths

    def check_read(self, relpath: str) -> Decision:
        normalized = normalize(relpath, self.repo)
        if isinstance(normalized, str):
            return Decision(False, normalized)
        for path in self._candidates(normalized):
            if in_git_dir(path):
                return Decision(False, f"{path} is inside .git/, which is never read (it can hold credentials)")
            rule = self._first_match(self.read_deny, path, ignore_case=True)
            if rule is not None:
                via = "" if path == normalized.lexical else f" (the real path of {normalized.lexical})"
                return Decision(False, f"{path}{via} matches files.read_deny rule `{rule}`")
        return Decision(True, "reading inside the repository is allowed (no files.read_deny rule matches)")

    def check_edit(self, relpath: str) -> Decision:
        normalized = normalize(relpath, self.repo)
        if isinstance(normalized, str):
            return Decision(False, normalized)
        if normalized.lexical == "":
            return Decision(False, "the repository root itself cannot be edited")
        allowed_by = ""
        for path in self._candidates(normalized):
            via = "" if path == normalized.lexical else f" (the real path of {normalized.lexical})"
            if in_git_dir(path):
                return Decision(False, f"{path}{via} is inside .git/, which is never edited")
            rule = self._first_match(self.edit_deny, path, ignore_case=True)
            if rule is not None:
                return Decision(False, f"{path}{via} matches files.edit_deny rule `{rule}`")
            rule = self._first_match(self.edit_allow, path, ignore_case=False)
            if rule is None:
                return Decision(False, f"{path}{via} matches no files.edit_allow rule")
            allowed_by = rule
        return Decision(True, f"editing {normalized.lexical} is allowed by files.edit_allow rule `{allowed_by}`")

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
