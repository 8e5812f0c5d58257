"""From a failing check to a verified fix: confirm the failure, run the agent, re-run the check.

The check is the success signal, not the agent's opinion: `verified` is true only when the check,
re-run after the agent stopped, exits 0 and the agent changed something. Shared by `gitbot
fix-check` and `gitbot hook run`; heavy modules (the agent, the SDK) are imported only once a
check has really failed.

Outcomes:
  fixed                   the re-run passes and the work tree changed   → verified, exit 0
  not_fixed               the re-run still fails                        → exit 1 (3 if the run itself broke)
  passed_without_changes  the re-run passes, nothing changed: flaky?    → exit 1, not a fix
  flaky                   failed, then passed on a confirmation re-run  → exit 1, no model call
  cannot_fix              no API key, bad policy, merge/rebase underway → exit 2, no model call
  check_passed            passed on its first run, nothing to do        → exit 0, no model call
"""

from __future__ import annotations

import fnmatch
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from gitbot.checks import CheckRun, build_task, parse_output, run_check, worktree

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
TESTS_MODIFIED_WARNING = ("the agent changed tests or check configuration ({files}): a fix that edits the "
                          "test or loosens the check is not a fix of the code — review it")


@dataclass
class FixRequest:
    repo: Path
    command: list[str] | str  # what runs: argv, or a string split like a shell would
    display: str  # how it is shown and given to the agent (shell-quoted)
    timeout: float
    model: str | None = None
    max_cost_usd: float | None = None
    max_steps: int | None = None
    policy_file: Path | None = None
    replay: Path | None = None
    confirm_failure: bool = True
    source: str = "check"
    echo: TextIO | None = None  # where the check's output is copied live
    progress: Callable[[str], None] | None = None  # one-line notes on what happens next


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
    task_title: str = ""
    first_failure: str = ""
    before_tree: str = ""  # snapshots around the agent's run, for --commit
    after_tree: str = ""

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
            "tests_modified": list(self.tests_modified),
            "flaky": self.flaky,
            "message": self.message,
        }

    def to_dict(self) -> dict[str, Any]:
        if self.result is not None:
            return self.result.to_dict()
        return {"run_id": None, "steps": 0, "cost_usd": 0.0, "files_changed": [], **self.fields()}


def _exit_value(run: CheckRun) -> int | str | None:
    return "timeout" if run.timed_out else run.exit_code


def fix_failing_check(request: FixRequest, first: CheckRun, *, provider=None, reporter=None) -> FixOutcome:
    repo = request.repo
    say = request.progress or (lambda text: None)
    run_kwargs = {"timeout": request.timeout, "echo": request.echo}
    in_progress = worktree.operation_in_progress(repo)
    if in_progress:
        return FixOutcome("cannot_fix", 2, f"not fixing: {in_progress}", first)

    latest, confirm = first, None
    if request.confirm_failure and not first.timed_out:
        # Paying the model to "fix" a flaky check is the costliest mistake here; one re-run rules it out.
        say("re-running the check once to rule out a flaky failure")
        confirm = run_check(request.command, repo, **run_kwargs)
        if confirm.passed:
            return FixOutcome("flaky", 1, "flaky check: it failed, then passed when re-run with no change; "
                              "not asking the model to fix it", first, confirm=confirm)
        latest = confirm

    parsed = parse_output(latest.output, repo)
    task = build_task(request.display, latest, root=repo, parsed=parsed, source=request.source)
    task = _redacted(task)
    first_failure = parsed.failures[0].name if parsed.failures else ""

    from gitbot.agent.run import ConfigError  # heavy imports start here, once a fix is really needed

    try:
        policy, provider, options = _prepare_run(request, provider)
    except ConfigError as exc:
        return FixOutcome("cannot_fix", 2, str(exc), first, confirm=confirm, task_title=task.title,
                          first_failure=first_failure)

    from gitbot.agent.run import run_task

    say(f"asking the agent ({provider.model}) to fix it")
    before_tree = worktree.snapshot(repo)
    try:
        result = run_task(task, repo, policy=policy, options=options, provider=provider, reporter=reporter)
    except ConfigError as exc:
        return FixOutcome("cannot_fix", 2, str(exc), first, confirm=confirm, task_title=task.title,
                          first_failure=first_failure)
    # Snapshot before re-running: what a check rewrites itself (a formatter) is not the agent's work.
    after_tree = worktree.snapshot(repo)
    changed = worktree.changed_paths(repo, before_tree, after_tree)
    say("re-running the check to verify")
    after = run_check(request.command, repo, **run_kwargs)
    tests_modified = modified_check_inputs(repo, changed, before_tree, after_tree)

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
    fix = FixOutcome(outcome, code, message, first, confirm=confirm, after=after, result=result,
                     changed=changed, tests_modified=tests_modified, task_title=task.title,
                     first_failure=first_failure,
                     before_tree=before_tree, after_tree=after_tree)
    result.files_changed = changed  # the work tree's truth, including what commands the agent ran changed
    if tests_modified:
        result.warnings.insert(0, TESTS_MODIFIED_WARNING.format(files=", ".join(tests_modified)))
    result.extra.update(fix.fields())
    return fix


def _redacted(task):
    """Check output can echo the environment; secret values known to gitbot never reach the model."""
    import dataclasses

    from gitbot.secrets import Secrets

    return dataclasses.replace(task, text=Secrets.from_environment().redact(task.text))


def _prepare_run(request: FixRequest, provider):
    from gitbot.agent.run import DEFAULT_MODEL, RunOptions, make_provider, with_limits
    from gitbot.policy_loading import load_run_policy

    policy = load_run_policy(request.repo, request.policy_file)
    overrides: dict[str, Any] = {"max_steps": request.max_steps, "max_cost_usd": request.max_cost_usd}
    # The agent must be able to re-run the check itself within its command timeout.
    current = getattr(policy.limits, "command_timeout_seconds", None)
    if current is not None and current < request.timeout:
        overrides["command_timeout_seconds"] = request.timeout
    policy = with_limits(policy, **overrides)
    provider = provider or make_provider(request.model or DEFAULT_MODEL, replay=request.replay)
    return policy, provider, RunOptions(model=provider.model)


def modified_check_inputs(repo: Path, changed: list[str], before_tree: str, after_tree: str) -> list[str]:
    """The changed paths that are tests or check configuration (pyproject.toml: if a [tool.*] changed)."""
    flagged = []
    for path in changed:
        if path == "pyproject.toml" or path.endswith("/pyproject.toml"):
            tables = _changed_tool_tables(worktree.file_at(repo, before_tree, path),
                                          worktree.file_at(repo, after_tree, path))
            if tables:
                flagged.append(f"{path} ({', '.join(f'[tool.{t}]' for t in tables)})")
        elif is_test_or_check_config(path):
            flagged.append(path)
    return flagged


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


def verification_lines(fix: FixOutcome) -> list[str]:
    """The verification block printed after the receipt (plain text, stderr)."""
    lines = [f"check       {fix.before.command}",
             f"before      {fix.before.describe()}"]
    if fix.confirm is not None:
        lines.append(f"re-run      {fix.confirm.describe()}")
    if fix.after is not None:
        lines.append(f"after fix   {fix.after.describe()}")
    status = {"fixed": "VERIFIED", "flaky": "FLAKY — not a fix",
              "passed_without_changes": "FLAKY? — not a fix"}.get(fix.outcome, "NOT VERIFIED")
    lines.append(f"result      {status}: {fix.message}")
    if fix.changed:
        lines.append(f"changed     {', '.join(fix.changed)} (left in the work tree, not staged)")
    if fix.tests_modified:
        lines.append("!" * 78)
        lines.append("!! WARNING: " + TESTS_MODIFIED_WARNING.format(files=", ".join(fix.tests_modified)))
        lines.append("!" * 78)
    return lines


def print_report(fix: FixOutcome, stream: TextIO | None = None) -> None:
    stream = stream or sys.stderr
    if fix.result is not None:
        from gitbot.receipt import print_receipt

        print_receipt(fix.result)
    print("\n".join(verification_lines(fix)), file=stream)


def markdown_summary(fix: FixOutcome) -> str:
    """The GitHub job summary: verdict first, then the receipt table."""
    icon = {"fixed": "✅", "check_passed": "✅", "flaky": "⚠️",
            "passed_without_changes": "⚠️"}.get(fix.outcome, "❌")
    verdict = {"fixed": "verified fix", "check_passed": "the check passes, nothing to fix",
               "flaky": "flaky check, not fixed",
               "passed_without_changes": "passed without changes (flaky?), not a fix",
               "not_fixed": "fix not verified", "cannot_fix": "not attempted"}.get(fix.outcome, fix.outcome)
    lines = [f"## {icon} gitbot fix-check: {verdict}", "",
             f"Check: `{fix.before.command}` — before: {fix.before.describe()}"
             + (f"; after the fix: {fix.after.describe()}" if fix.after else ""), "", fix.message]
    if fix.tests_modified:
        lines += ["", f"> [!WARNING]\n> {TESTS_MODIFIED_WARNING.format(files=', '.join(fix.tests_modified))}"]
    if fix.result is not None:
        from gitbot.receipt import render_markdown

        lines += ["", render_markdown(fix.result)]
    return "\n".join(lines) + "\n"


def commit_message(fix: FixOutcome) -> str:
    model = fix.result.model if fix.result is not None else "unknown model"
    what = f" ({fix.first_failure})" if fix.first_failure else ""
    summary = (fix.result.summary or "").strip() if fix.result is not None else ""
    body = [f"Fix failing check: {fix.before.command}"[:72], "",
            f"`{fix.before.command}` failed{what}: {fix.before.describe()}.",
            "It passes after this change: gitbot re-ran it to verify."]
    if fix.tests_modified:
        body += ["", "Note: this change edits tests or check configuration: " + ", ".join(fix.tests_modified)]
    if summary:
        body += ["", summary[:2000]]
    if fix.result is not None:
        body += ["", f"Gitbot-Run: {fix.result.run_id}"]
    body.append(f"Co-authored-by: gitbot ({model}) <{worktree.CO_AUTHOR_EMAIL}>")
    return "\n".join(body) + "\n"


def short_name(fix: FixOutcome) -> str:
    """For the branch name: the first failing test, else the tool (`python -m pytest` → pytest)."""
    if fix.first_failure:
        return fix.first_failure.split("::")[-1].split(".")[-1].split("[")[0]
    words = [w for w in fix.before.command.split() if not w.startswith("-")]
    words = [Path(w).name for w in words if not Path(w).name.startswith(("python", "sh", "bash"))]
    return words[0] if words else "check"
