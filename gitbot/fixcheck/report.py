"""What fix-check says: the verification block after the receipt, the job summary, the --commit
message and the new branch's name."""

from __future__ import annotations

import sys
from typing import TextIO

from gitbot.fixcheck.outcome import FixOutcome

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
    if fix.tests_modified or fix.suppressions_added:
        from gitbot.fixcheck.tampering import SUPPRESSIONS_WARNING, TESTS_MODIFIED_WARNING, listed
    if fix.tests_modified:
        warnings.append("!! WARNING: " + TESTS_MODIFIED_WARNING.format(files=", ".join(fix.tests_modified)))
    if fix.suppressions_added:
        warnings.append("!! WARNING: " + SUPPRESSIONS_WARNING.format(items=listed(fix.suppressions_added)))
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
    if fix.tests_modified or fix.suppressions_added:  # only after a fix: a passing check never loads them
        from gitbot.fixcheck.tampering import SUPPRESSIONS_WARNING, TESTS_MODIFIED_WARNING, listed
    if fix.tests_modified:
        lines += ["", f"> [!WARNING]\n> {TESTS_MODIFIED_WARNING.format(files=', '.join(fix.tests_modified))}"]
    if fix.suppressions_added:
        lines += ["", f"> [!WARNING]\n> {SUPPRESSIONS_WARNING.format(items=listed(fix.suppressions_added))}"]
    if fix.result is not None:
        from gitbot.receipt import render_markdown

        lines += ["", render_markdown(fix.result)]
    return "\n".join(lines) + "\n"
