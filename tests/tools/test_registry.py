"""validate_input: what the model is told when its arguments do not fit a tool's schema."""

from __future__ import annotations

from gitbot.tools.edit import REPLACE_IN_FILE
from gitbot.tools.registry import validate_input


def test_one_unknown_and_one_missing_argument_are_singular():
    problem = validate_input(REPLACE_IN_FILE, {"path": "a.py", "patch": "x"})
    assert problem == "unknown argument: patch; missing required argument: diff (the arguments are: path, diff)"


def test_several_are_plural():
    problem = validate_input(REPLACE_IN_FILE, {"file": "a.py", "patch": "x"})
    assert problem.startswith("unknown arguments: file, patch; missing required arguments: path, diff")


def test_arguments_that_fit_pass():
    assert validate_input(REPLACE_IN_FILE, {"path": "a.py", "diff": "x"}) is None
    assert validate_input(REPLACE_IN_FILE, ["a.py"]) == "the input must be a JSON object, got list"
