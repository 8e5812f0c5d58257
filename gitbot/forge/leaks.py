"""Secrets in the diff gitbot is about to push.

The added lines (and the names of new or renamed files) pass the same scrubbing as every other text
that leaves gitbot (`Secrets.scrub`: the values gitbot knows are secret and their encoded forms, then
the secret scanner, gitbot/secretscan.py). A hit stops the push: a pushed secret is public, or at
least readable by everyone with read access, and stays in the history.

The scanner's allow-marker (`gitbot: allow-secret`) counts here only on a line the change does not
add, i.e. a marked line the diff removes and adds again unchanged (a moved fixture), and only for
that line itself: the agent can write the marker as easily as the secret, and can move a marked line. Removed and context lines are not scanned, so taking a
secret out always stays possible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitbot.secrets import KNOWN_SECRET, Secrets
from gitbot.secretscan import ALLOW_MARKERS

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Leak:
    path: str
    line: int  # in the new version of the file; 0 for the file's name
    kind: str  # a scanner rule name, or "known-secret"; never the value itself

    def where(self) -> str:
        return f"{self.path}:{self.line} ({self.kind})" if self.line else f"{self.path} (file name: {self.kind})"


@dataclass
class _Added:
    path: str
    line: int
    text: str


def _added_lines(diff: str) -> tuple[list[_Added], set[str]]:
    """What a `git diff --text` adds (line by line, with new line numbers) and what it removes."""
    added: list[_Added] = []
    removed: set[str] = set()
    path, number, in_header = "?", 0, False
    for line in diff.split("\n"):  # not splitlines(): a \r or \f inside a line is not a new line
        if line.startswith("diff --git "):
            path, in_header = line.removeprefix("diff --git ").split(" b/", 1)[-1], True
            added.append(_Added(path, 0, path))
        elif in_header:
            # Headers come only before a file's first hunk: after it, `+++ x` is the added line `++ x`.
            if line.startswith("+++ "):
                name = line[4:]
                path = name[2:] if name.startswith("b/") else path
            elif line.startswith(("rename to ", "copy to ")):
                path = line.split(" to ", 1)[1]
                added.append(_Added(path, 0, path))
            elif match := HUNK.match(line):
                number, in_header = int(match.group(1)), False
        elif match := HUNK.match(line):
            number = int(match.group(1))
        elif line.startswith("+"):
            added.append(_Added(path, number, line[1:]))
            number += 1
        elif line.startswith("-"):
            removed.add(line[1:])
        elif line.startswith(" "):
            number += 1
    return added, removed


def scan_diff(diff: str, secrets: Secrets) -> list[Leak]:
    """Every secret in what the diff adds, as path:line and kind."""
    added, removed = _added_lines(diff)
    # Added lines are scanned as one text per file, so a private key spanning lines is one block;
    # a finding's line in that text maps back to the file's line number.
    by_path: dict[str, list[_Added]] = {}
    for item in added:
        by_path.setdefault(item.path, []).append(item)
    leaks: list[Leak] = []
    for path, items in by_path.items():
        shown = secrets.redact(path)  # a file's name can hold the secret too
        text = "\n".join(item.text for item in items)
        _, findings = secrets.scrub(text)
        for finding in findings:
            item = items[finding.line - 1]
            if finding.kind != KNOWN_SECRET and _moved_and_marked(items, finding.line - 1, removed):
                continue
            leaks.append(Leak(shown, item.line, finding.kind))
    return leaks


def _moved_and_marked(items: list[_Added], index: int, removed: set[str]) -> bool:
    """The line itself carries the allow-marker, and the change removed that same full line: a marked
    line that already was in the repository, not one the agent wrote. A marker on the line above
    never counts here: moving a marked line (or a bare marker) would excuse whatever is written under it."""
    item = items[index]
    return bool(item.line) and any(m in item.text for m in ALLOW_MARKERS) and item.text in removed
