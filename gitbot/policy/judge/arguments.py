"""A program's arguments judged from its row in the tables (readers.py, runners.py): the programs it
runs judged as commands, the paths it writes held to the edit rules, the paths it reads to read_deny,
and the options that load code or configuration marked so that only a rule naming them allows them.
Part of CommandJudge."""

from __future__ import annotations

import re

from gitbot.policy.judge.options import Option, Walk, walk
from gitbot.policy.judge.outcome import Denied, Read, Verdicts, deny
from gitbot.policy.judge.readers import READERS, Spec
from gitbot.policy.judge.words import UNKNOWN_INPUT, Word, lit

# What makes a program's value a shell command line rather than a program name.
_SHELL_SYNTAX = re.compile(r"[\s;&|<>()$`'\"\\*?\[\]{}~#]")
LOAD_WHY = "makes {program} load code or configuration the judge cannot see"
NAMED_WHY = "has an effect the judge cannot follow"


def program_family(name: str) -> str:
    """python3 and python3.12 are python for the tables (and for rules: see rules.py)."""
    return "python" if re.fullmatch(r"python(\d+(\.\d+)?)?", name) else name


class Arguments:
    """How CommandJudge reads the arguments of a program it has a row for (see judge.py)."""

    def _program_arguments(self, base: str, words: list[Word], depth: int, verdicts: Verdicts,
                           shown: str) -> dict[int, str]:
        family = program_family(base)
        special = getattr(self, f"_runner_{family.replace('-', '_')}", None)
        if special is not None:
            return special(words, depth, verdicts, shown)
        spec = READERS.get(family)
        if spec is None:
            return {}
        sensitive: dict[int, str] = {}
        found = walk(words, 1, spec.options, spec.syntax)
        self._apply_options(found, words, depth, verdicts, shown, sensitive, base)
        self._read_operands(spec, found, verdicts, shown)
        if family in ("less", "more"):
            for index, word in found.operands:
                if not word.literal or word.value.startswith("+"):
                    # `+CMD` runs a pager command at start (`+!sh`, `+|cmd`, `+s file`)
                    sensitive[index] = f"`{family} {word.text}` runs a pager command; a rule must name it exactly"
        return sensitive

    def _apply_options(self, found: Walk, words: list[Word], depth: int, verdicts: Verdicts, shown: str,
                       sensitive: dict[int, str], program: str) -> None:
        for index, option, values in found.options:
            effect = option.effect
            if effect in ("load", "named"):
                why = (LOAD_WHY if effect == "load" else NAMED_WHY).format(program=program)
                reason = f"`{program} {option.name}` {why}; a rule must name it exactly"
                for position in range(index, min(len(words), index + 1 + len(values))):
                    sensitive[position] = reason
            elif effect == "run" and values:
                self._run_value(values[-1], option, program, depth, verdicts, shown)
            elif effect == "write" and values:
                verdicts.edits.append((values[-1], shown))
            elif effect == "read" and values:
                verdicts.reads.append(Read(values[-1], shown))
        for index in found.unknown_at if found.table is not None and found.table.acts else ():
            sensitive[index] = (f"`{words[index].text}` is only known at run time and could become an option that "
                                f"makes {program} run, load or write something; put `--` before it, or a rule "
                                f"must name it exactly")
        for index, _ in found.fromfiles:
            sensitive[index] = (f"`{words[index].text}` makes {program} read its arguments from a file the judge "
                                f"cannot see; a rule must name it exactly")
            verdicts.reads.append(Read(lit(words[index].value[1:]), shown))

    def _run_value(self, value: Word, option: Option, program: str, depth: int, verdicts: Verdicts,
                   shown: str) -> None:
        """An option's value that the program runs: judged as the command it is."""
        if not value.literal:
            deny(f"`{shown}`: `{program} {option.name}` runs `{value.text}`, which is only known at run time")
        if not value.value:
            deny(f"`{shown}`: `{program} {option.name}` with an empty program")
        try:
            if _SHELL_SYNTAX.search(value.value):
                self._script(value.value, depth + 1, verdicts)
            else:
                # The program gets arguments of its own (the file to filter, the data to compress).
                self._simple([lit(value.value), UNKNOWN_INPUT], depth, verdicts)
        except Denied as denial:
            deny(f"`{shown}`: `{program} {option.name}` runs `{value.value}`, judged as a command: {denial.reason}",
                 denial.rule)
        verdicts.allowed.append(f"`{program} {option.name}` runs `{value.value}` (judged as a command)")

    @staticmethod
    def _read_operands(spec: Spec, found: Walk, verdicts: Verdicts, shown: str) -> None:
        operands = [word for _, word in found.operands]
        if found.ended:
            operands = [word for index, word in found.operands if index < _ended_at(found)]
        if spec.operands == "none":
            return
        recursive = spec.recursive or found.has("recurse") or any(
            option.name in ("-d", "--directories") and values and values[0].value == "recurse"
            for _, option, values in found.options)
        hidden = spec.hidden or found.has("hidden")
        # The pattern is not a file, unless it is only known at run time and could be an option that
        # names one (`grep "$x" a` with x=-f.env).
        pattern_could_be_option = bool(found.operands) and found.operands[0][0] in found.unknown_at
        if spec.operands in ("pattern", "filter") and not found.given(*spec.pattern_options) and \
                not pattern_could_be_option:
            operands = operands[1:]
        if spec.operands == "pattern" and any(option.name == "--files" for _, option, _ in found.options):
            return  # ripgrep --files lists names
        if spec.operands == "uniq":
            if len(operands) > 1:
                verdicts.edits.append((operands[1], shown))
            operands = operands[:1]
        if not operands and (spec.default or (recursive and spec.operands == "pattern")):
            operands = [lit(spec.default or ".")]
        filters = _name_filters(found)
        for word in operands:
            verdicts.reads.append(Read(word, shown, recursive=recursive, hidden=hidden, suffixes=spec.suffixes,
                                       **filters))


def _name_filters(found: Walk) -> dict:
    """grep's name filters, as Read fields. A filter only known at run time is left out: without
    it the search is taken to read more, never less. `-r` follows no symlink it meets below the
    operands; `-R` (or -r after it) follows them all."""
    filters: dict[str, list[str]] = {"include": [], "exclude": [], "exclude_dirs": []}
    fields = {"--include": "include", "--exclude": "exclude", "--exclude-dir": "exclude_dirs"}
    follows = True
    for _, option, values in found.options:
        if option.name in fields and values and values[0].literal:
            filters[fields[option.name]].append(values[0].value)
        if option.name in ("-r", "--recursive"):
            follows = False
        elif option.name in ("-R", "--dereference-recursive"):
            follows = True
    if any(option.name in ("--include", "--exclude", "--exclude-dir") and not (values and values[0].literal)
           for _, option, values in found.options):
        filters["include"] = []  # an include only known at run time could name anything
    return {**{key: tuple(value) for key, value in filters.items()}, "follows_links": follows}


def _ended_at(found: Walk) -> int:
    return min(index for index, option, _ in found.options if option.effect == "ends")
