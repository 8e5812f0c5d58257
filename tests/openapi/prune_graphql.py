"""Regenerate github-graphql-subset.graphql: the GraphQL fields gitbot uses, cut out of GitHub's schema.

    python tests/openapi/prune_graphql.py path/to/schema.graphql

The input is `schema.graphql` of the npm package @octokit/graphql-schema (GitHub's public GraphQL
schema, as GitHub publishes it). Kept: exactly the object and interface fields listed in `KEEP`,
with their arguments and descriptions unchanged; every input object, enum and scalar those fields
and arguments name, whole; interfaces an object implements, when they are kept too. Nothing else.
The fake GitHub validates every query gitbot sends against the result and executes it (graphql-core).
"""

from __future__ import annotations

import sys
from pathlib import Path

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    build_schema,
    print_schema,
)

# type -> the fields gitbot's queries select (gitbot/forge/github/graphql.py).
KEEP = {
    "Query": ["repository"],
    "Mutation": ["markPullRequestReadyForReview", "addReaction"],
    "Repository": ["pullRequest"],
    "PullRequest": ["id", "number", "isDraft", "reviewThreads"],
    "PullRequestReviewThreadConnection": ["nodes", "pageInfo"],
    "PageInfo": ["hasNextPage", "endCursor"],
    "PullRequestReviewThread": ["isResolved", "isOutdated", "path", "line", "startLine", "comments"],
    "PullRequestReviewCommentConnection": ["nodes", "pageInfo"],
    "PullRequestReviewComment": [
        "fullDatabaseId",
        "body",
        "createdAt",
        "lastEditedAt",
        "diffHunk",
        "authorAssociation",
        "author",
        "pullRequestReview",
    ],
    "PullRequestReview": ["fullDatabaseId"],
    "Actor": ["login"],
    "User": ["login"],  # what an author is (Actor is an interface)
    "Bot": ["login"],
    "MarkPullRequestReadyForReviewPayload": ["pullRequest"],
    "AddReactionPayload": ["reaction"],
    "Reaction": ["content"],
}
OUTPUT = Path(__file__).with_name("github-graphql-subset.graphql")
SOURCE = "@octokit/graphql-schema 15.26.1, schema.graphql"


def prune(sdl: str) -> str:
    # GitHub's published schema defines a few fields twice (EnterpriseOwnerInfo), which strict SDL
    # validation rejects; none of them is kept.
    full = build_schema(sdl, assume_valid_sdl=True)
    made: dict[str, object] = {}

    def mapped(kind):
        if isinstance(kind, GraphQLNonNull):
            return GraphQLNonNull(mapped(kind.of_type))
        if isinstance(kind, GraphQLList):
            return GraphQLList(mapped(kind.of_type))
        return named(kind.name)

    def named(name: str):
        if name in made:
            return made[name]
        kind = full.get_type(name)
        if isinstance(kind, GraphQLScalarType):
            if name in ("String", "Int", "Float", "Boolean", "ID"):
                made[name] = kind
            else:
                made[name] = GraphQLScalarType(name, description=kind.description)
        elif isinstance(kind, GraphQLEnumType):
            made[name] = GraphQLEnumType(name, kind.values, description=kind.description)
        elif isinstance(kind, GraphQLInputObjectType):
            made[name] = GraphQLInputObjectType(
                name,
                lambda k=kind: {
                    n: GraphQLInputField(
                        mapped(f.type), description=f.description, default_value=f.default_value
                    )
                    for n, f in k.fields.items()
                },
                description=kind.description,
            )
        elif isinstance(kind, (GraphQLObjectType, GraphQLInterfaceType)):
            if name not in KEEP:
                raise SystemExit(f"{name} is reached by a kept field but not listed in KEEP")
            cls = GraphQLObjectType if isinstance(kind, GraphQLObjectType) else GraphQLInterfaceType
            made[name] = cls(
                name,
                lambda k=kind: {n: field(k.fields[n]) for n in KEEP[k.name]},
                interfaces=lambda k=kind: [named(i.name) for i in k.interfaces if i.name in KEEP],
                description=kind.description,
            )
        else:
            raise SystemExit(f"{name}: a {type(kind).__name__} is not expected here")
        return made[name]

    def field(f: GraphQLField) -> GraphQLField:
        args = {
            n: GraphQLArgument(mapped(a.type), default_value=a.default_value, description=a.description)
            for n, a in f.args.items()
        }
        return GraphQLField(
            mapped(f.type), args=args, description=f.description, deprecation_reason=f.deprecation_reason
        )

    schema = GraphQLSchema(
        query=named("Query"), mutation=named("Mutation"), types=[named("User"), named("Bot")]
    )
    header = (
        f"# Cut out of GitHub's public GraphQL schema ({SOURCE}) by tests/openapi/prune_graphql.py:\n"
        "# only the fields gitbot's queries use. Regenerate with that script; do not edit by hand.\n\n"
    )
    return header + print_schema(schema) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    text = prune(Path(argv[1]).read_text(encoding="utf-8"))
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
