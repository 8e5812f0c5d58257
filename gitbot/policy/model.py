"""The Policy object every tool consults: file rules, command rules, sandbox settings and limits."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from gitbot.llm.settings import ModelSettings
from gitbot.policy.base import Decision, Limits
from gitbot.policy.defaults import (
    DEFAULT_COMMAND_ALLOW,
    DEFAULT_COMMAND_DENY,
    DEFAULT_EDIT_ALLOW,
    DEFAULT_EDIT_DENY,
    DEFAULT_NETWORK,
    DEFAULT_READ_DENY,
    DEFAULT_REBUILDABLE,
    DEFAULT_SANDBOX_MODE,
    DEFAULT_SANDBOXED_COMMANDS,
)
from gitbot.policy.files import FileRules

TYPE_CHECKING = False
if TYPE_CHECKING:  # the command rules compile on first use: running a check needs none of them
    from gitbot.policy.judge.rules import CommandRule


@dataclass
class Policy:
    limits: Limits = field(default_factory=Limits)
    read_deny: tuple[str, ...] = DEFAULT_READ_DENY
    edit_allow: tuple[str, ...] = DEFAULT_EDIT_ALLOW
    edit_deny: tuple[str, ...] = DEFAULT_EDIT_DENY
    command_allow: tuple[str, ...] = DEFAULT_COMMAND_ALLOW
    command_deny: tuple[str, ...] = DEFAULT_COMMAND_DENY
    # What holds a command that runs in the sandbox: "deny-list" (it runs unless commands.deny refuses it)
    # or "allow-list" (commands.allow too, as without the sandbox). See defaults.py.
    command_sandboxed: str = DEFAULT_SANDBOXED_COMMANDS
    sandbox_mode: str = DEFAULT_SANDBOX_MODE  # "required" | "auto" | "off"
    network: bool = DEFAULT_NETWORK
    # Host paths (absolute or ~/…) the sandbox shows read-only besides the detected toolchain.
    sandbox_read_only: tuple[str, ...] = ()
    # Globs of ignored directories a build makes again: writable in the sandbox even when a run's start
    # cannot capture them, and not restored (defaults.py, checkpoints/ignored.py).
    sandbox_rebuildable: tuple[str, ...] = DEFAULT_REBUILDABLE
    # The repository the rules apply to: lets checks resolve symlinks and absolute paths.
    repo: Path | None = None
    # Where the policy came from, for messages ("built-in defaults", a file path, "REV:path").
    source: str = "built-in defaults"
    # The [model] table: provider, model id, base URL, prices (gitbot/llm/settings.py).
    model: ModelSettings = field(default_factory=ModelSettings)
    # Set by the sandbox's Runner, never by a policy file: its commands see an object store without
    # read_deny's blobs (sandbox/filtered_store.py), so the judge does not predict git's history reads.
    history_hidden_by_sandbox: bool = False

    @property
    def allow_origin(self) -> str:
        return "the default allow list" if tuple(self.command_allow) == DEFAULT_COMMAND_ALLOW else "commands.allow"

    @cached_property
    def file_rules(self) -> FileRules:
        return FileRules(tuple(self.read_deny), tuple(self.edit_allow), tuple(self.edit_deny), self.repo)

    @cached_property
    def allow_rules(self) -> tuple[CommandRule, ...]:
        from gitbot.policy.judge.rules import compile_rule

        return tuple(compile_rule(pattern, self.allow_origin) for pattern in self.command_allow)

    @cached_property
    def deny_rules(self) -> tuple[CommandRule, ...]:
        from gitbot.policy.judge.rules import compile_rule

        return tuple(compile_rule(pattern, "commands.deny") for pattern in self.command_deny)

    def check_read(self, relpath: str) -> Decision:
        return self.file_rules.check_read(relpath)

    def check_edit(self, relpath: str) -> Decision:
        return self.file_rules.check_edit(relpath)

    def check_command(self, command: str, extra_allowed: tuple[str, ...] = (), *, sandboxed: bool = False) -> Decision:
        """Judge a command line as a run would: the one entry point for the shell tool and for `gitbot
        policy check`. `extra_allowed` holds the run's check command(s), allowed as written and with
        extra arguments; `sandboxed` says whether the run's commands run in the sandbox (the run's
        sandbox.Runner decides that once; the judge is told, never guesses). Unsandboxed is the default
        because it is the stricter answer. The Decision carries `rule` (what decided) and, on a
        refusal, `instead` (what to do instead)."""
        from gitbot.policy.judge import judge_command

        repo = os.path.realpath(self.repo) if self.repo is not None else None
        return judge_command(command, self.allow_rules, self.deny_rules, check_edit=self.check_edit, repo=repo,
                             extra_allowed=tuple(extra_allowed), check_read=self.check_read,
                             shelters=self.file_rules.shelters, denied_files=self.file_rules.existing_read_denied,
                             denied_name=self.file_rules.denies_read_by_name,
                             sandboxed=sandboxed and self.command_sandboxed == "deny-list",
                             judge_history=not (sandboxed and self.history_hidden_by_sandbox))

    def protected_directories(self, repo: Path | None = None) -> list[Path]:
        """Existing directories the edit rules protect whole (`dir/**` in edit_deny), for the sandbox
        to mount read-only. `.git` is handled by the sandbox itself."""
        root = Path(repo if repo is not None else self.repo or ".")
        found = []
        for relative in self.file_rules.protected_directories():
            if relative.split("/", 1)[0].lower() == ".git":
                continue
            path = root / relative
            # Only real directories inside the repository: a symlink could point the mount elsewhere.
            if path.is_dir() and not path.is_symlink() and os.path.realpath(path).startswith(
                    os.path.realpath(root) + os.sep):
                found.append(path)
        return found
