"""A real HTTP server on loopback that speaks the GitHub REST endpoints gitbot uses, and git over HTTP.

PyGithub is pointed at it through `GITHUB_API_URL` (`fake.api_url`, GitHub Enterprise style: `/api/v3`),
and git talks to `fake.clone_url` (smart HTTP through the real `git http-backend`, so pushes land in a
real bare repository and need the token exactly as github.com does). State lives in plain Python
objects the test sets up and inspects afterwards.

Every API request is validated against the pruned copy of GitHub's OpenAPI description in
tests/openapi/ (openapi-core), plus one rule the description cannot express: no body field the
operation does not define. A request that fails is answered 422, recorded in `violations`, and so
fails the test that checks `fake.violations == []`.

    with FakeGitHub(tmp_path) as gh:
        gh.set_permission("maintainer", "write")
        gh.add_issue(7, "Crash on empty input", "Steps…", author="reporter")
        event = gh.label_issue(7, "gitbot", sender="maintainer")   # the webhook payload
        ...
        assert gh.violations == []

Job logs behave like GitHub's: `GET …/actions/jobs/{id}/logs` answers 302 with a short-lived,
single-use URL on this server; fetching it with an `Authorization` header is recorded as a violation
(the token must never be sent to the log storage host).
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import itertools
import json
import re
import secrets
import shutil
import subprocess
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Self

from tests.fakes import github_graphql
from tests.fakes.git_http import bare_repository, http_backend
from tests.fakes.github_graphql import GRAPHQL_PATH
from tests.fakes.github_pulls import PullsMixin
from tests.fakes.loopback import FakeHandler, LoopbackServer, Recorded, utcnow

SPEC_PATH = Path(__file__).resolve().parent.parent / "openapi" / "github-rest-subset.json"
SPEC_HOST = "https://api.github.com"
API_PREFIX = "/api/v3"
LOG_URL_TTL_SECONDS = 60.0  # GitHub: "the link expires after 1 minute"
NOT_PERMITTED_TO_CREATE_PR = "GitHub Actions is not permitted to create or approve pull requests."
SECONDARY_RATE_LIMIT = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)

_validator_lock = threading.Lock()
_validator: Any = None
_spec: dict[str, Any] = {}


def openapi() -> Any:
    """The OpenAPI validator, built once per test session (loading takes about a second)."""
    global _validator
    with _validator_lock:
        if _validator is None:
            from openapi_core import OpenAPI

            _spec.update(json.loads(SPEC_PATH.read_text(encoding="utf-8")))
            _validator = OpenAPI.from_dict(_spec)
        return _validator


def iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Issue:
    number: int
    title: str
    body: str
    author: str
    labels: list[str] = field(default_factory=list)
    created_at: dt.datetime = field(default_factory=utcnow)
    state: str = "open"


@dataclass
class Comment:
    id: int
    issue: int
    body: str
    author: str
    author_type: str = "User"
    created_at: dt.datetime = field(default_factory=utcnow)
    updated_at: dt.datetime = field(default_factory=utcnow)


@dataclass
class PullRequest:
    number: int
    title: str
    body: str
    head: str
    base: str
    draft: bool
    author: str
    state: str = "open"
    created_at: dt.datetime = field(default_factory=utcnow)
    updated_at: dt.datetime = field(default_factory=utcnow)
    head_repository: str | None = None  # a fork's owner/name (None: this repository)
    head_sha: str | None = None  # a fork's head commit (a branch here is read from the bare repository)

    @property
    def node_id(self) -> str:
        return f"PR_kw{self.number}"


@dataclass
class Job:
    id: int
    run_id: int
    name: str
    conclusion: str
    steps: list[tuple[str, str]]  # (name, conclusion)
    log: str


class FakeGitHub(LoopbackServer, PullsMixin):
    """One repository on a fake github.com: REST API, GraphQL, git over HTTP, and the state behind them."""

    def __init__(
        self,
        root: Path,
        *,
        owner: str = "octo-org",
        name: str = "widgets",
        default_branch: str = "main",
        token: str | None = None,
        bot_login: str = "github-actions[bot]",
    ):
        self.root = Path(root)
        self.owner, self.name, self.default_branch = owner, name, default_branch
        self.full_name = f"{owner}/{name}"
        self.token = token or "ghs_" + secrets.token_urlsafe(27)
        self.bot_login = bot_login  # who the token acts as: it authors comments and PRs
        self.permissions: dict[str, str] = {}  # login -> admin | maintain | write | triage | read
        self.user_types: dict[str, str] = {bot_login: "Bot"}
        self.issues: dict[int, Issue] = {}
        self.comments: list[Comment] = []
        self.events: dict[int, list[dict[str, Any]]] = {}
        self.pulls: list[PullRequest] = []
        self.runs: dict[int, dict[str, Any]] = {}
        self.jobs: list[Job] = []
        self.requests: list[Recorded] = []
        self.violations: list[str] = []
        self.log_fetches: list[Recorded] = []
        # Knobs for failure paths.
        self.secondary_rate_limits_left = 0  # answer the next N API requests with a secondary rate limit
        self.forbid_pull_creation = False  # "Allow GitHub Actions to create and approve pull requests" off
        self._ids = itertools.count(1001)
        self._init_pulls()
        # Called with each git request before it is served; one that returns True is done and removed
        # (to change the repository at a precise moment, e.g. a person pushing just before gitbot does).
        self.git_hooks: list[Callable[[Recorded], bool]] = []
        self._log_urls: dict[str, tuple[int, float]] = {}
        self._lock = threading.RLock()
        self.git_project_root = self.root / "git-server"
        self.bare_repo = bare_repository(self.git_project_root / owner / f"{name}.git", default_branch)

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        openapi()
        github_graphql.schema()
        return super().start()

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    # ---------------------------------------------------------------- snapshots

    # Not state: the running server and its lock stay; the id counter is kept as the next id it gives.
    _NOT_STATE = ("_server", "_lock", "_ids")

    def snapshot(self, repo_copy: Path) -> dict[str, Any]:
        """The fake's state now, with a copy of its bare repository at `repo_copy`, for `restore`: a test
        module can run a costly first job once and start each of its tests from what that job left."""
        with self._lock:
            shutil.copytree(self.bare_repo, repo_copy, symlinks=True)
            next_id = next(self._ids)
            self._ids = itertools.count(next_id)
            state = {k: v for k, v in vars(self).items() if k not in self._NOT_STATE}
            # The memo keeps references to the fake itself pointing at this (running) fake.
            return {"repo": repo_copy, "next_id": next_id, "state": copy.deepcopy(state, {id(self): self})}

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Back to the state and repository of `snapshot`, on the same server (the same URLs and token)."""
        with self._lock:
            shutil.rmtree(self.bare_repo)
            shutil.copytree(snapshot["repo"], self.bare_repo, symlinks=True)
            vars(self).update(copy.deepcopy(snapshot["state"], {id(self): self}))
            self._ids = itertools.count(snapshot["next_id"])

    @property
    def api_url(self) -> str:
        return self.server_url + API_PREFIX

    @property
    def clone_url(self) -> str:
        return f"{self.server_url}/{self.full_name}.git"

    def actions_env(self) -> dict[str, str]:
        """The variables the runner sets that point at GitHub."""
        return {
            "GITHUB_API_URL": self.api_url,
            "GITHUB_SERVER_URL": self.server_url,
            "GITHUB_REPOSITORY": self.full_name,
            "GITHUB_REPOSITORY_OWNER": self.owner,
        }

    def basic_auth_header(self) -> str:
        """The header actions/checkout persists (and gitbot sends for one push)."""
        pair = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        return f"AUTHORIZATION: basic {pair}"

    # ---------------------------------------------------------------- setting up state

    def set_permission(self, login: str, permission: str, *, user_type: str = "User") -> None:
        self.permissions[login] = permission
        self.user_types[login] = user_type

    def add_issue(
        self,
        number: int,
        title: str,
        body: str,
        *,
        author: str = "reporter",
        labels: list[str] | None = None,
        created_at: dt.datetime | None = None,
    ) -> Issue:
        issue = Issue(number, title, body, author, list(labels or []), created_at or utcnow())
        self.issues[number] = issue
        self.events.setdefault(number, [])
        return issue

    def add_comment(
        self,
        issue: int,
        body: str,
        *,
        author: str = "commenter",
        created_at: dt.datetime | None = None,
        updated_at: dt.datetime | None = None,
        author_type: str = "User",
    ) -> Comment:
        created = created_at or utcnow()
        comment = Comment(next(self._ids), issue, body, author, author_type, created, updated_at or created)
        with self._lock:
            self.comments.append(comment)
        return comment

    def label_issue(
        self, number: int, label: str, *, sender: str, at: dt.datetime | None = None
    ) -> dict[str, Any]:
        """Add a label as `sender` did; returns the `issues`/`labeled` payload the runner would write."""
        when = at or utcnow()
        issue = self.issues[number]
        if label not in issue.labels:
            issue.labels.append(label)
        self.events[number].append(
            {
                "id": next(self._ids),
                "node_id": "LE_" + secrets.token_hex(6),
                "url": f"{self.api_url}/repos/{self.full_name}/issues/events/{next(self._ids)}",
                "actor": self.user_json(sender),
                "event": "labeled",
                "commit_id": None,
                "commit_url": None,
                "created_at": iso(when),
                "label": {"name": label, "color": "5319e7"},
                "performed_via_github_app": None,
            }
        )
        # The payload's issue snapshot is taken as the label is added: its updated_at is that moment.
        return {
            "action": "labeled",
            "issue": self.issue_json(issue, updated_at=when),
            "label": self.label_json(label),
            "repository": self.repo_json(),
            "sender": self.user_json(sender),
        }

    def dispatch_event(self, *, sender: str, inputs: dict[str, str]) -> dict[str, Any]:
        return {
            "inputs": inputs,
            "ref": f"refs/heads/{self.default_branch}",
            "repository": self.repo_json(),
            "sender": self.user_json(sender),
            "workflow": ".github/workflows/gitbot.yml",
        }

    def add_workflow_run(
        self,
        *,
        head_branch: str,
        head_sha: str,
        conclusion: str = "failure",
        actor: str,
        triggering_actor: str | None = None,
        name: str = "CI",
        head_repository: str | None = None,
        event: str = "push",
    ) -> dict[str, Any]:
        run_id = next(self._ids) * 1000
        head_full_name = head_repository or self.full_name
        head_owner = head_full_name.split("/")[0]
        base = f"{self.api_url}/repos/{self.full_name}"
        run = {
            "id": run_id,
            "name": name,
            "node_id": "WFR_" + secrets.token_hex(6),
            "head_branch": head_branch,
            "head_sha": head_sha,
            "path": ".github/workflows/ci.yml",
            "display_title": f"{name} on {head_branch}",
            "run_number": 12,
            "event": event,
            "status": "completed",
            "conclusion": conclusion,
            "workflow_id": 4242,
            "check_suite_id": 5151,
            "check_suite_node_id": "CS_x",
            "url": f"{base}/actions/runs/{run_id}",
            "html_url": f"{self.server_url}/{self.full_name}/actions/runs/{run_id}",
            "pull_requests": [],
            "created_at": iso(utcnow()),
            "updated_at": iso(utcnow()),
            "actor": self.user_json(actor),
            "triggering_actor": self.user_json(triggering_actor or actor),
            "run_attempt": 1,
            "run_started_at": iso(utcnow()),
            "jobs_url": f"{base}/actions/runs/{run_id}/jobs",
            "logs_url": f"{base}/actions/runs/{run_id}/logs",
            "check_suite_url": f"{base}/check-suites/5151",
            "artifacts_url": f"{base}/actions/runs/{run_id}/artifacts",
            "cancel_url": f"{base}/actions/runs/{run_id}/cancel",
            "rerun_url": f"{base}/actions/runs/{run_id}/rerun",
            "workflow_url": f"{base}/actions/workflows/4242",
            "head_commit": None,
            "repository": self.repo_json(),
            "head_repository": self.repo_json(head_full_name, owner=head_owner),
        }
        self.runs[run_id] = run
        return run

    def add_job(
        self, run_id: int, name: str, *, conclusion: str, steps: list[tuple[str, str]], log: str
    ) -> Job:
        job = Job(next(self._ids) * 10, run_id, name, conclusion, steps, log)
        self.jobs.append(job)
        return job

    def workflow_run_event(self, run_id: int, *, sender: str | None = None) -> dict[str, Any]:
        run = self.runs[run_id]
        return {
            "action": "completed",
            "workflow_run": run,
            "workflow": {"id": 4242, "name": run["name"]},
            "repository": self.repo_json(),
            "sender": self.user_json(sender or run["actor"]["login"]),
        }

    # ---------------------------------------------------------------- what tests inspect

    def next_number(self) -> int:
        """Issues and pull requests share one sequence of numbers."""
        return len(self.issues) + len(self.pulls) + 100

    def api_requests(self, route_pattern: str = "") -> list[Recorded]:
        """Requests whose "METHOD /path" matches the regular expression (all when empty)."""
        return [r for r in self.requests if re.search(route_pattern, r.route)]

    def comments_on(self, issue: int) -> list[Comment]:
        return [c for c in self.comments if c.issue == issue]

    def open_pulls(self) -> list[PullRequest]:
        return [p for p in self.pulls if p.state == "open"]

    def branch_sha(self, branch: str) -> str | None:
        done = subprocess.run(
            ["git", "-C", str(self.bare_repo), "rev-parse", "--verify", "-q", f"refs/heads/{branch}"],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() or None

    def git_log(self, ref: str, fmt: str = "%H%x00%an%x00%ae%x00%B%x1e") -> str:
        return subprocess.run(
            ["git", "-C", str(self.bare_repo), "log", f"--format={fmt}", ref],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def git_pushes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method == "POST" and r.path.endswith("/git-receive-pack")]

    # ---------------------------------------------------------------- JSON the API returns

    def user_json(self, login: str) -> dict[str, Any]:
        user_id = zlib.crc32(login.encode()) % 10_000_000
        kind = self.user_types.get(login, "Bot" if login.endswith("[bot]") else "User")
        return {
            "login": login,
            "id": user_id,
            "node_id": f"U_{user_id}",
            "avatar_url": f"{self.server_url}/avatars/{user_id}",
            "gravatar_id": "",
            "url": f"{self.api_url}/users/{urllib.parse.quote(login)}",
            "html_url": f"{self.server_url}/{urllib.parse.quote(login)}",
            "type": kind,
            "site_admin": False,
        }

    def repo_json(self, full_name: str | None = None, *, owner: str | None = None) -> dict[str, Any]:
        full_name = full_name or self.full_name
        return {
            "id": 99_000 + len(full_name),
            "node_id": "R_1",
            "name": full_name.split("/")[1],
            "full_name": full_name,
            "owner": self.user_json(owner or self.owner),
            "private": False,
            "fork": full_name != self.full_name,
            "html_url": f"{self.server_url}/{full_name}",
            "url": f"{self.api_url}/repos/{full_name}",
            "clone_url": f"{self.server_url}/{full_name}.git",
            "default_branch": self.default_branch,
            "visibility": "public",
            "archived": False,
            "disabled": False,
            "has_issues": True,
        }

    def label_json(self, name: str) -> dict[str, Any]:
        return {
            "id": zlib.crc32(name.encode()) % 100_000,
            "node_id": "LA_1",
            "name": name,
            "color": "5319e7",
            "default": False,
            "description": None,
            "url": f"{self.api_url}/repos/{self.full_name}/labels/{urllib.parse.quote(name)}",
        }

    def issue_json(self, issue: Issue, *, updated_at: dt.datetime | None = None) -> dict[str, Any]:
        base = f"{self.api_url}/repos/{self.full_name}/issues/{issue.number}"
        return {
            "id": 500_000 + issue.number,
            "node_id": f"I_{issue.number}",
            "number": issue.number,
            "title": issue.title,
            "body": issue.body,
            "user": self.user_json(issue.author),
            "labels": [self.label_json(n) for n in issue.labels],
            "state": issue.state,
            "locked": False,
            "comments": len(self.comments_on(issue.number)),
            "created_at": iso(issue.created_at),
            "updated_at": iso(updated_at or utcnow()),
            "closed_at": None,
            "author_association": "NONE",
            "url": base,
            "repository_url": f"{self.api_url}/repos/{self.full_name}",
            "labels_url": base + "/labels{/name}",
            "comments_url": base + "/comments",
            "events_url": base + "/events",
            "html_url": f"{self.server_url}/{self.full_name}/issues/{issue.number}",
            "assignee": None,
            "assignees": [],
            "milestone": None,
        }

    def comment_json(self, comment: Comment) -> dict[str, Any]:
        return {
            "id": comment.id,
            "node_id": f"IC_{comment.id}",
            "body": comment.body,
            "user": self.user_json(comment.author),
            "created_at": iso(comment.created_at),
            "updated_at": iso(comment.updated_at),
            "author_association": "NONE",
            "url": f"{self.api_url}/repos/{self.full_name}/issues/comments/{comment.id}",
            "html_url": f"{self.server_url}/{self.full_name}/issues/{comment.issue}"
            f"#issuecomment-{comment.id}",
            "issue_url": f"{self.api_url}/repos/{self.full_name}/issues/{comment.issue}",
        }

    def pull_json(self, pr: PullRequest) -> dict[str, Any]:
        def ref(branch: str, repository: str | None = None, sha: str | None = None) -> dict[str, Any]:
            owner = (repository or self.full_name).split("/")[0]
            return {
                "label": f"{owner}:{branch}",
                "ref": branch,
                "sha": sha or self.branch_sha(branch) or "0" * 40,
                "user": self.user_json(owner),
                "repo": self.repo_json(repository, owner=owner) if repository else self.repo_json(),
            }

        return {
            "id": 700_000 + pr.number,
            "node_id": pr.node_id,
            "number": pr.number,
            "state": pr.state,
            "locked": False,
            "title": pr.title,
            "body": pr.body,
            "draft": pr.draft,
            "user": self.user_json(pr.author),
            "head": ref(pr.head, pr.head_repository, pr.head_sha),
            "base": ref(pr.base),
            "created_at": iso(pr.created_at),
            "updated_at": iso(pr.updated_at),
            "closed_at": None,
            "merged_at": None,
            "merged": False,
            "maintainer_can_modify": False,
            "url": f"{self.api_url}/repos/{self.full_name}/pulls/{pr.number}",
            "html_url": f"{self.server_url}/{self.full_name}/pull/{pr.number}",
            "issue_url": f"{self.api_url}/repos/{self.full_name}/issues/{pr.number}",
        }

    def job_json(self, job: Job) -> dict[str, Any]:
        run = self.runs[job.run_id]
        return {
            "id": job.id,
            "run_id": job.run_id,
            "run_attempt": 1,
            "node_id": f"J_{job.id}",
            "name": job.name,
            "head_sha": run["head_sha"],
            "head_branch": run["head_branch"],
            "status": "completed",
            "conclusion": job.conclusion,
            "workflow_name": run["name"],
            "labels": ["ubuntu-latest"],
            "created_at": run["created_at"],
            "started_at": run["created_at"],
            "completed_at": run["updated_at"],
            "url": f"{self.api_url}/repos/{self.full_name}/actions/jobs/{job.id}",
            "html_url": f"{self.server_url}/{self.full_name}/actions/runs/{job.run_id}/job/{job.id}",
            "run_url": run["url"],
            "check_run_url": f"{self.api_url}/repos/{self.full_name}/check-runs/{job.id}",
            "runner_id": 1,
            "runner_name": "runner",
            "runner_group_id": 1,
            "runner_group_name": "default",
            "steps": [
                {
                    "name": n,
                    "status": "completed",
                    "conclusion": c,
                    "number": i + 1,
                    "started_at": run["created_at"],
                    "completed_at": run["updated_at"],
                }
                for i, (n, c) in enumerate(job.steps)
            ],
        }

    # ---------------------------------------------------------------- answering

    def _answer_api(self, rec: Recorded, raw_body: bytes) -> tuple[int, dict[str, str], Any]:
        auth = rec.headers.get("authorization", "")
        if auth not in (f"token {self.token}", f"Bearer {self.token}", f"bearer {self.token}"):
            return 401, {}, {"message": "Bad credentials", "status": "401"}
        problem = self._validate(rec, raw_body)
        if problem:
            self.violations.append(f"{rec.route}: {problem}")
            return 422, {}, {"message": f"Validation Failed: {problem}", "status": "422"}
        if self.secondary_rate_limits_left > 0:
            self.secondary_rate_limits_left -= 1
            return 403, {"Retry-After": "1"}, {"message": SECONDARY_RATE_LIMIT, "status": "403"}
        for pattern, method, handler in self._routes():
            match = re.fullmatch(pattern, rec.path)
            if match and method == rec.method:
                return handler(rec, *match.groups())
        self.violations.append(f"{rec.route}: not served by the fake")
        return 404, {}, {"message": "Not Found", "status": "404"}

    def _validate(self, rec: Recorded, raw_body: bytes) -> str | None:
        from openapi_core.testing import MockRequest

        args = [(k, v) for k, values in rec.query.items() for v in values]
        content_type = rec.headers.get("content-type", "application/json").split(";")[0]
        request = MockRequest(
            SPEC_HOST,
            rec.method,
            rec.path,
            args=args,
            headers=rec.headers,
            data=raw_body,
            content_type=content_type,
        )
        try:
            openapi().validate_request(request)
        except Exception as exc:  # noqa: BLE001 - openapi-core raises a family of errors; each is a violation
            causes = []
            seen: BaseException | None = exc
            while seen is not None:
                causes.append(f"{type(seen).__name__}: {seen}")
                seen = seen.__cause__ or getattr(seen, "schema_errors", [None])[0]
            return " <- ".join(causes)[:600]
        return self._unknown_body_fields(rec)

    def _unknown_body_fields(self, rec: Recorded) -> str | None:
        if not isinstance(rec.body, dict):
            return None
        for path_pattern, item in _spec["paths"].items():
            regex = "^" + re.sub(r"\{[^}]+\}", "[^/]+", path_pattern) + "$"
            operation = item.get(rec.method.lower())
            if operation is None or not re.match(regex, rec.path):
                continue
            if "requestBody" not in operation:
                return "this operation takes no body"
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            if "$ref" in schema:  # "#/components/schemas/<name>"
                schema = _spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
            unknown = sorted(set(rec.body) - set(schema.get("properties", {})))
            return f"unknown body fields {unknown}" if unknown else None
        return None

    def _routes(self) -> list[tuple[str, str, Callable]]:
        repo = re.escape(f"/repos/{self.full_name}")
        return [
            (repo, "GET", lambda rec: (200, {}, self.repo_json())),
            (repo + r"/issues/(\d+)", "GET", self._get_issue),
            (repo + r"/issues/(\d+)/comments", "GET", self._list_comments),
            (repo + r"/issues/(\d+)/comments", "POST", self._create_comment),
            (repo + r"/issues/comments/(\d+)", "PATCH", self._update_comment),
            (repo + r"/issues/(\d+)/events", "GET", self._list_events),
            (repo + r"/collaborators/([^/]+)/permission", "GET", self._permission),
            (repo + r"/pulls", "GET", self._list_pulls),
            (repo + r"/pulls", "POST", self._create_pull),
            (repo + r"/pulls/(\d+)", "PATCH", self._update_pull),
            (repo + r"/actions/runs/(\d+)", "GET", self._get_run),
            (repo + r"/actions/runs/(\d+)/jobs", "GET", self._list_jobs),
            (repo + r"/actions/jobs/(\d+)/logs", "GET", self._job_logs),
            *self.pull_routes(repo),
        ]

    def _paginate(self, rec: Recorded, items: list[Any]) -> tuple[int, dict[str, str], Any]:
        per_page = int(rec.query.get("per_page", ["30"])[0])
        page = int(rec.query.get("page", ["1"])[0])
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        last = max(1, -(-len(items) // per_page))
        if page < last:
            query = {k: v[0] for k, v in rec.query.items()}
            links = []
            for rel, number in (("next", page + 1), ("last", last)):
                query["page"] = str(number)
                links.append(f'<{self.api_url}{rec.path}?{urllib.parse.urlencode(query)}>; rel="{rel}"')
            headers["Link"] = ", ".join(links)
        return 200, headers, chunk

    def _get_issue(self, rec: Recorded, number: str):
        issue = self.issues.get(int(number))
        if issue is None and self.pull(int(number)) is not None:
            return 200, {}, self.pull_as_issue_json(self.pull(int(number)))
        return (200, {}, self.issue_json(issue)) if issue else (404, {}, {"message": "Not Found"})

    def _list_comments(self, rec: Recorded, number: str):
        return self._paginate(rec, [self.comment_json(c) for c in self.comments_on(int(number))])

    def _create_comment(self, rec: Recorded, number: str):
        if int(number) not in self.issues and self.pull(int(number)) is None:
            return 404, {}, {"message": "Not Found"}
        comment = self.add_comment(int(number), rec.body["body"], author=self.bot_login, author_type="Bot")
        return 201, {}, self.comment_json(comment)

    def _update_comment(self, rec: Recorded, comment_id: str):
        for comment in self.comments:
            if comment.id == int(comment_id):
                if comment.author != self.bot_login:  # a token can only edit what its own identity wrote
                    return 403, {}, {"message": "Resource not accessible by integration"}
                comment.body = rec.body["body"]
                comment.updated_at = utcnow()
                return 200, {}, self.comment_json(comment)
        return 404, {}, {"message": "Not Found"}

    def _list_events(self, rec: Recorded, number: str):
        return self._paginate(rec, list(self.events.get(int(number), [])))

    def _permission(self, rec: Recorded, login: str):
        login = urllib.parse.unquote(login)
        role = self.permissions.get(login)
        if role is None:
            return 404, {}, {"message": f"{login} is not a user"}
        # The legacy `permission` field folds maintain into write and triage into read.
        legacy = {"maintain": "write", "triage": "read"}.get(role, role)
        user = {**self.user_json(login), "role_name": role}
        return 200, {}, {"permission": legacy, "role_name": role, "user": user}

    def _list_pulls(self, rec: Recorded):
        state = rec.query.get("state", ["open"])[0]
        head = rec.query.get("head", [None])[0]
        base = rec.query.get("base", [None])[0]
        found = [
            p
            for p in self.pulls
            if (state == "all" or p.state == state)
            and (head is None or head == f"{self.owner}:{p.head}")
            and (base is None or base == p.base)
        ]
        return self._paginate(rec, [self.pull_json(p) for p in found])

    def _create_pull(self, rec: Recorded):
        if self.forbid_pull_creation:
            return 403, {}, {"message": NOT_PERMITTED_TO_CREATE_PR, "status": "403"}
        body = rec.body
        head = body["head"].split(":", 1)[-1]
        if self.branch_sha(head) is None:
            return 422, {}, {"message": "Validation Failed", "errors": [{"field": "head", "code": "invalid"}]}
        if any(p.head == head and p.state == "open" for p in self.pulls):
            return 422, {}, {"message": f"A pull request already exists for {self.owner}:{head}."}
        pr = PullRequest(
            self.next_number(),
            body.get("title", ""),
            body.get("body", ""),
            head,
            body["base"],
            bool(body.get("draft", False)),
            self.bot_login,
        )
        self.pulls.append(pr)
        return 201, {}, self.pull_json(pr)

    def _update_pull(self, rec: Recorded, number: str):
        for pr in self.pulls:
            if pr.number == int(number):
                for key in ("title", "body", "state", "base"):
                    if key in rec.body:
                        setattr(pr, key, rec.body[key])
                pr.updated_at = utcnow()
                return 200, {}, self.pull_json(pr)
        return 404, {}, {"message": "Not Found"}

    def _get_run(self, rec: Recorded, run_id: str):
        run = self.runs.get(int(run_id))
        return (200, {}, run) if run else (404, {}, {"message": "Not Found"})

    def _list_jobs(self, rec: Recorded, run_id: str):
        jobs = [self.job_json(j) for j in self.jobs if j.run_id == int(run_id)]
        status, headers, chunk = self._paginate(rec, jobs)
        return status, headers, {"total_count": len(jobs), "jobs": chunk}

    def _job_logs(self, rec: Recorded, job_id: str):
        if not any(j.id == int(job_id) for j in self.jobs):
            return 404, {}, {"message": "Not Found"}
        key = secrets.token_urlsafe(16)
        self._log_urls[key] = (int(job_id), time.monotonic() + LOG_URL_TTL_SECONDS)
        return 302, {"Location": f"{self.server_url}/_logs/{key}?sig={secrets.token_hex(8)}"}, None

    def _answer_log_blob(self, rec: Recorded, key: str) -> tuple[int, dict[str, str], bytes]:
        self.log_fetches.append(rec)
        if "authorization" in rec.headers:
            self.violations.append("GET log blob: sent an Authorization header to the log storage host")
        found = self._log_urls.pop(key, None)  # single use, like a signed URL fetched once
        if found is None or time.monotonic() > found[1]:
            return (
                403,
                {"Content-Type": "application/xml"},
                b"<Error><Code>AuthenticationFailed</Code></Error>",
            )
        job = next(j for j in self.jobs if j.id == found[0])
        return 200, {"Content-Type": "text/plain; charset=utf-8"}, job.log.encode()

    def _answer_git(self, rec: Recorded, raw_body: bytes) -> tuple[int, dict, bytes]:
        auth = rec.headers.get("authorization", "")
        expected = "Basic " + base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        if auth.lower() != expected.lower():
            return (
                401,
                {"WWW-Authenticate": 'Basic realm="GitHub"', "Content-Type": "text/plain"},
                b"auth required",
            )
        return http_backend(
            self.git_project_root,
            path_info=rec.path,
            method=rec.method,
            query=rec.query,
            headers=rec.headers,
            body=raw_body,
            remote_user="x-access-token",
        )


def _make_handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(FakeHandler):
        def answer(self, raw: bytes, path: str, query: dict[str, list[str]], headers: dict[str, str]) -> None:
            if path == GRAPHQL_PATH and self.command == "POST":
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                rec = Recorded(self.command, path, query, headers, body)
                with fake._lock:
                    fake.requests.append(rec)
                    if headers.get("authorization", "") not in (
                        f"token {fake.token}",
                        f"Bearer {fake.token}",
                    ):
                        status, payload = 401, {"message": "Bad credentials"}
                    else:
                        status, payload = github_graphql.answer(fake, body)
                rec.status = status
                self._send(
                    status, {"Content-Type": "application/json; charset=utf-8"}, json.dumps(payload).encode()
                )
            elif path.startswith(API_PREFIX + "/"):
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                rec = Recorded(self.command, path[len(API_PREFIX) :], query, headers, body)
                with fake._lock:
                    fake.requests.append(rec)
                    status, extra, payload = fake._answer_api(rec, raw)
                rec.status = status
                data = b"" if payload is None else json.dumps(payload).encode()
                self._send(status, {"Content-Type": "application/json; charset=utf-8", **extra}, data)
            elif path.startswith("/_logs/"):
                rec = Recorded(self.command, path, query, headers, None)
                with fake._lock:
                    status, extra, data = fake._answer_log_blob(rec, path[len("/_logs/") :])
                rec.status = status
                self._send(status, extra, data)
            elif path.startswith(f"/{fake.full_name}.git/"):
                rec = Recorded(self.command, path, query, headers, raw)
                with fake._lock:
                    fake.requests.append(rec)
                    hooks = [hook for hook in fake.git_hooks if hook(rec)]
                    fake.git_hooks = [hook for hook in fake.git_hooks if hook not in hooks]
                status, extra, data = fake._answer_git(rec, raw)
                rec.status = status
                self._send(status, extra, data)
            else:
                self._send(404, {"Content-Type": "text/plain"}, b"not found")

        do_PATCH = FakeHandler._handle  # GitHub edits with PATCH

    return Handler
