"""What the fake GitLab checks each request against: the operations gitbot calls, their parameters and types.

An operation that GitLab's published OpenAPI description covers (tests/openapi/gitlab-rest-subset.json, see
tests/openapi/README.md) is checked against that; the others against the attributes their REST documentation
page lists (the `doc/api/*.md` page named beside each one below, as of GitLab 18). A request with a parameter
the operation does not define, a required one missing, or a value of the wrong type is a violation: GitLab
itself ignores unknown parameters silently, which is exactly why a typo must fail here instead.

Types are GitLab's: integer, string, boolean (GitLab accepts true/false in any case, and 1/0), array (of
strings; `name[]=a&name[]=b` in a query), hash (a JSON object, in a body).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUBSET_PATH = Path(__file__).resolve().parent.parent / "openapi" / "gitlab-rest-subset.json"
PAGINATION = {"page": "integer", "per_page": "integer"}


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # GitLab's form, relative to /api/v4: /projects/:id/issues/:issue_iid
    path_types: dict[str, str]
    query: dict[str, str]
    body: dict[str, str]
    required: frozenset[str] = frozenset()
    source: str = ""  # the documentation page, or "openapi"
    enums: dict[str, tuple[str, ...]] = field(default_factory=dict)  # allowed values, query and body alike
    regex: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pattern = re.sub(r":(\w+)", lambda m: f"(?P<{m.group(1)}>[^/]+)", self.path)
        object.__setattr__(self, "regex", re.compile(pattern + r"\Z"))


def _op(
    method: str,
    path: str,
    source: str,
    *,
    query: dict[str, str] | None = None,
    body: dict[str, str] | None = None,
    required: tuple[str, ...] = (),
    paginated: bool = False,
    path_types: dict[str, str] | None = None,
    enums: dict[str, tuple[str, ...]] | None = None,
) -> Operation:
    types = {name: "integer" for name in re.findall(r":(\w+)", path)}
    types.update(path_types or {})
    types["id"] = "string"  # the project's id or URL-encoded path
    return Operation(
        method,
        path,
        types,
        {**(PAGINATION if paginated else {}), **(query or {})},
        dict(body or {}),
        frozenset(required),
        source,
        dict(enums or {}),
    )


NOTE_LIST = {"sort": "string", "order_by": "string", "activity_filter": "string"}
NOTE_ENUMS = {
    "sort": ("asc", "desc"),
    "order_by": ("created_at", "updated_at"),
    "activity_filter": ("all_notes", "only_comments", "only_activity"),
}
NOTE_CREATE = {
    "body": "string",
    "created_at": "string",
    "internal": "boolean",
    "merge_request_diff_head_sha": "string",
}
NOTE_UPDATE = {"body": "string", "confidential": "boolean"}
REPLY = {"body": "string", "created_at": "string", "note_id": "integer"}
DISCUSSION = {"discussion_id": "string"}

# Operations written down from GitLab's REST documentation (the page is named in each); the ones
# openapi_v2.yaml describes are in the vendored subset instead.
DOCUMENTED: tuple[Operation, ...] = (
    _op("GET", "/projects/:id", "projects.md", query={"license": "boolean", "statistics": "boolean"}),
    _op("GET", "/user", "users.md"),
    _op("GET", "/users/:user_id", "users.md"),
    _op("GET", "/projects/:id/issues/:issue_iid", "issues.md"),
    _op(
        "GET",
        "/projects/:id/issues/:issue_iid/notes",
        "notes.md",
        query=NOTE_LIST,
        paginated=True,
        enums=NOTE_ENUMS,
    ),
    _op("GET", "/projects/:id/issues/:issue_iid/notes/:note_id", "notes.md"),
    _op("POST", "/projects/:id/issues/:issue_iid/notes", "notes.md", body=NOTE_CREATE, required=("body",)),
    _op(
        "PUT",
        "/projects/:id/issues/:issue_iid/notes/:note_id",
        "notes.md",
        body=NOTE_UPDATE,
        required=("body",),
    ),
    _op(
        "GET",
        "/projects/:id/merge_requests/:merge_request_iid/notes",
        "notes.md",
        query=NOTE_LIST,
        paginated=True,
        enums=NOTE_ENUMS,
    ),
    _op("GET", "/projects/:id/merge_requests/:merge_request_iid/notes/:note_id", "notes.md"),
    _op(
        "POST",
        "/projects/:id/merge_requests/:merge_request_iid/notes",
        "notes.md",
        body=NOTE_CREATE,
        required=("body",),
    ),
    _op(
        "PUT",
        "/projects/:id/merge_requests/:merge_request_iid/notes/:note_id",
        "notes.md",
        body=NOTE_UPDATE,
        required=("body",),
    ),
    _op("GET", "/projects/:id/issues/:issue_iid/discussions", "discussions.md", paginated=True),
    _op(
        "GET", "/projects/:id/merge_requests/:merge_request_iid/discussions", "discussions.md", paginated=True
    ),
    _op(
        "POST",
        "/projects/:id/issues/:issue_iid/discussions/:discussion_id/notes",
        "discussions.md",
        body=REPLY,
        required=("body",),
        path_types=DISCUSSION,
    ),
    _op(
        "POST",
        "/projects/:id/merge_requests/:merge_request_iid/discussions/:discussion_id/notes",
        "discussions.md",
        body=REPLY,
        required=("body",),
        path_types=DISCUSSION,
    ),
    _op(
        "GET",
        "/projects/:id/issues/:issue_iid/resource_label_events",
        "resource_label_events.md",
        paginated=True,
    ),
    _op("GET", "/projects/:id/pipelines/:pipeline_id", "pipelines.md"),
    _op("GET", "/projects/:id/pipelines/:pipeline_id/variables", "pipelines.md", paginated=True),
    _op(
        "GET", "/projects/:id/merge_requests/:merge_request_iid/versions", "merge_requests.md", paginated=True
    ),
    _op(
        "GET",
        "/projects/:id/merge_requests/:merge_request_iid/versions/:version_id",
        "merge_requests.md",
        query={"unidiff": "boolean"},
    ),
)


def _swagger_type(param: dict[str, Any]) -> str:
    kind = param.get("type", "string")
    return kind if kind in ("integer", "boolean", "array", "string") else "string"


def _from_swagger(spec: dict[str, Any]) -> list[Operation]:
    """The operations of a Swagger 2.0 description (GitLab publishes openapi_v2.yaml in that form)."""
    operations = []
    definitions = spec.get("definitions", {})
    for raw_path, item in spec.get("paths", {}).items():
        path = re.sub(r"\{(\w+)\}", r":\1", raw_path.removeprefix("/api/v4"))
        for method, op in item.items():
            path_types, query, body, required, enums = {}, {}, {}, set(), {}
            for param in op.get("parameters", []):
                where, name = param.get("in"), param["name"]
                if param.get("enum"):
                    enums[name] = tuple(str(v) for v in param["enum"])
                if where == "path":
                    path_types[name] = _swagger_type(param)
                elif where == "query":
                    query[name] = _swagger_type(param)
                    # Grape takes a list as name[]=a&name[]=b; a parameter typed [String, Array[String]]
                    # is published as a string whose example is a list.
                    if param.get("type") == "array" or isinstance(param.get("example"), list):
                        query[name + "[]"] = "array"
                        enums.setdefault(name + "[]", enums.get(name, ()))
                elif where == "body":
                    ref = param.get("schema", {}).get("$ref", "")
                    schema = definitions[ref.rsplit("/", 1)[-1]]
                    for prop, spec_prop in (schema.get("properties") or {}).items():
                        body[prop] = _swagger_type(spec_prop)
                        if spec_prop.get("enum"):
                            enums[prop] = tuple(str(v) for v in spec_prop["enum"])
                    required |= set(schema.get("required") or [])
            path_types["id"] = "string"  # the project's id or URL-encoded path, whatever the description says
            enums = {k: v for k, v in enums.items() if v}
            operations.append(
                Operation(
                    method.upper(), path, path_types, query, body, frozenset(required), "openapi", enums
                )
            )
    return operations


def operations() -> list[Operation]:
    """The vendored OpenAPI subset's operations first (they win), then the documented ones."""
    published = _from_swagger(json.loads(SUBSET_PATH.read_text()))
    covered = {(op.method, op.path) for op in published}
    return published + [op for op in DOCUMENTED if (op.method, op.path) not in covered]


def find(ops: list[Operation], method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
    for op in ops:
        if op.method == method:
            match = op.regex.match(path)
            if match:
                return op, match.groupdict()
    return None


def _type_problem(name: str, kind: str, value: Any, *, in_query: bool) -> str | None:
    if kind == "integer":
        ok = (isinstance(value, str) and re.fullmatch(r"-?\d+", value)) or (
            isinstance(value, int) and not isinstance(value, bool)
        )
    elif kind == "boolean":
        ok = isinstance(value, bool) or (
            isinstance(value, str) and value.lower() in ("true", "false", "1", "0")
        )
    elif kind == "array":
        ok = isinstance(value, list)
    else:
        ok = isinstance(value, str) or (in_query and value is not None)
    return None if ok else f"{name} is invalid (expected {kind}, got {value!r})"


def check(op: Operation, params: dict[str, str], query: dict[str, list[str]], body: Any) -> str | None:
    """What is wrong with a request for `op`, or None."""
    for name, value in params.items():
        problem = _type_problem(name, op.path_types.get(name, "string"), value, in_query=True)
        if problem:
            return problem
    for name, values in query.items():
        if name not in op.query:
            return f"unknown query parameter {name!r} (not in {op.source})"
        kind = op.query[name]
        for value in values:
            problem = None if kind == "array" else _type_problem(name, kind, value, in_query=True)
            if problem is None and name in op.enums and value not in op.enums[name]:
                problem = (
                    f"{name} does not have a valid value ({value!r} is not one of {list(op.enums[name])})"
                )
            if problem:
                return problem
    if body is None:
        body = {}
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    if body and op.method == "GET":
        return "a GET takes no body"
    unknown = sorted(set(body) - set(op.body))
    if unknown:
        return f"unknown body fields {unknown} (not in {op.source})"
    missing = sorted(op.required - set(body))
    if missing:
        return ", ".join(f"{name} is missing" for name in missing)
    for name, value in body.items():
        problem = _type_problem(name, op.body[name], value, in_query=False)
        if problem is None and name in op.enums and str(value) not in op.enums[name]:
            problem = f"{name} does not have a valid value"
        if problem:
            return problem
    return None
