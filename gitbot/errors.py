"""The errors every layer may raise and every way in turns into an exit code.

ConfigError is bad input found before any work (exit 2, and no model request); GitError a git
command that failed; NotAGitRepository the directory given is not inside a work tree.
"""

from __future__ import annotations


class ConfigError(Exception):
    """Bad configuration found before any work: exit code 2, no model request."""


class GitError(Exception):
    """A git command failed; the message says which and why."""


class NotAGitRepository(GitError, ConfigError):
    """The directory is not inside a git work tree (or does not exist): bad input, exit code 2."""
