"""Which command runs an instance's tests, and what each test did, read from its output.

An instance may name its command in `test_cmd` (shell words); the test ids are appended to it. Without
one it is pytest, whose node ids (`tests/test_x.py::test_y`) are the SWE-bench form for most Python
repositories. Outcomes are read from pytest's `-rA` summary (`PASSED id`, `FAILED id - why`) or from
unittest's `-v` lines (`test_y (module.Class.test_y) ... ok`), whichever the output holds. A test that
does not appear did not pass.
"""

from __future__ import annotations

import re
import shlex

DEFAULT_TEST_CMD = "python3 -m pytest -q -rA -p no:cacheprovider"
PASSING = {"PASSED", "XFAIL", "ok", "expected failure"}
_PYTEST = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (.+)$")
_UNITTEST = re.compile(r"^(\w+) \(([\w.]+)\)(?:\n[^\n]*)? \.\.\. (ok|FAIL|ERROR|expected failure|unexpected success"
                       r"|skipped.*)$", re.MULTILINE)


def test_command(test_cmd: str | None, ids: list[str]) -> str:
    return " ".join([test_cmd or DEFAULT_TEST_CMD, *(shlex.quote(test_id) for test_id in ids)])


def outcomes(output: str) -> dict[str, bool]:
    """Each test the output names → whether it passed. A test named twice passed only if it always did."""
    found: dict[str, bool] = {}

    def note(test_id: str, passed: bool) -> None:
        found[test_id] = found.get(test_id, True) and passed

    for line in output.splitlines():
        match = _PYTEST.match(line.rstrip())
        if match:
            note(_pytest_id(match.group(1), match.group(2)), match.group(1) in PASSING)
    for match in _UNITTEST.finditer(output):
        name, where, status = match.groups()
        # Python 3.11+ prints module.Class.test; older ones module.Class.
        test_id = where if where.endswith(f".{name}") else f"{where}.{name}"
        note(test_id, status in PASSING)
    return found


def _pytest_id(status: str, rest: str) -> str:
    """`FAILED id - why`: the id ends before " - ", unless that is inside its [parameters]."""
    if status == "PASSED":
        return rest
    head = rest.split(" - ", 1)[0]
    if "[" in head and "]" not in head[head.index("["):]:
        closing = rest.find("]", rest.index("["))
        return rest[:closing + 1] if closing != -1 else rest
    return head


def failing(ids: list[str], seen: dict[str, bool]) -> list[str]:
    """The ids among `ids` that did not pass (a missing one did not)."""
    return [test_id for test_id in ids if not seen.get(test_id, False)]
