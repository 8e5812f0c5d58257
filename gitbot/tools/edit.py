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

from gitbot.tools.base import Tool, ToolContext, ToolError, ToolResult, count_of
from gitbot.tools.edit_blocks import Block, parse_blocks
from gitbot.tools.files import (
    TextFile,
    ensure_encodable,
    format_warnings,
    load_text,
    number_lines,
    require_string,
    split_lines,
    write_guarded,
)
from gitbot.tools.paths import resolve

# "12 | code" as read_file shows it, copied into SEARCH by mistake.
COPIED_LINE_NUMBER = re.compile(r"^\s*\d+ \| ")
# A line that stands for lines left out: "...", "# ...", "// ... existing code ...", "# rest unchanged".
_COMMENT = r"(?:#|//|/\*|<!--|--|;|%|\*)"
ELISION = re.compile(
    rf"^\s*(?:{_COMMENT}.*)?(?:\.\.\.|…)"
    rf"|^\s*{_COMMENT}.*\b(?:unchanged|omitted|as before|existing code|rest of (?:the )?"
    rf"(?:code|file|function|method|class|body))\b",
    re.IGNORECASE,
)
# Typographic quotes a model writes for the straight ones in code.
CURLY_QUOTES = {"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
                "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"'}
STRAIGHTENED = str.maketrans(CURLY_QUOTES)

CONTEXT_LINES = 4  # SWE-agent's SNIPPET_LINES
MAX_SNIPPET_LINES = 60
SIMILARITY_THRESHOLD = 0.6  # Aider's find_similar_lines cut-off
SIMILARITY_CANDIDATES = 30


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
                                      f"({count_of(len(current), 'line')})",
                               "An empty SEARCH only creates a new file or fills an empty one. Put the lines "
                               "to change in SEARCH, or use write_to_file to replace the whole file.")
        elif block.search == block.replace:
            raise BlockFailure(block, "its SEARCH and REPLACE parts are identical, so it changes nothing")
        else:
            start, removed, new, note = _locate(current, block, relpath)
            if note:
                notes.append(note)
        current[start:start + removed] = new
        regions = _track_region(regions, start, removed, len(new))
    return Applied(current, regions, notes)


def _locate(lines: list[str], block: Block, relpath: str) -> tuple[int, int, list[str], str]:
    """Where the block's SEARCH matches (start, line count), its REPLACE as it goes in, and a note on how
    it matched when that was not exactly; BlockFailure when it matches nowhere or in several places."""
    search, replace, dropped = block.search, block.replace, 0
    level, matches = find_matches(lines, search)
    if not matches:
        search, replace, dropped = _without_leading_blank_lines(block)
        if dropped:
            level, matches = find_matches(lines, search)
    if not matches:
        edited = " (as edited by the blocks before it)" if block.number > 1 else ""
        cause = no_match_cause(lines, block)
        raise BlockFailure(block, f"its SEARCH part does not match any lines of {relpath}{edited}"
                                  + (f": {cause.reason}" if cause else ""),
                           _no_match_help(lines, block, cause))
    blank = ("the blank line" if dropped == 1 else f"the {dropped} blank lines") if dropped else ""
    if len(matches) > 1:
        places = ", ".join(_line_range(m.start, len(search)) for m in matches)
        without = f" without {blank} it starts with" if dropped else ""
        raise BlockFailure(block, f"its SEARCH part{without} matches {len(matches)} places ({level.value}): "
                                  f"lines {places}",
                           "Add surrounding lines to SEARCH until it matches exactly one place.")
    note = ""
    if dropped:
        left_out = "was" if dropped == 1 else "were"
        note = (f"Block {block.number} matched {level.value} once {blank} at the start of its SEARCH "
                f"{left_out} left out (the file has no blank line there){LEVEL_NOTES.get(level, '')}.")
    elif level is not Level.EXACT:
        note = f"Block {block.number} matched {level.value}{LEVEL_NOTES[level]}."
    return matches[0].start, len(search), matches[0].adapt(replace), note


def _without_leading_blank_lines(block: Block) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """SEARCH without the blank lines it starts with (models add one before under-indented lines: Aider's
    issue #25), and REPLACE without as many of its own; 0 dropped when SEARCH starts with text or is blank."""
    dropped = _leading_blank_count(block.search)
    if dropped == 0 or dropped == len(block.search):
        return block.search, block.replace, 0
    same = min(dropped, _leading_blank_count(block.replace))
    return block.search[dropped:], block.replace[same:], dropped


def _leading_blank_count(lines: Sequence[str]) -> int:
    return next((index for index, line in enumerate(lines) if line.strip()), len(lines))


def _line_range(start: int, size: int) -> str:
    return f"{start + 1}" if size == 1 else f"{start + 1}-{start + size}"


def _lines_label(start: int, size: int) -> str:
    return f"{'line' if size == 1 else 'lines'} {_line_range(start, size)}"


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


@dataclass(frozen=True)
class Cause:
    """Why a SEARCH part matches nothing, when it is a habit the model can fix once it is named."""

    reason: str  # follows "its SEARCH part does not match any lines of <path>: "
    advice: str  # what to send instead


def no_match_cause(lines: list[str], block: Block) -> Cause | None:
    return _copied_line_numbers(block) or _elision(lines, block) or _curly_quotes(lines, block)


def _copied_line_numbers(block: Block) -> Cause | None:
    searched = [line for line in block.search if line.strip()]
    if not searched or not all(COPIED_LINE_NUMBER.match(line) for line in searched):
        return None
    return Cause("its lines start with line numbers such as '12 | ', copied from read_file's display",
                 "Those numbers are not part of the file: leave them out, and keep the lines exactly as they "
                 "follow the ' | '.")


def _elision(lines: list[str], block: Block) -> Cause | None:
    present = {line.strip() for line in lines}

    def elided(part: Sequence[str]) -> tuple[int, str] | None:
        return next(((number, line.strip()) for number, line in enumerate(part, 1)
                     if ELISION.match(line) and line.strip() not in present), None)

    found = elided(block.search)
    if found is None:
        return None
    advice = ("Spell out every line SEARCH covers, or send one block per place that changes, each with a few "
              "unchanged lines around it (the blocks apply in order).")
    in_replace = elided(block.replace)
    if in_replace is not None:
        advice += (f" REPLACE line {in_replace[0]} ({in_replace[1]!r}) would be written into the file as it "
                   f"is, so spell out the lines there too.")
    return Cause(f"SEARCH line {found[0]} ({found[1]!r}) stands for lines left out, and SEARCH cannot skip "
                 f"lines", advice)


def _curly_quotes(lines: list[str], block: Block) -> Cause | None:
    search = [line.translate(STRAIGHTENED) for line in block.search]
    straight = [line.translate(STRAIGHTENED) for line in lines]
    if search == list(block.search) and straight == lines:
        return None
    _, matches = find_matches(straight, search)
    if not matches:
        return None
    size = len(search)
    where = _lines_label(matches[0].start, size) if len(matches) == 1 else f"{len(matches)} places"
    in_search = _curly_in(block.search)
    if in_search:
        advice = "Copy the quotes exactly as the file has them: straight ' and \" in SEARCH"
        if _curly_in(block.replace) and not _curly_in(lines):
            advice += ", and in REPLACE too unless the file is meant to get curly quotes"
        return Cause(f"it has curly quotes ({in_search}) where the file has straight ones (with straight "
                     f"quotes it would match {where})", advice + ".")
    in_file = _curly_in(lines[matches[0].start:matches[0].start + size])
    return Cause(f"the file has curly quotes ({in_file}) at {where} where SEARCH has straight ones",
                 "Copy those lines exactly as read_file shows them, curly quotes included.")


def _curly_in(lines: Sequence[str]) -> str:
    return " ".join(sorted({char for line in lines for char in line if char in CURLY_QUOTES}))


def _no_match_help(lines: list[str], block: Block, cause: Cause | None) -> str:
    parts = [cause.advice] if cause else []
    similar = most_similar_window(lines, block.search)
    if similar is not None:
        start, ratio = similar
        size = min(len(block.search), len(lines))
        low = max(0, start - 2)
        high = min(len(lines), start + size + 2)
        these = "this line" if size == 1 else "these lines"
        parts.append(f"Did you mean {these} ({ratio:.0%} similar, {_lines_label(start, size)})?")
        parts += number_lines(lines[low:high], low + 1)
    replace_text = [line for line in block.replace if line.strip()]
    if replace_text:
        _, present = find_matches(lines, block.replace)
        if present:
            parts.append(f"Note: the REPLACE text is already present at line {present[0].start + 1}; "
                         f"was this edit already applied?")
    if cause is None:
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
            body = [*body[:half], f"... ({count_of(len(body) - 2 * half, 'line')} not shown)", *body[-half:]]
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
