"""Where a command writes and what its links point to, checked against the file rules once the
whole line has been walked. Part of CommandJudge."""

from __future__ import annotations

import os
import posixpath

from gitbot.policy.judge.grammar import SPECIAL_OUTPUTS
from gitbot.policy.judge.outcome import Verdicts, deny, snippet
from gitbot.policy.judge.words import Word


class Paths:
    """The output and link checks of CommandJudge (see judge.py)."""

    def _check_outputs(self, verdicts: Verdicts) -> None:
        for word, written in verdicts.outputs:
            if not word.literal:
                deny(f"the redirection `{snippet(written)}` writes to a path that is only known at run time")
            self._check_changed_path(word.value, f"the redirection `{snippet(written)}`", verdicts)
        for word, written in verdicts.edits:
            if not word.literal:
                deny(f"`{snippet(written)}` changes files named by `{word.text}`, which is only known at run "
                     f"time (an expansion or glob); name the files literally")
            relative = self._check_changed_path(word.value, f"`{snippet(written)}`", verdicts)
            if relative is not None:
                sheltered = self.shelters(relative)
                if sheltered:
                    deny(f"`{snippet(written)}` changes {relative} as a whole: {sheltered}")
        for source, directories, written in verdicts.links:
            self._check_link(source, directories, snippet(written), verdicts)
        if verdicts.changes_directory and verdicts.relative_programs:
            deny(f"`{verdicts.relative_programs[0]}` is a relative path and the command changes directory, "
                 f"so which file runs cannot be known")

    def _check_link(self, source: Word, directories: list[Word], written: str, verdicts: Verdicts) -> None:
        """A link (symbolic or hard) must not point at anything the agent may not edit or read, nor
        at a directory above a protected path: writes through the link would reach it under a
        name the rules do not see. A relative symlink target is resolved from the link's directory
        (both the destination and its parent, since the destination may be a directory); a hard
        link's source, or `ln -r`'s, from the current one."""
        if not source.literal:
            deny(f"`{written}` links to `{source.text}`, which is only known at run time; name it literally")
        target = source.value
        candidates = [target] if (target.startswith("/") or not directories) else []
        if not target.startswith("/"):
            for directory in directories:
                if not directory.literal:
                    deny(f"`{written}` puts a link in `{directory.text}`, which is only known at run time")
                candidates.append(posixpath.join(directory.value, target))
                real_directory = self._real_relative(directory.value)
                if real_directory is not None:
                    candidates.append(posixpath.join(real_directory, target))
        for candidate in dict.fromkeys(candidates):
            what = f"`{written}` makes a link to {target!r}"
            relative = self._repository_relative(candidate, what, verdicts)
            for decision in (self.check_read(relative), self.check_edit(relative)):
                if not decision.allowed:
                    deny(f"{what}, which leads to {relative or '.'}: {decision.reason}")
            sheltered = self.shelters(relative)
            if sheltered:
                deny(f"{what}, which leads to {relative or '.'}: {sheltered}")

    def _real_relative(self, path: str) -> str | None:
        """Where a repository-relative directory really is (through symlinks), relative to the root."""
        if self.repo is None or path.startswith("/"):
            return None
        root = self.repo.rstrip("/") or "/"
        real = os.path.realpath(posixpath.join(root, path))
        if real != root and not real.startswith(root.rstrip("/") + "/"):
            return None
        return posixpath.relpath(real, root)

    def _repository_relative(self, path: str, what: str, verdicts: Verdicts) -> str:
        if not path.startswith("/"):
            if verdicts.changes_directory:
                deny(f"{what} with the relative path {path!r} after a change of directory, so where it leads "
                     f"cannot be known")
            normal = posixpath.normpath(path)
        elif self.repo is None:
            deny(f"{what}: {path} is outside the repository")
            raise AssertionError  # unreachable
        else:
            root = self.repo.rstrip("/")
            normal = posixpath.normpath(path)
            if normal != root and not normal.startswith(root + "/"):
                deny(f"{what}: {path} is outside the repository")
            normal = posixpath.relpath(normal, root)
        if normal == ".." or normal.startswith("../"):
            deny(f"{what}: {path} leads outside the repository")
        return "" if normal == "." else normal

    def _check_changed_path(self, path: str, what: str, verdicts: Verdicts) -> str | None:
        """Refuse a write the edit rules do not allow; the repository-relative path otherwise (None
        for /dev/null and the like)."""
        if path in SPECIAL_OUTPUTS:
            return None
        if not path.startswith("/"):
            if verdicts.changes_directory:
                deny(f"{what} uses the relative path {path!r} after a change of directory, so where it writes "
                     f"cannot be known; use a path relative to the repository root without cd")
            relative = path
        elif self.repo is None:
            deny(f"{what} writes to {path}, outside the repository")
        else:
            root = self.repo.rstrip("/")
            normal = posixpath.normpath(path)
            if normal != root and not normal.startswith(root + "/"):
                deny(f"{what} writes to {path}, outside the repository (only paths inside it, or "
                     f"/dev/null, may be written)")
            relative = posixpath.relpath(normal, root)
        decision = self.check_edit(relative)
        if not decision.allowed:
            deny(f"{what} would change {relative}: {decision.reason}")
        return relative
