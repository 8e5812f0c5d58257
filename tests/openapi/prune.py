"""Regenerate github-rest-subset.json: the operations gitbot calls, cut out of GitHub's OpenAPI description.

    python tests/openapi/prune.py path/to/api.github.com.json

The input is `generated/api.github.com.json` of the npm package @octokit/openapi (GitHub's
rest-api-description plus an `x-octokit` extension). Kept: the listed operations with their
path-level parameters, and every component they reference, transitively. Dropped: response
`examples` (never used to validate, and GitHub's own examples do not always match the schemas)
and the `x-octokit` extension. Nothing else is changed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# (path, method): every REST call gitbot makes, and so every one the fake server answers.
OPERATIONS = (
    ("/repos/{owner}/{repo}", "get"),
    ("/repos/{owner}/{repo}/issues/{issue_number}", "get"),
    ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "get"),
    ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "post"),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}", "patch"),
    ("/repos/{owner}/{repo}/issues/{issue_number}/events", "get"),
    ("/repos/{owner}/{repo}/collaborators/{username}/permission", "get"),
    ("/repos/{owner}/{repo}/pulls", "get"),
    ("/repos/{owner}/{repo}/pulls", "post"),
    ("/repos/{owner}/{repo}/pulls/{pull_number}", "patch"),
    ("/repos/{owner}/{repo}/actions/runs/{run_id}", "get"),
    ("/repos/{owner}/{repo}/actions/runs/{run_id}/jobs", "get"),
    ("/repos/{owner}/{repo}/actions/jobs/{job_id}/logs", "get"),
    # The conversation on a pull request (gitbot/forge/github/api.py).
    ("/repos/{owner}/{repo}/pulls/{pull_number}", "get"),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/comments", "get"),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies", "post"),
    ("/repos/{owner}/{repo}/pulls/comments/{comment_id}", "patch"),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", "post"),
    ("/repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions", "post"),
    ("/repos/{owner}/{repo}/commits/{ref}/check-runs", "get"),
)
OUTPUT = Path(__file__).with_name("github-rest-subset.json")


def _without_examples(node):
    if isinstance(node, dict):
        return {k: _without_examples(v) for k, v in node.items() if k not in ("examples", "x-octokit")}
    if isinstance(node, list):
        return [_without_examples(v) for v in node]
    return node


def _refs(node, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref)
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def prune(spec: dict) -> dict:
    paths: dict = {}
    for path, method in OPERATIONS:
        item = spec["paths"][path]
        kept = paths.setdefault(path, {k: v for k, v in item.items() if k == "parameters"})
        kept[method] = item[method]
    paths = _without_examples(paths)

    components: dict = {}
    pending: set[str] = set()
    _refs(paths, pending)
    done: set[str] = set()
    while pending:
        ref = pending.pop()
        if ref in done:
            continue
        done.add(ref)
        _, _, kind, name = ref.split("/", 3)  # "#/components/<kind>/<name>"
        node = _without_examples(spec["components"][kind][name])
        components.setdefault(kind, {})[name] = node
        _refs(node, pending)
    components = {kind: dict(sorted(items.items())) for kind, items in sorted(components.items())}
    return {
        "openapi": spec["openapi"],
        "info": spec["info"],
        "servers": spec["servers"],
        "paths": paths,
        "components": components,
    }


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    OUTPUT.write_text(json.dumps(prune(spec), indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {OUTPUT} ({OUTPUT.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
