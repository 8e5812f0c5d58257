"""The GitHub calls of a conversation on a pull request (or an issue): the pull request, its review
threads, gitbot's replies, the 👀 reaction, ready-for-review and the checks of a commit.

REST where REST can, GraphQL where it cannot: the review threads' `isResolved` and marking a draft
ready for review exist only in GraphQL, and a review (unlike a comment) takes a reaction only
through GraphQL's `addReaction`. Every query is a constant below, so the tests validate exactly what
is sent against GitHub's published schema.
"""

from __future__ import annotations

import datetime as dt
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from gitbot.forge.event import CommentTrigger
from gitbot.forge.github import ForgeError, GitHubRepo, forge_error, parse_time

REPLY_MARKER = "<!-- gitbot:reply {key} run {run} -->"
REPLY_PATTERN = re.compile(r"<!-- gitbot:reply ([\w-]+) run (\d+) -->")
THREADS_PER_PAGE = 50
THREAD_PAGES = 5  # review threads are read THREADS_PER_PAGE at a time, up to this many pages
THREAD_COMMENTS = 30  # comments per thread (the first ones: the request and its discussion)
CHECK_RUNS = 50

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


@dataclass(frozen=True)
class PullInfo:
    number: int
    node_id: str
    title: str
    body: str
    state: str
    draft: bool
    author: str
    head_ref: str
    head_sha: str
    head_repository: str | None  # None when the fork was deleted
    base_ref: str
    html_url: str


@dataclass(frozen=True)
class ThreadComment:
    id: int | None
    author: str
    association: str
    body: str
    created_at: dt.datetime | None
    edited_at: dt.datetime | None
    review_id: int | None


@dataclass(frozen=True)
class ReviewThread:
    path: str
    line: int | None
    start_line: int | None
    outdated: bool
    resolved: bool
    diff_hunk: str
    comments: list[ThreadComment] = field(default_factory=list)


@dataclass(frozen=True)
class CheckRun:
    name: str
    status: str
    conclusion: str | None
    html_url: str
    summary: str
    job_id: int | None  # a GitHub Actions job (its log is readable); None for other apps


@dataclass(frozen=True)
class Reply:
    id: int
    run: str  # the workflow run that wrote it
    in_thread: bool  # a reply in a line comment's thread (a pull request review comment)


def _request(forge: GitHubRepo, verb: str, url: str, doing: str, **kwargs: Any) -> tuple[dict, Any]:
    """One REST call through PyGithub's requester (retries, rate limits); a failure is a ForgeError."""
    from github import GithubException

    try:
        return forge.gh.requester.requestJsonAndCheck(verb, url, **kwargs)
    except GithubException as exc:
        raise forge_error(exc, doing) from None


def _big_int(value: Any) -> int | None:
    """GraphQL's BigInt comes as a string (REST ids are the same numbers)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def get_pull(forge: GitHubRepo, number: int) -> PullInfo:
    _, data = _request(forge, "GET", f"{forge.repo.url}/pulls/{number}", f"reading pull request #{number}")
    head = data.get("head") or {}
    return PullInfo(
        number=data["number"],
        node_id=data.get("node_id", ""),
        title=data.get("title") or "",
        body=data.get("body") or "",
        state=data.get("state", ""),
        draft=bool(data.get("draft")),
        author=(data.get("user") or {}).get("login", ""),
        head_ref=head.get("ref", ""),
        head_sha=head.get("sha", ""),
        head_repository=(head.get("repo") or {}).get("full_name"),
        base_ref=(data.get("base") or {}).get("ref", ""),
        html_url=data.get("html_url", ""),
    )


def update_body(forge: GitHubRepo, number: int, body: str) -> None:
    url = f"{forge.repo.url}/pulls/{number}"
    _request(forge, "PATCH", url, f"updating pull request #{number}", input={"body": body})


def graphql(forge: GitHubRepo, query: str, variables: dict[str, Any], doing: str) -> dict[str, Any]:
    from github import GithubException

    assert query in QUERIES, "every GraphQL operation is one of the module's constants"
    try:
        _, data = forge.gh.requester.graphql_query(query, variables)
    except GithubException as exc:
        raise forge_error(exc, doing) from None
    return data.get("data") or {}


def review_threads(forge: GitHubRepo, number: int) -> list[ReviewThread]:
    owner, name = forge.full_name.split("/", 1)
    threads: list[ReviewThread] = []
    after = None
    for _ in range(THREAD_PAGES):
        data = graphql(
            forge,
            REVIEW_THREADS_QUERY,
            {"owner": owner, "name": name, "number": number, "first": THREADS_PER_PAGE, "after": after},
            f"reading the review threads of #{number}",
        )
        connection = (((data.get("repository") or {}).get("pullRequest") or {}).get("reviewThreads")) or {}
        for node in connection.get("nodes") or []:
            comments = [
                ThreadComment(
                    id=_big_int(c.get("fullDatabaseId")),
                    author=(c.get("author") or {}).get("login", "ghost"),
                    association=c.get("authorAssociation") or "NONE",
                    body=c.get("body") or "",
                    created_at=parse_time(c.get("createdAt")),
                    edited_at=parse_time(c.get("lastEditedAt")),
                    review_id=_big_int((c.get("pullRequestReview") or {}).get("fullDatabaseId")),
                )
                for c in ((node.get("comments") or {}).get("nodes") or [])
            ]
            first = ((node.get("comments") or {}).get("nodes") or [{}])[0] or {}
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
        if not page.get("hasNextPage"):
            break
        after = page.get("endCursor")
    return threads


def mark_ready(forge: GitHubRepo, node_id: str) -> None:
    data = graphql(forge, MARK_READY_MUTATION, {"id": node_id}, "marking the pull request ready for review")
    if ((data.get("markPullRequestReadyForReview") or {}).get("pullRequest") or {}).get("isDraft"):
        raise ForgeError("marking the pull request ready for review: it is still a draft")


def react(forge: GitHubRepo, trigger: CommentTrigger) -> None:
    """👀 on the comment that asked: it was heard."""
    if trigger.kind == "pull_request_review":
        graphql(forge, ADD_EYES_MUTATION, {"subject": trigger.node_id}, "reacting to the review")
        return
    kind = "pulls" if trigger.kind == "pull_request_review_comment" else "issues"
    url = f"{forge.repo.url}/{kind}/comments/{trigger.comment_id}/reactions"
    _request(forge, "POST", url, "reacting to the comment", input={"content": "eyes"})


def check_runs(forge: GitHubRepo, sha: str) -> list[CheckRun]:
    url = f"{forge.repo.url}/commits/{urllib.parse.quote(sha, safe='')}/check-runs"
    _, data = _request(
        forge, "GET", url, f"reading the checks of {sha[:12]}", parameters={"per_page": CHECK_RUNS}
    )
    runs = []
    for run in data.get("check_runs") or []:
        actions = ((run.get("app") or {}).get("slug")) == "github-actions"
        runs.append(
            CheckRun(
                name=run.get("name") or "",
                status=run.get("status") or "",
                conclusion=run.get("conclusion"),
                html_url=run.get("html_url") or "",
                summary=((run.get("output") or {}).get("summary")) or "",
                # For GitHub Actions a check run is a job, with the same id.
                job_id=run.get("id") if actions else None,
            )
        )
    return runs


# ---------------------------------------------------------------- gitbot's reply to a request


def reply_marker(trigger: CommentTrigger, run: str) -> str:
    return REPLY_MARKER.format(key=trigger.key, run=run)


def find_reply(forge: GitHubRepo, trigger: CommentTrigger) -> Reply | None:
    """gitbot's reply to this request, if one exists: then the request is taken (or answered). Only a
    bot's comment counts, since anyone can paste the marker."""
    in_thread = trigger.kind == "pull_request_review_comment"
    if in_thread:
        items = _paged(
            forge, f"{forge.repo.url}/pulls/{trigger.number}/comments", "reading the review comments"
        )
        candidates = [
            (c["id"], c.get("body") or "", (c.get("user") or {}).get("type", "User")) for c in items
        ]
    else:
        candidates = [(c.id, c.body, c.author_type) for c in forge.comments(trigger.number)]
    for comment_id, body, author_type in candidates:
        match = REPLY_PATTERN.search(body)
        if match and match.group(1) == trigger.key and author_type == "Bot":
            return Reply(comment_id, match.group(2), in_thread)
    return None


def write_reply(forge: GitHubRepo, trigger: CommentTrigger, body: str, existing: Reply | None) -> Reply:
    """Edit gitbot's reply, or post it: in the line comment's thread, or on the issue or pull request."""
    run = REPLY_PATTERN.search(body)
    in_thread = trigger.kind == "pull_request_review_comment"
    base, doing = forge.repo.url, f"replying on #{trigger.number}"
    if existing is not None:
        kind = "pulls" if existing.in_thread else "issues"
        _request(forge, "PATCH", f"{base}/{kind}/comments/{existing.id}", doing, input={"body": body})
        return existing
    if in_thread:
        url = f"{base}/pulls/{trigger.number}/comments/{trigger.thread_id}/replies"
    else:
        url = f"{base}/issues/{trigger.number}/comments"
    _, data = _request(forge, "POST", url, doing, input={"body": body})
    return Reply(data["id"], run.group(2) if run else "", in_thread)


def _paged(forge: GitHubRepo, url: str, doing: str, pages: int = 20) -> list[dict]:
    """The items of a paginated list, following the Link header (at most `pages` pages)."""
    items: list[dict] = []
    next_url: str | None = url
    params: dict[str, Any] | None = {"per_page": 100}
    for _ in range(pages):
        if next_url is None:
            break
        headers, data = _request(forge, "GET", next_url, doing, parameters=params)
        items += data or []
        params = None  # the next link carries them
        match = re.search(r'<([^>]+)>;\s*rel="next"', headers.get("link", ""))
        next_url = match.group(1) if match else None
    return items
