"""Checks: read what failed out of a check's output, and turn that into a Task.

Running a check is the sandbox's job (gitbot/sandbox/runner.py and command.py); this package only
reads output and words tasks. Names are loaded on first use, so importing the package costs nothing.
"""

from __future__ import annotations

import importlib

_EXPORTS = {"Failure": "parsers", "ParsedOutput": "parsers", "parse_output": "parsers", "build_task": "task"}
__all__ = ["Failure", "ParsedOutput", "build_task", "parse_output"]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"gitbot.checks.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'gitbot.checks' has no attribute {name!r}")
