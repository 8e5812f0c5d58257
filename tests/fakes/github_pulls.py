"""The pull-request conversation side of the fake GitHub: line comments and their threads, reviews,
reactions, check runs, and the webhook payloads of `issue_comment`, `pull_request_review_comment` and
`pull_request_review` as the runner writes them to GITHUB_EVENT_PATH.

A mixin of FakeGitHub (tests/fakes/github_api.py): the state lives on the fake, the REST routes are
listed in `pull_routes`, and every request is validated against the OpenAPI subset before it gets
here. Diff hunks are computed from the fake's real bare repository with `git diff`, as GitHub shows
them in a line comment.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
import subprocess
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.loopback import utcnow


@dataclass
class ReviewComment:
    id: int
    pull: int
    body: str
    author: str
    path: str
    line: int | None
    start_line: int | None
    diff_hunk: str
    commit_id: str
    in_reply_to: int | None = None
    review_id: int | None = None
    author_type: str = "User"
    created_at: dt.datetime = field(default_factory=utcnow)
    updated_at: dt.datetime = field(default_factory=utcnow)

    @property
    def node_id(self) -> str:
        return f"PRRC_{self.id}"


@dataclass
class Review:
    id: int
    pull: int
    body: str
    author: str
    state: str
    commit_id: str
    submitted_at: dt.datetime = field(default_factory=utcnow)

    @property
    def node_id(self) -> str:
        return f"PRR_{self.id}"


class PullsMixin:
    """State and routes for conversations; FakeGitHub.__init__ calls `_init_pulls`."""

    def _init_pulls(self) -> None:
        self.review_comments: list[ReviewComment] = []
        self.reviews: list[Review] = []
        self.reactions: list[tuple[str, int, str, str]] = []  # (kind, id, content, user)
        self.resolved_threads: set[int] = set()  # ids of first comments of resolved threads
        self.check_runs: dict[str, list[dict[str, Any]]] = {}  # head sha -> check runs
        self.ready_for_review: list[int] = []
        self.forbid_ready_for_review = False  # GraphQL answers "Resource not accessible by integration"

    # ---------------------------------------------------------------- setting up

    def add_pull(
        self,
        head: str,
        *,
        title: str = "A change",
        body: str = "",
        base: str | None = None,
        author: str = "maria",
        draft: bool = False,
        head_repository: str | None = None,
        head_sha: str | None = None,
    ):
        """A pull request someone opened (gitbot's own are opened through the API); a fork's names its
        repository and head commit."""
        from tests.fakes.github_api import PullRequest

        pr = PullRequest(
            self.next_number(),
            title,
            body,
            head,
            base or self.default_branch,
            draft,
            author,
            head_repository=head_repository,
            head_sha=head_sha,
        )
        self.pulls.append(pr)
        return pr

    def add_check_run(
        self, sha: str, name: str, *, conclusion: str, job_id: int | None = None
    ) -> dict[str, Any]:
        run = {
            "id": job_id or next(self._ids),
            "name": name,
            "status": "completed",
            "conclusion": conclusion,
            "head_sha": sha,
            "html_url": f"{self.server_url}/{self.full_name}/runs/{job_id}",
            "app": {"slug": "github-actions" if job_id else "other-ci"},
        }
        self.check_runs.setdefault(sha, []).append(run)
        return run

    # ---------------------------------------------------------------- webhook payloads

    def comment_event(
        self, number: int, body: str, *, author: str, at: dt.datetime | None = None
    ) -> dict[str, Any]:
        """A new comment on an issue or a pull request; the `issue_comment`/`created` payload."""
        comment = self.add_comment(number, body, author=author, created_at=at)
        pr = self.pull(number)
        issue = self.issue_json(self.issues[number]) if pr is None else self.pull_as_issue_json(pr)
        return {
            "action": "created",
            "issue": issue,
            "comment": self.comment_json(comment),
            "repository": self.repo_json(),
            "sender": self.user_json(author),
        }

    def review_comment_event(
        self,
        number: int,
        body: str,
        *,
        author: str,
        path: str,
        line: int,
        start_line: int | None = None,
        in_reply_to: int | None = None,
        at: dt.datetime | None = None,
    ) -> dict[str, Any]:
        """A comment on lines of a pull request's diff; the `pull_request_review_comment`/`created` payload.
        (GitHub wraps a lone line comment in a review of its own, as here.)"""
        pr = self.pull(number)
        review = self._add_review(pr, "", author, "commented", at)
        comment = self._add_review_comment(
            pr, body, author, path, line, start_line, in_reply_to, review.id, at
        )
        return {
            "action": "created",
            "comment": self.review_comment_json(comment),
            "pull_request": self.pull_json(pr),
            "repository": self.repo_json(),
            "sender": self.user_json(author),
        }

    def review_event(
        self,
        number: int,
        body: str,
        *,
        author: str,
        comments: list[tuple[str, int, str]] = (),
        state: str = "changes_requested",
        at: dt.datetime | None = None,
    ) -> dict[str, Any]:
        """A submitted review with a body and line comments (path, line, text); the
        `pull_request_review`/`submitted` payload."""
        pr = self.pull(number)
        review = self._add_review(pr, body, author, state, at)
        for path, line, text in comments:  # drafted before the review was submitted, at the latest then
            self._add_review_comment(pr, text, author, path, line, None, None, review.id, review.submitted_at)
        return {
            "action": "submitted",
            "review": self.review_json(review),
            "pull_request": self.pull_json(pr),
            "repository": self.repo_json(),
            "sender": self.user_json(author),
        }

    def _add_review(self, pr, body: str, author: str, state: str, at: dt.datetime | None) -> Review:
        review = Review(
            next(self._ids), pr.number, body, author, state.upper(), self.head_sha(pr), at or utcnow()
        )
        self.reviews.append(review)
        return review

    def _add_review_comment(
        self, pr, body, author, path, line, start_line, in_reply_to, review_id, at, author_type="User"
    ) -> ReviewComment:
        sha = self.head_sha(pr)
        hunk = self.diff_hunk(pr, path, line) if in_reply_to is None else self._comment(in_reply_to).diff_hunk
        created = at or utcnow()
        comment = ReviewComment(
            next(self._ids),
            pr.number,
            body,
            author,
            path,
            line,
            start_line,
            hunk,
            sha,
            in_reply_to,
            review_id,
            author_type,
            created,
            created,
        )
        with self._lock:
            self.review_comments.append(comment)
        return comment

    def diff_hunk(self, pr, path: str, line: int) -> str:
        """The hunk of the pull request's diff holding `line` of the new file, up to that line (what
        GitHub puts in a line comment's `diff_hunk`)."""
        base, head = self.branch_sha(pr.base), self.head_sha(pr)
        diff = subprocess.run(
            ["git", "-C", str(self.bare_repo), "diff", f"{base}...{head}", "--", path],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        hunk: list[str] = []
        for text in diff.splitlines():
            header = re.match(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", text)
            if header:
                start, count = int(header.group(1)), int(header.group(2) or 1)
                hunk = [text] if start <= line < start + max(count, 1) else []
                new_line = start - 1
                continue
            if hunk:
                hunk.append(text)
                if not text.startswith("-"):
                    new_line += 1
                if new_line >= line:
                    return "\n".join(hunk)
        return "\n".join(hunk) or f"@@ -{line},1 +{line},1 @@"

    def commit_as_someone(self, branch: str, message: str = "A person's commit") -> str:
        """A commit on `branch` in the bare repository, as if someone pushed it (same tree, new commit)."""
        env = {
            "GIT_AUTHOR_NAME": "Maria",
            "GIT_AUTHOR_EMAIL": "maria@example.invalid",
            "GIT_COMMITTER_NAME": "Maria",
            "GIT_COMMITTER_EMAIL": "maria@example.invalid",
            "PATH": "/usr/bin:/bin",
        }
        tip = self.branch_sha(branch)
        git = ["git", "-C", str(self.bare_repo)]
        sha = subprocess.run(
            [*git, "commit-tree", f"{tip}^{{tree}}", "-p", tip, "-m", message],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        subprocess.run([*git, "update-ref", f"refs/heads/{branch}", sha, tip], check=True)
        return sha

    # ---------------------------------------------------------------- reading state

    def pull(self, number: int):
        return next((p for p in self.pulls if p.number == number), None)

    def head_sha(self, pr) -> str:
        return pr.head_sha or self.branch_sha(pr.head) or "0" * 40

    def _comment(self, comment_id: int) -> ReviewComment | None:
        return next((c for c in self.review_comments if c.id == comment_id), None)

    def replies_in_thread(self, root_id: int) -> list[ReviewComment]:
        return [c for c in self.review_comments if c.in_reply_to == root_id]

    def reactions_on(self, kind: str, item_id: int) -> list[str]:
        return [content for k, i, content, _ in self.reactions if k == kind and i == item_id]

    # ---------------------------------------------------------------- JSON

    def review_comment_json(self, c: ReviewComment) -> dict[str, Any]:
        from tests.fakes.github_api import iso

        base = f"{self.api_url}/repos/{self.full_name}"
        data = {
            "id": c.id,
            "node_id": c.node_id,
            "url": f"{base}/pulls/comments/{c.id}",
            "pull_request_review_id": c.review_id,
            "diff_hunk": c.diff_hunk,
            "path": c.path,
            "position": c.line,
            "original_position": c.line,
            "commit_id": c.commit_id,
            "original_commit_id": c.commit_id,
            "user": self.user_json(c.author),
            "body": c.body,
            "created_at": iso(c.created_at),
            "updated_at": iso(c.updated_at),
            "html_url": f"{self.server_url}/{self.full_name}/pull/{c.pull}#discussion_r{c.id}",
            "pull_request_url": f"{base}/pulls/{c.pull}",
            "author_association": "COLLABORATOR" if c.author in self.permissions else "NONE",
            "_links": {
                "self": {"href": f"{base}/pulls/comments/{c.id}"},
                "html": {"href": f"{self.server_url}/{self.full_name}/pull/{c.pull}#discussion_r{c.id}"},
                "pull_request": {"href": f"{base}/pulls/{c.pull}"},
            },
            "line": c.line,
            "original_line": c.line,
            "side": "RIGHT",
            "start_line": c.start_line,
            "original_start_line": c.start_line,
            "start_side": "RIGHT" if c.start_line else None,
        }
        if c.in_reply_to is not None:
            data["in_reply_to_id"] = c.in_reply_to
        return data

    def review_json(self, r: Review) -> dict[str, Any]:
        from tests.fakes.github_api import iso

        return {
            "id": r.id,
            "node_id": r.node_id,
            "user": self.user_json(r.author),
            "body": r.body,
            "state": r.state.lower(),
            "html_url": f"{self.server_url}/{self.full_name}/pull/{r.pull}#pullrequestreview-{r.id}",
            "pull_request_url": f"{self.api_url}/repos/{self.full_name}/pulls/{r.pull}",
            "submitted_at": iso(r.submitted_at),
            "commit_id": r.commit_id,
            "author_association": "COLLABORATOR" if r.author in self.permissions else "NONE",
        }

    def pull_as_issue_json(self, pr) -> dict[str, Any]:
        """A pull request seen through the issues API (and in `issue_comment` payloads)."""
        from tests.fakes.github_api import Issue

        data = self.issue_json(Issue(pr.number, pr.title, pr.body, pr.author, [], pr.created_at, pr.state))
        data["pull_request"] = {
            "url": f"{self.api_url}/repos/{self.full_name}/pulls/{pr.number}",
            "html_url": f"{self.server_url}/{self.full_name}/pull/{pr.number}",
            "diff_url": f"{self.server_url}/{self.full_name}/pull/{pr.number}.diff",
            "patch_url": f"{self.server_url}/{self.full_name}/pull/{pr.number}.patch",
        }
        return data

    # ---------------------------------------------------------------- answering

    def pull_routes(self, repo: str) -> list[tuple[str, str, Any]]:
        return [
            (repo + r"/pulls/(\d+)", "GET", self._get_pull),
            (repo + r"/pulls/(\d+)/comments", "GET", self._list_review_comments),
            (repo + r"/pulls/(\d+)/comments/(\d+)/replies", "POST", self._reply_review_comment),
            (repo + r"/pulls/comments/(\d+)", "PATCH", self._update_review_comment),
            (repo + r"/issues/comments/(\d+)/reactions", "POST", self._react_issue_comment),
            (repo + r"/pulls/comments/(\d+)/reactions", "POST", self._react_review_comment),
            (repo + r"/commits/([^/]+)/check-runs", "GET", self._list_check_runs),
        ]

    def _get_pull(self, rec, number: str):
        pr = self.pull(int(number))
        return (200, {}, self.pull_json(pr)) if pr else (404, {}, {"message": "Not Found"})

    def _list_review_comments(self, rec, number: str):
        items = [self.review_comment_json(c) for c in self.review_comments if c.pull == int(number)]
        return self._paginate(rec, items)

    def _reply_review_comment(self, rec, number: str, comment_id: str):
        target = self._comment(int(comment_id))
        if target is None or target.pull != int(number):
            return 404, {}, {"message": "Not Found"}
        if target.in_reply_to is not None:  # GitHub: replies to replies are not supported
            return 422, {}, {"message": "Validation Failed", "errors": ["in_reply_to is a reply"]}
        pr = self.pull(int(number))
        reply = self._add_review_comment(
            pr,
            rec.body["body"],
            self.bot_login,
            target.path,
            target.line,
            target.start_line,
            target.id,
            target.review_id,
            None,
            author_type="Bot",
        )
        return 201, {}, self.review_comment_json(reply)

    def _update_review_comment(self, rec, comment_id: str):
        comment = self._comment(int(comment_id))
        if comment is None:
            return 404, {}, {"message": "Not Found"}
        if comment.author != self.bot_login:
            return 403, {}, {"message": "Resource not accessible by integration"}
        comment.body = rec.body["body"]
        comment.updated_at = utcnow()
        return 200, {}, self.review_comment_json(comment)

    def _reaction(self, kind: str, item_id: int, content: str):
        self.reactions.append((kind, item_id, content, self.bot_login))
        reaction = {
            "id": next(self._ids),
            "node_id": "REA_" + secrets.token_hex(4),
            "user": self.user_json(self.bot_login),
            "content": content,
            "created_at": "2026-01-01T00:00:00Z",
        }
        return 201, {}, reaction

    def _react_issue_comment(self, rec, comment_id: str):
        if not any(c.id == int(comment_id) for c in self.comments):
            return 404, {}, {"message": "Not Found"}
        return self._reaction("issue_comment", int(comment_id), rec.body["content"])

    def _react_review_comment(self, rec, comment_id: str):
        if self._comment(int(comment_id)) is None:
            return 404, {}, {"message": "Not Found"}
        return self._reaction("review_comment", int(comment_id), rec.body["content"])

    def _list_check_runs(self, rec, ref: str):
        runs = self.check_runs.get(ref, [])
        full = [
            {
                **run,
                "node_id": f"CR_{run['id']}",
                "external_id": "",
                "url": f"{self.api_url}/repos/{self.full_name}/check-runs/{run['id']}",
                "details_url": run["html_url"],
                "started_at": "2026-01-01T00:00:00Z",
                "completed_at": "2026-01-01T00:01:00Z",
                "output": {
                    "title": None,
                    "summary": None,
                    "text": None,
                    "annotations_count": 0,
                    "annotations_url": f"{self.api_url}/repos/{self.full_name}/check-runs/{run['id']}/annotations",
                },
                "check_suite": {"id": 5151},
                "app": {
                    **run["app"],
                    "id": 15368,
                    "node_id": "A_1",
                    "name": run["app"]["slug"],
                    "owner": self.user_json("github"),
                    "description": "",
                    "external_url": "",
                    "html_url": "",
                    "created_at": "2026-01-01T00:00:00Z",
                    "updated_at": "2026-01-01T00:00:00Z",
                    "permissions": {},
                    "events": [],
                },
                "pull_requests": [],
            }
            for run in runs
        ]
        return 200, {}, {"total_count": len(full), "check_runs": full}
