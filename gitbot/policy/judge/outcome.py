"""What a judgement produces on the way: the refusal it raises and the findings it collects."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitbot.policy.judge.words import Word


class Denied(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def deny(reason: str) -> None:
    raise Denied(reason)


def snippet(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Verdicts:
    """What one judgement has found so far."""

    allowed: list[str] = field(default_factory=list)
    commands: list[tuple[str | None, ...]] = field(default_factory=list)
    outputs: list[tuple[Word, str]] = field(default_factory=list)  # redirect targets, checked at the end
    edits: list[tuple[Word, str]] = field(default_factory=list)  # files a writer changes
    # (what a link points to, the directories a relative symlink target is resolved from, the command)
    links: list[tuple[Word, list[Word], str]] = field(default_factory=list)
    relative_programs: list[str] = field(default_factory=list)
    changes_directory: bool = False
