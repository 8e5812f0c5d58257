"""A Task from a failed workflow run: its failed jobs and steps, and what their logs say failed.

Logs are fetched at once (the link expires within a minute), stripped of the runner's timestamps and
colour codes, and cut to the failure sections by the same parsers `gitbot fix-check` uses; when no
parser recognises the output, the lines around the runner's `##[error]` markers and the log's end are
kept. Everything a log says was printed by code from the branch, so it goes into the task only
between untrusted-data markers, capped. The words around the logs are templates in
prompts/workflow_task/.
"""

from __future__ import annotations

import re
import secrets as _secrets
from dataclasses import dataclass

from gitbot.forge.interface import GITHUB_TERMS, Forge, ForgeError, JobData, Terms
from gitbot.prompting import defuse_delimiters, render_prompt
from gitbot.task import Task

# "2026-11-21T05:45:56.1234567Z " at the start of every line of a job log.
TIMESTAMP = re.compile(r"^\ufeff?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?", re.MULTILINE)
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
ERROR_MARKER = "##[error]"
MAX_JOBS = 5
JOB_EXCERPT_CHARS = 6_000
TASK_EVIDENCE_CHARS = 16_000
ERROR_CONTEXT_LINES = 30
TAIL_LINES = 60


@dataclass(frozen=True)
class FailedJob:
    name: str
    url: str
    failed_steps: list[str]
    excerpt: str


def clean_log(text: str) -> str:
    return ANSI.sub("", TIMESTAMP.sub("", text.replace("\r\n", "\n")))


def failure_excerpt(log: str, limit: int = JOB_EXCERPT_CHARS) -> str:
    """The parts of a job log about what failed."""
    from gitbot.checks.parsers import cut, parse_output

    text = clean_log(log)
    parsed = parse_output(text)
    blocks = [f.excerpt for f in parsed.failures if f.excerpt]
    if parsed.summary:
        blocks.append(parsed.summary)
    if not blocks:
        lines = text.splitlines()
        marks = [i for i, line in enumerate(lines) if line.startswith(ERROR_MARKER)]
        if marks:
            start = max(0, marks[0] - ERROR_CONTEXT_LINES)
            blocks.append("\n".join(lines[start : marks[-1] + 1]))
        else:
            blocks.append("\n".join(lines[-TAIL_LINES:]))
    return cut("\n\n".join(blocks), limit)


def collect_failures(forge: Forge, run_id: int) -> tuple[list[FailedJob], list[str]]:
    """The failed jobs of a run with their log excerpts, and notes on what could not be read."""
    notes: list[str] = []
    jobs: list[JobData] = forge.failed_jobs(run_id)
    if len(jobs) > MAX_JOBS:
        notes.append(render_prompt("workflow_task/more_jobs", count=str(len(jobs) - MAX_JOBS)))
    failed = []
    for job in jobs[:MAX_JOBS]:
        try:
            excerpt = failure_excerpt(forge.job_log(job.id))
        except ForgeError as exc:
            notes.append(render_prompt("workflow_task/log_unreadable", job=repr(job.name), error=str(exc)))
            excerpt = render_prompt("workflow_task/no_log")
        failed.append(FailedJob(job.name, job.html_url, job.failed_steps, excerpt))
    return failed, notes


def build_workflow_task(
    *,
    workflow: str,
    branch: str,
    sha: str,
    run_url: str,
    jobs: list[FailedJob],
    notes: list[str],
    check_command: str | None,
    terms: Terms = GITHUB_TERMS,
) -> Task:
    tag = f"ci_log_{_secrets.token_hex(4)}"
    evidence = []
    used = 0
    for job in jobs:
        steps = ", ".join(job.failed_steps) or render_prompt("workflow_task/no_failed_step")
        block = render_prompt("workflow_task/job", job=repr(job.name), steps=steps, excerpt=job.excerpt)
        if used + len(block) > TASK_EVIDENCE_CHARS:
            block = block[: max(0, TASK_EVIDENCE_CHARS - used)]
        evidence.append(block)
        used += len(block)
        if used >= TASK_EVIDENCE_CHARS:
            break
    body = "\n\n".join(evidence + [f"({n})" for n in notes]) or render_prompt("workflow_task/no_failed_job")
    body = defuse_delimiters(body)
    lines = [
        render_prompt(
            "workflow_task/failed",
            ci_product=terms.ci_product,
            ci=terms.ci,
            workflow=repr(workflow),
            branch=repr(branch),
            commit=sha[:12],
            run_url=run_url,
        ),
        render_prompt("workflow_task/instructions"),
    ]
    if check_command:
        lines.append(render_prompt("workflow_task/reproduce", command=check_command))
    lines.append(render_prompt("workflow_task/logs", tag=tag))
    lines.append(f"<{tag}>\n{body}\n</{tag}>")
    first = jobs[0].name if jobs else workflow
    return Task(
        text="\n\n".join(lines),
        source="workflow",
        title=f"Fix failing workflow {workflow}: {first}"[:100],
        check_command=check_command,
    )
