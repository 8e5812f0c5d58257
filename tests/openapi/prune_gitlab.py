"""Regenerate gitlab-rest-subset.json: the operations gitbot calls that GitLab's OpenAPI description covers.

    python tests/openapi/prune_gitlab.py path/to/openapi_v2.yaml

The input is GitLab's `doc/api/openapi/openapi_v2.yaml` (Swagger 2.0, generated from the Grape API). Kept:
the listed operations and the body definitions they reference. Dropped, as the fake validates requests
only: every `responses`, the operations' `summary` and `description`, and the `description` and `example`
of parameters and of definitions' properties (but an `example` that is a list, the one sign that a
parameter published as a string also takes `name[]=a&name[]=b`). Nothing else is changed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

# (path, method): the calls of gitbot/forge/gitlab/api.py that openapi_v2.yaml describes. The others
# (notes, discussions, resource label events, issues, users, diff versions, the project) are checked
# against their REST documentation in tests/fakes/gitlab_ops.py.
OPERATIONS = (
    ("/api/v4/projects/{id}/issues/{issue_iid}/notes/{note_id}/award_emoji", "post"),
    ("/api/v4/projects/{id}/merge_requests/{merge_request_iid}/notes/{note_id}/award_emoji", "post"),
    ("/api/v4/projects/{id}/jobs/{job_id}/trace", "get"),
    ("/api/v4/projects/{id}/pipelines", "get"),
    ("/api/v4/projects/{id}/pipelines/{pipeline_id}/jobs", "get"),
    ("/api/v4/projects/{id}/members/all/{user_id}", "get"),
    ("/api/v4/projects/{id}/merge_requests", "get"),
    ("/api/v4/projects/{id}/merge_requests", "post"),
    ("/api/v4/projects/{id}/merge_requests/{merge_request_iid}", "get"),
    ("/api/v4/projects/{id}/merge_requests/{merge_request_iid}", "put"),
)
OUTPUT = Path(__file__).with_name("gitlab-rest-subset.json")


def _without(node: dict, keys: tuple[str, ...]) -> dict:
    return {k: v for k, v in node.items() if k not in keys}


def _property(node: dict) -> dict:
    kept = _without(node, ("description", "example"))
    if isinstance(node.get("example"), list):  # how Grape's [String, Array[String]] shows: name or name[]
        kept["example"] = node["example"]
    if isinstance(kept.get("items"), dict):
        kept["items"] = _property(kept["items"])
    if isinstance(kept.get("properties"), dict):
        kept["properties"] = {k: _property(v) for k, v in kept["properties"].items()}
    return kept


def prune(spec: dict) -> dict:
    paths: dict = {}
    wanted: list[str] = []
    for path, method in OPERATIONS:
        operation = _without(spec["paths"][path][method], ("responses", "summary", "description"))
        operation["parameters"] = [_property(p) for p in operation.get("parameters", [])]
        for param in operation["parameters"]:
            ref = (param.get("schema") or {}).get("$ref", "")
            if ref:
                wanted.append(ref.rsplit("/", 1)[1])
        paths.setdefault(path, {})[method] = operation
    definitions = {}
    for name in wanted:
        definition = spec["definitions"][name]
        definitions[name] = {
            **definition,
            "properties": {k: _property(v) for k, v in definition.get("properties", {}).items()},
        }
    return {"swagger": spec["swagger"], "info": spec["info"], "paths": paths, "definitions": definitions}


def main() -> None:
    spec = yaml.safe_load(Path(sys.argv[1]).read_text(encoding="utf-8"))
    OUTPUT.write_text(json.dumps(prune(spec), indent=1) + "\n", encoding="utf-8")
    print(f"{OUTPUT}: {len(OPERATIONS)} operations")


if __name__ == "__main__":
    main()
