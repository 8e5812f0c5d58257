"""Whole-file tools: read_file (a numbered 100-line window), write_to_file and list_files.

Also the pieces the edit tools share with them: loading a file as text (refusing binary and
non-UTF-8 files with a description of what they are), keeping a file's line endings and BOM,
and writing only what the guardrail accepts.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitbot.tools.base import Tool, ToolContext, ToolError, ToolResult, count_of
from gitbot.tools.guardrail import GuardrailReport, check_edit
from gitbot.tools.listing import git_entries
from gitbot.tools.paths import GIT_DIR_NAME, resolve

WINDOW_LINES = 100  # SWE-agent's measured optimum: 30 lines cost 3.7 points, the whole file 5.3
MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_OUTLINE_ENTRIES = 100
LIST_CAP = 200
REJECTION_CONTEXT_LINES = 3
REJECTION_MAX_LINES = 30
BINARY_SNIFF_BYTES = 8192
UTF8_BOM = "\ufeff"

# Signatures of common binary formats, to tell the model what a refused file is.
BINARY_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (or a jar, wheel, docx, xlsx ...)"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (b"\x7fELF", "ELF executable or shared library"),
    (b"MZ", "Windows executable or DLL"),
    (b"\xca\xfe\xba\xbe", "Java class file or Mach-O universal binary"),
    (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (b"\x00asm", "WebAssembly module"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"RIFF", "RIFF media (WAV, AVI or WebP)"),
    (b"OggS", "Ogg media"),
    (b"ID3", "MP3 audio"),
    (b"wOFF", "WOFF font"),
    (b"wOF2", "WOFF2 font"),
    (b"\x00\x00\x01\x00", "Windows icon"),
)


# --- arguments ---------------------------------------------------------------------------------

def require_string(args: Any, name: str, *, allow_empty: bool = False) -> str:
    if not isinstance(args, dict):
        raise ToolError(f"the tool input must be a JSON object, got {type(args).__name__}")
    if name not in args:
        raise ToolError(f"missing required argument '{name}' (a string)")
    value = args[name]
    if not isinstance(value, str):
        raise ToolError(f"argument '{name}' must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ToolError(f"argument '{name}' must not be empty")
    return value


def _optional_line_number(args: dict, name: str) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    # Models sometimes send numbers as strings; the meaning is unambiguous, so accept them.
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"argument '{name}' must be a whole line number (1-based), got {value!r}")
    if value < 1:
        raise ToolError(f"{name} {value} is not a line number: lines are numbered from 1")
    return value


def _optional_flag(args: dict, name: str) -> bool:
    value = args.get(name, False)
    if value is None:
        return False
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if not isinstance(value, bool):
        raise ToolError(f"argument '{name}' must be true or false, got {value!r}")
    return value


# --- text files --------------------------------------------------------------------------------

@dataclass(frozen=True)
class TextFile:
    """A file's text plus the conventions to write it back with."""

    text: str  # "\r\n" turned into "\n" when the file used "\r\n" throughout; BOM removed
    crlf: bool
    bom: bool

    def encode(self, text: str) -> bytes:
        """`text` (with "\n" line endings) as this file's bytes: same line endings, same BOM."""
        if self.crlf:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        return ((UTF8_BOM if self.bom else "") + text).encode("utf-8")


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _signature(data: bytes) -> tuple[bytes, str] | None:
    return next(((magic, name) for magic, name in BINARY_SIGNATURES if data.startswith(magic)), None)


def describe_binary(data: bytes) -> str | None:
    """What a binary file is ("PNG image", "binary data"), or None when it may be text."""
    head = data[:BINARY_SNIFF_BYTES]
    signature = _signature(head)
    # ASCII-only signatures ("MZ", "ID3", "%PDF-" ...) also start ordinary text, so alone they prove nothing.
    if signature and not signature[0].isascii():
        return signature[1]
    if b"\0" in head:
        return signature[1] if signature else "binary data (contains NUL bytes)"
    return None


def decode_text(data: bytes) -> TextFile | str:
    """The file as text, or a description of why it is not text."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 text; only UTF-8 is supported"
    binary = describe_binary(data)
    if binary:
        return f"binary: {binary}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        signature = _signature(data)
        looks_like = (f"; it looks like a {signature[1]}" if signature
                      else " (Latin-1 or another legacy encoding?)")
        return f"not valid UTF-8 at byte {error.start}{looks_like}"
    bom = text.startswith(UTF8_BOM)
    if bom:
        text = text[1:]
    crlf_count = text.count("\r\n")
    crlf = crlf_count > 0 and crlf_count == text.count("\n")
    if crlf:
        text = text.replace("\r\n", "\n")
    return TextFile(text, crlf, bom)


def load_text(path: Path, relpath: str) -> TextFile:
    """Read a regular file as text, or raise a ToolError that says what the file is instead."""
    if path.is_dir():
        raise ToolError(f"{relpath} is a directory, not a file; use list_files to see what it contains")
    if not path.is_file():
        # Reading a FIFO or a device could block or never end.
        raise ToolError(f"{relpath} is not a regular file (a device, socket or pipe?)")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ToolError(f"{relpath} is too large to read ({human_size(size)}; the limit is "
                            f"{human_size(MAX_FILE_BYTES)}); use search_files to find what you need in it")
        data = path.read_bytes()
    except OSError as error:
        raise ToolError(f"cannot read {relpath}: {error.strerror or error}") from error
    decoded = decode_text(data)
    if isinstance(decoded, str):
        raise ToolError(f"{relpath} is not a text file ({human_size(len(data))}, {decoded}); "
                        f"the file tools only work on UTF-8 text")
    return decoded


def split_lines(text: str) -> list[str]:
    """Lines split on "\n" only (as git, ripgrep and editors count them), without the final empty one."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def number_lines(lines: list[str], first_number: int, *, width: int | None = None,
                 marked: int | None = None) -> list[str]:
    """Lines prefixed with right-aligned line numbers; `marked` gets a ">" in front."""
    width = width or len(str(first_number + max(len(lines) - 1, 0)))
    numbered = []
    for offset, line in enumerate(lines):
        number = first_number + offset
        prefix = "" if marked is None else (">" if number == marked else " ")
        numbered.append(f"{prefix}{number:>{width}} | {_clip(line.rstrip(chr(13)))}")
    return numbered


def _clip(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    clipped = count_of(len(line) - MAX_LINE_CHARS, "more character")
    return f"{line[:MAX_LINE_CHARS]} … [line clipped: {clipped}]"


def ensure_encodable(text: str, name: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ToolError(f"argument '{name}' contains a character that cannot be written as UTF-8 "
                        f"at position {error.start} (a lone surrogate?)") from error


# --- writing through the guardrail -------------------------------------------------------------

GITMODULES = ".gitmodules"


def write_guarded(path: Path, relpath: str, before: str | None, after: str, data: bytes, *,
                  changed: tuple[int, int] | None = None) -> GuardrailReport:
    """Write `data` to `path` unless the guardrail finds a new syntax error in `after`.

    `before` is the file's text before the edit (None for a new file), `after` the text the edit
    produces with "\n" line endings, `data` the exact bytes to write, `changed` the 1-based range
    of edited lines when known (a rejection then shows them too). The check runs before anything
    touches the disk, so a rejected edit leaves the file byte-identical, and a file that did not
    exist is never created.
    """
    if relpath.lower() == GITMODULES:
        from gitbot.sandbox.planted import risky_gitmodules_text

        risky = risky_gitmodules_text(after)
        if risky:
            raise ToolError(f"The change was NOT applied: {relpath} would have settings that make git run a "
                            f"program ({', '.join(risky)}), which gitbot never writes.")
    report = check_edit(path, before, after)
    if report.rejected:
        raise ToolError(rejection_message(relpath, report, after, created=not path.exists(), changed=changed))
    _write_atomically(path, relpath, data)
    return report


def rejection_message(relpath: str, report: GuardrailReport, after: str, *, created: bool,
                      changed: tuple[int, int] | None = None) -> str:
    lines = split_lines(after)
    first = report.errors[0]
    what = "a new error" if len(report.errors) == 1 else f"{len(report.errors)} new errors"
    headline = f"The change was NOT applied: it would introduce {what} in {relpath}"
    parts = [f"{headline} (checked by {report.checker})."]
    parts += [f"  {finding.describe()}" for finding in report.errors[:5]]
    if len(report.errors) > 5:
        parts.append(f"  ({len(report.errors) - 5} more)")
    # Show the error line, and the edited lines too when they are close enough to fit in one view.
    low, high = first.line, first.line
    if changed and abs(changed[0] - first.line) <= REJECTION_MAX_LINES:
        low, high = min(low, changed[0]), max(high, min(changed[1], changed[0] + REJECTION_MAX_LINES))
    start = max(1, low - REJECTION_CONTEXT_LINES)
    end = min(len(lines), high + REJECTION_CONTEXT_LINES, start + REJECTION_MAX_LINES - 1)
    if lines and start <= end:
        parts.append(f"The file would have looked like this (line {first.line} marked):")
        parts += number_lines(lines[start - 1:end], start, marked=first.line)
    state = "was not created" if created else "is unchanged"
    parts.append(f"{relpath} {state}. Fix the edit and send it again; do not resend the same edit.")
    return "\n".join(parts)


def _write_atomically(path: Path, relpath: str, data: bytes) -> None:
    missing_parents = [parent for parent in reversed(path.parents) if not parent.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            with open(path, "xb") as new_file:
                new_file.write(data)
            return
        # Replace through a temporary file so a failure half-way never leaves a truncated file.
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".gitbot")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.chmod(temporary, path.stat().st_mode & 0o7777)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        for parent in reversed(missing_parents):
            try:
                parent.rmdir()
            except OSError:
                pass
        reason = error.strerror or error
        raise ToolError(f"could not write {relpath}: {reason}; nothing was changed") from error


def format_warnings(report: GuardrailReport) -> str:
    if not report.warnings and not report.notes:
        return ""
    parts = []
    if report.warnings:
        parts.append("Lint findings introduced by this change (not blocking; fix them if they are mistakes):")
        parts += [f"  {finding.describe()}" for finding in report.warnings[:20]]
        if len(report.warnings) > 20:
            parts.append(f"  ({len(report.warnings) - 20} more)")
    parts += [f"Note: {note}" for note in report.notes]
    return "\n".join(parts)


# --- read_file ---------------------------------------------------------------------------------

def read_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    path_argument = require_string(args, "path")
    start_line = _optional_line_number(args, "start_line")
    end_line = _optional_line_number(args, "end_line")
    path, relpath = resolve(ctx, path_argument, must_exist=True)
    lines = split_lines(load_text(path, relpath).text)
    total = len(lines)
    if total == 0:
        return f"{relpath} is empty (0 lines)."

    notes = []
    first = start_line or 1
    if first > total:
        raise ToolError(f"start_line {first} is past the end of the file ({relpath} has "
                        f"{count_of(total, 'line')})")
    last = end_line if end_line is not None else min(total, first + WINDOW_LINES - 1)
    if last < first:
        raise ToolError(f"end_line {last} is before start_line {first}")
    if last > total:
        notes.append(f"(end_line {last} is past the end of the file; showing up to line {total})")
        last = total
    if last - first + 1 > WINDOW_LINES:
        notes.append(f"(asked for {last - first + 1} lines; showing at most {WINDOW_LINES}. "
                     f"Continue with start_line={first + WINDOW_LINES}.)")
        last = first + WINDOW_LINES - 1

    parts = [f"File: {relpath} ({count_of(total, 'line')} total), lines {first}-{last}:"]
    if first > 1:
        parts.append(f"({count_of(first - 1, 'more line')} above)")
    parts += number_lines(lines[first - 1:last], first)
    if last < total:
        parts.append(f"({count_of(total - last, 'more line')} below)")
    parts += notes
    if total > WINDOW_LINES and start_line is None and end_line is None:
        parts.append(_outline(path))
    return "\n".join(part for part in parts if part)


def _outline(path: Path) -> str:
    try:
        from gitbot.tools.definitions import file_outline
    except ImportError:
        return ""
    try:
        entries = file_outline(path)
    except Exception:  # noqa: BLE001 - the outline is a bonus: its failure must not cost the model the file
        return ""
    if not entries:
        return ""
    shown = entries[:MAX_OUTLINE_ENTRIES]
    width = len(str(max(line for line, _, _ in shown)))
    parts = ["Definitions in this file (read them with start_line):"]
    parts += [f"  {line:>{width}}: {kind} {name}" for line, kind, name in shown]
    if len(entries) > len(shown):
        parts.append(f"  ({count_of(len(entries) - len(shown), 'more definition')} not shown)")
    return "\n".join(parts)


# --- write_to_file -----------------------------------------------------------------------------

def write_to_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    path_argument = require_string(args, "path")
    content = require_string(args, "content", allow_empty=True)
    ensure_encodable(content, "content")
    path, relpath = resolve(ctx, path_argument, for_edit=True)
    if path.is_dir():
        raise ToolError(f"{relpath} is a directory; give the path of a file inside it")

    new_text = content.replace("\r\n", "\n")
    existed = path.exists()
    existing = _existing_text(path, relpath)
    if existing is None:
        # A new file (or a binary one being replaced): write exactly what the model wrote.
        before, data, kept = None, content.encode("utf-8"), ""
    else:
        before = existing.text
        style = TextFile(existing.text, existing.crlf or _mostly_crlf(existing.text), existing.bom)
        data = style.encode(new_text)
        kept = " Kept the file's CRLF line endings." if style.crlf else ""
    if existed and path.read_bytes() == data:
        return ToolResult(f"{relpath} already has exactly this content; nothing changed.", touched=(relpath,))

    report = write_guarded(path, relpath, before, new_text, data)
    count = len(split_lines(new_text))
    if not existed:
        summary = f"Created {relpath} ({count_of(count, 'line')})."
    elif before is None:
        summary = f"Overwrote {relpath} ({count_of(count, 'line')}); it was not a text file before."
    else:
        summary = f"Overwrote {relpath} ({count_of(count, 'line')}; it had {len(split_lines(before))})."
    return ToolResult("\n".join(part for part in (summary + kept, format_warnings(report)) if part),
                      touched=(relpath,))


def _existing_text(path: Path, relpath: str) -> TextFile | None:
    """The current text of the file, or None when it does not exist or is not text."""
    if not path.exists():
        return None
    try:
        return load_text(path, relpath)
    except ToolError:
        return None


def _mostly_crlf(text: str) -> bool:
    """For mixed files: the majority line ending decides (a fully CRLF file is already flagged)."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf * 2 > text.count("\n")


# --- list_files --------------------------------------------------------------------------------

def list_files(ctx: ToolContext, args: dict[str, Any]) -> str:
    path_argument = require_string(args, "path")
    recursive = _optional_flag(args, "recursive")
    path, relpath = resolve(ctx, path_argument, must_exist=True)
    if not path.is_dir():
        raise ToolError(f"{relpath} is a file, not a directory; use read_file to read it")

    entries = git_entries(path, recursive)
    source = ".gitignore respected"
    if entries is None:
        entries = sorted(_entries(_walk_listing(path), path, recursive))
        source = "not a git repository, so nothing is ignored"
    prefix = "" if relpath == "." else f"{relpath}/"  # only the entries shown get it
    where = "the repository root" if relpath == "." else f"{relpath}/"
    mode = "recursive" if recursive else "top level only; pass recursive=true for everything below"
    if not entries:
        return f"No files in {where} (it is empty, or everything in it is ignored by .gitignore)."
    listed = count_of(len(entries), "entry", "entries")
    parts = [f"{listed} in {where} ({mode}; {source}; directories end with /):"]
    parts += [prefix + entry for entry in entries[:LIST_CAP]]
    if len(entries) > LIST_CAP:
        left = count_of(len(entries) - LIST_CAP, "more entry", "more entries")
        parts.append(f"({left} not shown; list a subdirectory or use search_files to narrow down)")
    return "\n".join(parts)


def _walk_listing(directory: Path) -> list[str]:
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = [name for name in dirs if name != GIT_DIR_NAME]
        base = Path(root).relative_to(directory)
        found += [(base / name).as_posix() for name in files]
        if not files and not dirs and base != Path("."):
            found.append(base.as_posix() + "/")  # keep empty directories visible
    return found


def _entries(files: list[str], directory: Path, recursive: bool) -> set[str]:
    entries: set[str] = set()
    for name in files:
        parts = name.rstrip("/").split("/")
        if not recursive:
            below = len(parts) > 1 or name.endswith("/")
            entries.add(parts[0] + "/" if below else _mark(directory, parts[0]))
            continue
        for depth in range(1, len(parts)):
            entries.add("/".join(parts[:depth]) + "/")
        entries.add(name if name.endswith("/") else _mark(directory, name))
    return entries


def _mark(directory: Path, name: str) -> str:
    """A directory git lists as one entry (a submodule) still gets its slash."""
    full = directory / name
    return name + "/" if full.is_dir() and not full.is_symlink() else name


# --- tool objects ------------------------------------------------------------------------------

READ_FILE = Tool(
    name="read_file",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path relative to the repository root."},
            "start_line": {"type": "integer", "minimum": 1,
                           "description": "First line to show (1-based, inclusive). Default 1."},
            "end_line": {"type": "integer", "minimum": 1,
                         "description": "Last line to show (inclusive). At most 100 lines per call."},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    function=read_file,
    changes_files=False,
)

WRITE_TO_FILE = Tool(
    name="write_to_file",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path relative to the repository root."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    function=write_to_file,
    changes_files=True,
)

LIST_FILES = Tool(
    name="list_files",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string",
                     "description": "Directory relative to the repository root ('.' for the root)."},
            "recursive": {"type": "boolean", "description": "List everything below, not just the top level."},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    function=list_files,
    changes_files=False,
)
