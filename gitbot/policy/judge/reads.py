"""read_deny for commands: the paths a command reads, checked once the whole line has been walked.

What is refused:
- a path a known program reads (an operand of `cat`, `head`, `grep PATTERN FILE`, `sort`, `jq` ...,
  the value of an option that reads a file, an input redirection `< FILE`, the source of `cp` or
  `mv`), when read_deny denies it;
- a glob among those operands that matches a read-denied file now in the repository, and an operand
  only known at run time (`cat "$f"`, `xargs cat`, `find -exec cat {}`) when any read-denied file
  is in the repository;
- a directory searched recursively (`grep -r`, `rg`, `diff -r`, `tar c`) that holds a read-denied file
  the program would read (ripgrep skips hidden files unless told; ruff and mypy read only Python);
- after a `cd`, a relative path is held to every read-denied file it could name from any directory;
- what git prints from the index and the history (see history.py).

Paths outside the repository are not governed by read_deny (the sandbox hides the home directory,
/tmp and /run). The judge lists the repository only when one of these needs it. Part of CommandJudge.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re

from gitbot.policy.files import repository_files
from gitbot.policy.judge.history import denied_git_paths, object_types
from gitbot.policy.judge.outcome import Read, Verdicts, deny, snippet
from gitbot.policy.judge.words import BRACE_EXPANSION

UNSET = object()
_PROC_PATH = re.compile(r"/proc/[^/]+/(cwd|root)(/.*)?$", re.DOTALL)
_SHOWN_AT_MOST = 3


class Reads:
    """The read checks of CommandJudge (see judge.py)."""

    def _denied_listing(self) -> tuple[str, ...] | None:
        """The repository's read-denied files, listed once per judgement and only when needed."""
        if self._listing is UNSET:
            self._listing = self.denied_files() if self.denied_files is not None else ()
        return self._listing

    def _read_target(self, value: str, rooted: bool, moved: bool) -> tuple[str | None, bool]:
        """(the repository-relative path, or None outside it; whether the directory it is relative
        to is unknown because the command changed directory)."""
        proc = _PROC_PATH.match(value)
        if proc is not None:
            # /proc/self/cwd/X is X from the command's directory; /proc/self/root/X is /X.
            rest = proc.group(2).lstrip("/")
            return self._read_target("/" + rest if proc.group(1) == "root" else rest or ".", rooted, moved)
        if value.startswith("/"):
            if self.repo is None:
                return None, False
            root = self.repo.rstrip("/")
            for candidate in (posixpath.normpath(value), os.path.realpath(value)):
                if candidate == root:
                    return "", False
                if candidate.startswith(root + "/"):
                    return posixpath.relpath(candidate, root), False
            return None, False
        normal = posixpath.normpath(value) if value else "."
        if rooted or not moved:
            if (normal == ".." or normal.startswith("../")) and self.repo is not None:
                return self._read_target(posixpath.join(self.repo, normal), rooted, moved)
            if normal == ".." or normal.startswith("../"):
                return None, False
            return ("" if normal == "." else normal), False
        while normal.startswith("../"):
            normal = normal[3:]
        return ("" if normal in (".", "..") else normal), True

    def _real_target(self, value: str) -> str | None:
        """Where the kernel would find a relative path with `..` in it: through the symlinks first,
        then up (`dir/../x` is not `x` when dir is a symlink)."""
        if self.repo is None or ".." not in value.split("/") or _PROC_PATH.match(value):
            return None
        real = os.path.realpath(os.path.join(self.repo, value))
        root = self.repo.rstrip("/")
        return posixpath.relpath(real, root) if real.startswith(root + "/") else None

    def _check_reads(self, verdicts: Verdicts) -> None:
        for read in verdicts.reads:
            word = read.word
            if word.literal:
                self._check_named_read(read, word.value, verdicts.changes_directory, verdicts.leaves_repository)
            elif word.value is not None and word.multi:
                self._check_glob_read(read, word.value, verdicts.changes_directory)
            else:
                listing = self._denied_listing()
                if listing is None or listing:
                    self._refuse_unknown_read(read, listing)

    def _check_named_read(self, read: Read, value: str, moved: bool, above: bool = False) -> None:
        if value in ("-", "/dev/stdin"):
            return
        path, anywhere = self._read_target(value, read.rooted, moved)
        if path is None:
            return
        real = None if anywhere or read.rooted else self._real_target(value)
        for candidate in dict.fromkeys(part for part in (path, real) if part):
            decision = self.check_read(candidate)
            if not decision.allowed:
                deny(f"`{read.shown}` reads {candidate}, which is not allowed: {decision.reason}")
        if not anywhere and not read.recursive:
            return
        listing = self._denied_listing()
        if listing is None:
            deny(f"`{read.shown}`: the repository has too many files to tell whether it reads one that "
                 f"files.read_deny protects")
        for denied in listing:
            if anywhere and above:
                # From a directory that may be outside the repository: any path could hold it.
                reached = read.recursive or path == denied or path.endswith("/" + denied)
            elif anywhere:
                # From a directory below the repository root: `x` may name sub/x.
                reached = denied == path or denied.endswith("/" + path) or (
                    read.recursive and (not path or f"/{denied}".find(f"/{path}/") >= 0))
            else:
                reached = read.recursive and (not path or denied.startswith(path + "/"))
            if reached and self._searched(read, denied, path) and self._followed(read, denied, path):
                where = "below " + (path or "the repository root") if read.recursive else path
                if anywhere:
                    deny(f"`{read.shown}` may read {denied} ({where} from a directory the command changed to), "
                         f"which files.read_deny protects; without the cd, name the paths from the repository root")
                deny(f"`{read.shown}` reads {denied} ({where}), which files.read_deny protects; name the files it "
                     f"should read, or leave that one out")

    @staticmethod
    def _searched(read: Read, denied: str, below: str) -> bool:
        """Would a recursive search of `below` read the file `denied`? (An explicit path always is.)"""
        if not read.recursive or denied == below:
            return True
        inside = denied[len(below):].lstrip("/") if below and denied.startswith(below + "/") else denied
        parts = inside.split("/")
        if not read.hidden and any(part.startswith(".") for part in parts):
            return False
        name = parts[-1]
        if read.include and not any(fnmatch.fnmatchcase(name, glob) for glob in read.include):
            return False
        if any(fnmatch.fnmatchcase(name, glob) for glob in read.exclude) or any(
                fnmatch.fnmatchcase(part, glob) for part in parts[:-1] for glob in read.exclude_dirs):
            return False
        return not read.suffixes or denied.endswith(read.suffixes)

    def _followed(self, read: Read, denied: str, below: str) -> bool:
        """Does the search reach `denied` (listed because it is a symlink that leads somewhere denied,
        or a denied name) through the links it follows? `grep -r` reads no symlink met below."""
        if read.follows_links or denied == below or self.repo is None:
            return True
        return not os.path.islink(posixpath.join(self.repo, denied))

    def _check_glob_read(self, read: Read, pattern: str, moved: bool) -> None:
        listing = self._denied_listing()
        if listing is None:
            deny(f"`{read.shown}`: the repository has too many files to tell whether `{pattern}` matches one "
                 f"that files.read_deny protects")
        if not listing:
            return
        anywhere = moved
        if pattern.startswith("/"):
            root = (self.repo or "").rstrip("/") + "/"
            if self.repo is None or not pattern.startswith(root):
                return
            pattern, anywhere = pattern[len(root):], False
        expressions = [_glob_regex(expanded) for expanded in _expand_braces(posixpath.normpath(pattern))]
        for denied in listing:
            candidates = _suffixes(denied) if anywhere else [denied]
            if read.recursive:
                candidates += [part for candidate in candidates for part in _ancestors(candidate)]
            for candidate in candidates:
                if any(expression.fullmatch(candidate) for expression in expressions) and \
                        self._searched(read, denied, candidate):
                        deny(f"`{read.shown}`: `{pattern}` can expand to {denied}, which files.read_deny "
                             f"protects; name the files it should read")

    def _refuse_unknown_read(self, read: Read, listing: tuple[str, ...] | None) -> None:
        if listing is None:
            deny(f"`{read.shown}` reads `{read.word.text}`, which is only known at run time, and the repository "
                 f"has too many files to tell whether one is protected by files.read_deny")
        shown = ", ".join(listing[:_SHOWN_AT_MOST]) + (" ..." if len(listing) > _SHOWN_AT_MOST else "")
        deny(f"`{read.shown}` reads `{snippet(read.word.text, 30)}`, a file only known at run time, and the "
             f"repository holds files that files.read_deny protects ({shown}); name the files literally")

    def _check_tree_writes(self, verdicts: Verdicts) -> None:
        for write in verdicts.tree_writes:
            word = write.word
            what = f"`{write.shown}`"
            if not word.literal:
                deny(f"{what} rewrites files below `{word.text}`, which is only known at run time")
            path = self._repository_relative(word.value, what, verdicts)
            full = os.path.join(self.repo, path) if self.repo is not None else None
            if full is None or not os.path.isdir(full) or os.path.islink(full):
                self._check_changed_path(word.value, what, verdicts)
                continue
            listing = repository_files(self.repo, path)
            if listing is None:
                deny(f"{what} rewrites files below {path or 'the repository root'}, which holds too many to check")
            for name, _ in listing:
                if name.endswith(write.suffixes):
                    decision = self.check_edit(name)
                    if not decision.allowed:
                        deny(f"{what} rewrites the files below {path or 'the repository root'}, {name} among them: "
                             f"{decision.reason}")

    def _check_history(self, verdicts: Verdicts) -> None:
        if not verdicts.history or self.repo is None:
            return
        paths = denied_git_paths(self.repo, self.denied_name)
        for read in verdicts.history:
            if read.objects:
                for name, kind in object_types(self.repo, list(read.objects)).items():
                    if kind in ("blob", "unknown"):
                        deny(f"`{read.shown}` prints `{name}`, a file's contents named by its object id, so it "
                             f"cannot be checked against files.read_deny; name it as REV:PATH instead")
            if not read.contents:
                continue
            if paths.unknown:
                deny(f"`{read.shown}` prints file contents from git, and {paths.unknown}, so whether it would "
                     f"print a file files.read_deny protects cannot be told")
            candidates = {"tracked": paths.tracked, "history": paths.history}.get(read.scope)
            if candidates is None:
                listing = self._denied_listing()
                candidates = paths.history + (listing if listing is not None else ("(too many files to list)",))
            moved = verdicts.changes_directory
            selected = [path for path in candidates
                        if not read.restricts or _pathspecs_select(path, read.pathspecs, read.literal_pathspecs, moved)]
            if selected:
                where = {"tracked": "the index", "history": "the history", "files": "the repository"}[read.scope]
                more = f" (and {len(selected) - 1} more)" if len(selected) > 1 else ""
                fix = ("name paths from the top after a `cd`, e.g. `-- ':/src'`" if moved else
                       f"add a pathspec that leaves it out, e.g. `-- . ':(exclude){selected[0]}'`")
                deny(f"`{read.shown}` could print {selected[0]}{more} from {where}, which files.read_deny protects; "
                     f"{fix}")


def _pathspecs_select(path: str, pathspecs: tuple, literal: bool, moved: bool) -> bool:
    """Would git, given these pathspecs, include `path`? Errs towards yes: a pathspec it cannot read
    (magic it does not know, a relative one after `cd`) selects everything and excludes nothing."""
    positive: list[bool] = []
    excluded = False
    for word in pathspecs:
        if not word.literal:
            positive.append(True)
            continue
        spec, magic = _pathspec_magic(word.value)
        if spec is None:
            if "exclude" not in magic:
                positive.append(True)
            continue
        unknown_base = moved and "top" not in magic
        matches = unknown_base or _pathspec_matches(path, spec, literal or "literal" in magic, "icase" in magic)
        if "exclude" in magic:
            excluded = excluded or (matches and not unknown_base)
        else:
            positive.append(matches)
    return (any(positive) if positive else True) and not excluded


def _pathspec_magic(spec: str) -> tuple[str | None, set[str]]:
    """(the pattern, its magic words); None for magic the judge does not know (`attr:`)."""
    if spec.startswith(":("):
        close = spec.find(")")
        if close < 0:
            return None, set()
        words = {word.strip() for word in spec[2:close].split(",") if word.strip()}
        if words - {"top", "literal", "icase", "glob", "exclude"}:
            return None, words
        return spec[close + 1:], words
    if spec.startswith(":") and len(spec) > 1:
        magic = {"!": "exclude", "^": "exclude", "/": "top"}
        i = 1
        words = set()
        while i < len(spec) and spec[i] in magic:
            words.add(magic[spec[i]])
            i += 1
        if i < len(spec) and spec[i] == ":":
            i += 1
        return spec[i:], words
    return spec, set()


def _pathspec_matches(path: str, spec: str, literal: bool, icase: bool) -> bool:
    if icase:
        path, spec = path.lower(), spec.lower()
    spec = spec.removeprefix("./")
    if spec in ("", "."):
        return True
    if spec.startswith("../"):
        return False
    stem = spec.rstrip("/")
    if path == stem or path.startswith(stem + "/"):
        return True
    # git's default pathspec is a glob whose `*` crosses `/`, as fnmatch's does.
    return not literal and any(c in spec for c in "*?[") and fnmatch.fnmatchcase(path, spec)


def _expand_braces(pattern: str) -> list[str]:
    match = BRACE_EXPANSION.search(pattern)
    if match is None:
        return [pattern]
    body = match.group()[1:-1]
    options = body.split(",") if "," in body else ["*"]  # a sequence {1..9}: any text
    expanded = []
    for option in options:
        expanded.extend(_expand_braces(pattern[:match.start()] + option + pattern[match.end():]))
    return expanded[:256]


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A bash glob (no dotglob, no globstar: `**` is `*`) as a regex over paths."""
    parts = []
    for component in pattern.split("/"):
        out = []
        if component[:1] in ("*", "?", "["):
            out.append(r"(?!\.)")  # a wildcard does not match a leading dot
        i = 0
        while i < len(component):
            c = component[i]
            if c == "*":
                out.append("[^/]*")
            elif c == "?":
                out.append("[^/]")
            elif c == "[":
                end = component.find("]", i + 2)
                if end < 0:
                    out.append(re.escape(c))
                else:
                    body = component[i + 1:end]
                    negate = body[:1] in ("!", "^")
                    body = body[1:] if negate else body
                    out.append("[" + ("^/" if negate else "") + body.replace("\\", "\\\\") + "]")
                    i = end
            else:
                out.append(re.escape(c))
            i += 1
        parts.append("".join(out))
    return re.compile("/".join(parts), re.DOTALL)


def _suffixes(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[i:]) for i in range(len(parts))]


def _ancestors(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]
