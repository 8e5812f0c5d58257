"""The small types every part of the policy shares: a decision, the run limits, a policy-file error."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitbot.errors import ConfigError


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str
    # The simple commands a command line was found to contain (literal words; None where a word is
    # only known at run time). Filled by check_command so the shell tool can spot interactive programs
    # with the same parse that judged the command.
    commands: tuple[tuple[str | None, ...], ...] = field(default=(), compare=False)
    # For commands: the rule that decided (`commands.deny \`curl *\``, `files.read_deny`, `sandbox`, ...),
    # and on a refusal what to do instead, naming the tool or the form that works.
    rule: str = field(default="", compare=False)
    instead: str = field(default="", compare=False)
    # Indexes into `commands` of those whose standard input is fed (a heredoc, `<`, a pipe): not a terminal.
    fed: frozenset[int] = field(default=frozenset(), compare=False)

    def __bool__(self) -> bool:
        return self.allowed


@dataclass
class Limits:
    max_steps: int = 50
    max_cost_usd: float = 3.0
    max_consecutive_mistakes: int = 3
    max_wall_seconds: float = 1800
    command_timeout_seconds: float = 120
    keep_run_records: int = 5  # the Action keeps this many run records per pull request (refs/gitbot/runs/)


class PolicyError(ConfigError, ValueError):
    """A policy file gitbot cannot use: says which file, which line (when known) and what was expected."""

    def __init__(self, file: str, line: int | None, message: str):
        self.file = str(file)
        self.line = line
        self.message = message
        where = f"{self.file}:{line}" if line else self.file
        super().__init__(f"bad policy file: {where}: {message}")
