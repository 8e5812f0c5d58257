"""Commands that would look inside a `.git` directory by a way the read rules do not see: a `cd` into
it (after which `cat config` names no `.git` path) and listings of it (`ls .git`, `find
.git/gitbot/runs`). Without the sandbox `.git/config` can hold a credential URL and gitbot's store
keeps the run records, so these are refused like `cat .git/config` is (finding 20.3). In the sandbox
.git is read-only and its config shown without credentials, so this applies to unsandboxed runs only.
Part of CommandJudge."""

from __future__ import annotations

import glob
import os
import posixpath

from gitbot.policy.files import in_git_dir
from gitbot.policy.judge.options import walk
from gitbot.policy.judge.outcome import Verdicts, deny
from gitbot.policy.judge.readers import READERS
from gitbot.policy.judge.words import Word

CHANGES_DIRECTORY = ("cd", "pushd")
# Programs that print the names (and metadata) of what lies in the directories they are given.
LISTERS = ("ls", "tree", "du", "stat", "file", "find")
FIND_EXPRESSION_START = ("-", "(", "!", ")")
RULE = ".git is never read"


class GitDir:
    """The `.git` checks of CommandJudge (see judge.py)."""

    def _check_git_dir(self, base: str, words: list[Word], verdicts: Verdicts, shown: str) -> None:
        if base in CHANGES_DIRECTORY:
            operands = [word for word in words[1:] if not (word.literal and word.value.startswith("-"))]
            for word in operands:
                self._refuse_cd_target(word, verdicts, shown)
        elif base in LISTERS:
            for word in self._listed(base, words):
                if word.literal and self._leads_into_git_dir(word.value, verdicts):
                    deny(f"`{shown}` lists {word.value}, inside .git/, which is never read (it holds the "
                         f"repository's configuration and gitbot's run records)", RULE)

    def _refuse_cd_target(self, word: Word, verdicts: Verdicts, shown: str) -> None:
        if word.literal:
            if self._leads_into_git_dir(word.value, verdicts):
                deny(f"`{shown}` changes into {word.value}, inside .git/, which is never read (it can hold "
                     f"credentials); ask git instead", RULE)
            return
        if word.value is not None and self.repo is not None and not verdicts.changes_directory:
            # A glob: bash takes the first match (or the pattern itself when none matches).
            matches = sorted(glob.glob(word.value, root_dir=self.repo, include_hidden=True)) or [word.value]
            if not self._leads_into_git_dir(matches[0], verdicts):
                return
            deny(f"`{shown}`: `{word.text}` expands to {matches[0]}, inside .git/, which is never read", RULE)
        deny(f"`{shown}` changes to a directory only known at run time ({word.text}), which could be .git/; "
             f"name the directory literally")

    def _leads_into_git_dir(self, path: str, verdicts: Verdicts) -> bool:
        """Does `path` (from where the command runs) name a `.git` directory or something in one, by
        its letters or, from the repository root, through a symlink?"""
        normal = posixpath.normpath(path)
        if self.repo is not None and normal.startswith("/"):
            root = self.repo.rstrip("/")
            if normal == root or normal.startswith(root + "/"):
                normal = posixpath.relpath(normal, root)
        if in_git_dir(normal):
            return True
        if self.repo is None or verdicts.changes_directory or normal.startswith("/"):
            return False
        real = os.path.realpath(os.path.join(self.repo, normal))
        root = os.path.realpath(self.repo)
        return real.startswith(root + os.sep) and in_git_dir(os.path.relpath(real, root))

    @staticmethod
    def _listed(base: str, words: list[Word]) -> list[Word]:
        """The directories and files a listing program is given: find's start points, the others'
        operands as their option tables read them."""
        if base == "find":
            listed = []
            for word in words[1:]:
                if word.literal and word.value.startswith(FIND_EXPRESSION_START):
                    break
                listed.append(word)
            return listed
        spec = READERS[base]
        return [word for _, word in walk(words, 1, spec.options, spec.syntax).operands]
