"""The pull request's body: what was done, the proof, the diff stat, the cost and every step.

Everything in it that gitbot did not write — the model's summary, file names, tool targets — goes
through mdsafe.py, so no image, link, HTML, mention or closing keyword in it can take effect.

Sections, in this order: the model's summary (marked as the model's words), Verification, Changes
(from the diff, through unidiff), Cost, Steps (collapsed, with how to restore a checkpoint),
`Closes #N`, and a footer with the gitbot version and the workflow run. GitHub refuses a body over
65,536 characters: the steps table is cut first, then the changes table, then the summary; the
cost and the verification are never cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitbot.agent.result import RunResult
from gitbot.forge.mdsafe import code_cell, code_span, fenced, md_cell
from gitbot.receipt import cost_rows, money, receipt_rows

if TYPE_CHECKING:
    from gitbot.forge.pull_request import LeftOut

BODY_LIMIT = 65_536
SAFETY_MARGIN = 512  # room for the notes that say what was cut
SUMMARY_LIMIT = 6_000


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # added, modified, deleted, renamed, binary
    added: int
    removed: int
    old_path: str | None = None


@dataclass(frozen=True)
class Verification:
    command: str | None
    before: str | None  # "exited 1 after 2.0 s"
    after: str | None
    verified: bool
    reason: str  # why not verified, or a one-line confirmation


@dataclass(frozen=True)
class StepCost:
    tokens: int
    usd: float | None


@dataclass
class BodyParts:
    result: RunResult
    verification: Verification
    changes: list[FileChange]
    footer_links: list[str]  # "[workflow run](url)"
    version: str
    closes: int | None = None  # issue number
    context_line: str = ""  # what triggered the run, one line
    request_costs: dict[int, StepCost] = field(default_factory=dict)  # model request number -> its cost
    restore_hint: str = ""
    notes: list[str] = field(default_factory=list)  # warnings shown under Verification
    workflow_token: bool = True
    iterations: str = ""  # the conversation's ledger section (ledger.py), after the cost


def parse_changes(diff_text: str) -> list[FileChange]:
    """Per-file line counts of a `git diff` (unidiff does the parsing)."""
    from unidiff import PatchSet

    changes = []
    for patched in PatchSet(diff_text):
        if patched.is_binary_file:
            status = "binary"
        elif patched.is_added_file:
            status = "added"
        elif patched.is_removed_file:
            status = "deleted"
        elif patched.is_rename:
            status = "renamed"
        else:
            status = "modified"
        old = patched.source_file[2:] if status == "renamed" else None
        changes.append(FileChange(patched.path, status, patched.added, patched.removed, old))
    return changes


def summary_section(result: RunResult, limit: int = SUMMARY_LIMIT) -> str:
    text = (result.summary or "").strip() or "(the model wrote no summary)"
    if len(text) > limit:
        text = text[:limit].rstrip() + " […]"
    # A code block: nothing in the model's text renders (no image the viewer's browser would fetch, no
    # link, no HTML), nobody is pinged and no issue is closed.
    return (
        "## What was done\n\n_The model's own summary of its work, shown as plain text (not checked by "
        "gitbot; the Verification section is):_\n\n" + fenced(text)
    )


def verification_section(v: Verification, notes: list[str]) -> str:
    lines = ["## Verification", ""]
    if v.verified:
        lines.append(f"✅ **Verified:** gitbot re-ran {code_span(v.command or '')} after the agent finished.")
    else:
        lines.append(f"⚠️ **Not verified:** {v.reason}")
    if v.command:
        lines += [
            "",
            f"| {code_cell(v.command)} | |",
            "|---|---|",
            f"| before the change | {md_cell(v.before or 'not run')} |",
            f"| after the change | {md_cell(v.after or 'not run')} |",
        ]
    for note in notes:
        lines += ["", f"> [!WARNING]\n> {note}"]
    return "\n".join(lines)


def changes_section(changes: list[FileChange], max_rows: int | None = None) -> str:
    lines = ["## Changes", ""]
    if not changes:
        return "\n".join([*lines, "No file changed."])
    shown = changes if max_rows is None else changes[:max_rows]
    lines += ["| File | Change | Added | Removed |", "|---|---|--:|--:|"]
    for c in shown:
        name = f"{code_cell(c.old_path)} → {code_cell(c.path)}" if c.old_path else code_cell(c.path)
        lines.append(f"| {name} | {c.status} | +{c.added} | −{c.removed} |")
    if len(shown) < len(changes):
        lines.append(f"| … {len(changes) - len(shown)} more files (see the Files tab) | | | |")
    added, removed = sum(c.added for c in changes), sum(c.removed for c in changes)
    lines += ["", f"{len(changes)} file(s), +{added} −{removed}"]
    return "\n".join(lines)


def cost_section(result: RunResult) -> str:
    rows = [
        (label.capitalize(), f"**{md_cell(value)}**" if label == "cost" else md_cell(value))
        for label, value in cost_rows(result)
    ]
    rows.append(("Outcome", result.status.value))
    return "\n".join(["## Cost", "", "| | |", "|---|--:|", *(f"| {k} | {v} |" for k, v in rows)])


def steps_section(parts: BodyParts, max_rows: int | None = None) -> str:
    steps = parts.result.step_log
    shown = steps if max_rows is None else steps[:max_rows]
    plural = "s" if len(steps) != 1 else ""
    lines = [f"<details><summary>Steps ({len(steps)} tool call{plural})</summary>", ""]
    if steps:
        lines += [
            "| Step | Tool | Target | Outcome | Tokens | USD | Checkpoint |",
            "|--:|---|---|---|--:|--:|---|",
        ]
        seen_requests: set[int] = set()
        for s in shown:
            cost = parts.request_costs.get(s.request)
            if cost is not None and s.request not in seen_requests:
                tokens, usd = f"{cost.tokens:,}", money(cost.usd)
            else:
                tokens, usd = ("〃", "〃") if cost is not None else ("", "")
            seen_requests.add(s.request)
            checkpoint = f"`{s.checkpoint[:10]}`" if s.checkpoint else ""
            target = code_cell(s.target if len(s.target) <= 80 else s.target[:79] + "…")
            lines.append(
                f"| {s.step} | {code_cell(s.tool)} | {target} | {md_cell(s.outcome)} | {tokens} | {usd} "
                f"| {checkpoint} |"
            )
        if len(shown) < len(steps):
            lines.append(f"| … | {len(steps) - len(shown)} more steps are in the run record | | | | | |")
        lines += [
            "",
            (
                "Tokens and USD are per model request, shown on the first tool call it asked for (〃: the "
                "same request)."
            ),
        ]
    else:
        lines.append("No tool was called.")
    if parts.restore_hint:
        lines += ["", parts.restore_hint]
    lines += ["", "</details>"]
    return "\n".join(lines)


def footer(parts: BodyParts) -> str:
    text = "---\n<sub>" + " · ".join([f"gitbot {parts.version}", *parts.footer_links]) + "</sub>"
    if parts.workflow_token:
        text += (
            "\n\n<sub>This pull request was opened with the workflow's `GITHUB_TOKEN`, so GitHub does not "
            "start CI workflows for it: close and reopen it, or push a commit, to run them. To have CI run "
            "automatically, pass a GitHub App token as gitbot's `github-token` input.</sub>"
        )
    return text


def receipt_markdown(result: RunResult) -> str:
    """The run's receipt as a Markdown table for comments and the job summary; every cell escaped, since
    file names and warnings can carry text the agent chose."""
    lines = ["| | |", "|---|---|"]
    lines += [f"| {md_cell(key)} | {md_cell(value)} |" for key, value in receipt_rows(result)]
    lines += [f"\n> warning: {md_cell(warning)}" for warning in result.warnings]
    return "\n".join(lines)


def left_out_notes(left_out: list[LeftOut]) -> list[str]:
    """One note per reason changes were not committed, naming the files."""
    notes = []
    denied = [item for item in left_out if item.by_policy]
    unpushable: dict[str, list[LeftOut]] = {}
    for item in left_out:
        if not item.by_policy:
            unpushable.setdefault(item.reason, []).append(item)
    if denied:
        files = "; ".join(f"{code_span(item.path)} ({md_cell(item.reason)})" for item in denied[:20])
        more = f"; and {len(denied) - 20} more" if len(denied) > 20 else ""
        notes.append(f"Changes left out because the policy does not allow editing them: {files}{more}.")
    for reason, items in unpushable.items():
        files = ", ".join(code_span(item.path) for item in items[:20])
        more = f" and {len(items) - 20} more" if len(items) > 20 else ""
        notes.append(f"Changes not committed ({md_cell(reason)}): {files}{more}.")
    return notes


def render(parts: BodyParts, limit: int = BODY_LIMIT) -> str:
    """The body, within `limit` characters: steps rows go first, then changes rows, then the summary."""
    steps_rows: int | None = None
    change_rows: int | None = None
    summary_limit = SUMMARY_LIMIT
    while True:
        body = _assemble(parts, steps_rows, change_rows, summary_limit)
        if len(body) <= limit:
            return body
        over = len(body) - limit + SAFETY_MARGIN
        if steps_rows is None or steps_rows > 0:
            current = len(parts.result.step_log) if steps_rows is None else steps_rows
            steps_rows = max(0, current - max(1, over // 60))  # a row is at least ~60 characters
        elif change_rows is None or change_rows > 0:
            current = len(parts.changes) if change_rows is None else change_rows
            change_rows = max(0, current - max(1, over // 40))
        elif summary_limit > 200:
            summary_limit = max(200, summary_limit - over)
        else:
            return body[:limit]  # unreachable with sane inputs: every variable part is already minimal


def _assemble(parts: BodyParts, steps_rows: int | None, change_rows: int | None, summary_limit: int) -> str:
    sections = [parts.context_line] if parts.context_line else []
    sections += [
        summary_section(parts.result, summary_limit),
        verification_section(parts.verification, parts.notes),
        changes_section(parts.changes, change_rows),
        cost_section(parts.result),
        steps_section(parts, steps_rows),
    ]
    if parts.iterations:
        sections.append(parts.iterations)
    if parts.closes is not None:
        sections.append(f"Closes #{parts.closes}")
    sections.append(footer(parts))
    return "\n\n".join(sections) + "\n"
