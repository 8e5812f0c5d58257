"""`gitbot policy init`: a commented policy file with the defaults and the commands this repository uses."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

from gitbot.policy.base import Limits
from gitbot.policy.defaults import (
    DEFAULT_COMMAND_ALLOW,
    DEFAULT_EDIT_ALLOW,
    DEFAULT_EDIT_DENY,
    DEFAULT_NETWORK,
    DEFAULT_READ_DENY,
    DEFAULT_SANDBOX_MODE,
)

DEFAULT_DENY_SUGGESTIONS = ("git push *", "curl *", "wget *", "sudo *", "ssh *", "scp *")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _pyproject(repo: Path) -> dict:
    try:
        return tomllib.loads(_read(repo / "pyproject.toml"))
    except tomllib.TOMLDecodeError:
        return {}


def detect_commands(repo: Path) -> list[tuple[str, str]]:
    """(pattern, why) for the test and lint commands this repository appears to use."""
    repo = Path(repo)
    found: list[tuple[str, str]] = []
    pyproject = _pyproject(repo)
    tool = pyproject.get("tool", {}) if isinstance(pyproject.get("tool"), dict) else {}

    pytest_signals = []
    if (repo / "tests").is_dir() or (repo / "test").is_dir():
        pytest_signals.append("a tests/ directory")
    if (repo / "pytest.ini").is_file() or (repo / "conftest.py").is_file():
        pytest_signals.append("pytest.ini/conftest.py")
    if "pytest" in tool:
        pytest_signals.append("[tool.pytest] in pyproject.toml")
    if "[tool:pytest]" in _read(repo / "setup.cfg") or "[pytest]" in _read(repo / "tox.ini"):
        pytest_signals.append("pytest configuration in setup.cfg/tox.ini")
    python_project = pytest_signals or (repo / "pyproject.toml").is_file() or (repo / "setup.py").is_file()
    if pytest_signals and python_project:
        why = "pytest: " + ", ".join(pytest_signals)
        found += [(f"{_python_name(repo)} -m pytest *", why), ("pytest *", why)]
    if "ruff" in tool or (repo / "ruff.toml").is_file() or (repo / ".ruff.toml").is_file():
        found += [("ruff check *", "ruff is configured"), ("ruff format *", "ruff is configured")]
    if "mypy" in tool or (repo / "mypy.ini").is_file():
        found.append(("mypy *", "mypy is configured"))

    package_json = repo / "package.json"
    if package_json.is_file():
        try:
            scripts = json.loads(_read(package_json)).get("scripts", {}) or {}
        except (json.JSONDecodeError, AttributeError):
            scripts = {}
        if isinstance(scripts, dict):
            if "test" in scripts:
                found += [("npm test *", "package.json has a test script"),
                          ("npm run test *", "package.json has a test script")]
            for name in ("lint", "typecheck", "build"):
                if name in scripts:
                    found.append((f"npm run {name} *", f"package.json has a {name} script"))

    if (repo / "go.mod").is_file():
        found += [("go test *", "go.mod"), ("go vet *", "go.mod"), ("go build *", "go.mod")]
    if (repo / "Cargo.toml").is_file():
        found += [("cargo test *", "Cargo.toml"), ("cargo check *", "Cargo.toml"),
                  ("cargo clippy *", "Cargo.toml")]
    for makefile in ("Makefile", "makefile", "GNUmakefile"):
        text = _read(repo / makefile)
        for target in ("test", "check", "lint"):
            if re.search(rf"^{target}\s*:", text, flags=re.MULTILINE):
                found.append((f"make {target} *", f"{makefile} has a {target} target"))
        if text:
            break
    unique: dict[str, str] = {}
    for pattern, why in found:
        unique.setdefault(pattern, why)
    return list(unique.items())


# Where a project says how it runs its tests.
_USAGE_FILES = ("Makefile", "makefile", "GNUmakefile", "tox.ini", "noxfile.py", "setup.cfg", "pyproject.toml",
                "package.json", "README.md", "README.rst", "README", "CONTRIBUTING.md", ".gitlab-ci.yml",
                ".pre-commit-config.yaml", "justfile", "Justfile")
_PYTHON_PYTEST = re.compile(r"\b(python(?:3(?:\.\d+)?)?)\s+-m\s+pytest\b")


def _python_name(repo: Path) -> str:
    """`python` or `python3`, as the project itself writes `-m pytest` (in its Makefile, tox.ini, CI
    workflows, README ...); else whichever this machine has. The judge treats the two alike; the file
    just reads like the project."""
    texts = [_read(repo / name) for name in _USAGE_FILES]
    workflows = repo / ".github" / "workflows"
    if workflows.is_dir():
        texts += [_read(path) for path in sorted(workflows.glob("*.y*ml"))[:20]]
    counts: dict[str, int] = {}
    for text in texts:
        for match in _PYTHON_PYTEST.finditer(text):
            name = "python" if match.group(1) == "python" else "python3"
            counts[name] = counts.get(name, 0) + 1
    if counts:
        return max(sorted(counts), key=lambda name: counts[name])
    return "python" if shutil.which("python") else "python3"


def _toml_list(items: list[str] | tuple[str, ...], comments: dict[str, str] | None = None, indent: str = "  ") -> str:
    comments = comments or {}
    lines = ["["]
    for item in items:
        comment = f"  # {comments[item]}" if item in comments else ""
        lines.append(f"{indent}{json.dumps(item)},{comment}")
    lines.append("]")
    return "\n".join(lines)


def render_policy(repo: Path) -> str:
    detected = detect_commands(repo)
    allow = list(DEFAULT_COMMAND_ALLOW) + [pattern for pattern, _ in detected]
    comments = {pattern: f"detected: {why}" for pattern, why in detected}
    limits = Limits()
    return f"""# gitbot auto-approval policy. Nobody is there to click "approve" in CI or a git hook:
# this file decides, in code, what the agent may do. Anything it does not allow is refused
# and the reason is shown to the model. When gitbot works on a pull request, it reads this
# file from the base branch, so a change cannot loosen the policy it is judged by.
# Test a rule with:  gitbot policy check --command "pytest -q"   (or --read PATH / --edit PATH)

[files]
# Globs relative to the repository root; `**` crosses directories. Deny always wins.
# Reading is allowed everywhere in the repository except read_deny (and .git/, always).
read_deny = {_toml_list(DEFAULT_READ_DENY)}
# Editing is allowed where edit_allow matches and edit_deny does not.
edit_allow = {_toml_list(DEFAULT_EDIT_ALLOW)}
edit_deny = {_toml_list(DEFAULT_EDIT_DENY)}

[commands]
# A pattern is words; each word is a glob for the matching word of the command, and a final
# `*` matches any remaining words (including none): `pytest *` allows `pytest -q tests/x.py`.
# Every part of a command line (`a && b | c`, subshells, `sh -c '...'`, `xargs`, `find -exec`)
# must be allowed. Substitutions `$(...)`, eval/source/exec, shell function definitions and
# unparseable input are refused. Options that run, load or write something are judged too
# (`rg --pre=PROG` runs PROG, `sort -o FILE` writes FILE), and reading a read_deny file is refused
# (`cat .env`, `git show REV:.env`). python, python3 and python3.X match each other.
# The check command of a `gitbot fix-check` run is always allowed for that run.
allow = {_toml_list(allow, comments)}
# Deny rules win over allow rules and match the program's base name (/usr/bin/curl is curl).
deny = {_toml_list(DEFAULT_DENY_SUGGESTIONS)}

[sandbox]
# Commands run in bubblewrap: read-only system, writable repository, read-only .git, empty
# $HOME, no secrets in the environment. "required": refuse to run commands without it;
# "auto": use it when it works, otherwise run unsandboxed and say so in the receipt; "off".
mode = "{DEFAULT_SANDBOX_MODE}"
# false: commands get no network at all (a private network namespace).
network = {str(DEFAULT_NETWORK).lower()}

[limits]
max_steps = {limits.max_steps}
max_cost_usd = {limits.max_cost_usd}
max_consecutive_mistakes = {limits.max_consecutive_mistakes}
max_wall_seconds = {int(limits.max_wall_seconds)}
# The longest a single command may run (a tool call may ask for less, never more).
command_timeout_seconds = {int(limits.command_timeout_seconds)}
# The Action keeps the records of a pull request's last runs (refs/gitbot/runs/*) to continue them.
keep_run_records = {limits.keep_run_records}

# Which model answers (default: the Anthropic API, claude-sonnet-5-5). No credentials here: each
# provider reads its own (ANTHROPIC_API_KEY; AWS credentials; Google ADC; OPENAI_API_KEY).
# [model]
# provider = "openai"                    # anthropic | bedrock | vertex | openai
# name = "qwen2.5-coder"                 # the model id in the provider's own form
# base_url = "http://localhost:8000/v1"  # a server on this machine only; a remote one: --base-url
# price_input = 0                        # USD per million tokens: 0 for a self-hosted model
# price_output = 0
"""
