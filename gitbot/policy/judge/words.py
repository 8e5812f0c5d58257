"""Bash words as the judge sees them: the value after quote removal (ANSI-C `$'...'` strings
decoded), or unknown when it is only known at run time, and whether it may become several words."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Word:
    # The word after quote removal, or None when it is only known at run time.
    value: str | None
    # True when the word may become zero or several words (an unquoted expansion, glob or brace).
    multi: bool = False
    text: str = ""  # as written, for messages

    @property
    def literal(self) -> bool:
        return self.value is not None and not self.multi


def lit(value: str) -> Word:
    return Word(value, False, value)


UNKNOWN_INPUT = Word(None, True, "<input>")


def may_start_with_dash(word: Word) -> bool:
    """Could the word (or one of the words it becomes) start with `-`, and so be read as an option?"""
    if word.literal:
        return word.value.startswith("-")
    text = word.text.lstrip("\"'")
    return not text or text[0] in "-$`\\{*?[~<"


BRACE_EXPANSION = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
FD_VARIABLE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
INTEGER = re.compile(r"-?[0-9]+")
NUMERIC_PARAMETERS = {"$!", "$$", "$#", "$?", "${!}", "${$}", "${#}", "${?}"}
ARRAY_KEY = re.compile(r"\[([^\]]*)\]\+?=")
PLAIN_KEY = re.compile(r"[A-Za-z0-9_.:/@%+,-]+")


def unquote_bare(text: str, *, word_start: bool) -> tuple[str, bool, bool]:
    """(value, has_glob, has_tilde) of an unquoted word as bash would see it."""
    out: list[str] = []
    glob = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 < len(text):
                if text[i + 1] != "\n":  # backslash-newline is a line continuation
                    out.append(text[i + 1])
                i += 2
                continue
            out.append(c)
            i += 1
            continue
        if c in "*?[":
            glob = True
        out.append(c)
        i += 1
    return "".join(out), glob, word_start and text.startswith("~")


def unescape_double_quoted(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


_ANSI_C_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
                  "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def decode_ansi_c(body: str) -> str:
    """The value of bash's $'...' string."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_C_SIMPLE:
            out.append(_ANSI_C_SIMPLE[nxt])
            i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1:]).group()
            out.append(chr(int(digits, 8) & 0xFF))
            i += 1 + len(digits)
        elif nxt in "xuU":
            size = {"x": 2, "u": 4, "U": 8}[nxt]
            match = re.match(f"[0-9a-fA-F]{{1,{size}}}", body[i + 2:])
            if not match:
                out.append("\\" + nxt)
                i += 2
            else:
                out.append(chr(min(int(match.group(), 16), 0x10FFFF)))
                i += 2 + len(match.group())
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    value = "".join(out)
    return value.split("\0", 1)[0]  # bash ends the string at a NUL
