"""Checks: run a check command, read what failed out of its output, and turn that into a Task.

Names are loaded on first use, so that `gitbot.checks.runner` (on the git hook's fast path) can be
imported without the parsers.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "CheckCommandError": "runner", "CheckRun": "runner", "DEFAULT_TIMEOUT_SECONDS": "runner",
    "run_check": "runner", "Failure": "parsers", "ParsedOutput": "parsers", "parse_output": "parsers",
    "build_task": "task",
}
__all__ = ["DEFAULT_TIMEOUT_SECONDS", "CheckCommandError", "CheckRun", "Failure", "ParsedOutput",
           "build_task", "parse_output", "run_check"]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"gitbot.checks.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'gitbot.checks' has no attribute {name!r}")
