"""Command rules (allow and deny patterns) and how a simple command's words match them."""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass
from functools import cache

from gitbot.policy.files import GlobError, compile_glob, has_glob_chars
from gitbot.policy.judge.words import Word


@dataclass(frozen=True)
class CommandRule:
    """One allow or deny pattern: words, each a glob; a final `*` word matches any remaining words."""

    pattern: str
    words: tuple[str, ...]
    rest: bool
    origin: str  # "commands.allow", "commands.deny", "the default allow list", "the run's check command"
    literal: bool = False  # words compared exactly (the check command may contain glob characters)

    @property
    def matches_everything(self) -> bool:
        return not self.words and self.rest and not self.literal

    @property
    def names_a_path(self) -> bool:
        return bool(self.words) and "/" in self.words[0]

    def word_matches(self, index: int, value: str) -> bool:
        pattern = self.words[index]
        if self.literal or not has_glob_chars(pattern):
            return pattern == value
        return compile_glob(pattern, path_mode=False).match(value) is not None

    def names_exactly(self, index: int) -> bool:
        return index < len(self.words) and (self.literal or not has_glob_chars(self.words[index]))

    def describe(self) -> str:
        return f"rule `{self.pattern}` ({self.origin})"


def split_pattern(pattern: str) -> list[str]:
    """The words of a rule pattern (shell-like quoting allowed). Raises ValueError when malformed."""
    try:
        words = shlex.split(pattern, comments=False, posix=True)
    except ValueError as exc:
        raise ValueError(f"cannot split pattern into words: {exc}") from None
    if not words:
        raise ValueError("empty pattern")
    for word in words:
        try:
            compile_glob(word, path_mode=False)
        except GlobError as exc:
            raise ValueError(f"invalid glob in word {word!r}: {exc}") from None
    return words


def compile_rule(pattern: str, origin: str) -> CommandRule:
    words = split_pattern(pattern)
    rest = words[-1] == "*"
    if rest:
        words = words[:-1]
    if words and "/" in words[0]:
        words[0] = normalize_program_path(words[0])
    return CommandRule(pattern=pattern, words=tuple(words), rest=rest, origin=origin)


def normalize_program_path(path: str) -> str:
    return posixpath.normpath(path) if path.startswith("/") else "./" + posixpath.normpath(path)


def certainly_matches(rule: CommandRule, words: list[Word], sensitive: dict[int, str] | None = None
                       ) -> tuple[bool, str]:
    """Does the rule match every way these words could turn out? (matched, why a sensitive word
    keeps the match from counting)."""
    count = len(rule.words)
    if len(words) < count:
        return False, ""
    for index in range(count):
        word = words[index]
        if word.multi:
            return False, ""
        if word.value is None:
            if rule.literal or rule.words[index] != "*":
                return False, ""
        elif not rule.word_matches(index, word.value):
            return False, ""
    if len(words) > count and not rule.rest:
        return False, ""
    for index, why in sorted((sensitive or {}).items()):
        if not rule.names_exactly(index):
            return True, f"{why} (it matches {rule.describe()}, which does not name it)"
    return True, ""


def possibly_matches(rule: CommandRule, words: list[Word]) -> bool:
    """Could these words, once expanded, match the rule? (Used for deny rules: fail closed.)"""
    pattern_count = len(rule.words)
    word_count = len(words)

    @cache
    def match(i: int, j: int) -> bool:
        if j == pattern_count:
            return rule.rest or all(words[k].multi for k in range(i, word_count))
        if i == word_count:
            return False
        word = words[i]
        if word.multi:
            return match(i + 1, j) or match(i, j + 1) or match(i + 1, j + 1)
        if word.value is None or rule.word_matches(j, word.value):
            return match(i + 1, j + 1)
        return False

    return match(0, 0)
