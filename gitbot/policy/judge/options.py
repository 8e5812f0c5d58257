"""Reading a program's options the way the program does, from a small table per program.

A table lists only what the judge must know: the options that take a value (so that the value is
not mistaken for a file), and the options that run another program, load code or configuration,
write a path or read one. Everything else is an ordinary flag. Entries are `s|long`, `s` or `long`;
`=` after the name means a value, `=?` a value that can only be attached (`--color=auto`), `=2` two
values (`--rawfile NAME FILE`, the last one the path); `:effect` says what the option does:

    run     the value is a program (or a shell command) that the program starts: judged as a command
    write   the value is a path the program writes (or deletes): checked against the edit rules
    read    the value is a path the program reads: checked against read_deny
    load    the value (or the option) makes the program load code or configuration the judge cannot
            see: a rule must name the option and its value exactly
    named   any other effect the judge cannot follow (deleting unknown files, a remote): a rule must
            name it exactly
    recurse directory operands are searched recursively (their files are read)
    hidden  with `recurse`: hidden files are searched too (ripgrep skips them by default)
    ends    the remaining words are arguments, not files (`jq --args`)

Programs differ in how options are written, which `Syntax` says: short options bundled (`-vo FILE`),
long options abbreviated to any unique prefix (getopt_long, argparse, git's parse-options:
`sort --outp=x` is `--output=x`), options after operands, Go's single-dash long options, and
argparse's `@FILE` (arguments read from a file). An option the table does not list is read as a
flag; one that is a prefix of a listed long option is read as that option (the program might).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gitbot.policy.judge.words import Word, lit

EFFECTS = ("", "run", "write", "read", "load", "named", "recurse", "hidden", "ends")


@dataclass(frozen=True)
class Option:
    name: str  # as shown in messages: `--output` or `-o`
    values: int = 0  # how many values follow (0, 1, or 2)
    attached_only: bool = False  # the value can only be attached (`--color=auto`)
    effect: str = ""


@dataclass(frozen=True)
class Syntax:
    bundling: bool = True  # `-ab` is `-a -b`, `-ofile` is `-o file`
    abbreviations: bool = True  # `--outp` is `--output`
    permute: bool = True  # options may follow operands
    single_dash_long: bool = False  # Go's flag package: `-name`, `--name`
    fromfile: str = ""  # argparse's fromfile_prefix_chars


GNU = Syntax()
EXACT = Syntax(abbreviations=False)  # clap, lexopt (ruff, cargo, ripgrep)
GO = Syntax(bundling=False, abbreviations=False, single_dash_long=True)


@dataclass(frozen=True)
class Table:
    short: dict[str, Option]
    long: dict[str, Option]

    @property
    def acts(self) -> bool:
        """Has the program an option that runs, writes or loads something?"""
        return any(option.effect in ("run", "write", "load", "named")
                   for option in (*self.short.values(), *self.long.values()))

    def lookup_long(self, written: str, syntax: Syntax) -> Option | None:
        """The option `--written` means: exact, else (where the program accepts abbreviations) the
        most dangerous option it abbreviates, else None (an unlisted flag)."""
        if written in self.long:
            return self.long[written]
        if not syntax.abbreviations:
            return None
        candidates = [option for name, option in self.long.items() if name.startswith(written)]
        if not candidates:
            return None
        return min(candidates, key=lambda option: (EFFECTS.index(option.effect) == 0, option.name))


def table(text: str) -> Table:
    short: dict[str, Option] = {}
    long: dict[str, Option] = {}
    for entry in text.split():
        entry, _, effect = entry.partition(":")
        if effect not in EFFECTS:
            raise ValueError(f"unknown effect {effect!r} in option table entry {entry!r}")
        values, attached_only = 0, False
        for suffix, count, only in (("=?", 1, True), ("=2", 2, False), ("=", 1, False)):
            if entry.endswith(suffix):
                entry, values, attached_only = entry[: -len(suffix)], count, only
                break
        letter, _, name = entry.partition("|") if "|" in entry else (
            (entry, "", "") if len(entry) == 1 else ("", "", entry))
        shown = f"--{name}" if name else f"-{letter}"
        option = Option(shown, values, attached_only, effect)
        if letter:
            short[letter] = option
        if name:
            long[name] = option
    return Table(short, long)


@dataclass
class Walk:
    """A program's words sorted out: each option with its values, and the operands."""

    options: list[tuple[int, Option, list[Word]]] = field(default_factory=list)  # (index, option, values)
    operands: list[tuple[int, Word]] = field(default_factory=list)
    unknown_at: list[int] = field(default_factory=list)  # words only known at run time that could be options
    fromfiles: list[tuple[int, Word]] = field(default_factory=list)  # argparse `@FILE`
    ended: bool = False  # an `ends` option was given
    table: Table | None = None  # what it was read with

    def has(self, effect: str) -> bool:
        return any(option.effect == effect for _, option, _ in self.options)

    def given(self, *names: str) -> bool:
        return any(option.name in names for _, option, _ in self.options)


def walk(words: list[Word], start: int, options: Table, syntax: Syntax = GNU) -> Walk:
    """Sort out `words[start:]` as the program would."""
    result = Walk(table=options)
    i = start
    n = len(words)
    done = False
    while i < n:
        word = words[i]
        index = i
        i += 1
        if done or result.ended:
            result.operands.append((index, word))
            continue
        if not word.literal:
            text = word.text.lstrip("\"'")
            if not text or text[0] in "-$`\\{*?[~<":
                result.unknown_at.append(index)  # it could turn out to be an option
            result.operands.append((index, word))
            continue
        value = word.value
        if value == "--":
            done = True
            continue
        if syntax.fromfile and value[:1] == syntax.fromfile and len(value) > 1:
            result.fromfiles.append((index, word))
            continue
        if not value.startswith("-") or value == "-":
            result.operands.append((index, word))
            if not syntax.permute:
                done = True
            continue
        long_form = value.startswith("--") or (syntax.single_dash_long and len(value) > 2)
        if long_form:
            written, has_value, attached = value.lstrip("-").partition("=")
            option = options.lookup_long(written, syntax)
            if option is None and syntax.single_dash_long and len(written) == 1:
                option = options.short.get(written)
            if option is None:
                continue  # an unlisted flag (its value, if any, attached)
            values: list[Word] = []
            if option.values and has_value:
                values.append(lit(attached))
            while len(values) < option.values and not option.attached_only and i < n:
                values.append(words[i])
                i += 1
            result.options.append((index, option, values))
            if option.effect == "ends":
                result.ended = True
            continue
        # Short options, perhaps bundled: the first one that takes a value takes the rest of the
        # word (or the next word).
        letters = value[1:] if syntax.bundling else value[1:2]
        for position, letter in enumerate(letters):
            option = options.short.get(letter)
            if option is None:
                continue
            values = []
            if option.values:
                rest = letters[position + 1:] if syntax.bundling else value[2:]
                if rest:
                    values.append(lit(rest))
                elif option.attached_only:
                    pass
                while len(values) < option.values and not option.attached_only and i < n:
                    values.append(words[i])
                    i += 1
                result.options.append((index, option, values))
                break
            result.options.append((index, option, values))
            if option.effect == "ends":
                result.ended = True
    return result
