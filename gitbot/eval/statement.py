"""The problem statement of a mined instance: the commit's message (a merge's, with the messages of the
commits it brought in), with what gives the fix away removed.

The linked issue would be better text, but mining is offline and an issue tracker's text is not in git:
the issue numbers a message names (`fixes #12`, `closes org/repo#3`) are kept in the instance as
`linked_issues`, and the statement is the message without them. Removed: trailers (Signed-off-by …), the
issue references, and body lines that name a file the fix changes or an identifier the fix introduces
(a line like "divide by len(values) in stats.py" is the fix, not the problem). The subject stays.
"""

from __future__ import annotations

import builtins
import keyword
import re
from pathlib import PurePosixPath

ISSUE_REF = re.compile(r"(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+((?:[\w.-]+/[\w.-]+)?#\d+)")
TRAILER = re.compile(r"^[A-Za-z][\w-]*: \S")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
CALL = re.compile(r"[A-Za-z_][\w.]*\([^()]*\)")


def linked_issues(message: str) -> list[str]:
    return sorted(set(ISSUE_REF.findall(message)), key=lambda ref: (len(ref), ref))


def problem_statement(message: str, patch: str, code_files: list[str]) -> str:
    lines = message.strip().splitlines()
    if not lines:
        return ""
    subject, body = _strip_refs(lines[0]), lines[1:]
    revealing, fragments = _introduced(patch)
    names = {path for path in code_files} | {PurePosixPath(path).name for path in code_files}
    kept = []
    for line in body:
        if TRAILER.match(line.strip()) or line.strip().lower().startswith(("merge ", "(cherry picked")):
            continue
        if any(name in line for name in names) or revealing & set(IDENTIFIER.findall(line)) \
                or any(fragment in line for fragment in fragments):
            continue
        kept.append(_strip_refs(line))
    text = "\n".join([subject, *kept]).strip()
    return re.sub(r"\n{3,}", "\n\n", text)


def _strip_refs(line: str) -> str:
    line = ISSUE_REF.sub("", line)
    line = re.sub(r"\s\(\s*\)", "", line)  # "(fixes #12)" leaves "()" behind; "mean()" keeps its own
    return re.sub(r"\s{2,}", " ", line).strip(" ,;")


def _introduced(patch: str) -> tuple[set[str], set[str]]:
    """(identifiers the fix brings in, calls like `min(values)` it brings in), read from its code with
    string literals and comments left out: words in an error message are no detail of the fix."""
    added: dict[str, set[str]] = {"names": set(), "calls": set()}
    removed: dict[str, set[str]] = {"names": set(), "calls": set()}
    for line in patch.splitlines():
        if line.startswith(("+++", "---")) or not line.startswith(("+", "-")):
            continue
        code = re.sub(r"#.*$", "", re.sub(r"(['\"]).*?\1", "", line[1:]))
        side = added if line.startswith("+") else removed
        side["names"].update(IDENTIFIER.findall(code))
        side["calls"].update(CALL.findall(code))
    # A builtin (ValueError) or keyword names no detail of the fix.
    names = added["names"] - removed["names"] - set(dir(builtins)) - set(keyword.kwlist)
    return names, added["calls"] - removed["calls"]
