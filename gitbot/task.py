"""Task: what every way in (text, failing check, hook, issue, workflow) hands to a Run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    # The description shown to the model inside <task>…</task>. Treated as data.
    text: str
    # Where it came from: "cli", "check", "hook", "issue", "workflow", "demo".
    source: str = "cli"
    # A short human title (PR titles, receipts).
    title: str = ""
    # A shell command whose exit status 0 proves the task is done (fix-check, hooks, action).
    check_command: str | None = None
