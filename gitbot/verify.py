"""From a failing check to a verified fix: confirm the failure, run the agent, re-run the check.

The check is the success signal, not the agent's opinion: `verified` is true only when the check,
re-run after the agent stopped, exits 0 and the agent changed something. The re-runs go through
`gitbot.checks.sandboxed.CheckSandbox`: the same sandbox and allow-listed environment as the
agent's own commands, so the check never sees the API key or tokens, and the code the agent wrote
runs no more privileged in the verification than it did in the agent's hands. Shared by `gitbot
fix-check` and `gitbot hook run`; heavy modules (the agent, the SDK) are imported only once a
check has really failed.

Outcomes:
  fixed                   the re-run passes and the work tree changed   → verified, exit 0
  not_fixed               the re-run still fails                        → exit 1 (3 if the run itself broke)
  passed_without_changes  the re-run passes, nothing changed: flaky?    → exit 1, not a fix
  flaky                   failed, then passed on a confirmation re-run  → exit 1, no model call
  environment_differs     failed in the user's environment (hook), passes in the agent's → exit 1
  cannot_fix              no API key, bad policy, merge/rebase underway,
                          the repository is locked by another run       → exit 2, no model call
  check_passed            passed on its first run, nothing to do        → exit 0, no model call
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from gitbot.checks import CheckRun, build_task, parse_output, worktree
from gitbot.checks.runner import CheckCommandError

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
MAX_SUPPRESSIONS_LISTED = 20
TESTS_MODIFIED_WARNING = ("the agent changed tests or check configuration ({files}): a fix that edits the "
                          "test or loosens the check is not a fix of the code — review it")
SUPPRESSIONS_WARNING = ("the agent added comments or markers that silence the check ({items}): silencing a "
                        "tool is not a fix of the code — review them")


@dataclass
class FixRequest:
    repo: Path
    command: list[str] | str  # what runs: argv, or a string split like a shell would
    display: str  # how it is shown and given to the agent (shell-quoted)
    timeout: float
    model: str | None = None
    provider: str | None = None  # None: the policy's [model] provider, else anthropic
    base_url: str | None = None
    max_cost_usd: float | None = None
    max_steps: int | None = None
    policy_file: Path | None = None
    replay: Path | None = None
    confirm_failure: bool = True
    source: str = "check"
    echo: TextIO | None = None  # where the check's output is copied live
    progress: Callable[[str], None] | None = None  # one-line notes on what happens next
    # The first run was in the user's own environment (a hook), not in the agent's: a confirmation
    # re-run that passes then says "the environments differ", not "flaky".
    first_run_in_user_environment: bool = False


@dataclass
class FixOutcome:
    outcome: str
    exit_code: int
    message: str
    before: CheckRun
    confirm: CheckRun | None = None
    after: CheckRun | None = None
    result: Any = None  # RunResult, when the agent ran
    changed: list[str] = field(default_factory=list)
    tests_modified: list[str] = field(default_factory=list)
    suppressions_added: list[str] = field(default_factory=list)
    task_title: str = ""
    first_failure: str = ""
    first_failure_path: str = ""
    patch: bytes = b""  # the agent's change (binary patch, from the run's checkpoints), for --commit
    check_environment: str = ""  # how the re-runs ran (sandbox, environment)

    @property
    def verified(self) -> bool:
        """The check passes now, proven by running it: after a fix, or because it never failed."""
        return self.outcome in ("fixed", "check_passed")

    @property
    def flaky(self) -> bool:
        return self.outcome in ("flaky", "passed_without_changes")

    def fields(self) -> dict[str, Any]:
        """The fix-check keys of the JSON result (also put into RunResult.extra)."""
        return {
            "outcome": self.outcome,
            "verified": self.verified,
            "check_command": self.before.command,
            "check_exit_before": _exit_value(self.before),
            "check_exit_confirm": _exit_value(self.confirm) if self.confirm else None,
            "check_exit_after": _exit_value(self.after) if self.after else None,
            "check_timed_out": any(run is not None and run.timed_out
                                   for run in (self.before, self.confirm, self.after)),
            "check_environment": self.check_environment,
            "tests_modified": list(self.tests_modified),
            "suppressions_added": list(self.suppressions_added),
            "flaky": self.flaky,
            "message": self.message,
        }

    def to_dict(self) -> dict[str, Any]:
        if self.result is not None:
            return self.result.to_dict()
        return {"run_id": None, "steps": 0, "cost_usd": 0.0, "files_changed": [], **self.fields()}


def _exit_value(run: CheckRun) -> int | str | None:
    return "timeout" if run.timed_out else run.exit_code


def load_check_policy(repo: Path, policy_file: Path | None):
    """The run's policy (ConfigError when the file is bad): it says how the check runs, too."""
    from gitbot.policy import load_policy

    return load_policy(repo, policy_file)


def fix_failing_check(request: FixRequest, first: CheckRun, *, provider=None, reporter=None, policy=None,
                      checks=None) -> FixOutcome:
    """`checks`: the CheckSandbox the check runs in (built from `policy`, or from the policy file,
    when not given)."""
    repo = request.repo
    say = request.progress or (lambda text: None)
    from gitbot.checkpoints import CheckpointError, GitCommandError
    from gitbot.checks.sandboxed import CheckSandbox
    from gitbot.errors import ConfigError  # heavy imports start here, once a fix is really needed

    def cannot(message: str, **more) -> FixOutcome:
        return FixOutcome("cannot_fix", 2, message, first,
                          check_environment=checks.description if checks is not None else "", **more)

    try:
        in_progress = worktree.operation_in_progress(repo)
        if in_progress:
            return cannot(f"not fixing: {in_progress}")
        if policy is None:
            policy = load_check_policy(repo, request.policy_file)
        if checks is None:
            checks = CheckSandbox(policy, repo)
    except (ConfigError, worktree.GitError) as exc:
        return cannot(str(exc))

    def run_check_again() -> CheckRun:
        return checks.run(request.command, request.timeout, echo=request.echo, display=request.display)

    latest, confirm = first, None
    if request.confirm_failure and not first.timed_out:
        # Paying the model to "fix" a flaky check is the costliest mistake here; one re-run rules it out.
        say("re-running the check once to rule out a flaky failure")
        try:
            confirm = run_check_again()
        except CheckCommandError as exc:
            return cannot(f"cannot re-run the check: {exc}")
        if confirm.passed:
            if request.first_run_in_user_environment:
                return FixOutcome("environment_differs", 1,
                                  f"the check failed in your environment but passes in the one the agent's "
                                  f"commands run in ({checks.description}); not asking the model to fix it. "
                                  f"Compare the two (PATH, virtual environment, network, variables), or it "
                                  f"is flaky", first, confirm=confirm, check_environment=checks.description)
            return FixOutcome("flaky", 1, "flaky check: it failed, then passed when re-run with no change; "
                              "not asking the model to fix it", first, confirm=confirm,
                              check_environment=checks.description)
        latest = confirm

    parsed = parse_output(latest.output, repo)
    task = build_task(request.display, latest, root=repo, parsed=parsed, source=request.source)
    task = _redacted(task)
    first_failure = parsed.failures[0].name if parsed.failures else ""
    first_failure_path = (parsed.failures[0].path or "") if parsed.failures else ""
    about = {"confirm": confirm, "task_title": task.title, "first_failure": first_failure,
             "first_failure_path": first_failure_path}

    try:
        policy, provider, options = _prepare_run(request, provider, policy)
    except ConfigError as exc:
        return cannot(str(exc), **about)

    from gitbot.agent.run import run_task

    say(f"asking the agent ({provider.model}) to fix it")
    try:
        result = run_task(task, repo, policy=policy, options=options, provider=provider, reporter=reporter)
    except ConfigError as exc:
        return cannot(str(exc), **about)
    except (CheckpointError, GitCommandError) as exc:  # another run holds the repository, a git failure
        return cannot(f"the agent could not start: {exc}", **about)

    try:
        changes = worktree.RunChanges(repo, result.run_id)
        changed, patch = changes.paths(), changes.patch()
    except (CheckpointError, GitCommandError, worktree.GitError) as exc:
        # The checkpoints cannot be read: the run's own account of its changes is all there is.
        changes, patch = None, b""
        changed = [p for p in result.files_changed if not worktree.is_cache_path(p)]
        result.warnings.append(f"could not read the run's checkpoints ({exc}); --commit is not possible")
    say("re-running the check to verify")
    try:
        after = run_check_again()
    except CheckCommandError as exc:
        fix = cannot(f"cannot re-run the check to verify: {exc}", result=result, changed=changed, **about)
        result.extra.update(fix.fields())
        return fix
    tests_modified = modified_check_inputs(changes, changed, request.command, repo=repo)
    suppressions = suppressions_added(patch)

    from gitbot.agent.result import Status

    if after.passed and changed:
        outcome, code, message = "fixed", 0, f"`{request.display}` passes after the fix"
    elif after.passed:
        outcome, code = "passed_without_changes", 1
        message = (f"`{request.display}` passed without changes — flaky? The agent changed nothing, so this "
                   "is not a fix")
    else:
        outcome = "not_fixed"
        code = 3 if result.status is Status.ERROR else 1
        message = (f"not verified: `{request.display}` still fails after the agent stopped "
                   f"({after.describe()})")
    fix = FixOutcome(outcome, code, message, first, after=after, result=result, changed=changed,
                     tests_modified=tests_modified, suppressions_added=suppressions, patch=patch,
                     check_environment=checks.description, **about)
    result.files_changed = changed  # what the checkpoints saw, including what the agent's commands changed
    if suppressions:
        result.warnings.insert(0, SUPPRESSIONS_WARNING.format(items=_listed(suppressions)))
    if tests_modified:
        result.warnings.insert(0, TESTS_MODIFIED_WARNING.format(files=", ".join(tests_modified)))
    result.extra.update(fix.fields())
    return fix


def _listed(items: list[str]) -> str:
    shown = items[:MAX_SUPPRESSIONS_LISTED]
    more = len(items) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def _redacted(task):
    """Check output can echo the environment; secret values known to gitbot never reach the model."""
    import dataclasses

    from gitbot.secrets import Secrets

    return dataclasses.replace(task, text=Secrets.from_environment().redact(task.text))


def _prepare_run(request: FixRequest, provider, policy):
    from gitbot.agent.run import RunOptions, with_limits
    from gitbot.llm.providers import make_provider

    overrides: dict[str, Any] = {"max_steps": request.max_steps, "max_cost_usd": request.max_cost_usd}
    # The agent must be able to re-run the check itself within its command timeout.
    current = getattr(policy.limits, "command_timeout_seconds", None)
    if current is not None and current < request.timeout:
        overrides["command_timeout_seconds"] = request.timeout
    policy = with_limits(policy, **overrides)
    provider = provider or make_provider(request.model, replay=request.replay, provider=request.provider,
                                         base_url=request.base_url, settings=policy.model)
    return policy, provider, RunOptions(model=provider.model)


# ---------------------------------------------------------------- did the agent change the check?


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
    for path, number, text in worktree.added_lines(patch):
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


# ---------------------------------------------------------------- reporting

STATUS_WORDS = {"fixed": "VERIFIED", "flaky": "FLAKY — not a fix", "passed_without_changes": "FLAKY? — not a fix",
                "environment_differs": "ENVIRONMENTS DIFFER — not a fix"}


def verification_lines(fix: FixOutcome) -> list[str]:
    """The verification block printed after the receipt (plain text, stderr)."""
    lines = [f"check       {fix.before.command}",
             f"before      {fix.before.describe()}"]
    if fix.confirm is not None:
        lines.append(f"re-run      {fix.confirm.describe()}")
    if fix.after is not None:
        lines.append(f"after fix   {fix.after.describe()}")
    if fix.check_environment and (fix.confirm is not None or fix.after is not None):
        lines.append(f"ran in      {fix.check_environment}")
    status = STATUS_WORDS.get(fix.outcome, "NOT VERIFIED")
    lines.append(f"result      {status}: {fix.message}")
    if fix.changed:
        lines.append(f"changed     {', '.join(fix.changed)} (left in the work tree, not staged)")
    commit = fix.result.extra if fix.result is not None else {}
    if commit.get("commit"):
        verdict = "passes" if commit.get("commit_verified") else "FAILS"
        lines.append(f"committed   {commit['commit'][:12]} on {commit['branch']}: the check {verdict} on the "
                     f"commit alone")
    warnings = []
    if fix.tests_modified:
        warnings.append("!! WARNING: " + TESTS_MODIFIED_WARNING.format(files=", ".join(fix.tests_modified)))
    if fix.suppressions_added:
        warnings.append("!! WARNING: " + SUPPRESSIONS_WARNING.format(items=_listed(fix.suppressions_added)))
    if warnings:
        lines += ["!" * 78, *warnings, "!" * 78]
    return lines


def print_report(fix: FixOutcome, stream: TextIO | None = None) -> None:
    stream = stream or sys.stderr
    if fix.result is not None:
        from gitbot.receipt import print_receipt

        print_receipt(fix.result)
    print("\n".join(verification_lines(fix)), file=stream)


def markdown_summary(fix: FixOutcome) -> str:
    """The GitHub job summary: verdict first, then the receipt table."""
    icon = {"fixed": "✅", "check_passed": "✅", "flaky": "⚠️", "environment_differs": "⚠️",
            "passed_without_changes": "⚠️"}.get(fix.outcome, "❌")
    verdict = {"fixed": "verified fix", "check_passed": "the check passes, nothing to fix",
               "flaky": "flaky check, not fixed",
               "environment_differs": "fails only outside the sandbox, not fixed",
               "passed_without_changes": "passed without changes (flaky?), not a fix",
               "not_fixed": "fix not verified", "cannot_fix": "not attempted"}.get(fix.outcome, fix.outcome)
    lines = [f"## {icon} gitbot fix-check: {verdict}", "",
             f"Check: `{fix.before.command}` — before: {fix.before.describe()}"
             + (f"; after the fix: {fix.after.describe()}" if fix.after else ""), "", fix.message]
    extra = fix.result.extra if fix.result is not None else {}
    if extra.get("commit") and not extra.get("commit_verified"):
        lines += ["", f"> [!WARNING]\n> {extra.get('commit_message_note', 'the committed fix is not verified')}"]
    if fix.tests_modified:
        lines += ["", f"> [!WARNING]\n> {TESTS_MODIFIED_WARNING.format(files=', '.join(fix.tests_modified))}"]
    if fix.suppressions_added:
        lines += ["", f"> [!WARNING]\n> {SUPPRESSIONS_WARNING.format(items=_listed(fix.suppressions_added))}"]
    if fix.result is not None:
        from gitbot.receipt import render_markdown

        lines += ["", render_markdown(fix.result)]
    return "\n".join(lines) + "\n"


def commit_message(fix: FixOutcome, *, verified: bool | None = None) -> str:
    """The --commit message. `verified`: whether the check passed on the commit itself (None: not run
    yet; the message then claims nothing)."""
    model = fix.result.model if fix.result is not None else "unknown model"
    what = f" ({fix.first_failure})" if fix.first_failure else ""
    summary = (fix.result.summary or "").strip() if fix.result is not None else ""
    if verified:
        claim = "It passes on this commit: gitbot re-ran it on a checkout of exactly this commit."
    elif verified is False:
        claim = ("NOT VERIFIED: the check still fails on a checkout of this commit alone (it passed in the "
                 "work tree, which has changes this commit does not include).")
    else:
        claim = "gitbot has not yet re-run it on this commit."
    body = [f"Fix failing check: {fix.before.command}"[:72], "",
            f"`{fix.before.command}` failed{what}: {fix.before.describe()}.", claim]
    if fix.tests_modified:
        body += ["", "Note: this change edits tests or check configuration: " + ", ".join(fix.tests_modified)]
    if fix.suppressions_added:
        body += ["", "Note: this change silences the check in places: " + _listed(fix.suppressions_added)]
    if summary:
        body += ["", summary[:2000]]
    if fix.result is not None:
        body += ["", f"Gitbot-Run: {fix.result.run_id}"]
    body.append(f"Co-authored-by: gitbot ({model}) <{worktree.CO_AUTHOR_EMAIL}>")
    return "\n".join(body) + "\n"


GENERIC_STEMS = {"__init__", "__main__", "index", "main", "mod", "lib", "test", "tests", "conftest"}


def short_name(fix: FixOutcome) -> str:
    """For the branch name: the module the first failure is in (`pkg/calc.py` → calc, `tests/test_calc.py`
    → calc), else the failing test's name, else the tool (`python -m pytest` → pytest)."""
    if fix.first_failure_path:
        stem = _module_stem(fix.first_failure_path)
        if stem:
            return stem
    if fix.first_failure:
        name = fix.first_failure.split("::")[-1].split(" ")[0].split("[")[0].split(".")[-1]
        name = re.sub(r"^test_?", "", name) or name
        if name and name not in GENERIC_STEMS:
            return name
    words = [w for w in shlex.split(fix.before.command) if not w.startswith("-")] \
        if fix.before.command else []
    words = [Path(w).name for w in words if not re.match(r"(python|pypy)[\d.]*$|sh$|bash$|uv$|env$",
                                                          Path(w).name)]
    return words[0] if words else "check"


def _module_stem(path: str) -> str:
    """A readable name for the module at `path`: its stem, without test_ / _test decoration; for a
    package's __init__.py, the package's name."""
    pure = PurePosixPath(path)
    parts = [p for p in (pure.parent.name, pure.name) if p]
    for candidate in reversed(parts):
        stem = candidate.split(".")[0]
        stem = re.sub(r"^test_|_tests?$|\.(test|spec)$", "", stem)
        if stem and stem not in GENERIC_STEMS and not stem.startswith("."):
            return stem
    return ""
