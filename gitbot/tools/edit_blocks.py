"""The SEARCH/REPLACE blocks of a replace_in_file diff, or an error that names what is wrong with it.

The markers accept every length the peers accept, so a model used to either is understood:
- Aider (aider/coders/editblock_coder.py): HEAD `^<{5,9} SEARCH>?\\s*$`, DIVIDER `^={5,9}\\s*$`,
  UPDATED `^>{5,9} REPLACE\\s*$`;
- Cline (src/core/assistant-message/diff.ts, v3.85.0): `^[-]{3,} SEARCH>?$` and `^[<]{3,} SEARCH>?$`,
  `^[=]{3,}$`, `^[+]{3,} REPLACE>?$` and `^[>]{3,} REPLACE>?$`.
Their union is three or more of each character. A truncated block is never guessed at (a cut-off
REPLACE would write half an edit), and a block with several lines of `=` is split at the one closest
to the usual seven or refused, never at whichever comes first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from gitbot.tools.base import ToolError, count_of

SEARCH_MARKER = re.compile(r"^\s*(?:<{3,}|-{3,})\s*SEARCH>?\s*$")
DIVIDER = re.compile(r"^\s*={3,}\s*$")
REPLACE_MARKER = re.compile(r"^\s*(?:>{3,}|\+{3,})\s*REPLACE>?\s*$")
USUAL_DIVIDER_LENGTH = 7
# Between blocks models write blank lines, code fences and "..."; anything else means a lost marker.
IGNORABLE_BETWEEN_BLOCKS = re.compile(r"^\s*(?:(?:```|~~~).*|\.\.\.)?\s*$")
# A unified diff (`diff -u`, `git diff`) sent instead of blocks: its hunk headers, or ---/+++ file headers.
HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
MAX_QUOTED_LINES = 30

FORMAT_HELP = """Expected one or more blocks of this form:
<<<<<<< SEARCH
exact lines from the file
=======
new lines
>>>>>>> REPLACE
(Cline's ------- SEARCH / ======= / +++++++ REPLACE markers work too.)"""

UNIFIED_DIFF_HELP = (
    "The diff is a unified diff (---/+++ file headers and @@ hunks); replace_in_file does not apply those. "
    "Send SEARCH/REPLACE blocks instead, one per hunk: SEARCH holds the hunk's context and '-' lines, "
    "REPLACE its context and '+' lines, in their order and without the leading ' ', '-' or '+'."
)


@dataclass(frozen=True)
class Block:
    number: int  # 1-based position in the diff
    search: tuple[str, ...]
    replace: tuple[str, ...]

    def quoted(self) -> str:
        shown = list(self.search[:MAX_QUOTED_LINES])
        if len(self.search) > MAX_QUOTED_LINES:
            shown.append(f"... ({count_of(len(self.search) - MAX_QUOTED_LINES, 'more line')})")
        return "\n".join(["<<<<<<< SEARCH", *shown, "=======",
                          f"... ({count_of(len(self.replace), 'REPLACE line')})", ">>>>>>> REPLACE"])


def parse_blocks(diff: str, relpath: str = "") -> list[Block]:
    """The SEARCH/REPLACE blocks of `diff`, or a ToolError that names the problem and shows the format."""
    lines = diff.replace("\r\n", "\n").split("\n")
    if not any(SEARCH_MARKER.match(line) for line in lines) and _is_unified_diff(lines):
        raise ToolError(f"{UNIFIED_DIFF_HELP}\n{FORMAT_HELP}")
    blocks: list[Block] = []
    body: list[tuple[int, str]] | None = None  # (line number, line) since the open block's SEARCH marker
    for number, line in enumerate(lines, start=1):
        current = len(blocks) + 1
        if body is None:
            if SEARCH_MARKER.match(line):
                body = []
            elif DIVIDER.match(line) or REPLACE_MARKER.match(line):
                raise _malformed(f"line {number} ({line.strip()!r}) comes before any SEARCH marker; "
                                 f"every block starts with <<<<<<< SEARCH")
            elif not IGNORABLE_BETWEEN_BLOCKS.match(line) and line.strip() != relpath:
                raise _malformed(f"line {number} ({line.strip()[:80]!r}) is outside any block; "
                                 f"was a <<<<<<< SEARCH marker lost?")
        elif SEARCH_MARKER.match(line):
            if _has_divider(body):
                raise _malformed(f"block {current} is not closed: a SEARCH marker (line {number}) comes "
                                 f"before its >>>>>>> REPLACE")
            raise _malformed(f"block {current} has a second SEARCH marker (line {number}) before its =======")
        elif REPLACE_MARKER.match(line):
            blocks.append(_split(current, body))
            body = None
        else:
            body.append((number, line))
    if body is not None:
        missing = ">>>>>>> REPLACE" if _has_divider(body) else "======= and >>>>>>> REPLACE"
        raise _malformed(f"block {len(blocks) + 1} is not closed: the diff ends without {missing}")
    if not blocks:
        raise _malformed("it contains no SEARCH/REPLACE block")
    return blocks


def _split(number: int, body: list[tuple[int, str]]) -> Block:
    """The block divided at its divider: the only line of `=` signs, or the one closest to seven of them."""
    candidates = [index for index, (_, line) in enumerate(body) if DIVIDER.match(line)]
    if not candidates:
        raise _malformed(_missing_divider(number, body))
    if len(candidates) > 1:
        distance = {i: abs(len(body[i][1].strip()) - USUAL_DIVIDER_LENGTH) for i in candidates}
        closest = [i for i in candidates if distance[i] == min(distance.values())]
        if len(closest) > 1:
            where = ", ".join(str(body[i][0]) for i in candidates)
            raise _malformed(f"block {number} has {len(candidates)} lines made only of = signs (lines "
                             f"{where}), and it is not clear which one divides SEARCH from REPLACE. Write "
                             f"the divider as ======= and keep a line of the file that looks the same out "
                             f"of the block (edit the lines around it)")
        candidates = closest
    divider = candidates[0]
    search, replace = body[:divider], body[divider + 1:]
    return Block(number, tuple(line for _, line in search), tuple(line for _, line in replace))


def _missing_divider(number: int, body: list[tuple[int, str]]) -> str:
    near = next(((n, line.strip()) for n, line in body if line.strip().startswith("=")), None)
    if near is None:
        return f"block {number} has no ======= line between its SEARCH and REPLACE parts"
    return (f"block {number} has no ======= line between its SEARCH and REPLACE parts: line {near[0]} "
            f"({near[1][:40]!r}) is not one, because the divider is a line of = signs alone, at least three "
            f"of them (write =======)")


def _has_divider(body: list[tuple[int, str]]) -> bool:
    return any(DIVIDER.match(line) for _, line in body)


def _is_unified_diff(lines: list[str]) -> bool:
    if any(HUNK_HEADER.match(line) for line in lines):
        return True
    return any(old.startswith("--- ") and new.startswith("+++ ") for old, new in pairwise(lines))


def _malformed(problem: str) -> ToolError:
    end = "" if problem.endswith(("?", ".")) else "."
    return ToolError(f"The diff is malformed: {problem}{end}\n{FORMAT_HELP}")
