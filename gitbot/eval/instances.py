"""SWE-bench instances as JSON Lines: read (validating each line on its own), write, and the fields.

The official dataset keeps FAIL_TO_PASS and PASS_TO_PASS as JSON-encoded lists inside strings; both that
and plain lists are accepted, and they are written back as strings, so the files round-trip with the
official tools. A bad line becomes an InstanceError for that line: it never stops the others.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "test_patch", "FAIL_TO_PASS")
LIST_FIELDS = ("FAIL_TO_PASS", "PASS_TO_PASS")
# Written in this order; anything else an instance carries (hints_text, created_at, version,
# environment_setup_commit, linked_issues …) is kept and written after them.
ORDER = ("instance_id", "repo", "base_commit", "problem_statement", "hints_text", "created_at", "version",
         "environment_setup_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS", "test_cmd")


@dataclass
class Instance:
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    test_patch: str
    fail_to_pass: list[str]
    pass_to_pass: list[str] = field(default_factory=list)
    patch: str = ""
    # The command the test ids are appended to (shell words); None: pytest (testcmd.py).
    test_cmd: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {"instance_id": self.instance_id, "repo": self.repo, "base_commit": self.base_commit,
                "problem_statement": self.problem_statement, "patch": self.patch, "test_patch": self.test_patch,
                "FAIL_TO_PASS": json.dumps(self.fail_to_pass), "PASS_TO_PASS": json.dumps(self.pass_to_pass),
                **self.extra}
        if self.test_cmd:
            data["test_cmd"] = self.test_cmd
        ordered = {key: data[key] for key in ORDER if key in data}
        ordered.update({key: value for key, value in data.items() if key not in ordered})
        return ordered


class BadInstance(ValueError):
    """A line that is JSON but not an instance."""


@dataclass
class InstanceError:
    """A line that is not a usable instance: where it is and why."""
    line: int
    instance_id: str | None
    why: str


def parse_instance(data: Any) -> Instance:
    """Raises ValueError naming the field that is wrong."""
    if not isinstance(data, dict):
        raise BadInstance("not a JSON object")
    missing = [name for name in REQUIRED if name not in data]
    if missing:
        raise BadInstance(f"missing field(s): {', '.join(missing)}")
    for name in ("instance_id", "repo", "base_commit", "problem_statement", "test_patch"):
        if not isinstance(data[name], str):
            raise BadInstance(f"{name} must be a string")
    # It names a directory in OUTDIR and a replay file: one plain path component.
    if not re.fullmatch(r"[^/\\\x00-\x1f.][^/\\\x00-\x1f]{0,199}", data["instance_id"]):
        raise BadInstance("instance_id must be a name without '/', '\\' or control characters, not starting "
                          "with '.'")
    lists = {name: test_ids(data.get(name, []), name) for name in LIST_FIELDS}
    if not lists["FAIL_TO_PASS"]:
        raise BadInstance("FAIL_TO_PASS is empty: nothing would show the fix")
    test_cmd = data.get("test_cmd")
    if test_cmd is not None and (not isinstance(test_cmd, str) or not test_cmd.strip()):
        raise BadInstance("test_cmd must be a non-empty string")
    known = {*REQUIRED, "PASS_TO_PASS", "patch", "test_cmd"}
    return Instance(instance_id=data["instance_id"], repo=data["repo"], base_commit=data["base_commit"].strip(),
                    problem_statement=data["problem_statement"], test_patch=data["test_patch"],
                    fail_to_pass=lists["FAIL_TO_PASS"], pass_to_pass=lists["PASS_TO_PASS"],
                    patch=data.get("patch") or "", test_cmd=test_cmd,
                    extra={k: v for k, v in data.items() if k not in known})


def test_ids(value: Any, name: str) -> list[str]:
    """A list of test ids, given as a list or (the official form) as a JSON list inside a string."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise BadInstance(f"{name} is a string but not a JSON list ({exc.msg})") from None
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise BadInstance(f"{name} must be a list of test ids")
    return value


def read_instances(path: Path) -> tuple[list[Instance], list[InstanceError]]:
    """Every line on its own: a malformed one, or a second line with an id already seen, is an error for
    that line only. Raises OSError when the file cannot be read at all."""
    instances: list[Instance] = []
    errors: list[InstanceError] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            instance_id = None
            try:
                data = json.loads(line)
                instance_id = data.get("instance_id") if isinstance(data, dict) else None
                instance = parse_instance(data)
            except json.JSONDecodeError as exc:
                errors.append(InstanceError(number, None, f"line {number}: not JSON ({exc.msg})"))
                continue
            except ValueError as exc:
                errors.append(InstanceError(number, instance_id if isinstance(instance_id, str) else None,
                                            f"line {number}: {exc}"))
                continue
            if instance.instance_id in seen:
                errors.append(InstanceError(number, None, f"line {number}: instance_id "
                                            f"{instance.instance_id!r} appears twice; the first is kept"))
                continue
            seen.add(instance.instance_id)
            instances.append(instance)
    return instances, errors


def dumps(instances: list[Instance]) -> str:
    return "".join(json.dumps(instance.to_dict(), ensure_ascii=False) + "\n" for instance in instances)
