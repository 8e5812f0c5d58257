"""The errors every layer may raise and every way in turns into an exit code.

ConfigError is bad input found before any work (exit 2, and no model request); GitError a git
command that failed; NotAGitRepository the directory given is not inside a work tree.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Process exit codes, documented in the README."""

    OK = 0
    GAVE_UP = 1  # the agent stopped at a limit, or the fix did not verify
    CONFIG = 2  # bad arguments, missing key, not a git repository, bad policy file
    INFRA = 3  # the provider or other infrastructure failed (including interruption)


class ConfigError(Exception):
    """Bad configuration found before any work: exit code 2, no model request."""


class GitError(Exception):
    """A git command failed; the message says which and why."""


class NotAGitRepository(GitError, ConfigError):
    """The directory is not inside a git work tree (or does not exist): bad input, exit code 2."""
