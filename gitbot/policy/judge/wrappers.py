"""Programs that run another program (env, timeout, nice, nohup, stdbuf, time, command, builtin,
xargs, find -exec, sh/bash/dash -c): the command they run is judged in their place. Part of
CommandJudge."""

from __future__ import annotations

import re

from gitbot.policy.judge.outcome import Verdicts, deny
from gitbot.policy.judge.programs import FIND_EDIT_ACTIONS, FIND_EXEC_ACTIONS, SHELLS, WRAPPER_OPTIONS
from gitbot.policy.judge.words import ASSIGNMENT, UNKNOWN_INPUT, Word, lit


class Wrappers:
    """How CommandJudge looks through wrappers (see judge.py)."""

    def _look_through(self, base: str, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> bool:
        """Judge the command a wrapper runs. True when that settles it; False when the wrapper runs
        nothing else here (then the wrapper itself is held to the rules)."""
        if base in SHELLS:
            script = self._shell_script(words, shown)
            if script is None:
                return False
            self._script(script, depth + 1, verdicts)
            verdicts.allowed.append(f"`{shown}` (the inner command was judged)")
            return True
        unwrap = {"env": self._unwrap_env, "nohup": self._unwrap_nohup, "builtin": self._unwrap_builtin,
                  "xargs": self._unwrap_xargs}
        inner = unwrap[base](words, shown) if base in unwrap else self._unwrap_options(base, words, shown)
        if not inner:
            return False
        self._simple(inner, depth, verdicts)
        return True

    @staticmethod
    def _option_words(words: list[Word], shown: str, what: str) -> None:
        for word in words:
            if not word.literal:
                deny(f"in `{shown}` the {what} argument `{word.text}` is only known at run time")

    def _unwrap_options(self, base: str, words: list[Word], shown: str) -> list[Word] | None:
        """The command a wrapper runs, after its options (walked as WRAPPER_OPTIONS[base] says)."""
        spec = WRAPPER_OPTIONS[base]
        i = 1
        while i < len(words):
            word = words[i]
            if spec.assignments_end_options and word.value is None and ASSIGNMENT.match(word.text):
                break
            self._option_words([word], shown, base)
            value = word.value
            if value in spec.describes_only:
                return None  # only describes a name; judged as `command -v ...` itself
            if value == "--":
                i += 1
                break
            if value in spec.flags or (spec.attached and spec.attached.fullmatch(value)):
                i += 1
            elif value in spec.with_value:
                i += 2
            elif spec.denied and spec.denied.fullmatch(value):
                deny(spec.denial.format(shown=shown, value=value))
            elif value.startswith("-"):
                deny(spec.unknown.format(shown=shown, name=base, value=value))
            else:
                break
        return words[i + spec.operands:] or None

    def _unwrap_env(self, words: list[Word], shown: str) -> list[Word] | None:
        inner = self._unwrap_options("env", words, shown) or []
        while inner and (match := ASSIGNMENT.match(inner[0].text)) and (
                inner[0].value is None or "=" in inner[0].value):
            self._check_variable(match.group(1), f"in `{shown}`")
            inner = inner[1:]
        return inner or None

    def _unwrap_nohup(self, words: list[Word], shown: str) -> list[Word] | None:
        i = 1
        if i < len(words) and words[i].value == "--":
            i += 1
        elif i < len(words) and words[i].value is not None and words[i].value.startswith("-"):
            return None  # --help / --version
        return words[i:] or None

    def _unwrap_builtin(self, words: list[Word], shown: str) -> list[Word] | None:
        return words[1:] or None

    def _unwrap_xargs(self, words: list[Word], shown: str) -> list[Word]:
        """xargs runs its command with words read from input appended (or, with -I, substituted)."""
        flags = {"-0", "--null", "-r", "--no-run-if-empty", "-t", "--verbose", "-x", "--exit", "--show-limits"}
        with_value = {"-a", "--arg-file", "-d", "--delimiter", "-E", "-L", "--max-lines", "-n", "--max-args",
                      "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var", "--eof"}
        replace: str | None = None
        i = 1
        while i < len(words):
            self._option_words([words[i]], shown, "xargs")
            value = words[i].value
            if value == "--":
                i += 1
                break
            if not value.startswith("-") or value == "-":
                break
            if value in ("-p", "--interactive", "-o", "--open-tty"):
                deny(f"`{shown}`: xargs {value} is interactive")
            if value in flags:
                i += 1
            elif value == "-I" or value in with_value:
                if i + 1 >= len(words):
                    deny(f"`{shown}`: xargs {value} needs a value")
                self._option_words([words[i + 1]], shown, "xargs")
                if value == "-I":
                    replace = words[i + 1].value
                if value == "--process-slot-var":
                    self._check_variable(words[i + 1].value, f"the --process-slot-var of `{shown}`")
                i += 2
            elif value.startswith("--"):
                option, has_equals, attached = value.partition("=")
                if option == "--replace":
                    replace = attached or "{}"
                elif option in with_value and has_equals:
                    if option == "--process-slot-var":
                        self._check_variable(attached, f"the --process-slot-var of `{shown}`")
                else:
                    deny(f"`{shown}`: xargs option `{value}` is not known")
                i += 1
            elif value[1] == "I":
                replace = value[2:]
                i += 1
            elif value[1] == "i":
                replace = value[2:] or "{}"
                i += 1
            elif value[1] in "nLPsdaEel" or all(letter in "0rtx" for letter in value[1:]):
                i += 1
            else:
                deny(f"`{shown}`: xargs option `{value}` is not known")
        inner = words[i:] or [lit("echo")]
        if replace:
            # Each input line replaces the string inside these words, so their values are unknown.
            return [Word(None, False, w.text) if (w.value is not None and replace in w.value) else w
                    for w in inner]
        return [*inner, UNKNOWN_INPUT]

    def _shell_script(self, words: list[Word], shown: str) -> str | None:
        """The script of `sh -c '...'`, or None when the shell runs a file or reads stdin."""
        i = 1
        has_c = False
        safe_options = ("pipefail", "errexit", "nounset", "xtrace", "noglob", "verbose", "posix")
        while i < len(words):
            word = words[i]
            if not word.literal:
                if has_c:
                    break
                deny(f"in `{shown}` the shell argument `{word.text}` is only known at run time")
            value = word.value
            if value in ("--norc", "--noprofile", "--posix", "-l", "--login", "--"):
                i += 1
                if value == "--":
                    break
                continue
            if value in ("-o", "+o"):
                if i + 1 >= len(words) or words[i + 1].value not in safe_options:
                    following = words[i + 1].text if i + 1 < len(words) else ""
                    deny(f"`{shown}`: shell option `{value} {following}` is not allowed")
                i += 2
                continue
            if re.fullmatch(r"[-+][euxvcfo]+", value):
                has_c = has_c or "c" in value
                if value.endswith("o"):
                    if i + 1 >= len(words) or words[i + 1].value not in safe_options:
                        deny(f"`{shown}`: shell option `{value}` is not allowed")
                    i += 2
                    continue
                i += 1
                continue
            if value.startswith(("-", "+")):
                deny(f"`{shown}`: shell option `{value}` is not allowed (it could make the shell "
                     f"interactive, read startup files or change how the script is parsed)")
            break
        if not has_c:
            return None
        if i >= len(words):
            deny(f"`{shown}`: -c without a command string")
        script = words[i]
        if not script.literal:
            deny(f"in `{shown}` the command string `{script.text}` is only known at run time")
        return script.value

    def _find(self, words: list[Word], depth: int, verdicts: Verdicts) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        i = 1
        n = len(words)
        while i < n:
            word = words[i]
            if not word.literal:
                deny(f"the find argument `{word.text}` is only known at run time and could become an action "
                     f"such as -delete or -exec; quote it")
            value = word.value
            if value in FIND_EXEC_ACTIONS:
                j = i + 1
                while j < n and words[j].value not in (";", "+"):
                    j += 1
                if j >= n:
                    deny(f"find {value} without a terminating `;` or `+`")
                batch = words[j].value == "+"
                inner = [Word(None, batch, w.text) if (w.value is not None and "{}" in w.value) else w
                         for w in words[i + 1:j]]
                if not inner:
                    deny(f"find {value} without a command")
                self._simple(inner, depth, verdicts)
                i = j + 1
                continue
            if value in FIND_EDIT_ACTIONS:
                why = f"`find {value}` changes files; a rule must name `{value}` exactly"
                for k in range(i, min(n, i + 1 + FIND_EDIT_ACTIONS[value])):
                    sensitive[k] = why
                i += 1 + FIND_EDIT_ACTIONS[value]
                continue
            i += 1
        return sensitive
