"""`gitbot policy init`: a commented policy file with the defaults and the commands this repository uses."""

from __future__ import annotations

import json
from pathlib import Path

from gitbot.policy.base import Limits
from gitbot.policy.defaults import (
    DEFAULT_COMMAND_ALLOW,
    DEFAULT_EDIT_ALLOW,
    DEFAULT_EDIT_DENY,
    DEFAULT_NETWORK,
    DEFAULT_READ_DENY,
    DEFAULT_REBUILDABLE,
    DEFAULT_SANDBOX_MODE,
)
from gitbot.policy.test_runners import detect_test_runners, make_target, package_scripts, pyproject

DEFAULT_DENY_SUGGESTIONS = ("git push *", "curl *", "wget *", "sudo *", "ssh *", "scp *")


def detect_commands(repo: Path) -> list[tuple[str, str]]:
    """(pattern, why) for the test and lint commands this repository appears to use: its test runners
    (policy/test_runners.py, which fix-check reads too) and its linters."""
    repo = Path(repo)
    found = [(pattern, runner.why) for runner in detect_test_runners(repo) for pattern in runner.allow]
    tool = pyproject(repo).get("tool", {})
    tool = tool if isinstance(tool, dict) else {}
    if "ruff" in tool or (repo / "ruff.toml").is_file() or (repo / ".ruff.toml").is_file():
        found += [("ruff check *", "ruff is configured"), ("ruff format *", "ruff is configured")]
    if "mypy" in tool or (repo / "mypy.ini").is_file():
        found.append(("mypy *", "mypy is configured"))
    scripts = package_scripts(repo)
    for name in ("lint", "typecheck", "build"):
        if name in scripts:
            found.append((f"npm run {name} *", f"package.json has a {name} script"))
    if (repo / "go.mod").is_file():
        found += [("go vet *", "go.mod"), ("go build *", "go.mod")]
    if (repo / "Cargo.toml").is_file():
        found += [("cargo check *", "Cargo.toml"), ("cargo clippy *", "Cargo.toml")]
    for target in ("check", "lint"):
        makefile = make_target(repo, target)
        if makefile:
            found.append((f"make {target} *", f"{makefile} has a {target} target"))
    unique: dict[str, str] = {}
    for pattern, why in found:
        unique.setdefault(pattern, why)
    return list(unique.items())


def newcomer_policy(repo: Path, policy):
    """With no policy file, the test and lint commands `gitbot policy init` would write into one are
    allowed for a `gitbot run` too (and `gitbot policy check` answers the same), so a first run can
    check its own work: (policy, [(pattern, why)])."""
    from dataclasses import replace

    from gitbot.policy.defaults import DEFAULT_POLICY_PATH

    if not policy.source.startswith("built-in defaults"):
        return policy, []
    detected = [(pattern, f"no {DEFAULT_POLICY_PATH}; `gitbot policy init` would allow it: {why}")
                for pattern, why in detect_commands(repo) if pattern not in policy.command_allow]
    if not detected:
        return policy, []
    return replace(policy, command_allow=(*policy.command_allow, *(p for p, _ in detected))), detected


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
# (`cat .env`; `git show REV:.env` too, unless the sandbox shows git a history without those
# files). python, python3 and python3.X match each other.
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
# Ignored directories a run may leave writable when its start cannot capture them (too big), so
# that `cargo build` or `npm install` work in the sandbox; e.g. ["**/target", "**/node_modules"].
# Empty: they stay read-only, like everything else a run could not restore. Opting in gives that
# up: what the agent writes there is not restored, is in no diff or pull request (git ignores it),
# and runs on your machine when your tools use it (a .pth in a venv, node_modules/.bin/*, target/).
rebuildable = {_toml_list(DEFAULT_REBUILDABLE)}

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
