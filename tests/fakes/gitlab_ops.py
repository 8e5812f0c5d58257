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
) -> Operation:
    types = {name: "integer" for name in re.findall(r":(\w+)", path) if name != "id"}
    types["id"] = "string"  # the project's id or URL-encoded path
    types.update(path_types or {})
    return Operation(
        method,
        path,
        types,
        {**(PAGINATION if paginated else {}), **(query or {})},
        dict(body or {}),
        frozenset(required),
        source,
    )


NOTE_LIST = {"sort": "string", "order_by": "string", "activity_filter": "string"}
MR_LIST = {
    "state": "string",
    "source_branch": "string",
    "target_branch": "string",
    "order_by": "string",
    "sort": "string",
    "iids[]": "array",
    "labels": "string",
    "view": "string",
}
MR_UPDATE = {
    "title": "string",
    "description": "string",
    "target_branch": "string",
    "state_event": "string",
    "labels": "string",
    "add_labels": "string",
    "remove_labels": "string",
    "remove_source_branch": "boolean",
    "squash": "boolean",
    "discussion_locked": "boolean",
    "allow_collaboration": "boolean",
    "assignee_ids": "array",
    "reviewer_ids": "array",
    "milestone_id": "integer",
}
MR_CREATE = {
    "source_branch": "string",
    "target_branch": "string",
    "title": "string",
    "description": "string",
    "target_project_id": "integer",
    "labels": "string",
    "remove_source_branch": "boolean",
    "squash": "boolean",
    "allow_collaboration": "boolean",
    "assignee_id": "integer",
    "assignee_ids": "array",
    "reviewer_ids": "array",
    "milestone_id": "integer",
}
NOTE_CREATE = {
    "body": "string",
    "created_at": "string",
    "internal": "boolean",
    "merge_request_diff_head_sha": "string",
}

# Operations written down from GitLab's REST documentation (the page is named in each).
DOCUMENTED: tuple[Operation, ...] = (
    _op(
        "GET",
        "/projects/:id",
        "projects.md",
        query={"license": "boolean", "statistics": "boolean", "with_custom_attributes": "boolean"},
    ),
    _op("GET", "/user", "users.md"),
    _op("GET", "/users/:user_id", "users.md", path_types={"user_id": "integer"}),
    _op("GET", "/projects/:id/members/all/:user_id", "members.md", query={"state": "string"}),
    _op("GET", "/projects/:id/issues/:issue_iid", "issues.md"),
    _op("GET", "/projects/:id/issues/:issue_iid/notes", "notes.md", query=NOTE_LIST, paginated=True),
    _op("GET", "/projects/:id/issues/:issue_iid/notes/:note_id", "notes.md"),
    _op("POST", "/projects/:id/issues/:issue_iid/notes", "notes.md", body=NOTE_CREATE, required=("body",)),
    _op(
        "PUT",
        "/projects/:id/issues/:issue_iid/notes/:note_id",
        "notes.md",
        body={"body": "string", "confidential": "boolean"},
        required=("body",),
    ),
    _op(
        "GET",
        "/projects/:id/merge_requests/:merge_request_iid/notes",
        "notes.md",
        query=NOTE_LIST,
        paginated=True,
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
        body={"body": "string", "confidential": "boolean"},
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
        body={"body": "string", "created_at": "string", "note_id": "integer"},
        required=("body",),
        path_types={"discussion_id": "string"},
    ),
    _op(
        "POST",
        "/projects/:id/merge_requests/:merge_request_iid/discussions/:discussion_id/notes",
        "discussions.md",
        body={"body": "string", "created_at": "string", "note_id": "integer"},
        required=("body",),
        path_types={"discussion_id": "string"},
    ),
    _op(
        "GET",
        "/projects/:id/issues/:issue_iid/resource_label_events",
        "resource_label_events.md",
        paginated=True,
    ),
    _op(
        "POST",
        "/projects/:id/issues/:issue_iid/notes/:note_id/award_emoji",
        "emoji_reactions.md",
        body={"name": "string"},
        required=("name",),
    ),
    _op(
        "POST",
        "/projects/:id/merge_requests/:merge_request_iid/notes/:note_id/award_emoji",
        "emoji_reactions.md",
        body={"name": "string"},
        required=("name",),
    ),
    _op("GET", "/projects/:id/merge_requests", "merge_requests.md", query=MR_LIST, paginated=True),
    _op(
        "POST",
        "/projects/:id/merge_requests",
        "merge_requests.md",
        body=MR_CREATE,
        required=("source_branch", "target_branch", "title"),
    ),
    _op(
        "GET",
        "/projects/:id/merge_requests/:merge_request_iid",
        "merge_requests.md",
        query={
            "include_diverged_commits_count": "boolean",
            "include_rebase_in_progress": "boolean",
            "render_html": "boolean",
        },
    ),
    _op("PUT", "/projects/:id/merge_requests/:merge_request_iid", "merge_requests.md", body=MR_UPDATE),
    _op(
        "GET",
        "/projects/:id/pipelines",
        "pipelines.md",
        query={
            "sha": "string",
            "ref": "string",
            "status": "string",
            "source": "string",
            "order_by": "string",
            "sort": "string",
            "scope": "string",
        },
        paginated=True,
    ),
    _op(
        "GET",
        "/projects/:id/pipelines/:pipeline_id/jobs",
        "jobs.md",
        query={"scope[]": "array", "scope": "string", "include_retried": "boolean"},
        paginated=True,
    ),
    _op("GET", "/projects/:id/jobs/:job_id/trace", "jobs.md"),
    _op("GET", "/projects/:id/repository/branches/:branch", "branches.md", path_types={"branch": "string"}),
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
            if method not in ("get", "post", "put", "delete"):
                continue
            path_types, query, body, required = {}, {}, {}, set()
            for param in op.get("parameters", []):
                where = param.get("in")
                if where == "path":
                    path_types[param["name"]] = "string" if param["name"] == "id" else _swagger_type(param)
                elif where == "query":
                    name = param["name"] + ("[]" if param.get("type") == "array" else "")
                    query[name] = _swagger_type(param)
                elif where == "body":
                    schema = param.get("schema", {})
                    ref = schema.get("$ref", "")
                    schema = definitions.get(ref.rsplit("/", 1)[-1], schema) if ref else schema
                    for name, prop in (schema.get("properties") or {}).items():
                        body[name] = _swagger_type(prop)
                    required |= set(schema.get("required") or [])
            operations.append(
                Operation(method.upper(), path, path_types, query, body, frozenset(required), "openapi")
            )
    return operations


def operations() -> list[Operation]:
    """The vendored OpenAPI subset's operations first (they win), then the documented ones."""
    published = _from_swagger(json.loads(SUBSET_PATH.read_text())) if SUBSET_PATH.exists() else []
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
        for value in values if kind != "array" else []:
            problem = _type_problem(name, kind, value, in_query=True)
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
        if problem:
            return problem
    return None
