"""The tool set, in one place: names and schemas are a contract with recorded trajectories."""

from __future__ import annotations

from gitbot.tools.base import Tool


def all_tools() -> list[Tool]:
    # Imported here so importing gitbot.tools does not pull in tree-sitter for fast paths.
    from gitbot.tools.completion import ASK_FOLLOWUP_QUESTION, ATTEMPT_COMPLETION
    from gitbot.tools.definitions import LIST_CODE_DEFINITION_NAMES
    from gitbot.tools.delete import DELETE_FILE
    from gitbot.tools.edit import REPLACE_IN_FILE
    from gitbot.tools.files import LIST_FILES, READ_FILE, WRITE_TO_FILE
    from gitbot.tools.search import SEARCH_FILES
    from gitbot.tools.shell import EXECUTE_COMMAND

    return [READ_FILE, WRITE_TO_FILE, REPLACE_IN_FILE, DELETE_FILE, SEARCH_FILES, LIST_FILES, LIST_CODE_DEFINITION_NAMES,
            EXECUTE_COMMAND, ATTEMPT_COMPLETION, ASK_FOLLOWUP_QUESTION]


def validate_input(tool: Tool, args: object) -> str | None:
    """A short explanation of what is wrong with the arguments, or None when they fit the schema.

    Covers the subset of JSON Schema our tools use: an object, required keys, no unknown keys,
    and scalar types.
    """
    if not isinstance(args, dict):
        return f"the input must be a JSON object, got {type(args).__name__}"
    schema = tool.input_schema
    properties = schema.get("properties", {})
    missing = [k for k in schema.get("required", []) if k not in args]
    unknown = [k for k in args if k not in properties]
    problems = []
    if unknown:  # named first: a misspelled argument is the usual cause of a missing one
        problems.append(f"unknown argument{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}")
    if missing:
        problems.append(f"missing required argument{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    if problems:
        return "; ".join(problems) + f" (the arguments are: {', '.join(properties)})"
    for key, value in args.items():
        expected = properties[key].get("type")
        if expected and not _is_type(value, expected):
            return f"argument `{key}` must be of type {expected}, got {type(value).__name__}"
    return None


def _is_type(value: object, expected: str | list) -> bool:
    if isinstance(expected, list):
        return any(_is_type(value, e) for e in expected)
    checks = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
    }
    check = checks.get(expected)
    return check(value) if check else True
