"""sed: which of its words are scripts, whether a script can run commands or touch files, and
which files `sed -i` changes."""

from __future__ import annotations

from gitbot.policy.judge.outcome import Verdicts, deny, snippet
from gitbot.policy.judge.words import Word


def sed_script_is_safe(script: str) -> bool:
    """True when a sed script only uses commands that neither run programs nor touch files.
    Anything this small parser does not understand counts as unsafe."""
    i = 0
    n = len(script)

    def skip_spaces(k: int) -> int:
        while k < n and script[k] in " \t":
            k += 1
        return k

    def regex_end(k: int, delimiter: str) -> int:
        """Index of the closing delimiter of a regex/replacement starting at k, or -1."""
        while k < n:
            c = script[k]
            if c == "\\":
                k += 2
                continue
            if c == "[":
                close = k + 1
                if close < n and script[close] == "^":
                    close += 1
                if close < n and script[close] == "]":
                    close += 1
                while close < n and script[close] != "]":
                    if script[close] == delimiter:
                        return -1  # ambiguous between sed dialects: refuse
                    close += 1
                k = close + 1
                continue
            if c == delimiter:
                return k
            if c == "\n":
                return -1
            k += 1
        return -1

    def address(k: int) -> int:
        if k < n and script[k].isdigit():
            while k < n and (script[k].isdigit() or script[k] == "~"):
                k += 1
        elif k < n and script[k] == "$":
            k += 1
        elif k < n and script[k] in "/\\":
            delimiter = "/"
            if script[k] == "\\":
                if k + 1 >= n:
                    return -1
                delimiter = script[k + 1]
                k += 1
            end = regex_end(k + 1, delimiter)
            if end < 0:
                return -1
            k = end + 1
            while k < n and script[k] in "IM":
                k += 1
        return k

    depth = 0
    while i < n:
        i = skip_spaces(i)
        if i >= n:
            break
        if script[i] in ";\n":
            i += 1
            continue
        if script[i] == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        i = address(i)
        if i < 0:
            return False
        if i < n and script[i] == ",":
            i += 1
            if i < n and script[i] in "+~":
                i += 1
                while i < n and script[i].isdigit():
                    i += 1
            else:
                i = address(i)
                if i < 0:
                    return False
        i = skip_spaces(i)
        while i < n and script[i] == "!":
            i = skip_spaces(i + 1)
        if i >= n:
            return False
        command = script[i]
        i += 1
        if command == "{":
            depth += 1
            continue
        if command == "}":
            depth -= 1
            if depth < 0:
                return False
            continue
        if command in "dDgGhHnNpPxz=F":
            continue
        if command in "qQlL":
            i = skip_spaces(i)
            while i < n and script[i].isdigit():
                i += 1
            continue
        if command in ":bTt":
            while i < n and script[i] not in ";\n":
                i += 1
            continue
        if command in "aic":
            # Text to insert: inert. It runs to the end of the line, continued by a trailing backslash.
            while i < n:
                if script[i] == "\\" and i + 1 < n:
                    i += 2
                    continue
                if script[i] == "\n":
                    break
                i += 1
            continue
        if command in "sy":
            if i >= n or script[i] in "\n\\":
                return False
            delimiter = script[i]
            end = regex_end(i + 1, delimiter)
            if end < 0:
                return False
            end2 = regex_end(end + 1, delimiter) if command == "y" else _replacement_end(script, end + 1,
                                                                                           delimiter)
            if end2 < 0:
                return False
            i = end2 + 1
            if command == "s":
                while i < n and script[i] not in ";\n}":
                    if script[i] not in "gpiImM0123456789 \t":
                        return False  # e (execute), w (write) or something unknown
                    i += 1
            continue
        return False  # e, w, W, r, R, v or unknown
    return depth == 0


def _replacement_end(script: str, k: int, delimiter: str) -> int:
    while k < len(script):
        if script[k] == "\\":
            k += 2
            continue
        if script[k] == delimiter:
            return k
        k += 1
    return -1


def sed_sensitive(words: list[Word], verdicts: Verdicts, shown: str) -> dict[int, str]:
    sensitive: dict[int, str] = {}
    scripts: list[tuple[int, Word]] = []
    operands: list[tuple[int, Word]] = []
    script_from_option = False
    in_place = False
    plain_flags = ("--quiet", "--silent", "--regexp-extended", "--separate", "--unbuffered", "--null-data",
                   "--posix", "--debug", "--sandbox", "--follow-symlinks")
    i = 1
    n = len(words)
    options_done = False
    while i < n:
        word = words[i]
        value = word.value
        if options_done or not word.literal or not value.startswith("-") or value == "-":
            operands.append((i, word))
            i += 1
            continue
        if value == "--":
            options_done = True
        elif value in ("-e", "--expression"):
            script_from_option = True
            if i + 1 < n:
                scripts.append((i + 1, words[i + 1]))
            i += 1
        elif value.startswith("--expression="):
            script_from_option = True
            scripts.append((i, Word(value.split("=", 1)[1], False, word.text)))
        elif value in ("-f", "--file") or value.startswith("--file="):
            script_from_option = True
            sensitive[i] = "`sed -f` runs a script file that cannot be checked; a rule must name it exactly"
            i += 0 if "=" in value else 1
        elif value.startswith("--in-place"):
            in_place = True
        elif value in ("-l", "--line-length"):
            i += 1
        elif value in plain_flags or value.startswith("--line-length="):
            pass
        elif value.startswith("--"):
            deny(f"`{shown}`: sed option `{value}` is not known")
        else:
            for position, letter in enumerate(value[1:], start=1):
                attached = value[position + 1:]
                if letter == "i":
                    in_place = True
                    break  # the rest is a backup suffix
                if letter == "e":
                    script_from_option = True
                    if attached:
                        scripts.append((i, Word(attached, False, word.text)))
                    elif i + 1 < n:
                        scripts.append((i + 1, words[i + 1]))
                        i += 1
                    break
                if letter == "f":
                    script_from_option = True
                    sensitive[i] = "`sed -f` runs a script file that cannot be checked; a rule must name it"
                    if not attached:
                        i += 1
                    break
                if letter == "l":
                    if not attached:
                        i += 1
                    break
                if letter not in "nErsuzb":
                    deny(f"`{shown}`: sed option `-{letter}` is not known")
        i += 1
    if not script_from_option and operands:
        scripts.append(operands.pop(0))
    for index, script in scripts:
        if not script.literal:
            sensitive[index] = f"the sed script `{script.text}` is only known at run time"
        elif not sed_script_is_safe(script.value):
            sensitive[index] = (f"the sed script `{snippet(script.value, 40)}` may run commands or write "
                                f"files (the e, w or r commands or flags); a rule must name it exactly")
    if in_place:
        for _, file_word in operands:
            verdicts.edits.append((file_word, shown))
    return sensitive
