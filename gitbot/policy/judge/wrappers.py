"""Programs that run another program (env, timeout, nice, nohup, stdbuf, time, command, builtin,
xargs, find -exec, sh/bash/dash -c): the command they run is judged in their place. Part of
CommandJudge."""

from __future__ import annotations

import posixpath
import re

from gitbot.policy.judge.outcome import Read, Verdicts, deny
from gitbot.policy.judge.programs import FIND_EXEC_ACTIONS, FIND_WRITE_ACTIONS, SHELLS, WRAPPER_OPTIONS
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
        unwrap = {"env": self._unwrap_env, "nohup": self._unwrap_nohup, "builtin": self._unwrap_builtin}
        if base == "xargs":
            inner = self._unwrap_xargs(words, shown, verdicts)
        else:
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
        """env sets every NAME=VALUE word before the command, whatever NAME is: `BASH_FUNC_ls%%=() {...}`
        defines a function for a bash started below it."""
        inner = self._unwrap_options("env", words, shown) or []
        while inner:
            word = inner[0]
            if word.literal and "=" in word.value:
                self._check_variable(word.value.partition("=")[0], f"in `{shown}`")
            elif word.value is None and (match := ASSIGNMENT.match(word.text)):
                self._check_variable(match.group(1), f"in `{shown}`")
            else:
                break
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

    def _unwrap_xargs(self, words: list[Word], shown: str, verdicts: Verdicts) -> list[Word]:
        """xargs runs its command with words read from input appended (or, with -I, substituted);
        `-a FILE` reads them from FILE."""
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
                if value in ("-a", "--arg-file"):
                    verdicts.reads.append(Read(words[i + 1], shown))
                if value == "--process-slot-var":
                    self._check_variable(words[i + 1].value, f"the --process-slot-var of `{shown}`")
                i += 2
            elif value.startswith("--"):
                option, has_equals, attached = value.partition("=")
                if option == "--replace":
                    replace = attached or "{}"
                elif option in with_value and has_equals:
                    if option == "--arg-file":
                        verdicts.reads.append(Read(lit(attached), shown))
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
                if value[1] == "a":
                    verdicts.reads.append(Read(lit(value[2:]), shown))
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

    def _find(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
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
                found = _found_path_text(words)
                inner = [Word(None, batch, found if w.value == "{}" else w.text)
                         if (w.value is not None and "{}" in w.value) else w for w in words[i + 1:j]]
                if not inner:
                    deny(f"find {value} without a command")
                self._simple(inner, depth, verdicts)
                i = j + 1
                continue
            if value == "-delete":
                sensitive[i] = "`find -delete` removes the files it finds; a rule must name `-delete` exactly"
            elif value in FIND_WRITE_ACTIONS:
                if i + 1 < n:
                    verdicts.edits.append((words[i + 1], shown))  # judged by the edit rules
                i += 1 + FIND_WRITE_ACTIONS[value]
                continue
            elif value == "-files0-from" and i + 1 < n:
                verdicts.reads.append(Read(words[i + 1], shown))
            i += 1
        return sensitive


def _found_path_text(words: list[Word]) -> str:
    """How a lone `{}` of `find -exec` is shown to the option tables: a path that starts with find's
    first start point (`./…` for `find .` or no start point), so that it is not taken for an option
    when no start point can begin with `-`; `{}` itself (an option, perhaps) otherwise."""
    starts = []
    for word in words[1:]:
        if not word.literal:
            return "{}"
        if word.value.startswith(("-", "(", "!", ")")):
            break
        starts.append(word.value)
    return posixpath.join(starts[0], "{}") if starts else "./{}"
