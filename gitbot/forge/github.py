"""The GitHub REST API through PyGithub, behind the few calls gitbot makes.

The client is pointed at `GITHUB_API_URL`, so GitHub Enterprise Server works as github.com does.
Secondary rate limits (a 403 or 429 with Retry-After or a rate-limit message, common when creating
content) are retried by PyGithub's `GithubRetry`; the waits are capped so a job is not parked for
long. PyGithub is imported lazily: `gitbot hook run` must start fast.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

# Retries for 403/429 rate limits and 5xx answers: at most this many, each wait at most this long.
RETRY_TOTAL = 5
SECONDARY_RATE_WAIT_SECONDS = 30.0
MAX_RATE_LIMIT_WAIT_SECONDS = 120.0
TIMEOUT_SECONDS = 30
# The job-log link expires after a minute, so it is fetched at once, with its own short timeout.
LOG_FETCH_TIMEOUT_SECONDS = 30
LOG_MAX_BYTES = 4 * 1024 * 1024  # the head of a log is dropped past this; failures are near the end
USER_AGENT = "gitbot"


class ForgeError(Exception):
    """A GitHub call failed; `status` is the HTTP status when there was one."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class IssueData:
    number: int
    title: str
    body: str
    author: str
    state: str
    labels: list[str]
    html_url: str
    is_pull_request: bool = False


@dataclass(frozen=True)
class CommentData:
    id: int
    author: str
    author_type: str
    body: str
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclass(frozen=True)
class PullData:
    number: int
    html_url: str
    draft: bool
    head: str
    base: str


@dataclass(frozen=True)
class JobData:
    id: int
    name: str
    conclusion: str | None
    html_url: str
    failed_steps: list[str] = field(default_factory=list)


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


class GitHubRepo:
    """One repository; every method is one or a few REST calls and returns plain data."""

    def __init__(self, gh: Any, full_name: str):
        from github import GithubException

        self._exc = GithubException
        self.gh = gh
        self.full_name = full_name
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
            raise forge_error(exc, "opening the pull request") from None
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


def parse_time(value: Any) -> dt.datetime | None:
    """An ISO 8601 time from the API, or None when it is missing or malformed."""
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        return None
