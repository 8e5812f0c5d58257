"""Programs that change the files they are given (rm, mv, cp, ln, tee, chmod ...): their options
parsed as GNU getopt_long does, so that every file they change, and every link they make, is known."""

from __future__ import annotations

import posixpath

from gitbot.policy.judge.outcome import Verdicts, deny
from gitbot.policy.judge.programs import (
    CHMOD_MODE_LETTERS,
    WRITER_OPTIONS,
    WRITER_REFUSED_OPTIONS,
    WRITERS_LAST_ARG,
    WRITERS_LEADING_OPERAND,
    WriterOptions,
)
from gitbot.policy.judge.words import Word, lit, may_start_with_dash


def writer_edits(base: str, words: list[Word], verdicts: Verdicts, shown: str) -> None:
    options, operands, mode_given = writer_arguments(base, words, shown)
    target_directory = options.get("target-directory")
    sources: list[Word] = []
    if base in WRITERS_LEADING_OPERAND:
        targets = operands if ("reference" in options or mode_given) else operands[1:]
    elif base == "install" and "directory" in options:
        targets = operands
    elif base in WRITERS_LAST_ARG:
        if target_directory is not None:
            targets, sources = [target_directory], operands
        elif len(operands) > 1:
            targets, sources = operands[-1:], operands[:-1]
        elif base == "ln" and operands and operands[0].literal:
            # `ln -s a/b`: the link is ./b
            targets, sources = [lit(posixpath.basename(operands[0].value.rstrip("/")) or ".")], operands
        else:
            targets = operands
    elif base == "mv":
        targets = operands + ([target_directory] if target_directory is not None else [])
    else:
        targets = operands
    for target in targets:
        verdicts.edits.append((target, shown))
    symbolic = (base == "ln" and "symbolic" in options) or (base == "cp" and "symbolic-link" in options)
    if base == "ln" or (base == "cp" and ("symbolic-link" in options or "link" in options)):
        # A link makes a protected file writable under another name, even one created earlier on
        # the same command line, which the path rules cannot see yet: judge what it points to.
        link_directories: list[Word] = []
        if symbolic and "relative" not in options:
            # a relative symlink target is resolved from the link's own directory
            if target_directory is not None:
                link_directories = [target_directory]
            elif targets and targets[0].literal:
                link_directories = [targets[0], lit(posixpath.dirname(targets[0].value) or ".")]
            else:
                link_directories = targets[:1]
        for source in sources:
            verdicts.links.append((source, link_directories, shown))


def writer_arguments(base: str, words: list[Word], shown: str
                      ) -> tuple[dict[str, Word], list[Word], bool]:
    """(options by canonical name with their values, operands, whether chmod got its mode as an
    option), parsed as GNU getopt_long would."""
    spec = WRITER_OPTIONS[base]
    options: dict[str, Word] = {}
    operands: list[Word] = []
    mode_given = False
    i = 1
    options_done = False
    while i < len(words):
        word = words[i]
        i += 1
        if options_done:
            operands.append(word)
            continue
        if not word.literal:
            if may_start_with_dash(word):
                deny(f"`{shown}`: `{word.text}` is only known at run time and could become an option of "
                     f"{base} (such as -t DIR); put `--` before the file operands")
            operands.append(word)
            continue
        value = word.value
        if value == "--":
            options_done = True
            continue
        if not value.startswith("-") or value == "-":
            operands.append(word)
            continue
        if value.startswith("--"):
            written, has_value, attached = value[2:].partition("=")
            name = long_option(base, spec, written, shown)
            canonical, argument = spec.long[name]
            if (base, canonical) in WRITER_REFUSED_OPTIONS:
                deny(f"`{shown}`: {base} --{canonical} {WRITER_REFUSED_OPTIONS[(base, canonical)]}")
            if argument == "=":
                if has_value:
                    options[canonical] = lit(attached)
                elif i < len(words):
                    options[canonical] = words[i]
                    i += 1
                else:
                    deny(f"`{shown}`: {base} --{name} needs a value")
            elif has_value and argument != "=?":
                deny(f"`{shown}`: {base} --{name} takes no value")
            else:
                options[canonical] = lit(attached)
            continue
        for position, letter in enumerate(value[1:], start=1):
            if base == "chmod" and letter in CHMOD_MODE_LETTERS and letter not in spec.short:
                mode_given = True  # the rest of the word is the mode
                break
            if letter not in spec.short:
                deny(f"`{shown}`: {base} option `-{letter}` is not known, so which words are files "
                     f"cannot be told")
            canonical, argument = spec.short[letter]
            if argument == "=":
                attached = value[position + 1:]
                if attached:
                    options[canonical] = lit(attached)
                elif i < len(words):
                    options[canonical] = words[i]
                    i += 1
                else:
                    deny(f"`{shown}`: {base} -{letter} needs a value")
                break
            options[canonical] = lit("")
    return options, operands, mode_given


def long_option(base: str, spec: WriterOptions, written: str, shown: str) -> str:
    if written in spec.long:
        return written
    matches = sorted(name for name in spec.long if name.startswith(written))
    if len({spec.long[name] for name in matches}) == 1:
        return matches[0]
    if matches:
        deny(f"`{shown}`: {base} option `--{written}` is ambiguous ({', '.join('--' + m for m in matches)})")
    deny(f"`{shown}`: {base} option `--{written}` is not known, so which words are files cannot be told")
    raise AssertionError  # unreachable
