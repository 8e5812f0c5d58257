"""The project's own test runners, found from the files that define them.

Agents run a project's tests the way its developers do: Django's `./tests/runtests.py`, sympy's
`bin/test`, tox, nox, `make test`, `npm test`, `cargo test`, `go test`, pytest. `policy init` allows
each runner it finds (with the spellings agents use), and `gitbot fix-check` without a command runs
the first one, so both read the repository the same way.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

# Where a project says how it runs its tests.
USAGE_FILES = ("Makefile", "makefile", "GNUmakefile", "tox.ini", "noxfile.py", "setup.cfg", "pyproject.toml",
               "package.json", "README.md", "README.rst", "README", "CONTRIBUTING.md", ".gitlab-ci.yml",
               ".pre-commit-config.yaml", "justfile", "Justfile")
_PYTHON_PYTEST = re.compile(r"\b(python(?:3(?:\.\d+)?)?)\s+-m\s+pytest\b")
MAKEFILES = ("Makefile", "makefile", "GNUmakefile")


@dataclass(frozen=True)
class TestRunner:
    command: str  # how to run the whole suite (fix-check's check when none is given)
    allow: tuple[str, ...]  # the policy patterns that let an agent run it, as agents write it
    why: str

    __test__ = False  # not a pytest class, whatever its name says


def read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def pyproject(repo: Path) -> dict:
    try:
        return tomllib.loads(read(repo / "pyproject.toml"))
    except tomllib.TOMLDecodeError:
        return {}


def python_name(repo: Path) -> str:
    """`python` or `python3`, as the project itself writes `-m pytest` (in its Makefile, tox.ini, CI
    workflows, README ...); else whichever this machine has. The judge treats the two alike; the file
    just reads like the project."""
    texts = [read(repo / name) for name in USAGE_FILES]
    workflows = repo / ".github" / "workflows"
    if workflows.is_dir():
        texts += [read(path) for path in sorted(workflows.glob("*.y*ml"))[:20]]
    counts: dict[str, int] = {}
    for text in texts:
        for match in _PYTHON_PYTEST.finditer(text):
            name = "python" if match.group(1) == "python" else "python3"
            counts[name] = counts.get(name, 0) + 1
    if counts:
        return max(sorted(counts), key=lambda name: counts[name])
    return "python" if shutil.which("python") else "python3"


def _script(repo: Path, relative: str, why: str, python: str) -> TestRunner | None:
    """A test script of the project's own, run by its path or through Python."""
    path = repo / relative
    if not path.is_file() or path.is_symlink():
        return None
    command = f"./{relative}" if os.access(path, os.X_OK) else f"{python} {relative}"
    # The judge reads `x/y` and `./x/y` as one program; after python they are different words.
    return TestRunner(command, (f"./{relative} *", f"{python} {relative} *", f"{python} ./{relative} *"), why)


def _pytest(repo: Path, tool: dict, python: str) -> TestRunner | None:
    signals = []
    if (repo / "tests").is_dir() or (repo / "test").is_dir():
        signals.append("a tests/ directory")
    if (repo / "pytest.ini").is_file() or (repo / "conftest.py").is_file():
        signals.append("pytest.ini/conftest.py")
    if "pytest" in tool:
        signals.append("[tool.pytest] in pyproject.toml")
    if "[tool:pytest]" in read(repo / "setup.cfg") or "[pytest]" in read(repo / "tox.ini"):
        signals.append("pytest configuration in setup.cfg/tox.ini")
    if not signals:
        return None
    return TestRunner(f"{python} -m pytest -q", (f"{python} -m pytest *", "pytest *"), "pytest: " + ", ".join(signals))


def package_scripts(repo: Path) -> dict:
    try:
        scripts = json.loads(read(repo / "package.json")).get("scripts", {}) or {}
    except (json.JSONDecodeError, AttributeError):
        return {}
    return scripts if isinstance(scripts, dict) else {}


def make_target(repo: Path, target: str) -> str | None:
    """The makefile that has `target`, or None (only the first makefile make would read counts)."""
    for makefile in MAKEFILES:
        text = read(repo / makefile)
        if text:
            return makefile if re.search(rf"^{target}\s*:", text, flags=re.MULTILINE) else None
    return None


def detect_test_runners(repo: Path) -> list[TestRunner]:
    """The test runners this repository defines, the most specific first."""
    repo = Path(repo)
    tool = pyproject(repo).get("tool", {})
    tool = tool if isinstance(tool, dict) else {}
    python = python_name(repo)
    found = [
        _script(repo, "tests/runtests.py", "tests/runtests.py: the project's own test runner (Django's)", python),
        _script(repo, "bin/test", "bin/test: the project's own test runner (sympy's)", python),
    ]
    found.append(_pytest(repo, tool, python))
    makefile = make_target(repo, "test")
    if makefile:
        found.append(TestRunner("make test", ("make test *",), f"{makefile} has a test target"))
    if "test" in package_scripts(repo):
        found.append(TestRunner("npm test", ("npm test *", "npm run test *"), "package.json has a test script"))
    if (repo / "Cargo.toml").is_file():
        found.append(TestRunner("cargo test", ("cargo test *",), "Cargo.toml"))
    if (repo / "go.mod").is_file():
        found.append(TestRunner("go test ./...", ("go test *",), "go.mod"))
    if (repo / "noxfile.py").is_file():
        found.append(TestRunner("nox", ("nox *",), "noxfile.py"))
    if (repo / "tox.ini").is_file() or "tox" in tool or "[tox:tox]" in read(repo / "setup.cfg"):
        found.append(TestRunner("tox", ("tox *",), "tox is configured"))
    return [runner for runner in found if runner is not None]
