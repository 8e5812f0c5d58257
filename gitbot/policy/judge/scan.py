"""The raw text's second opinion: characters where bash and the grammar may split words differently,
and every place bash would substitute a command, found by a small lexer instead of the grammar."""

from __future__ import annotations

import re
import unicodedata

from gitbot.policy.judge.outcome import deny

MAX_COMMAND_CHARS = 100_000


def check_raw_text(text: str) -> None:
    """Refuse characters where the grammar and bash might disagree about word boundaries."""
    if len(text) > MAX_COMMAND_CHARS:
        deny(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    for ch in text:
        if ch in "\n\t ":
            continue
        category = unicodedata.category(ch)
        if category == "Cc" or category.startswith("Z"):
            deny(f"the command contains the control or space character U+{ord(ch):04X}; "
                 f"bash and the parser may split words differently around it")


def word_splitting_continuations(text: str) -> list[int]:
    """Where a backslash-newline sits between two non-blank characters (offsets of the backslash):
    outside quotes bash joins the two parts into one word, which the grammar may not. Inside single
    quotes it is two literal characters (the caller asks the parsed tree which these are)."""
    found = []
    for match in re.finditer(r"\\\n", text):
        start = match.start()
        backslashes = len(text[:start + 1]) - len(text[:start + 1].rstrip("\\"))
        if backslashes % 2 == 0:
            continue  # an escaped backslash followed by a newline, not a continuation
        before = text[start - backslashes] if start - backslashes >= 0 else " "
        after = text[match.end()] if match.end() < len(text) else " "
        if not before.isspace() and not after.isspace():
            found.append(start)
    return found


_METACHARACTERS = " \t\n;&|()<>"


def scan_substitutions(text: str) -> list[tuple[int, str]]:
    """Where bash would substitute a command (or evaluate arithmetic) in `text`, found without the
    grammar: (character offset, what) for every backtick, `$(`, `$[`, `<(` and `>(` that is not inside
    single quotes, `$'...'`, a comment or the body of a here-document with a quoted delimiter.

    A second opinion on the parse tree (tree-sitter reads `${x:-`cmd`}` as a plain word), so it
    errs towards finding too much: where bash's quoting is ambiguous (a single quote inside a
    `${...}` within double quotes, whose meaning depends on the operator) it refuses outright."""
    hits: list[tuple[int, str]] = []
    n = len(text)
    # Contexts: "top" (unquoted), "brace" (inside an unquoted ${...}), "dq" (double quotes),
    # "qbrace" (a ${...} inside double quotes), "arithmetic" (`((...))`). Single quotes and $'...'
    # are skipped whole.
    stack = ["top"]
    heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, quoted, strip leading tabs)
    i = 0
    while i < n:
        c = text[i]
        context = stack[-1]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            hits.append((i, "command substitution"))
            i = _escaped_end(text, i + 1, "`")
            continue
        if c == "$" and i + 1 < n:
            following = text[i + 1]
            if following == "(":
                arithmetic = text.startswith("((", i + 1)
                hits.append((i, "arithmetic expansion" if arithmetic else "command substitution"))
                i += 2
                continue
            if following == "[":
                hits.append((i, "arithmetic expansion"))
                i += 2
                continue
            if following == "{":
                stack.append("qbrace" if context in ("dq", "qbrace") else "brace")
                i += 2
                continue
            if following in "'\"" and context == "qbrace":
                deny("a quote inside a ${...} within double quotes is not allowed (bash's quoting there "
                     "depends on the operator, so what it runs cannot be known); use a variable")
            if following == "'" and context in ("top", "brace"):
                i = _escaped_end(text, i + 2, "'")
                continue
        if c in "<>" and i + 1 < n and text[i + 1] == "(":
            hits.append((i, "process substitution"))
            i += 2
            continue
        if context in ("top", "brace"):
            if c == "'":
                end = text.find("'", i + 1)
                i = n if end < 0 else end + 1
                continue
            if c == '"':
                stack.append("dq")
            elif context == "brace":
                if c == "{":
                    stack.append("brace")
                elif c == "}":
                    stack.pop()
            elif c == "#" and (i == 0 or text[i - 1] in _METACHARACTERS):
                end = text.find("\n", i)
                i = n if end < 0 else end
                continue
            elif c == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
                i = _heredoc_operator(text, i, heredocs)
                continue
            elif c == "(" and text.startswith("((", i):
                stack.append("arithmetic")  # `((...))`: no quotes, comments or here-documents inside
                i += 2
                continue
            elif c == "\n" and heredocs:
                i = _heredoc_bodies(text, i + 1, heredocs, hits)
                heredocs.clear()
                continue
        elif context == "dq":
            if c == '"':
                stack.pop()
        elif context == "arithmetic":
            if text.startswith("))", i):
                stack.pop()
                i += 2
                continue
        else:  # qbrace
            if c == "'":
                deny("a quote inside a ${...} within double quotes is not allowed (bash's quoting there "
                     "depends on the operator, so what it runs cannot be known); use a variable")
            if c == '"':
                stack.append("dq")
            elif c == "{":
                stack.append("qbrace")
            elif c == "}":
                stack.pop()
        i += 1
    if heredocs:
        _heredoc_bodies(text, n, heredocs, hits)
    return hits


def _escaped_end(text: str, i: int, closer: str) -> int:
    """The index after the unescaped `closer` that ends a body starting at i: the closing backtick of a
    `...` substitution (one hit is enough; the judge refuses the whole substitution) or the closing
    quote of a $'...' string. Backslash escapes the next character in both."""
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == closer:
            return i + 1
        i += 1
    return len(text)


def _heredoc_operator(text: str, i: int, heredocs: list[tuple[str, bool, bool]]) -> int:
    """Read `<<WORD` or `<<-WORD` at i; remember the here-document; return the index after WORD."""
    i += 2
    strip_tabs = i < len(text) and text[i] == "-"
    if strip_tabs:
        i += 1
    while i < len(text) and text[i] in " \t":
        i += 1
    delimiter: list[str] = []
    quoted = False
    while i < len(text) and text[i] not in _METACHARACTERS:
        c = text[i]
        if c in "'\"":
            end = text.find(c, i + 1)
            if end < 0:
                deny("a here-document delimiter with an unterminated quote")
            delimiter.append(text[i + 1:end])
            quoted = True
            i = end + 1
        elif c == "\\":
            delimiter.append(text[i + 1:i + 2])
            quoted = True
            i += 2
        elif c == "$" and i + 1 < len(text) and text[i + 1] in "'\"":
            deny("a here-document delimiter written with $'...' or $\"...\" is not supported")
        else:
            delimiter.append(c)
            i += 1
    if not delimiter:
        deny("a here-document without a delimiter")
    heredocs.append(("".join(delimiter), quoted, strip_tabs))
    return i


def _heredoc_bodies(text: str, i: int, heredocs: list[tuple[str, bool, bool]],
                    hits: list[tuple[int, str]]) -> int:
    """Skip the bodies of the pending here-documents, which start at i, as bash reads them; scan the
    unquoted ones (bash expands them). Returns the index after the last delimiter line."""
    for delimiter, quoted, strip_tabs in heredocs:
        while i < len(text):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            line = text[i:end]
            start = i
            if not quoted:
                # bash joins a line ending in an unescaped backslash with the next before it compares
                # the line with the delimiter
                while end < len(text) and (len(line) - len(line.rstrip("\\"))) % 2 == 1:
                    following = text.find("\n", end + 1)
                    following = len(text) if following < 0 else following
                    line = line[:-1] + text[end + 1:following]
                    end = following
            i = end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
            if not quoted:
                body = text[start:end]
                k = 0
                while k < len(body):
                    if body[k] == "\\":
                        k += 2
                        continue
                    if body[k] == "`":
                        hits.append((start + k, "command substitution"))
                        k = _escaped_end(body, k + 1, "`")
                        continue
                    if body.startswith("$(", k):
                        kind = "arithmetic expansion" if body.startswith("$((", k) else "command substitution"
                        hits.append((start + k, kind))
                    elif body.startswith("$[", k):
                        hits.append((start + k, "arithmetic expansion"))
                    elif body.startswith(("<(", ">("), k):
                        hits.append((start + k, "process substitution"))
                    k += 1
    return min(i, len(text))
