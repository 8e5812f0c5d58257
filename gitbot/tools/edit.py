"""replace_in_file: SEARCH/REPLACE blocks, applied all-or-nothing through a strict matching cascade.

Stricter than Aider and Cline on purpose (see shared/research/aci-aider.md and cline.md §6):
- atomic: a reply is never half-applied, so the file on disk is always either the old one or the
  fully edited one (Aider writes the blocks that matched; Cline once emptied a file on failure);
- ambiguity is an error that lists the places, never "the first occurrence";
- the cascade stops at "line by line after trimming": Cline's first/last-line anchor and Aider's
  edit-distance fuzz both silently rewrite the wrong code.
Blocks apply in order, each to the text as the earlier blocks left it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from gitbot.tools.base import Tool, ToolContext, ToolError, ToolResult
from gitbot.tools.files import (
    TextFile,
    count_of,
    ensure_encodable,
    format_warnings,
    load_text,
    number_lines,
    require_string,
    split_lines,
    write_guarded,
)
from gitbot.tools.paths import resolve

SEARCH_MARKER = re.compile(r"^\s*(?:<{5,9}|-{3,})\s*SEARCH>?\s*$")
DIVIDER = re.compile(r"^\s*={5,9}\s*$")
REPLACE_MARKER = re.compile(r"^\s*(?:>{5,9}|\+{3,})\s*REPLACE>?\s*$")
# Between blocks models write blank lines, code fences and "..."; anything else means a lost marker.
IGNORABLE_BETWEEN_BLOCKS = re.compile(r"^\s*(?:(?:```|~~~).*|\.\.\.)?\s*$")
# "12 | code" as read_file shows it, copied into SEARCH by mistake.
COPIED_LINE_NUMBER = re.compile(r"^\s*\d+ \| ")

FORMAT_HELP = """Expected one or more blocks of this form:
<<<<<<< SEARCH
exact lines from the file
=======
new lines
>>>>>>> REPLACE
(Cline's ------- SEARCH / ======= / +++++++ REPLACE markers work too.)"""

CONTEXT_LINES = 4  # SWE-agent's SNIPPET_LINES
MAX_SNIPPET_LINES = 60
MAX_QUOTED_LINES = 30
SIMILARITY_THRESHOLD = 0.6  # Aider's find_similar_lines cut-off
SIMILARITY_CANDIDATES = 30


@dataclass(frozen=True)
class Block:
    number: int  # 1-based position in the diff
    search: tuple[str, ...]
    replace: tuple[str, ...]

    def quoted(self) -> str:
        shown = list(self.search[:MAX_QUOTED_LINES])
        if len(self.search) > MAX_QUOTED_LINES:
            shown.append(f"... ({len(self.search) - MAX_QUOTED_LINES} more lines)")
        return "\n".join(["<<<<<<< SEARCH", *shown, "=======",
                          f"... ({len(self.replace)} REPLACE lines)", ">>>>>>> REPLACE"])


class Level(enum.Enum):
    """The matching cascade, strictest first; each level only runs when the previous found nothing."""

    EXACT = "exactly"
    TRAILING_WHITESPACE = "ignoring trailing whitespace"
    INDENTATION = "with a uniform indentation offset"
    TRIMMED = "only after trimming each line"


# What the model should know when a block matched below the exact level.
LEVEL_NOTES = {
    Level.TRAILING_WHITESPACE: "",
    Level.INDENTATION: "; its REPLACE lines were shifted by the same offset",
    Level.TRIMMED: "; its REPLACE lines were inserted as written, so check their indentation below",
}


@dataclass(frozen=True)
class Match:
    start: int  # 0-based index of the first matched line
    indent_added: str = ""  # the file is indented deeper than SEARCH by this prefix
    indent_removed: str = ""  # SEARCH is indented deeper than the file by this prefix

    def adapt(self, replace: Sequence[str]) -> list[str]:
        """The REPLACE lines moved by the same indentation offset as the match."""
        if self.indent_added:
            return [self.indent_added + line if line.strip() else line for line in replace]
        if self.indent_removed:
            prefix = self.indent_removed
            return [line[len(prefix):] if line.startswith(prefix) else line.lstrip() if line.strip() else line
                    for line in replace]
        return list(replace)


class BlockFailure(Exception):
    def __init__(self, block: Block, reason: str, details: str = "") -> None:
        super().__init__(reason)
        self.block = block
        self.reason = reason
        self.details = details


# --- parsing ---------------------------------------------------------------------------------------

def parse_blocks(diff: str, relpath: str = "") -> list[Block]:
    """The SEARCH/REPLACE blocks of `diff`, or a ToolError that shows the expected format."""
    blocks: list[Block] = []
    state, search, replace = "outside", [], []
    lines = diff.replace("\r\n", "\n").split("\n")

    def malformed(problem: str) -> ToolError:
        return ToolError(f"The diff is malformed: {problem}.\n{FORMAT_HELP}")

    for number, line in enumerate(lines, start=1):
        current = len(blocks) + 1
        if state == "outside":
            if SEARCH_MARKER.match(line):
                state, search, replace = "search", [], []
            elif DIVIDER.match(line) or REPLACE_MARKER.match(line):
                raise malformed(f"line {number} ({line.strip()!r}) comes before any SEARCH marker; "
                                f"every block starts with <<<<<<< SEARCH")
            elif not IGNORABLE_BETWEEN_BLOCKS.match(line) and line.strip() != relpath:
                raise malformed(f"line {number} ({line.strip()[:80]!r}) is outside any block; "
                                f"was a <<<<<<< SEARCH marker lost?")
        elif state == "search":
            if DIVIDER.match(line):
                state = "replace"
            elif SEARCH_MARKER.match(line):
                raise malformed(f"block {current} has a second SEARCH marker (line {number}) "
                                f"before its =======")
            elif REPLACE_MARKER.match(line):
                raise malformed(f"block {current} has no ======= line between its SEARCH and REPLACE parts")
            else:
                search.append(line)
        else:
            if REPLACE_MARKER.match(line):
                blocks.append(Block(current, tuple(search), tuple(replace)))
                state = "outside"
            elif DIVIDER.match(line):
                raise malformed(f"block {current} has a second ======= line (line {number})")
            elif SEARCH_MARKER.match(line):
                raise malformed(f"block {current} is not closed: a SEARCH marker (line {number}) comes "
                                f"before its >>>>>>> REPLACE")
            else:
                replace.append(line)
    if state != "outside":
        missing = "======= and >>>>>>> REPLACE" if state == "search" else ">>>>>>> REPLACE"
        # Never guess the end of a truncated block: a cut-off REPLACE would write half an edit.
        raise malformed(f"block {len(blocks) + 1} is not closed: the diff ends without {missing}")
    if not blocks:
        raise malformed("it contains no SEARCH/REPLACE block")
    return blocks


# --- matching --------------------------------------------------------------------------------------

def find_matches(lines: Sequence[str], search: Sequence[str]) -> tuple[Level | None, list[Match]]:
    """Every place `search` matches at the strictest level that matches anywhere."""
    size = len(search)
    if size == 0 or size > len(lines):
        return None, []
    starts = range(len(lines) - size + 1)
    lines, search = list(lines), list(search)
    rstripped = [line.rstrip() for line in lines]
    trimmed = [line.strip() for line in lines]
    search_rstripped = [line.rstrip() for line in search]
    search_trimmed = [line.strip() for line in search]

    def same(view: list[str], wanted: list[str], start: int) -> bool:
        return view[start] == wanted[0] and view[start:start + size] == wanted

    exact = [Match(s) for s in starts if same(lines, search, s)]
    if exact:
        return Level.EXACT, exact
    loose = [Match(s) for s in starts if same(rstripped, search_rstripped, s)]
    if loose:
        return Level.TRAILING_WHITESPACE, loose
    # The indentation level only looks where the trimmed text already agrees.
    candidates = [s for s in starts if same(trimmed, search_trimmed, s)]
    shifted = [match for s in candidates
               if (match := _offset_match(rstripped[s:s + size], search_rstripped, s))]
    if shifted:
        return Level.INDENTATION, shifted
    if candidates:
        return Level.TRIMMED, [Match(s) for s in candidates]
    return None, []


def _offset_match(window: list[str], search: list[str], start: int) -> Match | None:
    """A match where every non-blank line differs only by the same leading prefix."""
    if any(bool(have.strip()) != bool(want.strip()) for have, want in zip(window, search)):
        return None  # blank lines carry no indentation, but they must still line up
    pairs = [(have, want) for have, want in zip(window, search) if have.strip()]
    if not pairs:
        return None
    have_indent, want_indent = _indentation(pairs[0][0]), _indentation(pairs[0][1])
    if len(have_indent) > len(want_indent) and have_indent.endswith(want_indent):
        prefix = have_indent[:len(have_indent) - len(want_indent)]
        if all(have == prefix + want for have, want in pairs):
            return Match(start, indent_added=prefix)
    elif len(want_indent) > len(have_indent) and want_indent.endswith(have_indent):
        prefix = want_indent[:len(want_indent) - len(have_indent)]
        if all(want == prefix + have for have, want in pairs):
            return Match(start, indent_removed=prefix)
    return None


def _indentation(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


# --- applying --------------------------------------------------------------------------------------

@dataclass
class Applied:
    lines: list[str]
    regions: list[tuple[int, int]]  # changed line ranges [start, end) in the final text, 0-based
    notes: list[str]


def apply_blocks(lines: Sequence[str], blocks: Sequence[Block], relpath: str) -> Applied:
    """All blocks applied in order to a copy of `lines`, or BlockFailure for the first that cannot be."""
    current = list(lines)
    regions: list[tuple[int, int]] = []
    notes: list[str] = []
    for block in blocks:
        has_text = any(line.strip() for line in current)
        if not any(line.strip() for line in block.search) and not has_text:
            start, removed, new = 0, len(current), list(block.replace)  # creates or fills an empty file
        elif not block.search:
            raise BlockFailure(block, f"its SEARCH part is empty, but {relpath} is not empty "
                                      f"({len(current)} lines)",
                               "An empty SEARCH only creates a new file or fills an empty one. Put the lines "
                               "to change in SEARCH, or use write_to_file to replace the whole file.")
        elif block.search == block.replace:
            raise BlockFailure(block, "its SEARCH and REPLACE parts are identical, so it changes nothing")
        else:
            level, matches = find_matches(current, block.search)
            if not matches:
                edited = " (as edited by the blocks before it)" if block.number > 1 else ""
                raise BlockFailure(block, f"its SEARCH part does not match any lines of {relpath}{edited}",
                                   _no_match_help(current, block))
            if len(matches) > 1:
                places = ", ".join(_line_range(m.start, len(block.search)) for m in matches)
                raise BlockFailure(block, f"its SEARCH part matches {len(matches)} places ({level.value}): "
                                          f"lines {places}",
                                   "Add surrounding lines to SEARCH until it matches exactly one place.")
            start, removed, new = matches[0].start, len(block.search), matches[0].adapt(block.replace)
            if level is not Level.EXACT:
                notes.append(f"Block {block.number} matched {level.value}{LEVEL_NOTES[level]}.")
        current[start:start + removed] = new
        regions = _track_region(regions, start, removed, len(new))
    return Applied(current, regions, notes)


def _line_range(start: int, size: int) -> str:
    return f"{start + 1}" if size == 1 else f"{start + 1}-{start + size}"


def _track_region(regions: list[tuple[int, int]], start: int, removed: int,
                  added: int) -> list[tuple[int, int]]:
    """Earlier changed regions moved by this replacement, plus the new one (merged where they touch)."""
    delta = added - removed
    old_end = start + removed
    merged_start, merged_end = start, start + added
    kept = []
    for begin, end in regions:
        if end < start:
            kept.append((begin, end))
        elif begin > old_end:
            kept.append((begin + delta, end + delta))
        else:
            merged_start = min(merged_start, begin)
            merged_end = max(merged_end, end + delta if end > old_end else start + added)
    return sorted([*kept, (merged_start, merged_end)])


def _no_match_help(lines: list[str], block: Block) -> str:
    parts = []
    similar = most_similar_window(lines, block.search)
    if similar is not None:
        start, ratio = similar
        low = max(0, start - 2)
        high = min(len(lines), start + len(block.search) + 2)
        parts.append(f"Did you mean these lines ({ratio:.0%} similar, lines "
                     f"{_line_range(start, len(block.search))})?")
        parts += number_lines(lines[low:high], low + 1)
    replace_text = [line for line in block.replace if line.strip()]
    if replace_text:
        _, present = find_matches(lines, block.replace)
        if present:
            parts.append(f"Note: the REPLACE text is already present at line {present[0].start + 1}; "
                         f"was this edit already applied?")
    searched = [line for line in block.search if line.strip()]
    if searched and all(COPIED_LINE_NUMBER.match(line) for line in searched):
        parts.append("The SEARCH lines start with line numbers such as '12 | ': those come from read_file's "
                     "display and are not part of the file; leave them out.")
    parts.append("SEARCH must repeat the file's current lines exactly (whitespace, comments and docstrings "
                 "included); use read_file to see them.")
    return "\n".join(parts)


def most_similar_window(lines: list[str], search: Sequence[str]) -> tuple[int, float] | None:
    """(start, similarity) of the run of len(search) lines most like `search`, if similar enough.

    Windows are first ranked by how many of the SEARCH words they contain (cheap), then the best
    few are compared character by character, ignoring indentation.
    """
    size = min(len(search), len(lines))
    if size == 0:
        return None
    words = set(re.findall(r"\w+", "\n".join(search)))
    per_line = [sum(word in words for word in re.findall(r"\w+", line)) for line in lines]
    scores = []
    running = sum(per_line[:size])
    for start in range(len(lines) - size + 1):
        if start:
            running += per_line[start + size - 1] - per_line[start - 1]
        scores.append((running, -start))
    shortlist = [-negated for _, negated in sorted(scores, reverse=True)[:SIMILARITY_CANDIDATES]]
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(line.strip() for line in search))
    best: tuple[int, float] | None = None
    for start in sorted(shortlist):
        matcher.set_seq1("\n".join(line.strip() for line in lines[start:start + size]))
        ratio = matcher.ratio()
        if ratio >= SIMILARITY_THRESHOLD and (best is None or ratio > best[1]):
            best = (start, ratio)
    return best


# --- presenting ------------------------------------------------------------------------------------

def changed_snippets(lines: list[str], regions: list[tuple[int, int]]) -> str:
    """Each changed region with CONTEXT_LINES of context either side, numbered as the file is now."""
    if not lines:
        return "(the file is now empty)"
    windows: list[tuple[int, int]] = []
    for begin, end in regions:
        low, high = max(0, begin - CONTEXT_LINES), min(len(lines), max(end, begin) + CONTEXT_LINES)
        if windows and low <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(high, windows[-1][1]))
        else:
            windows.append((low, high))
    parts = []
    for low, high in windows:
        body = number_lines(lines[low:high], low + 1)
        if len(body) > MAX_SNIPPET_LINES:
            half = MAX_SNIPPET_LINES // 2
            body = [*body[:half], f"... ({len(body) - 2 * half} lines not shown)", *body[-half:]]
        parts.append(f"Lines {low + 1}-{high}:")
        parts += body
    return "\n".join(parts)


def _failure_message(failure: BlockFailure, total: int, relpath: str) -> str:
    block = failure.block
    parts = [f"Block {block.number} of {total} failed: {failure.reason}.", block.quoted()]
    if failure.details:
        parts.append(failure.details)
    earlier = ""
    if block.number > 1:
        if block.number == 2:
            matched = "Block 1 matched but was"
        else:
            matched = f"Blocks 1-{block.number - 1} matched but were"
        earlier = f" {matched} not written either: send all the blocks again, corrected."
    parts.append(f"No change was made to {relpath}: the blocks of one call are applied "
                 f"all-or-nothing.{earlier}")
    return "\n".join(parts)


# --- the tool --------------------------------------------------------------------------------------

def replace_in_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    path_argument = require_string(args, "path")
    diff = require_string(args, "diff")
    ensure_encodable(diff, "diff")
    path, relpath = resolve(ctx, path_argument, for_edit=True)
    blocks = parse_blocks(diff, relpath)
    if path.is_dir():
        raise ToolError(f"{relpath} is a directory; give the path of a file inside it")

    existed = path.exists()
    if existed:
        original = load_text(path, relpath)
    elif any(line.strip() for line in blocks[0].search):
        raise ToolError(f"{relpath} does not exist. To create it, use one block with an empty SEARCH part "
                        f"(or write_to_file); to edit another file, check the path with list_files.")
    else:
        original = TextFile("", crlf=False, bom=False)

    try:
        applied = apply_blocks(split_lines(original.text), blocks, relpath)
    except BlockFailure as failure:
        raise ToolError(_failure_message(failure, len(blocks), relpath)) from None
    keeps_final_newline = original.text.endswith("\n") or not original.text
    new_text = "\n".join(applied.lines) + ("\n" if applied.lines and keeps_final_newline else "")
    if existed and new_text == original.text:
        return ToolResult(f"The blocks leave {relpath} exactly as it was; nothing changed.",
                          touched=(relpath,))

    begin, end = applied.regions[0]
    report = write_guarded(path, relpath, original.text if existed else None, new_text,
                           original.encode(new_text), changed=(begin + 1, max(begin + 1, end)))
    count = len(applied.lines)
    if existed:
        summary = f"Applied {count_of(len(blocks), 'block')} to {relpath} (now {count_of(count, 'line')})."
    else:
        summary = f"Created {relpath} ({count_of(count, 'line')})."
    if original.crlf:
        summary += " Kept the file's CRLF line endings."
    parts = [summary, *applied.notes, changed_snippets(applied.lines, applied.regions),
             format_warnings(report)]
    return ToolResult("\n".join(part for part in parts if part), touched=(relpath,))


REPLACE_IN_FILE = Tool(
    name="replace_in_file",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path relative to the repository root."},
            "diff": {"type": "string",
                     "description": "One or more SEARCH/REPLACE blocks (see the tool description)."},
        },
        "required": ["path", "diff"],
        "additionalProperties": False,
    },
    function=replace_in_file,
    changes_files=True,
)
