"""A real HTTP server on loopback that speaks the GitLab REST API v4 endpoints gitbot uses, and git over HTTP.

python-gitlab is pointed at `fake.url` (gitlab.com style, or a self-managed instance under a path prefix:
`FakeGitLab(root, prefix="/gitlab")` serves `http://127.0.0.1:PORT/gitlab/api/v4/...`), and git talks to
`fake.clone_url` (smart HTTP through the real `git http-backend`, so pushes land in a real bare repository).
State lives in plain Python objects the test sets up and inspects afterwards.

Authentication is GitLab's: the API takes a `PRIVATE-TOKEN` header (a personal, project or group access
token: `fake.token` acts as the project's bot user), `Authorization: Bearer` (OAuth), or a `JOB-TOKEN`
(`fake.job_token`, allowed only on the few endpoints in `job_token_routes`, as GitLab restricts it); git
takes HTTP basic auth, `oauth2:<token>` (any user name works with an access token) or
`gitlab-ci-token:<job token>` (fetch only, unless `job_token_push` is set, as the project setting allows).

Every API request is checked by tests/fakes/gitlab_ops.py: against GitLab's published OpenAPI description
where the vendored subset covers the operation, otherwise against the attributes its REST documentation
lists. A request that fails is answered 400 (GitLab's `{"error": ...}`), recorded in `violations`, and so
fails a test that checks `fake.violations == []`.

    with FakeGitLab(tmp_path) as gl:
        dev = gl.add_user("dev")
        gl.add_member(dev, gl.DEVELOPER)
        issue = gl.add_issue("Crash on empty input", "Steps…", author=dev)
        payload = gl.label_issue(issue.iid, "gitbot", by=dev)   # the Issue Hook body (TRIGGER_PAYLOAD)
        ...
        assert gl.violations == []
"""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
import re
import secrets
import subprocess
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.fakes import gitlab_ops
from tests.fakes.git_http import bare_repository, http_backend
from tests.fakes.gitlab_hooks import WebhookBodies
from tests.fakes.gitlab_state import (
    Award,
    Discussion,
    Issue,
    Job,
    LabelEvent,
    Member,
    MergeRequest,
    Note,
    Pipeline,
    User,
    utcnow,
)
from tests.fakes.loopback import FakeHandler, LoopbackServer, Recorded

API = "/api/v4"
MAX_PER_PAGE = 100
DEFAULT_PER_PAGE = 20
AWARD_TAKEN = "404 Award Emoji Name has already been taken Not Found"


def iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class FakeGitLab(LoopbackServer, WebhookBodies):
    """One project on a fake GitLab instance: REST API, git over HTTP, and the state behind them."""

    GUEST, REPORTER, DEVELOPER, MAINTAINER, OWNER = 10, 20, 30, 40, 50

    def __init__(
        self,
        root: Path,
        *,
        namespace: str = "acme",
        name: str = "widgets",
        default_branch: str = "main",
        prefix: str = "",
        project_id: int = 4242,
    ):
        self.root = Path(root)
        self.namespace, self.name, self.default_branch = namespace, name, default_branch
        self.path_with_namespace = f"{namespace}/{name}"
        self.prefix = prefix.rstrip("/")
        self.project_id = project_id
        self._ids = itertools.count(1001)
        self.users: dict[int, User] = {}
        self.members: dict[int, Member] = {}
        self.issues: dict[int, Issue] = {}
        self.notes: dict[int, Note] = {}
        self.discussions: dict[str, Discussion] = {}
        self.awards: list[Award] = []
        self.merge_requests: dict[int, MergeRequest] = {}
        self.pipelines: dict[int, Pipeline] = {}
        self.jobs: dict[int, Job] = {}
        self.label_events: list[LabelEvent] = []
        self.forks: dict[int, str] = {}  # project id -> path_with_namespace of other projects (forks)
        self.public_forks: set[int] = set()  # the forks a token of this project may read (the others: 404)
        self.requests: list[Recorded] = []
        self.violations: list[str] = []
        # The project's bot user (a project access token makes one) and the token that acts as it.
        self.bot = self.add_user(f"project_{project_id}_bot_{secrets.token_hex(4)}", name="gitbot", bot=True)
        self.add_member(self.bot, self.MAINTAINER)
        self.tokens: dict[str, int] = {}
        self.token = self.add_token(self.bot)
        self.job_token = "glcbt-" + secrets.token_urlsafe(20)
        self.job_token_push = False
        # Answer every API request with a redirect to this URL + the request's path (a moved instance, a
        # hostile proxy): whoever follows it sends the request there.
        self.redirect_api_to: str | None = None
        # Answers for the next API requests, before anything else (a rate limit, a proxy's 502): (status,
        # headers), used up one per request.
        self.fail_next: list[tuple[int, dict[str, str]]] = []
        # The API calls a CI_JOB_TOKEN may make here: GitLab allows it on the short list of endpoints in
        # doc/ci/jobs/ci_job_token.md ("Job token access"; jobs and pipelines since 17.x), not on the project
        # itself, notes, merge requests or members.
        self.job_token_routes = {
            ("GET", "/projects/:id/pipelines"),
            ("GET", "/projects/:id/pipelines/:pipeline_id/jobs"),
            ("GET", "/projects/:id/jobs/:job_id/trace"),
        }
        self._ops = gitlab_ops.operations()
        self._lock = threading.RLock()
        self.git_project_root = self.root / "git-server"
        self.bare_repo = bare_repository(self.git_project_root / namespace / f"{name}.git", default_branch)

    # ---------------------------------------------------------------- lifecycle

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    @property
    def url(self) -> str:
        """The instance's URL (CI_SERVER_URL): with the path prefix of a self-managed instance."""
        return self.server_url + self.prefix

    @property
    def api_url(self) -> str:  # CI_API_V4_URL
        return self.url + API

    @property
    def web_url(self) -> str:
        return f"{self.url}/{self.path_with_namespace}"

    @property
    def clone_url(self) -> str:
        return f"{self.web_url}.git"

    def ci_env(self) -> dict[str, str]:
        """The predefined variables a job on this instance sees that point at GitLab."""
        return {
            "CI_SERVER_URL": self.url,
            "CI_API_V4_URL": self.api_url,
            "CI_PROJECT_ID": str(self.project_id),
            "CI_PROJECT_PATH": self.path_with_namespace,
            "CI_PROJECT_URL": self.web_url,
            "CI_DEFAULT_BRANCH": self.default_branch,
            "CI_JOB_TOKEN": self.job_token,
        }

    def basic_auth(self, user: str = "oauth2", token: str | None = None) -> str:
        """An `Authorization` header value for git over HTTP."""
        pair = f"{user}:{token or self.token}".encode()
        return "Basic " + base64.b64encode(pair).decode()

    # ---------------------------------------------------------------- setting up state

    def add_user(self, username: str, *, name: str | None = None, bot: bool = False) -> User:
        user = User(next(self._ids), username, name or username.title(), bot)
        self.users[user.id] = user
        return user

    def add_member(self, user: User, access_level: int, *, inherited: bool = False) -> Member:
        member = Member(user.id, access_level, inherited)
        self.members[user.id] = member
        return member

    def add_token(self, user: User) -> str:
        token = "glpat-" + secrets.token_urlsafe(20)
        self.tokens[token] = user.id
        return token

    def user_named(self, username: str) -> User:
        return next(u for u in self.users.values() if u.username == username)

    def add_issue(
        self, title: str, description: str, *, author: User, labels: list[str] | None = None
    ) -> Issue:
        iid = max(self.issues, default=0) + 1
        issue = Issue(iid, title, description, author.id, list(labels or []))
        self.issues[iid] = issue
        return issue

    def add_note(
        self,
        noteable_type: str,
        iid: int,
        body: str,
        *,
        author: User,
        discussion: str | None = None,
        position: dict[str, Any] | None = None,
        system: bool = False,
        thread: bool = False,
        internal: bool = False,
    ) -> Note:
        """A note on an issue or merge request: on its own (an individual note), the start of a thread
        (`thread=True`, or a diff note with a `position`), or a reply in `discussion`."""
        assert noteable_type in ("Issue", "MergeRequest")
        with self._lock:
            if discussion is None:
                did = secrets.token_hex(20)
                kind = "DiffNote" if position is not None else ("DiscussionNote" if thread else None)
                self.discussions[did] = Discussion(did, noteable_type, iid, individual_note=kind is None)
            else:
                did = discussion
                opening = self.notes[self.discussions[did].note_ids[0]]
                if opening.type is None:  # a reply turns an individual note into a thread
                    opening.type = "DiscussionNote"
                    opening.resolvable = noteable_type == "MergeRequest"
                self.discussions[did].individual_note = False
                kind, position = opening.type, opening.position
                internal = internal or opening.internal  # a reply in an internal thread is internal
            note = Note(
                next(self._ids),
                noteable_type,
                iid,
                body,
                author.id,
                did,
                system=system,
                position=position,
                resolvable=kind is not None and noteable_type == "MergeRequest",
                type=kind,
                internal=internal,
            )
            self.notes[note.id] = note
            self.discussions[did].note_ids.append(note.id)
            return note

    def diff_position(
        self, mr_iid: int, path: str, new_line: int | None, *, old_line: int | None = None
    ) -> dict[str, Any]:
        """A diff note's `position`, as the API and the Note Hook show it."""
        mr = self.merge_requests[mr_iid]
        base = self.branch_sha(mr.target_branch) or "0" * 40
        head = mr.sha or self.branch_sha(mr.source_branch) or "0" * 40
        return {
            "base_sha": base,
            "start_sha": base,
            "head_sha": head,
            "old_path": path,
            "new_path": path,
            "position_type": "text",
            "old_line": old_line,
            "new_line": new_line,
            "line_range": None,
        }

    def add_merge_request(
        self,
        source_branch: str,
        title: str,
        *,
        author: User,
        description: str = "",
        target_branch: str | None = None,
        source_project: tuple[int, str] | None = None,
        public_fork: bool = False,
        sha: str | None = None,
    ) -> MergeRequest:
        """A merge request; `source_project` (id, path_with_namespace) makes it come from a fork (readable by
        this project's token when `public_fork`), whose head commit `sha` the test has pushed here first
        (under any ref) if the merge request's head is fetched."""
        source_id = self.project_id
        if source_project is not None:
            source_id = source_project[0]
            self.forks[source_id] = source_project[1]
            if public_fork:
                self.public_forks.add(source_id)
        iid = max(self.merge_requests, default=0) + 1
        mr = MergeRequest(
            iid, title, description, source_branch, target_branch or self.default_branch, author.id, source_id
        )
        mr.sha = sha
        self.merge_requests[iid] = mr
        self.refresh_merge_request_refs()
        return mr

    def refresh_merge_request_refs(self) -> None:
        """refs/merge-requests/<iid>/head at each open merge request's head, as GitLab keeps them (a fork's
        changes are fetched from there): at its creation and after every push."""
        for mr in self.merge_requests.values():
            head = mr.sha or self.branch_sha(mr.source_branch)
            if mr.state != "opened" or head is None:
                continue
            subprocess.run(
                ["git", "-C", str(self.bare_repo), "update-ref", f"refs/merge-requests/{mr.iid}/head", head],
                capture_output=True,
                check=False,  # a fork's commit the test did not push here: no ref, as fetching it would fail
            )

    def add_pipeline(
        self,
        *,
        ref: str,
        sha: str,
        status: str = "failed",
        source: str = "push",
        user: User | None = None,
        variables: dict[str, str] | None = None,
    ) -> Pipeline:
        pid = next(self._ids) * 10
        pipeline = Pipeline(pid, len(self.pipelines) + 1, sha, ref, status, source, (user or self.bot).id)
        pipeline.variables = dict(variables or {})
        self.pipelines[pid] = pipeline
        return pipeline

    def pipeline_env(
        self, *, source: str, user: User, ref: str = "main", sha: str | None = None, payload: bool = False
    ) -> dict[str, str]:
        """A pipeline GitLab records as `source`, started by `user` on `ref`, and the predefined variables its
        jobs see (a trigger pipeline carries TRIGGER_PAYLOAD, as the webhook's call passes it)."""
        sha = sha or self.branch_sha(ref) or "0" * 40
        variables = {"TRIGGER_PAYLOAD": "(the webhook's body)"} if payload else {}
        pipeline = self.add_pipeline(
            ref=ref, sha=sha, status="running", source=source, user=user, variables=variables
        )
        return {
            "CI_PIPELINE_ID": str(pipeline.id),
            "CI_PIPELINE_SOURCE": source,
            "CI_COMMIT_REF_NAME": ref,
            "CI_COMMIT_SHA": sha,
            "GITLAB_USER_ID": str(user.id),
            "GITLAB_USER_LOGIN": user.username,
        }

    def add_job(
        self,
        pipeline: Pipeline,
        name: str,
        *,
        status: str,
        trace: str = "",
        stage: str = "test",
        allow_failure: bool = False,
        retried: bool = False,
    ) -> Job:
        job = Job(next(self._ids) * 10, pipeline.id, name, stage, status, trace, allow_failure, retried)
        self.jobs[job.id] = job
        return job

    def label_issue(self, iid: int, label: str, *, by: User, at: dt.datetime | None = None) -> dict[str, Any]:
        """Add a label as `by` did; returns the Issue Hook body GitLab sends (and the trigger API passes on
        as TRIGGER_PAYLOAD)."""
        issue = self.issues[iid]
        before = list(issue.labels)
        if label not in issue.labels:
            issue.labels.append(label)
        when = at or utcnow()
        issue.updated_at = when
        self.label_events.append(LabelEvent(next(self._ids), iid, by.id, label, "add", when))
        return self.issue_hook(issue, by=by, action="update", labels_before=before)

    # ---------------------------------------------------------------- what tests inspect

    def api_requests(self, route_pattern: str = "") -> list[Recorded]:
        """Requests whose "METHOD /path" matches the regular expression (all when empty)."""
        return [r for r in self.requests if r.path.startswith("/") and re.search(route_pattern, r.route)]

    def notes_on(self, noteable_type: str, iid: int) -> list[Note]:
        return [n for n in self.notes.values() if n.noteable_type == noteable_type and n.noteable_iid == iid]

    def awards_on(self, note_id: int) -> list[Award]:
        return [a for a in self.awards if a.note_id == note_id]

    def branch_sha(self, branch: str) -> str | None:
        done = subprocess.run(
            ["git", "-C", str(self.bare_repo), "rev-parse", "--verify", "-q", f"refs/heads/{branch}"],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() or None

    def git_pushes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method == "POST" and r.path.endswith("/git-receive-pack")]

    # ---------------------------------------------------------------- JSON the API returns

    def user_basic(self, user_id: int) -> dict[str, Any]:
        user = self.users[user_id]
        return {
            "id": user.id,
            "username": user.username,
            "name": user.name,
            "state": user.state,
            "locked": False,
            "avatar_url": f"{self.url}/uploads/-/system/user/avatar/{user.id}/avatar.png",
            "web_url": f"{self.url}/{user.username}",
        }

    def user_json(self, user_id: int) -> dict[str, Any]:
        user = self.users[user_id]
        return {**self.user_basic(user_id), "bot": user.bot, "created_at": iso(utcnow()), "bio": ""}

    def project_json(self) -> dict[str, Any]:
        return {
            "id": self.project_id,
            "name": self.name,
            "path": self.name,
            "path_with_namespace": self.path_with_namespace,
            "name_with_namespace": f"{self.namespace.title()} / {self.name}",
            "namespace": {
                "id": 77,
                "name": self.namespace.title(),
                "path": self.namespace,
                "kind": "group",
                "full_path": self.namespace,
            },
            "default_branch": self.default_branch,
            "visibility": "private",
            "web_url": self.web_url,
            "http_url_to_repo": self.clone_url,
            "created_at": iso(utcnow()),
        }

    def issue_json(self, issue: Issue) -> dict[str, Any]:
        return {
            "id": 500_000 + issue.iid,
            "iid": issue.iid,
            "project_id": self.project_id,
            "title": issue.title,
            "description": issue.description,
            "state": issue.state,
            "created_at": iso(issue.created_at),
            "updated_at": iso(issue.updated_at),
            "closed_at": None,
            "labels": list(issue.labels),
            "author": self.user_basic(issue.author_id),
            "type": "ISSUE",
            "confidential": issue.confidential,
            "user_notes_count": len([n for n in self.notes_on("Issue", issue.iid) if not n.system]),
            "web_url": f"{self.web_url}/-/issues/{issue.iid}",
            "references": {"short": f"#{issue.iid}", "full": f"{self.path_with_namespace}#{issue.iid}"},
        }

    def note_json(self, note: Note) -> dict[str, Any]:
        noteable_id = (500_000 if note.noteable_type == "Issue" else 700_000) + note.noteable_iid
        data = {
            "id": note.id,
            "type": note.type,
            "body": note.body,
            "author": self.user_basic(note.author_id),
            "created_at": iso(note.created_at),
            "updated_at": iso(note.updated_at),
            "system": note.system,
            "noteable_id": noteable_id,
            "noteable_type": note.noteable_type,
            "noteable_iid": note.noteable_iid,
            "project_id": self.project_id,
            "resolvable": note.resolvable,
            "confidential": note.internal,
            "internal": note.internal,
            "commands_changes": {},
        }
        if note.resolvable:
            data["resolved"] = note.resolved
            data["resolved_by"] = None
        if note.position is not None:
            data["position"] = note.position
        return data

    def discussion_json(self, discussion: Discussion) -> dict[str, Any]:
        return {
            "id": discussion.id,
            "individual_note": discussion.individual_note,
            "notes": [self.note_json(self.notes[i]) for i in discussion.note_ids],
        }

    def mr_json(self, mr: MergeRequest) -> dict[str, Any]:
        sha = mr.sha or self.branch_sha(mr.source_branch)
        return {
            "id": 700_000 + mr.iid,
            "iid": mr.iid,
            "project_id": self.project_id,
            "title": mr.title,
            "description": mr.description,
            "state": mr.state,
            "created_at": iso(mr.created_at),
            "updated_at": iso(mr.updated_at),
            "target_branch": mr.target_branch,
            "source_branch": mr.source_branch,
            "author": self.user_basic(mr.author_id),
            "source_project_id": mr.source_project_id,
            "target_project_id": self.project_id,
            "labels": list(mr.labels),
            "draft": mr.draft,
            "work_in_progress": mr.draft,
            "merge_when_pipeline_succeeds": False,
            "detailed_merge_status": "draft_status" if mr.draft else "mergeable",
            "sha": sha,
            "force_remove_source_branch": mr.remove_source_branch,
            "web_url": f"{self.web_url}/-/merge_requests/{mr.iid}",
            "references": {"short": f"!{mr.iid}", "full": f"{self.path_with_namespace}!{mr.iid}"},
        }

    def pipeline_json(self, pipeline: Pipeline) -> dict[str, Any]:
        return {
            "id": pipeline.id,
            "iid": pipeline.iid,
            "project_id": self.project_id,
            "sha": pipeline.sha,
            "ref": pipeline.ref,
            "status": pipeline.status,
            "source": pipeline.source,
            "created_at": iso(pipeline.created_at),
            "updated_at": iso(pipeline.created_at),
            "web_url": f"{self.web_url}/-/pipelines/{pipeline.id}",
            "user": self.user_basic(pipeline.user_id),
        }

    def job_json(self, job: Job) -> dict[str, Any]:
        pipeline = self.pipelines[job.pipeline_id]
        return {
            "id": job.id,
            "name": job.name,
            "stage": job.stage,
            "status": job.status,
            "allow_failure": job.allow_failure,
            "ref": pipeline.ref,
            "tag": False,
            "created_at": iso(pipeline.created_at),
            "started_at": iso(pipeline.created_at),
            "finished_at": iso(pipeline.created_at),
            "failure_reason": "script_failure" if job.status == "failed" else None,
            "web_url": f"{self.web_url}/-/jobs/{job.id}",
            "pipeline": {k: v for k, v in self.pipeline_json(pipeline).items() if k != "web_url"},
            "user": self.user_basic(pipeline.user_id),
        }

    def label_event_json(self, event: LabelEvent) -> dict[str, Any]:
        return {
            "id": event.id,
            "user": self.user_basic(event.user_id),
            "created_at": iso(event.created_at),
            "resource_type": "Issue",
            "resource_id": 500_000 + event.issue_iid,
            "label": {
                "id": 9000 + len(event.label),
                "name": event.label,
                "color": "#5319e7",
                "description": None,
            },
            "action": event.action,
        }

    def award_json(self, award: Award) -> dict[str, Any]:
        return {
            "id": award.id,
            "name": award.name,
            "user": self.user_basic(award.user_id),
            "created_at": iso(award.created_at),
            "updated_at": iso(award.created_at),
            "awardable_id": award.note_id,
            "awardable_type": "Note",
        }

    # ---------------------------------------------------------------- answering the API

    def _caller(self, rec: Recorded) -> tuple[str, int | None]:
        """("token", user id), ("job", None) or ("", None) for an unauthenticated request."""
        private = rec.headers.get("private-token")
        bearer = rec.headers.get("authorization", "")
        if private is not None:
            return ("token", self.tokens[private]) if private in self.tokens else ("", None)
        if bearer.lower().startswith("bearer "):
            token = bearer[7:].strip()
            return ("token", self.tokens[token]) if token in self.tokens else ("", None)
        if rec.headers.get("job-token") == self.job_token:
            return "job", None
        return "", None

    def _answer_api(self, rec: Recorded) -> tuple[int, dict[str, str], Any]:
        if self.fail_next:
            status, headers = self.fail_next.pop(0)
            return status, headers, {"message": f"{status} failed on purpose"}
        if self.redirect_api_to:
            return 302, {"Location": f"{self.redirect_api_to}{API}{rec.path}"}, {"message": "302 Found"}
        kind, user_id = self._caller(rec)
        if not kind:
            return 401, {}, {"message": "401 Unauthorized"}
        path = rec.path
        found = gitlab_ops.find(self._ops, rec.method, path)
        if found is None:
            self.violations.append(f"{rec.route}: not an operation the fake knows")
            return 404, {}, {"error": "404 Not Found"}
        op, params = found
        params = {k: urllib.parse.unquote(v) for k, v in params.items()}
        problem = gitlab_ops.check(op, params, rec.query, rec.body)
        if problem:
            self.violations.append(f"{rec.route}: {problem}")
            return 400, {}, {"error": problem}
        if kind == "job" and (op.method, op.path) not in self.job_token_routes:
            return 403, {}, {"message": "403 Forbidden"}
        if "id" in params and params["id"] not in (str(self.project_id), self.path_with_namespace):
            fork = int(params["id"]) if params["id"].isdigit() else None
            if op.path == "/projects/:id" and fork in self.public_forks:
                path = self.forks[fork]
                return 200, {}, {"id": fork, "path_with_namespace": path, "web_url": f"{self.url}/{path}"}
            # GitLab does not tell a project you may not see from one that does not exist.
            return 404, {}, {"message": "404 Project Not Found"}
        handler = getattr(self, "_" + re.sub(r"\W+", "_", f"{op.method} {op.path}").strip("_").lower())
        return handler(rec, params, user_id)

    def _paginate(self, rec: Recorded, items: list[Any]) -> tuple[int, dict[str, str], Any]:
        per_page = min(int(rec.query.get("per_page", [str(DEFAULT_PER_PAGE)])[0]), MAX_PER_PAGE)
        page = max(1, int(rec.query.get("page", ["1"])[0]))
        chunk = items[(page - 1) * per_page : page * per_page]
        last = max(1, -(-len(items) // per_page))
        headers = {
            "X-Page": str(page),
            "X-Per-Page": str(per_page),
            "X-Total": str(len(items)),
            "X-Total-Pages": str(last),
            "X-Next-Page": str(page + 1) if page < last else "",
            "X-Prev-Page": str(page - 1) if page > 1 else "",
        }
        query = {k: v[0] for k, v in rec.query.items()}
        links = []
        for rel, number in (("next", page + 1), ("first", 1), ("last", last)):
            if rel == "next" and page >= last:
                continue
            query["page"] = str(number)
            links.append(f'<{self.api_url}{rec.path}?{urllib.parse.urlencode(query)}>; rel="{rel}"')
        headers["Link"] = ", ".join(links)
        return 200, headers, chunk

    @staticmethod
    def _not_found(what: str = "Not found") -> tuple[int, dict[str, str], Any]:
        return 404, {}, {"message": f"404 {what}"}

    def _get_projects_id(self, rec, params, user_id):
        return 200, {}, self.project_json()

    def _get_user(self, rec, params, user_id):
        if user_id is None:
            return 401, {}, {"message": "401 Unauthorized"}
        return 200, {}, self.user_json(user_id)

    def _get_users_user_id(self, rec, params, user_id):
        wanted = int(params["user_id"])
        return (
            (200, {}, self.user_json(wanted)) if wanted in self.users else self._not_found("User Not Found")
        )

    def _get_projects_id_members_all_user_id(self, rec, params, user_id):
        member = self.members.get(int(params["user_id"]))
        if member is None:
            return self._not_found()
        user = self.users[member.user_id]
        data = {
            **self.user_basic(user.id),
            "access_level": member.access_level,
            "created_at": iso(utcnow()),
            "expires_at": None,
            "membership_state": "active",
        }
        return 200, {}, data

    def _issue(self, params) -> Issue | None:
        return self.issues.get(int(params["issue_iid"]))

    def _mr(self, params) -> MergeRequest | None:
        return self.merge_requests.get(int(params["merge_request_iid"]))

    def _get_projects_id_issues_issue_iid(self, rec, params, user_id):
        issue = self._issue(params)
        return (200, {}, self.issue_json(issue)) if issue else self._not_found()

    # notes (issues and merge requests share the handlers)

    def _noteable(self, params) -> tuple[str, int] | None:
        if "issue_iid" in params:
            return ("Issue", int(params["issue_iid"])) if self._issue(params) else None
        return ("MergeRequest", int(params["merge_request_iid"])) if self._mr(params) else None

    def _list_notes(self, rec, params, user_id):
        noteable = self._noteable(params)
        if noteable is None:
            return self._not_found()
        notes = sorted(self.notes_on(*noteable), key=lambda n: n.id)
        if rec.query.get("sort", ["desc"])[0] == "desc":
            notes.reverse()
        return self._paginate(rec, [self.note_json(n) for n in notes])

    def _get_note(self, rec, params, user_id):
        noteable = self._noteable(params)
        note = self.notes.get(int(params["note_id"]))
        if noteable is None or note is None or (note.noteable_type, note.noteable_iid) != noteable:
            return self._not_found()
        return 200, {}, self.note_json(note)

    def _create_note(self, rec, params, user_id):
        noteable = self._noteable(params)
        if noteable is None:
            return self._not_found()
        internal = _truthy(rec.body.get("internal", False))
        note = self.add_note(*noteable, rec.body["body"], author=self.users[user_id], internal=internal)
        return 201, {}, self.note_json(note)

    def _update_note(self, rec, params, user_id):
        noteable = self._noteable(params)
        note = self.notes.get(int(params["note_id"]))
        if noteable is None or note is None or (note.noteable_type, note.noteable_iid) != noteable:
            return self._not_found()
        if note.author_id != user_id:  # only a note's author may edit it
            return 403, {}, {"message": "403 Forbidden"}
        note.body = rec.body["body"]
        note.updated_at = utcnow()
        return 200, {}, self.note_json(note)

    _get_projects_id_issues_issue_iid_notes = _list_notes
    _get_projects_id_merge_requests_merge_request_iid_notes = _list_notes
    _get_projects_id_issues_issue_iid_notes_note_id = _get_note
    _get_projects_id_merge_requests_merge_request_iid_notes_note_id = _get_note
    _post_projects_id_issues_issue_iid_notes = _create_note
    _post_projects_id_merge_requests_merge_request_iid_notes = _create_note
    _put_projects_id_issues_issue_iid_notes_note_id = _update_note
    _put_projects_id_merge_requests_merge_request_iid_notes_note_id = _update_note

    def _list_discussions(self, rec, params, user_id):
        noteable = self._noteable(params)
        if noteable is None:
            return self._not_found()
        found = [
            self.discussion_json(d)
            for d in self.discussions.values()
            if (d.noteable_type, d.noteable_iid) == noteable and d.note_ids
        ]
        return self._paginate(rec, found)

    def _reply_in_discussion(self, rec, params, user_id):
        noteable = self._noteable(params)
        discussion = self.discussions.get(params["discussion_id"])
        if (
            noteable is None
            or discussion is None
            or (discussion.noteable_type, discussion.noteable_iid) != noteable
        ):
            return self._not_found()
        note = self.add_note(
            *noteable, rec.body["body"], author=self.users[user_id], discussion=discussion.id
        )
        return 201, {}, self.note_json(note)

    _get_projects_id_issues_issue_iid_discussions = _list_discussions
    _get_projects_id_merge_requests_merge_request_iid_discussions = _list_discussions
    _post_projects_id_issues_issue_iid_discussions_discussion_id_notes = _reply_in_discussion
    _post_projects_id_merge_requests_merge_request_iid_discussions_discussion_id_notes = _reply_in_discussion

    def _award_note(self, rec, params, user_id):
        noteable = self._noteable(params)
        note = self.notes.get(int(params["note_id"]))
        if noteable is None or note is None or (note.noteable_type, note.noteable_iid) != noteable:
            return self._not_found()
        name = rec.body["name"]
        if any(a.name == name and a.user_id == user_id for a in self.awards_on(note.id)):
            return 404, {}, {"message": AWARD_TAKEN}
        award = Award(next(self._ids), name, user_id, note.id)
        self.awards.append(award)
        return 201, {}, self.award_json(award)

    _post_projects_id_issues_issue_iid_notes_note_id_award_emoji = _award_note
    _post_projects_id_merge_requests_merge_request_iid_notes_note_id_award_emoji = _award_note

    def _get_projects_id_issues_issue_iid_resource_label_events(self, rec, params, user_id):
        if self._issue(params) is None:
            return self._not_found()
        iid = int(params["issue_iid"])
        return self._paginate(
            rec, [self.label_event_json(e) for e in self.label_events if e.issue_iid == iid]
        )

    # merge requests

    def _get_projects_id_merge_requests(self, rec, params, user_id):
        state = rec.query.get("state", ["all"])[0]
        source = rec.query.get("source_branch", [None])[0]
        target = rec.query.get("target_branch", [None])[0]
        found = [
            self.mr_json(mr)
            for mr in sorted(self.merge_requests.values(), key=lambda m: -m.iid)
            if state in ("all", mr.state)
            and source in (None, mr.source_branch)
            and target in (None, mr.target_branch)
        ]
        return self._paginate(rec, found)

    def _post_projects_id_merge_requests(self, rec, params, user_id):
        body = rec.body
        if "target_project_id" in body and body["target_project_id"] != self.project_id:
            return 403, {}, {"message": "403 Forbidden"}
        if self.branch_sha(body["source_branch"]) is None:
            return 400, {}, {"message": {"source_branch": ["is invalid"]}}
        for mr in self.merge_requests.values():
            if mr.source_branch == body["source_branch"] and mr.state == "opened":
                message = f"Another open merge request already exists for this source branch: !{mr.iid}"
                return 409, {}, {"message": [message]}
        mr = self.add_merge_request(
            body["source_branch"],
            body["title"],
            author=self.users[user_id],
            description=body.get("description", ""),
            target_branch=body["target_branch"],
        )
        mr.remove_source_branch = _truthy(body.get("remove_source_branch", False))
        return 201, {}, self.mr_json(mr)

    def _get_projects_id_merge_requests_merge_request_iid(self, rec, params, user_id):
        mr = self._mr(params)
        return (200, {}, self.mr_json(mr)) if mr else self._not_found()

    def _put_projects_id_merge_requests_merge_request_iid(self, rec, params, user_id):
        mr = self._mr(params)
        if mr is None:
            return self._not_found()
        if not rec.body:
            return (
                400,
                {},
                {"error": "title, description, ... are missing, at least one parameter must be provided"},
            )
        for key in ("title", "description", "target_branch"):
            if key in rec.body:
                setattr(mr, key, rec.body[key])
        if "remove_source_branch" in rec.body:
            mr.remove_source_branch = _truthy(rec.body["remove_source_branch"])
        if rec.body.get("state_event") == "close":
            mr.state = "closed"
        mr.updated_at = utcnow()
        return 200, {}, self.mr_json(mr)

    def _version(self, mr: MergeRequest) -> dict[str, Any] | None:
        """The merge request's one diff version: its target's tip against its head (GitLab keeps one per push;
        the fake, the latest)."""
        head = mr.sha or self.branch_sha(mr.source_branch)
        base = self.branch_sha(mr.target_branch)
        if head is None or base is None:
            return None
        return {
            "id": int(head[:7], 16),
            "head_commit_sha": head,
            "base_commit_sha": base,
            "start_commit_sha": base,
            "created_at": iso(mr.updated_at),
            "merge_request_id": 700_000 + mr.iid,
            "state": "collected",
            "real_size": "1",
        }

    def _get_projects_id_merge_requests_merge_request_iid_versions(self, rec, params, user_id):
        mr = self._mr(params)
        if mr is None:
            return self._not_found()
        version = self._version(mr)
        return self._paginate(rec, [version] if version else [])

    def _get_projects_id_merge_requests_merge_request_iid_versions_version_id(self, rec, params, user_id):
        mr = self._mr(params)
        version = self._version(mr) if mr else None
        if version is None or version["id"] != int(params["version_id"]):
            return self._not_found()
        diffs = []
        base, head = version["base_commit_sha"], version["head_commit_sha"]
        names = subprocess.run(
            ["git", "-C", str(self.bare_repo), "diff", "--name-only", "-z", base, head],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\0")
        for path in filter(None, names):
            patch = subprocess.run(
                [
                    "git",
                    "-C",
                    str(self.bare_repo),
                    "diff",
                    "--no-color",
                    "--no-ext-diff",
                    base,
                    head,
                    "--",
                    path,
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            # GitLab's `diff` is the patch without git's header lines: it starts at the first @@.
            diffs.append(
                {
                    "old_path": path,
                    "new_path": path,
                    "a_mode": "100644",
                    "b_mode": "100644",
                    "diff": patch[patch.find("@@") :] if "@@" in patch else "",
                    "new_file": False,
                    "renamed_file": False,
                    "deleted_file": False,
                }
            )
        return 200, {}, {**version, "commits": [], "diffs": diffs}

    # pipelines and jobs

    def _get_projects_id_pipelines(self, rec, params, user_id):
        sha = rec.query.get("sha", [None])[0]
        ref = rec.query.get("ref", [None])[0]
        found = [p for p in self.pipelines.values() if sha in (None, p.sha) and ref in (None, p.ref)]
        found.sort(key=lambda p: p.id, reverse=rec.query.get("sort", ["desc"])[0] == "desc")
        return self._paginate(rec, [self.pipeline_json(p) for p in found])

    def _get_projects_id_pipelines_pipeline_id(self, rec, params, user_id):
        pipeline = self.pipelines.get(int(params["pipeline_id"]))
        return (200, {}, self.pipeline_json(pipeline)) if pipeline else self._not_found()

    def _get_projects_id_pipelines_pipeline_id_variables(self, rec, params, user_id):
        pipeline = self.pipelines.get(int(params["pipeline_id"]))
        if pipeline is None:
            return self._not_found()
        found = [{"key": k, "variable_type": "env_var", "value": v} for k, v in pipeline.variables.items()]
        return self._paginate(rec, found)

    def _get_projects_id_pipelines_pipeline_id_jobs(self, rec, params, user_id):
        pipeline_id = int(params["pipeline_id"])
        if pipeline_id not in self.pipelines:
            return self._not_found()
        scopes = rec.query.get("scope[]", []) + rec.query.get("scope", [])
        retried = _truthy(rec.query.get("include_retried", ["false"])[0])
        found = [
            self.job_json(j)
            for j in sorted(self.jobs.values(), key=lambda j: -j.id)
            if j.pipeline_id == pipeline_id
            and (not scopes or j.status in scopes)
            and (retried or not j.retried)
        ]
        return self._paginate(rec, found)

    def _get_projects_id_jobs_job_id_trace(self, rec, params, user_id):
        job = self.jobs.get(int(params["job_id"]))
        if job is None:
            return self._not_found()
        return 200, {"Content-Type": "text/plain; charset=utf-8"}, job.trace.encode()

    # ---------------------------------------------------------------- answering git

    def _answer_git(self, rec: Recorded, raw: bytes, path_info: str) -> tuple[int, dict[str, str], bytes]:
        denied = (
            401,
            {"WWW-Authenticate": 'Basic realm="GitLab"', "Content-Type": "text/plain"},
            b"HTTP Basic: Access denied",
        )
        auth = rec.headers.get("authorization", "")
        if not auth.lower().startswith("basic "):
            return denied
        try:
            user, _, password = base64.b64decode(auth[6:].strip()).decode().partition(":")
        except ValueError:
            return denied
        pushing = path_info.endswith("/git-receive-pack") or rec.query.get("service") == ["git-receive-pack"]
        if user == "gitlab-ci-token" and password == self.job_token:
            if pushing and not self.job_token_push:
                return (
                    403,
                    {"Content-Type": "text/plain"},
                    b"You are not allowed to push code to this project.",
                )
            remote = "gitlab-ci-token"
        elif password in self.tokens:
            remote = self.users[self.tokens[password]].username
        else:
            return denied
        return http_backend(
            self.git_project_root,
            path_info=path_info,
            method=rec.method,
            query=rec.query,
            headers=rec.headers,
            body=raw,
            remote_user=remote,
        )


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1"))


def _make_handler(fake: FakeGitLab) -> type[BaseHTTPRequestHandler]:
    class Handler(FakeHandler):
        def answer(self, raw: bytes, path: str, query: dict[str, list[str]], headers: dict[str, str]) -> None:
            if fake.prefix and not path.startswith(fake.prefix + "/"):
                self._send(404, {"Content-Type": "text/plain"}, b"not found")
                return
            path = path[len(fake.prefix) :]
            git_prefix = f"/{fake.path_with_namespace}.git/"
            if path.startswith(API + "/"):
                content_type = headers.get("content-type", "").split(";")[0]
                body: Any = None
                if raw:
                    try:
                        body = json.loads(raw) if content_type == "application/json" else raw
                    except ValueError:
                        body = raw
                rec = Recorded(self.command, path[len(API) :], query, headers, body)
                with fake._lock:
                    fake.requests.append(rec)
                    status, extra, payload = fake._answer_api(rec)
                rec.status = status
                if isinstance(payload, bytes):
                    self._send(status, extra, payload)
                else:
                    data = b"" if payload is None else json.dumps(payload).encode()
                    self._send(status, {"Content-Type": "application/json", **extra}, data)
            elif path.startswith(git_prefix):
                rec = Recorded(self.command, path, query, headers, raw)
                with fake._lock:
                    fake.requests.append(rec)
                path_info = f"/{fake.namespace}/{fake.name}.git/" + path[len(git_prefix) :]
                status, extra, data = fake._answer_git(rec, raw, path_info)
                rec.status = status
                if path_info.endswith("/git-receive-pack") and status == 200:
                    with fake._lock:
                        fake.refresh_merge_request_refs()
                self._send(status, extra, data)
            else:
                self._send(404, {"Content-Type": "text/plain"}, b"not found")

    return Handler
