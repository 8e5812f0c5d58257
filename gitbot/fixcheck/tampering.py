"""Did the agent change the check instead of the code? Tests, check configuration, the check's own
script, and comments or markers that silence a tool, found in what the run changed.

A fix that edits the test or silences the tool may still make the check pass; it is not a fix of
the code, so it is flagged for review (the receipt, the JSON's tests_modified/suppressions_added).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

from gitbot.fixcheck.changes import added_lines

# Paths whose change means "the agent changed the check, not (only) the code": tests and the
# configuration test runners and linters read. Matched against the path and its file name.
TEST_FILE_PATTERNS = ("test_*.py", "*_test.py", "*_tests.py", "tests.py", "conftest.py", "*.test.*",
                      "*.spec.*", "*_test.go", "*_spec.rb")
TEST_DIR_NAMES = {"test", "tests", "testing", "__tests__", "spec", "specs"}
CHECK_CONFIG_FILES = {
    "setup.cfg", "tox.ini", "pytest.ini", ".coveragerc", "ruff.toml", ".ruff.toml", "mypy.ini", ".mypy.ini",
    ".flake8", ".pylintrc", "pylintrc", "pyrightconfig.json", "noxfile.py", ".pre-commit-config.yaml",
    "tsconfig.json", ".eslintrc", ".eslintrc.json", ".eslintrc.js", "eslint.config.js", "eslint.config.mjs",
    "jest.config.js", "jest.config.ts", "vitest.config.ts", "vitest.config.js", ".golangci.yml",
    ".golangci.yaml", "Makefile",
}
CHECK_CONFIG_DIRS = {".gitbot"}
# Files a check's program reads as its own definition: `npm test` runs what package.json says.
PROGRAM_FILES = {
    "npm": ("package.json",), "npx": ("package.json",), "yarn": ("package.json",), "pnpm": ("package.json",),
    "bun": ("package.json",), "make": ("Makefile", "makefile", "GNUmakefile"), "tox": ("tox.ini",),
    "nox": ("noxfile.py",), "just": ("justfile", "Justfile"), "cargo": ("Cargo.toml",),
}
SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}
# Programs that run their first argument as a script.
INTERPRETER = re.compile(r"(?:python|pypy)[\d.]*|node|deno|bun|tsx|ts-node|ruby|perl|php|Rscript|sh|bash|dash|zsh|ksh")
INTERPRETER_OPTIONS_WITH_VALUE = {"-W", "-X", "-r", "--require", "--import", "--loader"}
# Programs that run the command after them: `env X=1 cmd`, `uv run cmd`, `poetry run cmd`.
WRAPPERS = {"env", "exec", "nice", "nohup", "time", "uv", "poetry", "pipenv", "pdm", "hatch", "rye", "xvfb-run"}
RUN_WRAPPERS = {"uv", "poetry", "pipenv", "pdm", "hatch", "rye"}
# Comments and markers that silence a tool for a line, a file or a test instead of fixing the code.
SUPPRESSIONS = (
    ("# noqa", re.compile(r"#\s*noqa\b", re.IGNORECASE)),
    ("# type: ignore", re.compile(r"#\s*type:\s*ignore\b")),
    ("# pyright: ignore", re.compile(r"#\s*pyright:\s*ignore\b")),
    ("pylint: disable", re.compile(r"pylint:\s*disable")),
    ("pragma: no cover", re.compile(r"pragma:\s*no\s*cover")),
    ("eslint-disable", re.compile(r"eslint-disable")),
    ("@ts-ignore", re.compile(r"@ts-(?:ignore|nocheck|expect-error)\b")),
    ("#[allow(", re.compile(r"#!?\[allow\(")),
    ("nolint", re.compile(r"//\s*nolint\b")),
    ("pytest.mark.skip", re.compile(r"\bmark\.skip(?:if)?\b")),
    ("@unittest.skip", re.compile(r"@(?:unittest\.)?skip(?:If|Unless)?\b")),
    ("xfail", re.compile(r"\bxfail\b")),
    ("@SuppressWarnings", re.compile(r"@SuppressWarnings\b")),
    ("rubocop:disable", re.compile(r"rubocop:disable")),
)
TESTS_MODIFIED_WARNING = ("the agent changed tests or check configuration ({files}): a fix that edits the "
                          "test or loosens the check is not a fix of the code — review it")
SUPPRESSIONS_WARNING = ("the agent added comments or markers that silence the check ({items}): silencing a "
                        "tool is not a fix of the code — review them")
MAX_SUPPRESSIONS_LISTED = 20


def listed(items: list[str]) -> str:
    shown = items[:MAX_SUPPRESSIONS_LISTED]
    more = len(items) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def modified_check_inputs(changes, changed: list[str], command: list[str] | str | None = None, *,
                          repo: Path | None = None) -> list[str]:
    """The changed paths that are tests, check configuration (pyproject.toml: if a [tool.*] changed), or
    the check's own script (a file named in its command line, package.json for npm, Makefile for
    make, …). `changes`: the run's RunChanges, to read pyproject.toml before and after (None: any
    change to it counts)."""
    own = check_script_paths(command, repo) if command is not None else {}
    flagged = []
    for path in changed:
        if path in own:
            flagged.append(f"{path} ({own[path]})")
        elif path == "pyproject.toml" or path.endswith("/pyproject.toml"):
            if changes is None:
                flagged.append(path)
                continue
            tables = _changed_tool_tables(changes.file_before(path), changes.file_after(path))
            if tables:
                flagged.append(f"{path} ({', '.join(f'[tool.{t}]' for t in tables)})")
        elif is_test_or_check_config(path):
            flagged.append(path)
    return flagged


def check_script_paths(command: list[str] | str, repo: Path | None = None) -> dict[str, str]:
    """Repository paths that define the check itself → why: the program when it is a path in the
    repository (`./lint.sh`), the script an interpreter runs (`python check.py`, `python -m
    tools.check`, `bash ci/test.sh`, `sh -c '…'` recursively), and what a runner reads as its
    definition (package.json for npm/yarn/pnpm, Makefile for make, tox.ini, noxfile.py, …).
    Files a tool only checks (`ruff check calc.py`) are the code under test, not the check."""
    try:
        words = shlex.split(command) if isinstance(command, str) else list(command)
    except ValueError:
        return {}
    found: dict[str, str] = {}
    pending = [words]
    while pending:
        argv = pending.pop()
        while argv and (os.path.basename(argv[0]) in WRAPPERS or "=" in argv[0] and not argv[0].startswith("-")):
            program = os.path.basename(argv[0])
            argv = argv[1:]
            if program in RUN_WRAPPERS and "run" in argv:  # uv run …, poetry run …
                argv = argv[argv.index("run") + 1:]
            while argv and argv[0].startswith("-"):
                argv = argv[1:]
        if not argv:
            continue
        program = os.path.basename(argv[0])
        own = _repo_relative(argv[0], repo) if "/" in argv[0] else None
        if own:
            found.setdefault(own, "the check's own script")
        for name in PROGRAM_FILES.get(program, ()):
            found.setdefault(name, f"read by `{program}`")
        if not INTERPRETER.fullmatch(program):
            continue
        rest = argv[1:]
        while rest:
            word = rest.pop(0)
            if word in ("-c", "-e", "--eval"):  # inline code: nothing in the repository to point at
                if word == "-c" and program in SHELLS and rest:
                    try:
                        script = shlex.split(rest[0])
                    except ValueError:
                        break
                    command_words: list[str] = []
                    for w in [*script, ";"]:
                        if w in ("&&", "||", ";", "|"):
                            pending.append(command_words)
                            command_words = []
                        else:
                            command_words.append(w)
                break
            if word == "-m" and rest:
                module = rest[0].replace(".", "/")
                for candidate in (f"{module}.py", f"{module}/__main__.py"):
                    found.setdefault(candidate, "the check's own module")
                break
            if word in INTERPRETER_OPTIONS_WITH_VALUE:
                rest = rest[1:]
                continue
            if word.startswith("-"):
                continue
            script = _repo_relative(word, repo)
            if script:
                found.setdefault(script, "the check's own script")
            break
    return found


def _repo_relative(word: str, repo: Path | None) -> str | None:
    if not word or word.startswith("-") or any(ch in word for ch in "*?$`\n"):
        return None
    if os.path.isabs(word):
        if repo is None:
            return None
        root = os.path.realpath(repo)
        real = os.path.realpath(word)
        if not real.startswith(root + os.sep):
            return None
        word = os.path.relpath(real, root)
    path = PurePosixPath(os.path.normpath(word)).as_posix()
    if path in (".", "") or path.startswith("../"):
        return None
    return path


def suppressions_added(patch: bytes) -> list[str]:
    """`path:line (marker)` for each added line of the patch that silences a tool."""
    found = []
    for path, number, text in added_lines(patch):
        for label, pattern in SUPPRESSIONS:
            if pattern.search(text):
                found.append(f"{path}:{number} ({label})")
                break
    return found


def is_test_or_check_config(path: str) -> bool:
    pure = PurePosixPath(path)
    name = pure.name
    if any(fnmatch.fnmatch(name, pattern) for pattern in TEST_FILE_PATTERNS):
        return True
    if name in CHECK_CONFIG_FILES:
        return True
    return bool(set(pure.parts[:-1]) & (TEST_DIR_NAMES | CHECK_CONFIG_DIRS))


def _changed_tool_tables(before: bytes | None, after: bytes | None) -> list[str]:
    def tool_tables(data: bytes | None) -> dict[str, Any]:
        if not data:
            return {}
        try:
            return tomllib.loads(data.decode("utf-8")).get("tool", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return {"<unparsable pyproject.toml>": data}
    old, new = tool_tables(before), tool_tables(after)
    return sorted(name for name in set(old) | set(new) if old.get(name) != new.get(name))
