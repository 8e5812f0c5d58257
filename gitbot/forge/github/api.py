"""The GitHub REST API through PyGithub, behind the few calls gitbot makes.

The client is pointed at `GITHUB_API_URL`, so GitHub Enterprise Server works as github.com does.
Secondary rate limits (a 403 or 429 with Retry-After or a rate-limit message, common when creating
content) are retried by PyGithub's `GithubRetry`; the waits are capped so a job is not parked for
long. PyGithub is imported lazily: `gitbot hook run` must start fast.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
import urllib.parse
import urllib.request
from typing import Any

from gitbot.forge.github import graphql as gql
from gitbot.forge.interface import (
    CheckRun,
    CommentData,
    ForgeError,
    IssueData,
    JobData,
    PullData,
    PullInfo,
    Reply,
    ReviewThread,
    Terms,
)
from gitbot.forge.triggers import REPLY_PATTERN, CommentTrigger
from gitbot.forge.web_links import WebLinks

# Retries for 403/429 rate limits and 5xx answers: at most this many, each wait at most this long.
RETRY_TOTAL = 5
SECONDARY_RATE_WAIT_SECONDS = 30.0
MAX_RATE_LIMIT_WAIT_SECONDS = 120.0
TIMEOUT_SECONDS = 30
# The job-log link expires after a minute, so it is fetched at once, with its own short timeout.
LOG_FETCH_TIMEOUT_SECONDS = 30
LOG_MAX_BYTES = 4 * 1024 * 1024  # the head of a log is dropped past this; failures are near the end
USER_AGENT = "gitbot"
CHECK_RUNS = 50
CREATE_PR_SETTING = "Allow GitHub Actions to create and approve pull requests"


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def connect(token: str, api_url: str) -> Any:
    from github import Auth, Github, GithubRetry

    retry = GithubRetry(
        total=RETRY_TOTAL,
        secondary_rate_wait=SECONDARY_RATE_WAIT_SECONDS,
        max_rate_limit_wait=MAX_RATE_LIMIT_WAIT_SECONDS,
        status_forcelist=[429, 502, 503, 504],
    )
    # PyGithub spaces requests out (0.25 s, and 1 s between writes) as GitHub asks integrators to, to
    # stay clear of secondary rate limits. An API on loopback is a local test server, not GitHub.
    polite = not _is_loopback(api_url)
    return Github(
        auth=Auth.Token(token),
        base_url=api_url.rstrip("/"),
        timeout=TIMEOUT_SECONDS,
        retry=retry,
        user_agent=USER_AGENT,
        per_page=100,
        seconds_between_requests=0.25 if polite else None,
        seconds_between_writes=1.0 if polite else None,
    )


def forge_error(exc: Exception, doing: str) -> ForgeError:
    status = getattr(exc, "status", None)
    data = getattr(exc, "data", None)
    message = data.get("message") if isinstance(data, dict) else None
    return ForgeError(f"{doing}: {status or ''} {message or exc}".replace("  ", " ").strip(), status)


# A pushed workflow runs with the repository's secrets, and pushing one needs the `workflows` permission,
# which the workflow token never has.
WORKFLOWS = ".github/workflows/"


def workflow_file(path: str) -> str | None:
    """Why gitbot does not push `path` (a workflow file), or None."""
    return "workflow files cannot be pushed with the workflow token" if path.startswith(WORKFLOWS) else None


class GitHubForge(WebLinks):
    """One repository (interface.Forge); every method is one or a few REST or GraphQL calls and returns
    plain data."""

    terms = Terms()

    def __init__(self, gh: Any, full_name: str, server_url: str = "https://github.com"):
        from github import GithubException

        self._exc = GithubException
        self.gh = gh
        self.full_name = full_name
        self.pages = f"{server_url.rstrip('/')}/{full_name}"  # WebLinks
        try:
            self.repo = gh.get_repo(full_name)
        except GithubException as exc:
            raise forge_error(exc, f"reading repository {full_name}") from None

    @property
    def default_branch(self) -> str:
        return self.repo.default_branch

    def permission(self, login: str) -> tuple[str | None, str | None]:
        """(permission, role_name) of a user; (None, None) when they are not a collaborator."""
        url = f"{self.repo.url}/collaborators/{urllib.parse.quote(login, safe='')}/permission"
        try:
            _, data = self.gh.requester.requestJsonAndCheck("GET", url)
        except self._exc as exc:
            if exc.status == 404:
                return None, None
            raise forge_error(exc, f"reading {login}'s permission") from None
        return data.get("permission"), data.get("role_name")

    def issue(self, number: int) -> IssueData:
        try:
            issue = self.repo.get_issue(number)
        except self._exc as exc:
            raise forge_error(exc, f"reading issue #{number}") from None
        return IssueData(
            number=issue.number,
            title=issue.title or "",
            body=issue.body or "",
            author=issue.user.login if issue.user else "",
            state=issue.state,
            labels=[label.name for label in issue.labels],
            html_url=issue.html_url,
            is_pull_request=issue.pull_request is not None,
        )

    def comments(self, number: int) -> list[CommentData]:
        try:
            return [
                CommentData(
                    id=c.id,
                    author=c.user.login if c.user else "",
                    author_type=c.user.type if c.user else "User",
                    body=c.body or "",
                    created_at=c.created_at,
                    updated_at=c.updated_at or c.created_at,
                )
                for c in self.repo.get_issue(number).get_comments()
            ]
        except self._exc as exc:
            raise forge_error(exc, f"reading the comments of #{number}") from None

    def label_added_at(
        self, number: int, label: str, actor: str, *, not_after: dt.datetime | None = None
    ) -> dt.datetime | None:
        """When `actor` added `label` to the issue in the event that started this run: the moment the
        task was approved, after which no comment counts.

        The issue's events do not say which webhook delivery they caused, and a run can wait in the
        queue (the concurrency group) while the same person removes and adds the label again. The
        event payload's issue snapshot was taken when its label was added, so its `updated_at`
        (`not_after`) is an upper bound: the latest matching label event not after it is the one that
        triggered this run. A later labelling never moves the approval time of an earlier run."""
        try:
            events = list(self.repo.get_issue(number).get_events())
        except self._exc as exc:
            raise forge_error(exc, f"reading the events of #{number}") from None
        times = [
            e.created_at
            for e in events
            if e.event == "labeled"
            and e.label is not None
            and e.label.name == label
            and e.actor is not None
            and e.actor.login == actor
            and (not_after is None or e.created_at <= not_after)
        ]
        return max(times) if times else None

    def failed_jobs(self, run_id: int) -> list[JobData]:
        try:
            jobs = list(self.repo.get_workflow_run(run_id).jobs("latest"))
        except self._exc as exc:
            raise forge_error(exc, f"listing the jobs of run {run_id}") from None
        failed = []
        for job in jobs:
            if job.conclusion not in ("failure", "timed_out"):
                continue
            steps = [s.name for s in (job.steps or []) if s.conclusion in ("failure", "timed_out")]
            failed.append(
                JobData(
                    id=job.id,
                    name=job.name,
                    conclusion=job.conclusion,
                    html_url=job.html_url,
                    failed_steps=steps,
                )
            )
        return failed

    def job_log(self, job_id: int) -> str:
        """A job's plain-text log. The API answers with a link that expires within a minute, to another
        host: it is fetched at once and without the token (which must never go to that host)."""
        try:
            # PyGithub's WorkflowJob.logs_url() does exactly this call; making it here saves a GET of the job.
            headers, _ = self.gh.requester.requestBlobAndCheck(
                "GET", f"{self.repo.url}/actions/jobs/{job_id}/logs"
            )
        except self._exc as exc:
            raise forge_error(exc, f"asking for the log of job {job_id}") from None
        link = headers.get("location")
        if not link:
            raise ForgeError(f"the log of job {job_id} has no download link (not finished yet?)")
        request = urllib.request.Request(link, headers={"User-Agent": USER_AGENT})
        try:
            with urllib.request.urlopen(request, timeout=LOG_FETCH_TIMEOUT_SECONDS) as response:
                length = int(response.headers.get("Content-Length") or 0)
                if length > LOG_MAX_BYTES:
                    response.read(length - LOG_MAX_BYTES)  # skip the head, keep the end
                data = response.read(LOG_MAX_BYTES)
        except OSError as exc:
            raise ForgeError(f"downloading the log of job {job_id}: {exc}") from None
        return data.decode("utf-8", "replace")

    # ---------------------------------------------------------------- pull requests and comments

    def open_pull(self, branch: str) -> PullData | None:
        try:
            pulls = list(self.repo.get_pulls(state="open", head=f"{self.repo.owner.login}:{branch}"))
        except self._exc as exc:
            raise forge_error(exc, f"looking for an open pull request from {branch}") from None
        return self._pull_data(pulls[0]) if pulls else None

    def create_pull(self, *, branch: str, base: str, title: str, body: str, draft: bool) -> PullData:
        try:
            pr = self.repo.create_pull(
                base=base, head=branch, title=title, body=body, draft=draft, maintainer_can_modify=False
            )
        except self._exc as exc:
            error = forge_error(exc, "opening the pull request")
            if error.status == 403:
                raise ForgeError(
                    f"{error}. GitHub refused to let this workflow open a pull request: enable "
                    f'"{CREATE_PR_SETTING}" in the repository\'s Settings → Actions → General '
                    "(or the organisation's), or pass a GitHub App token as github-token.",
                    403,
                ) from None
            raise error from None
        return self._pull_data(pr)

    def update_pull(self, number: int, *, title: str, body: str) -> PullData:
        try:
            # Editing needs only the number: a PATCH, without first spending a GET on the pull request.
            _, data = self.gh.requester.requestJsonAndCheck(
                "PATCH", f"{self.repo.url}/pulls/{number}", input={"title": title, "body": body}
            )
        except self._exc as exc:
            raise forge_error(exc, f"updating pull request #{number}") from None
        return PullData(
            number=data["number"],
            html_url=data["html_url"],
            draft=bool(data.get("draft")),
            head=data["head"]["ref"],
            base=data["base"]["ref"],
        )

    @staticmethod
    def _pull_data(pr: Any) -> PullData:
        return PullData(
            number=pr.number, html_url=pr.html_url, draft=bool(pr.draft), head=pr.head.ref, base=pr.base.ref
        )

    def upsert_comment(
        self, number: int, body: str, *, marker: str, existing: list[CommentData] | None = None
    ) -> str:
        """Edit gitbot's status comment on the issue (found by its marker), or create it. Returns its URL.

        Only comments written by a bot are candidates: anyone can paste the marker into a comment, and
        a comment gitbot cannot edit (403) is skipped in favour of a new one."""
        try:
            comments = existing if existing is not None else self.comments(number)
            candidates = [c for c in comments if marker in c.body and c.author_type == "Bot"]
            issues_url = f"{self.repo.url}/issues"
            for comment in reversed(candidates):
                try:
                    _, data = self.gh.requester.requestJsonAndCheck(
                        "PATCH", f"{issues_url}/comments/{comment.id}", input={"body": body}
                    )
                    return data.get("html_url", "")
                except self._exc as exc:
                    if exc.status not in (403, 404):
                        raise
            _, data = self.gh.requester.requestJsonAndCheck(
                "POST", f"{issues_url}/{number}/comments", input={"body": body}
            )
            return data.get("html_url", "")
        except self._exc as exc:
            raise forge_error(exc, f"writing the status comment on #{number}") from None

    # ---------------------------------------------------------------- a conversation on a pull request

    def _request(self, verb: str, url: str, doing: str, **kwargs: Any) -> tuple[dict, Any]:
        """One REST call through PyGithub's requester (retries, rate limits); a failure is a ForgeError."""
        try:
            return self.gh.requester.requestJsonAndCheck(verb, url, **kwargs)
        except self._exc as exc:
            raise forge_error(exc, doing) from None

    def graphql(self, query: str, variables: dict[str, Any], doing: str) -> dict[str, Any]:
        assert query in gql.QUERIES, "every GraphQL operation is one of graphql.py's constants"
        try:
            _, data = self.gh.requester.graphql_query(query, variables)
        except self._exc as exc:
            raise forge_error(exc, doing) from None
        return data.get("data") or {}

    def get_pull(self, number: int) -> PullInfo:
        _, data = self._request("GET", f"{self.repo.url}/pulls/{number}", f"reading pull request #{number}")
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

    def update_pull_body(self, number: int, body: str) -> None:
        url = f"{self.repo.url}/pulls/{number}"
        self._request("PATCH", url, f"updating pull request #{number}", input={"body": body})

    def review_threads(self, number: int) -> list[ReviewThread]:
        owner, name = self.full_name.split("/", 1)
        threads: list[ReviewThread] = []
        after = None
        for _ in range(gql.THREAD_PAGES):
            data = self.graphql(
                gql.REVIEW_THREADS_QUERY,
                {"owner": owner, "name": name, "number": number, "first": gql.THREADS_PER_PAGE, "after": after},
                f"reading the review threads of #{number}",
            )
            page, after = gql.threads_page(data)
            threads += page
            if after is None:
                break
        return threads

    def mark_ready(self, pull: PullInfo) -> None:
        data = self.graphql(
            gql.MARK_READY_MUTATION, {"id": pull.node_id}, "marking the pull request ready for review"
        )
        if gql.still_draft(data):
            raise ForgeError("marking the pull request ready for review: it is still a draft")

    def react(self, trigger: CommentTrigger) -> None:
        """👀 on the comment that asked: it was heard."""
        if trigger.kind == "pull_request_review":
            self.graphql(gql.ADD_EYES_MUTATION, {"subject": trigger.node_id}, "reacting to the review")
            return
        kind = "pulls" if trigger.kind == "pull_request_review_comment" else "issues"
        url = f"{self.repo.url}/{kind}/comments/{trigger.comment_id}/reactions"
        self._request("POST", url, "reacting to the comment", input={"content": "eyes"})

    def check_runs(self, sha: str) -> list[CheckRun]:
        url = f"{self.repo.url}/commits/{urllib.parse.quote(sha, safe='')}/check-runs"
        _, data = self._request(
            "GET", url, f"reading the checks of {sha[:12]}", parameters={"per_page": CHECK_RUNS}
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

    def find_reply(self, trigger: CommentTrigger) -> Reply | None:
        """gitbot's reply to this request, if one exists: then the request is taken (or answered). Only a
        bot's comment counts, since anyone can paste the marker."""
        in_thread = trigger.kind == "pull_request_review_comment"
        if in_thread:
            items = self._paged(f"{self.repo.url}/pulls/{trigger.number}/comments", "reading the review comments")
            candidates = [
                (c["id"], c.get("body") or "", (c.get("user") or {}).get("type", "User")) for c in items
            ]
        else:
            candidates = [(c.id, c.body, c.author_type) for c in self.comments(trigger.number)]
        for comment_id, body, author_type in candidates:
            match = REPLY_PATTERN.search(body)
            if match and match.group(1) == trigger.key and author_type == "Bot":
                return Reply(comment_id, match.group(2), in_thread)
        return None

    def write_reply(self, trigger: CommentTrigger, body: str, existing: Reply | None) -> Reply:
        """Edit gitbot's reply, or post it: in the line comment's thread, or on the issue or pull request."""
        run = REPLY_PATTERN.search(body)
        in_thread = trigger.kind == "pull_request_review_comment"
        base, doing = self.repo.url, f"replying on #{trigger.number}"
        if existing is not None:
            kind = "pulls" if existing.in_thread else "issues"
            self._request("PATCH", f"{base}/{kind}/comments/{existing.id}", doing, input={"body": body})
            return existing
        if in_thread:
            url = f"{base}/pulls/{trigger.number}/comments/{trigger.thread_id}/replies"
        else:
            url = f"{base}/issues/{trigger.number}/comments"
        _, data = self._request("POST", url, doing, input={"body": body})
        return Reply(data["id"], run.group(2) if run else "", in_thread)

    def _paged(self, url: str, doing: str, pages: int = 20) -> list[dict]:
        """The items of a paginated list, following the Link header (at most `pages` pages)."""
        items: list[dict] = []
        next_url: str | None = url
        params: dict[str, Any] | None = {"per_page": 100}
        for _ in range(pages):
            if next_url is None:
                break
            headers, data = self._request("GET", next_url, doing, parameters=params)
            items += data or []
            params = None  # the next link carries them
            match = re.search(r'<([^>]+)>;\s*rel="next"', headers.get("link", ""))
            next_url = match.group(1) if match else None
        return items

    def unpushable(self, path: str) -> str | None:
        return workflow_file(path)
