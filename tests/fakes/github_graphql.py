"""GitHub's GraphQL endpoint for the fake GitHub: every query parsed, validated and executed for real.

PyGithub posts `{"query", "variables"}` to `/api/graphql` (GitHub Enterprise style, beside
`/api/v3`). The query is parsed and validated by graphql-core against tests/openapi/
github-graphql-subset.graphql, the fields gitbot uses cut out of GitHub's published schema; an
operation that names a field, argument or type GitHub does not have is answered as GitHub answers it
(200 with `errors`) and recorded in the fake's `violations`. A valid one is executed against the
fake's state: the resolvers below are plain dicts and functions over it, so the answer has exactly
the shape the schema allows (non-null fields, enums, interfaces resolved by `__typename`).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakes.github_api import FakeGitHub

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "openapi" / "github-graphql-subset.graphql"
GRAPHQL_PATH = "/api/graphql"
WRITE_ROLES = {"admin", "maintain", "write"}

_lock = threading.Lock()
_schema: Any = None


def schema() -> Any:
    global _schema
    with _lock:
        if _schema is None:
            from graphql import build_schema

            _schema = build_schema(SCHEMA_PATH.read_text(encoding="utf-8"))
        return _schema


def check(query: str) -> list[str]:
    """What is wrong with an operation against GitHub's schema (empty: nothing)."""
    from graphql import GraphQLError, parse, validate

    try:
        document = parse(query)
    except GraphQLError as exc:
        return [f"syntax: {exc.message}"]
    return [error.message for error in validate(schema(), document)]


def answer(fake: FakeGitHub, body: Any) -> tuple[int, dict[str, Any]]:
    from graphql import execute, parse

    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        fake.violations.append("POST /graphql: the body is not {query, variables}")
        return 400, {"message": "Problems parsing JSON"}
    problems = check(body["query"])
    if problems:
        fake.violations.append(f"POST /graphql: {'; '.join(problems)}")
        return 200, {"errors": [{"message": p} for p in problems]}
    result = execute(
        schema(),
        parse(body["query"]),
        root_value=Root(fake),
        variable_values=body.get("variables") or {},
    )
    payload: dict[str, Any] = {"data": result.data}
    if result.errors:
        payload["errors"] = [
            {
                "message": e.message,
                "type": "NOT_FOUND" if "not found" in e.message.lower() else "UNPROCESSABLE",
            }
            for e in result.errors
        ]
    return 200, payload


class Root:
    """The query and mutation roots, over the fake's state (graphql-core calls a callable field with
    the field's arguments)."""

    def __init__(self, fake: FakeGitHub):
        self.fake = fake

    # -- queries
    def repository(self, info: Any, owner: str, name: str, followRenames: bool = True) -> Any:
        if f"{owner}/{name}" != self.fake.full_name:
            return None
        return {"pullRequest": lambda info, number: self._pull(number)}

    def _pull(self, number: int) -> dict[str, Any] | None:
        pr = self.fake.pull(number)
        if pr is None:
            return None
        return {
            "id": pr.node_id,
            "number": pr.number,
            "isDraft": pr.draft,
            "reviewThreads": lambda info, **page: _page(self._threads(pr), page),
        }

    def _threads(self, pr) -> list[dict[str, Any]]:
        fake = self.fake
        roots = [c for c in fake.review_comments if c.pull == pr.number and c.in_reply_to is None]
        threads = []
        for root in roots:
            comments = [root] + [c for c in fake.review_comments if c.in_reply_to == root.id]
            threads.append(
                {
                    "isResolved": root.id in fake.resolved_threads,
                    "isOutdated": False,
                    "path": root.path,
                    "line": root.line,
                    "startLine": root.start_line,
                    "comments": lambda info, comments=comments, **page: _page(
                        [self._comment(c) for c in comments], page
                    ),
                }
            )
        return threads

    def _comment(self, c) -> dict[str, Any]:
        from tests.fakes.github_api import iso

        fake = self.fake
        kind = fake.user_types.get(c.author, "Bot" if c.author.endswith("[bot]") else "User")
        return {
            "fullDatabaseId": str(c.id),
            "body": c.body,
            "createdAt": iso(c.created_at),
            "lastEditedAt": iso(c.updated_at) if c.updated_at != c.created_at else None,
            "diffHunk": c.diff_hunk,
            "authorAssociation": "COLLABORATOR" if fake.permissions.get(c.author) in WRITE_ROLES else "NONE",
            "author": {
                "__typename": kind,
                "login": c.author.removesuffix("[bot]") if kind == "Bot" else c.author,
            },
            "pullRequestReview": {"fullDatabaseId": str(c.review_id)} if c.review_id else None,
        }

    # -- mutations
    def markPullRequestReadyForReview(self, info: Any, input: dict[str, Any]) -> dict[str, Any]:
        fake = self.fake
        pr = next((p for p in fake.pulls if p.node_id == input["pullRequestId"]), None)
        if pr is None:
            raise ValueError(f"Could not resolve to a node with the global id of '{input['pullRequestId']}'")
        if fake.forbid_ready_for_review:
            raise ValueError("Resource not accessible by integration")
        pr.draft = False
        fake.ready_for_review.append(pr.number)
        return {"pullRequest": self._pull(pr.number)}

    def addReaction(self, info: Any, input: dict[str, Any]) -> dict[str, Any]:
        fake = self.fake
        review = next((r for r in fake.reviews if r.node_id == input["subjectId"]), None)
        if review is None:
            raise ValueError(f"Could not resolve to a node with the global id of '{input['subjectId']}'")
        fake.reactions.append(("review", review.id, input["content"].lower(), fake.bot_login))
        return {"reaction": {"content": input["content"]}}


def _page(items: list[Any], page: dict[str, Any]) -> dict[str, Any]:
    """A connection: `first` items after the cursor `after` (the cursor is the index, as a string)."""
    start = int(page.get("after") or 0)
    first = page.get("first") or 100
    chunk = items[start : start + first]
    end = start + len(chunk)
    return {
        "nodes": chunk,
        "pageInfo": {"hasNextPage": end < len(items), "endCursor": str(end) if chunk else None},
    }
