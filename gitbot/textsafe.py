"""Making untrusted text safe to store and to show.

Tool output can carry file names that are not valid UTF-8 (as surrogate escapes), and model or
repository text can carry terminal escape sequences (clear screen, OSC 52 clipboard writes).
"""

from __future__ import annotations

import re

# C0 and C1 control characters except tab and newline; ESC starts every terminal escape sequence.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def encodable(text: str) -> str:
    """The text with any lone surrogate (an undecodable byte) written as a visible escape."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def printable(text: str) -> str:
    """The text without control characters, for a terminal: escapes become visible `\\x1b`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", encodable(text))


def one_line(text: str) -> str:
    """`printable`, and on one line: a newline or tab (a file name may hold either) written as `\\n`, `\\t`."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")
