"""Counting matching lines per file from rg's `--heading --null --byte-offset` output, unparsed.
(`--max-columns` may shorten the lines; they are only counted.)

The format, per file with matches (files are never interleaved):

    PATH NUL OFFSET:line NL OFFSET:line NL ... [PATH: WARNING: stopped searching binary file ...NL]

with a blank line between files. Printed lines never hold a NUL (rg stops at the first NUL of a
file it walked into and calls the file binary), and every line starts with digits, so the first
blank line after a path's NUL ends its file: a count is one bytes.count over the block, and the
only line looked at is the last one (the binary warning, when rg stopped early). A named file
that is binary from the start prints no block, only `PATH: binary file matches (...)`.

Ambiguity is refused rather than guessed: a path holding a newline (the blank-line rule could
then cut it) or not starting where the search started raises Unparseable, and the caller asks
rg again in its JSON format.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# How rg ends a block it cut short at a NUL: in a file it walked into, and in a file it was given.
_BINARY_ENDINGS = (b': WARNING: stopped searching binary file after match (found "\\0" byte around offset ',
                   b': binary file matches (found "\\0" byte around offset ')
_BINARY_ONLY = re.compile(rb'(.+): binary file matches \(found "\\0" byte around offset \d+\)\n', re.DOTALL)
_DIGITS = frozenset(b"0123456789")
MAX_PATH_BYTES = 64 * 1024  # no real path is longer; without a NUL by then, the stream is not what we think


class Unparseable(ValueError):
    """The output cannot be split into files with certainty."""


class Block(NamedTuple):  # a NamedTuple: one per file with matches, tens of thousands on a big tree
    path: bytes  # as rg printed it (relative to rg's working directory, "./" prefix and all)
    lines: int  # matching lines printed before any binary warning
    binary: bool  # rg found a NUL and stopped (its lines are not shown, as for any binary file)
    offsets: tuple[int, ...] = ()  # where the matching lines start, while the reader still collects them


class BlockReader:
    """Feed rg's output in chunks of any size; complete blocks come out of each feed and of close.

    `prefix`: what every path starts with (b"./" for a search of ".", b"src/" for "src"), or
    `single`: the one file that was searched. `offsets`: how many matching lines, over the whole
    output, get their byte offset read (the rest are only counted)."""

    def __init__(self, *, prefix: bytes | None = None, single: bytes | None = None, offsets: int = 0) -> None:
        self._prefix = prefix
        self._single = single
        self._buffer = bytearray()
        self._path: bytes | None = None  # the block being read; None between blocks
        self._lines = 0
        self._offsets_left = offsets
        self._offsets: list[int] = []

    def feed(self, chunk: bytes) -> list[Block]:
        self._buffer += chunk
        done: list[Block] = []
        buffer, position = self._buffer, 0
        while True:
            if self._path is None:
                nul = buffer.find(b"\0", position)
                if nul < 0:
                    if len(buffer) - position > MAX_PATH_BYTES:
                        raise Unparseable("no file name where one should start")
                    break
                self._path = self._checked(bytes(buffer[position:nul]))
                self._lines = 0
                self._offsets = []
                position = nul + 1
                continue
            # Inside a block the buffer always resumes at a line start, and lines are never empty.
            end = buffer.find(b"\n\n", position)
            if end >= 0:
                done.append(self._finish(buffer, position, end + 1))
                position = end + 2
                continue
            # Count the complete lines but the last one, which may be the block's last line
            # (its blank line not arrived yet) and so the binary warning.
            last = buffer.rfind(b"\n", position)
            before = buffer.rfind(b"\n", position, last) if last >= 0 else -1
            if before >= 0:
                self._lines += buffer.count(b"\n", position, before + 1)
                self._collect(buffer, position, before + 1)
                position = before + 1
            break
        del buffer[:position]
        return done

    def close(self) -> list[Block]:
        """The output ended: the last block has no blank line after it."""
        buffer = self._buffer
        if self._path is not None:
            block = self._finish(buffer, 0, len(buffer)) if buffer else Block(self._path, self._lines, False,
                                                                                tuple(self._offsets))
            buffer.clear()
            return [block]
        if not buffer:
            return []
        binary = _BINARY_ONLY.fullmatch(buffer)
        if self._single is not None and binary is not None and binary.group(1) == self._single:
            return [Block(self._single, 0, True)]
        raise Unparseable("output that is not a file's block")

    def _checked(self, path: bytes) -> bytes:
        if b"\n" in path:
            raise Unparseable("a path with a newline")
        if self._single is not None and path != self._single:
            raise Unparseable("a path other than the file searched")
        if self._prefix is not None and not path.startswith(self._prefix):
            raise Unparseable("a path outside the directory searched")
        return path

    def _finish(self, buffer: bytearray, start: int, end: int) -> Block:
        """The block's lines from `start` to `end` (just past the last line's newline)."""
        path, lines = self._path, self._lines + buffer.count(b"\n", start, end)
        assert path is not None
        self._path = None
        self._collect(buffer, start, end)
        offsets = tuple(self._offsets)
        last = max(buffer.rfind(b"\n", start, end - 1) + 1, start)
        if buffer[last] in _DIGITS and path[0] not in _DIGITS:
            return Block(path, lines, False, offsets)  # an OFFSET:line line, not a warning with the path
        binary = any(buffer.startswith(path + ending, last) for ending in _BINARY_ENDINGS)
        return Block(path, lines - binary, binary, offsets)

    def _collect(self, buffer: bytearray, start: int, end: int) -> None:
        """The offsets of the lines from `start` to `end` (whole lines), while any are still wanted."""
        if self._offsets_left <= 0:
            return
        for line in bytes(buffer[start:end]).split(b"\n")[:self._offsets_left]:
            number, colon, _ = line.partition(b":")
            if colon and number.isdigit():  # (not the binary warning)
                self._offsets.append(int(number))
                self._offsets_left -= 1
