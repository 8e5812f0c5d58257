"""What gitbot asks GitHub's GraphQL API, and how the answers read.

GraphQL where REST cannot: the review threads' `isResolved` and marking a draft ready for review exist
only in GraphQL, and a review (unlike a comment) takes a reaction only through `addReaction`. Every
operation is a constant below, so the tests validate exactly what is sent against GitHub's published
schema; api.py sends them.
"""

from __future__ import annotations

from typing import Any

from gitbot.forge.interface import ReviewThread, ThreadComment, parse_time

THREADS_PER_PAGE = 50
THREAD_PAGES = 5  # review threads are read THREADS_PER_PAGE at a time, up to this many pages
THREAD_COMMENTS = 30  # comments per thread (the first ones: the request and its discussion)

REVIEW_THREADS_QUERY = """
query ReviewThreads($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: $first, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          isResolved
          isOutdated
          path
          line
          startLine
          comments(first: 30) {
            nodes {
              fullDatabaseId
              body
              createdAt
              lastEditedAt
              diffHunk
              authorAssociation
              author { login }
              pullRequestReview { fullDatabaseId }
            }
          }
        }
      }
    }
  }
}
"""
MARK_READY_MUTATION = """
mutation MarkReady($id: ID!) {
  markPullRequestReadyForReview(input: {pullRequestId: $id}) {
    pullRequest { isDraft }
  }
}
"""
ADD_EYES_MUTATION = """
mutation AddEyes($subject: ID!) {
  addReaction(input: {subjectId: $subject, content: EYES}) {
    reaction { content }
  }
}
"""
QUERIES = (REVIEW_THREADS_QUERY, MARK_READY_MUTATION, ADD_EYES_MUTATION)


def big_int(value: Any) -> int | None:
    """GraphQL's BigInt comes as a string (REST ids are the same numbers)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def threads_page(data: dict[str, Any]) -> tuple[list[ReviewThread], str | None]:
    """One page of REVIEW_THREADS_QUERY's answer: its threads, and the cursor of the next page (None:
    the last one)."""
    connection = (((data.get("repository") or {}).get("pullRequest") or {}).get("reviewThreads")) or {}
    threads = []
    for node in connection.get("nodes") or []:
        nodes = (node.get("comments") or {}).get("nodes") or []
        comments = [
            ThreadComment(
                id=big_int(c.get("fullDatabaseId")),
                author=(c.get("author") or {}).get("login", "ghost"),
                association=c.get("authorAssociation") or "NONE",
                body=c.get("body") or "",
                created_at=parse_time(c.get("createdAt")),
                edited_at=parse_time(c.get("lastEditedAt")),
                review_id=big_int((c.get("pullRequestReview") or {}).get("fullDatabaseId")),
            )
            for c in nodes
        ]
        first = (nodes or [{}])[0] or {}
        threads.append(
            ReviewThread(
                path=node.get("path") or "",
                line=node.get("line"),
                start_line=node.get("startLine"),
                outdated=bool(node.get("isOutdated")),
                resolved=bool(node.get("isResolved")),
                diff_hunk=first.get("diffHunk") or "",
                comments=comments,
            )
        )
    page = connection.get("pageInfo") or {}
    return threads, page.get("endCursor") if page.get("hasNextPage") else None


def still_draft(data: dict[str, Any]) -> bool:
    """MARK_READY_MUTATION's answer says the pull request is still a draft."""
    return bool(((data.get("markPullRequestReadyForReview") or {}).get("pullRequest") or {}).get("isDraft"))
