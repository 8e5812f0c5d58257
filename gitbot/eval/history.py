"""A repository's history read for mining, in one `git log`: first-parent commits, newest first, each with
the files it changed (a merge: against its first parent, i.e. what the merged branch brought), split into
test files and code files."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from gitbot import git

TEST_DIRS = {"test", "tests", "testing"}
CODE_SUFFIXES = {".py", ".pyx", ".pyi", ".c", ".h", ".cc", ".cpp", ".rs", ".go", ".js", ".ts", ".jsx", ".tsx",
                 ".java", ".kt", ".rb", ".php", ".cs", ".swift", ".scala", ".sh"}


def is_test_file(path: str) -> bool:
    pure = PurePosixPath(path)
    name = pure.name
    return (bool(TEST_DIRS & set(pure.parts[:-1])) or name.startswith("test_") or name == "conftest.py"
            or re.search(r"_tests?\.\w+$", name) is not None or name.endswith((".test.js", ".test.ts")))


def is_code_file(path: str) -> bool:
    return not is_test_file(path) and PurePosixPath(path).suffix in CODE_SUFFIXES


@dataclass
class Commit:
    sha: str
    parents: list[str]
    files: list[str] = field(default_factory=list)

    @property
    def test_files(self) -> list[str]:
        return [path for path in self.files if is_test_file(path)]

    @property
    def code_files(self) -> list[str]:
        return [path for path in self.files if is_code_file(path)]

    @property
    def is_candidate(self) -> bool:
        """Changes both code and tests, and has a parent to test against."""
        return bool(self.parents) and bool(self.test_files) and bool(self.code_files)


def first_parent_commits(repo, max_commits: int) -> list[Commit]:
    proc = git.run(["log", "--first-parent", "--diff-merges=first-parent", "--no-renames", f"-n{max_commits}",
                    "--format=%x01%H %P", "--name-only", "-z", "HEAD"], cwd=repo)
    commits: list[Commit] = []
    # Each commit: \x01, "sha parents", NUL, then its paths, each ending in NUL (a newline before the first).
    for chunk in proc.stdout.decode("utf-8", "surrogateescape").split("\x01")[1:]:
        head, *paths = chunk.split("\x00")
        shas = head.split()
        files = [path.lstrip("\n") for path in paths]
        commits.append(Commit(shas[0], shas[1:], [path for path in files if path]))
    return commits
