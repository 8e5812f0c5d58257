"""The GitLab REST API through python-gitlab, behind the calls the forge-neutral flow makes (interface.Forge),
plus what the GitLab entry needs to decide who may trigger: a member's access level, a note re-read from
the API, a user's bot flag.

The client (client.py) authenticates with a project (or personal) access token, or with the job's
CI_JOB_TOKEN, which GitLab accepts on a few read endpoints only (pipelines, jobs, their traces): notes,
merge requests and award emoji need an access token.

Words: a GitLab "issue" and "merge request" are numbered by their `iid` within the project, in two separate
sequences; `number` in the interface is that iid. GitLab's "opened" state is reported as "open".
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from gitbot.forge.gitlab import ci_config
from gitbot.forge.gitlab.ci_io import DEFAULT_OUTPUT_DIR
from gitbot.forge.gitlab.client import api_base, connect, errors, forge_error
from gitbot.forge.gitlab.hunks import hunk_upto
from gitbot.forge.gitlab.out_dir import RECORD_DIR
from gitbot.forge.gitlab.trace import readable
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
    ThreadComment,
    parse_time,
)
from gitbot.forge.triggers import REPLY_PATTERN, CommentTrigger
from gitbot.forge.web_links import WebLinks

LOG_MAX_BYTES = 4 * 1024 * 1024  # the head of a trace is dropped past this; failures are near the end
EYES = "eyes"
ALREADY_AWARDED = "has already been taken"  # GitLab's 404 when the same user gives the same emoji twice
# GitLab's MergeRequest::DRAFT_REGEX: the title prefixes that make a merge request a draft.
DRAFT_PREFIX = re.compile(r"\A\s*(?:\[draft\]|draft:|\(draft\)|draft\s-\s|draft\s)+\s*", re.IGNORECASE)
# The system notes GitLab writes when an issue's text changes (SystemNotes::IssuablesService).
EDIT_NOTE = re.compile(r"changed the description|changed title\b")
ACCESS_NAMES = {0: "NONE", 5: "MINIMAL_ACCESS", 10: "GUEST", 15: "PLANNER", 20: "REPORTER", 30: "DEVELOPER",
                40: "MAINTAINER", 50: "OWNER"}  # fmt: skip
# GitLab job statuses that are finished, and what a check's conclusion is for each.
CONCLUSIONS = {"success": "success", "failed": "failure", "canceled": "cancelled", "skipped": "skipped",
               "manual": "action_required"}  # fmt: skip
TERMS = Terms(
    change="merge request",
    change_short="MR",
    change_prefix="!",
    issue_prefix="#",
    run="pipeline",
    forge="GitLab",
    max_total_cost_setting="`GITBOT_MAX_TOTAL_COST_USD`",
    max_iterations_setting="`GITBOT_MAX_ITERATIONS`",
    ci="pipeline",
    ci_product="GitLab CI/CD",
    settings_place="the component's input in `.gitlab-ci.yml` (or its `GITBOT_*` variable)",
    check_command_setting="`check-command` input (`GITBOT_CHECK_COMMAND`)",
    change_ref="merge-requests/{number}/head",
    # templates/gitbot.yml keeps `.gitbot-out/` as the job's artifacts; the record is in it (out_dir.py).
    record_place=(
        "The run record is in the artifacts of this pipeline's gitbot job (`gitbot-run-{run}`): "
        f"copy their `{DEFAULT_OUTPUT_DIR}/{RECORD_DIR}/` into a clone of this branch as `.git/gitbot/`"
    ),
    sandbox_setup=(
        "Run the job on a runner where bubblewrap can create user namespaces, or where the kernel has "
        "Landlock (the component installs bubblewrap with apt-get when the image has none)"
    ),
)


def is_internal(note: dict[str, Any]) -> bool:
    """Whether a note is internal (`confidential` before GitLab 15.0): only members with the Reporter role
    see it, while gitbot's branch, merge request, commits, notes, job log and record can be seen by everyone
    who can see the project. So the task never holds one (and one that asks is refused, trust.py): the
    model could repeat its words anywhere."""
    return bool(note.get("internal") or note.get("confidential"))


@dataclass(frozen=True)
class NoteData:
    """A note as the API shows it now (never as a payload claims it was)."""

    id: int
    noteable_type: str  # "Issue" or "MergeRequest"
    noteable_iid: int
    body: str
    author_id: int
    author: str  # username
    system: bool
    created_at: dt.datetime
    updated_at: dt.datetime
    internal: bool = False


@dataclass(frozen=True)
class PipelineData:
    """A pipeline as GitLab records it: what started it, for whom, on what (never as the job's variables
    say, which a trigger's variables override)."""

    id: int
    source: str  # "trigger", "web", "schedule", "push", …
    user_id: int
    ref: str
    sha: str
    created_at: dt.datetime


@dataclass(frozen=True)
class LabelEventData:
    action: str  # "add" or "remove"
    user_id: int
    username: str
    created_at: dt.datetime


@dataclass(frozen=True)
class UserData:
    id: int
    username: str
    bot: bool
    state: str  # "active", "blocked", …


class GitLabForge(WebLinks):
    """One GitLab project; every method is one or a few API calls and returns plain data."""

    terms = TERMS
    # Until the entry reads the project's own (ci_config.read): the default file and .gitlab/.
    ci_configuration = ci_config.CIConfiguration(frozenset({ci_config.DEFAULT_CONFIG}))

    def __init__(self, url: str, token: str, project: str | int, *, job_token: bool = False):
        self._gitlab_errors = errors()
        self.gl = connect(url, token, job_token=job_token)
        self._me: tuple[int, str] | None = None
        self._bots: dict[int, bool] = {}
        self._levels: dict[int, int | None] = {}
        project_ref = str(project)
        self._job_token = job_token
        if job_token:
            # A job token may not read the project itself (GitLab's job token access table has no Projects
            # API): it reaches pipelines, jobs and traces of the project named by its path.
            if "/" not in project_ref:
                raise ForgeError(
                    f"with a job token, name the project by its path (CI_PROJECT_PATH), not {project_ref!r}"
                )
            self.project = self.gl.projects.get(project_ref, lazy=True)
            self.path = project_ref
            self.web_url = f"{api_base(url)}/{project_ref}"
            return
        self.project = self._call(lambda: self.gl.projects.get(project_ref), f"reading project {project_ref}")
        self.path = self.project.path_with_namespace
        self.web_url = self.project.web_url.rstrip("/")

    @property
    def pages(self) -> str:  # WebLinks: GitLab's pages of a project are below `/-`
        return f"{self.web_url}/-"

    def _call(self, fn, doing: str):
        try:
            return fn()
        except self._gitlab_errors as exc:
            raise forge_error(exc, doing) from None

    def _found(self, fn, doing: str):
        """fn()'s object, or None when GitLab answers 404 (which it also does for what the token may not see)."""
        try:
            return fn()
        except self._gitlab_errors as exc:
            if getattr(exc, "response_code", None) == 404:
                return None
            raise forge_error(exc, doing) from None

    @property
    def default_branch(self) -> str:
        if self._job_token:
            raise ForgeError(
                "a job token cannot read the project's default branch: use a project access token"
            )
        return self.project.default_branch or "main"

    # ---------------------------------------------------------------- who may trigger

    def access_level(self, user_id: int) -> int | None:
        """The user's access level in the project, inherited from groups included; None: not a member."""
        if user_id not in self._levels:
            member = self._found(
                lambda: self.project.members_all.get(user_id), f"reading the access level of user {user_id}"
            )
            self._levels[user_id] = int(member.access_level) if member is not None else None
        return self._levels[user_id]

    def note(self, noteable: str, iid: int, note_id: int) -> NoteData | None:
        """A note as it is now, with its author, read from the API; None when it does not exist there
        (a forged payload) or belongs to another issue or merge request."""
        parent = self._noteable(noteable, iid)
        note = self._found(lambda: parent.notes.get(note_id), f"reading note {note_id}")
        if note is None:
            return None
        data = note.attributes
        if data.get("noteable_type") != noteable or data.get("noteable_iid") not in (iid, None):
            return None
        author = data.get("author") or {}
        created = parse_time(data.get("created_at")) or dt.datetime.now(dt.UTC)
        return NoteData(
            id=int(data["id"]),
            noteable_type=noteable,
            noteable_iid=iid,
            body=data.get("body") or "",
            author_id=int(author.get("id") or 0),
            author=str(author.get("username") or ""),
            system=bool(data.get("system")),
            created_at=created,
            updated_at=parse_time(data.get("updated_at")) or created,
            internal=is_internal(data),
        )

    def pipeline(self, pipeline_id: int) -> PipelineData | None:
        """The pipeline as GitLab records it; None when it does not exist (or the token may not see it)."""
        found = self._found(
            lambda: self.project.pipelines.get(pipeline_id), f"reading pipeline {pipeline_id}"
        )
        if found is None:
            return None
        data = found.attributes
        return PipelineData(
            id=int(data["id"]),
            source=str(data.get("source") or ""),
            user_id=int((data.get("user") or {}).get("id") or 0),
            ref=str(data.get("ref") or ""),
            sha=str(data.get("sha") or ""),
            created_at=parse_time(data.get("created_at")) or dt.datetime.now(dt.UTC),
        )

    def pipeline_variable_keys(self, pipeline_id: int) -> list[str]:
        """The names of the variables passed to the pipeline when it was created (a trigger's, a manual
        run's): GitLab lets them override the job's and its own predefined ones."""
        pipeline = self.project.pipelines.get(pipeline_id, lazy=True)
        found = self._call(
            lambda: pipeline.variables.list(get_all=True), f"reading the variables of pipeline {pipeline_id}"
        )
        return [str(v.attributes.get("key")) for v in found]

    def label_events(self, number: int, label: str) -> list[LabelEventData]:
        """Every add and remove of `label` on the issue, oldest first, with who did it (their user id)."""
        issue = self.project.issues.get(number, lazy=True)
        events = self._call(
            lambda: issue.resourcelabelevents.list(get_all=True), f"reading the label events of #{number}"
        )
        found = []
        for event in events:
            data = event.attributes
            when = parse_time(data.get("created_at"))
            if (data.get("label") or {}).get("name") == label and when is not None:
                user = data.get("user") or {}
                found.append(
                    LabelEventData(
                        str(data.get("action") or ""), int(user.get("id") or 0), str(user.get("username") or ""), when
                    )
                )
        return sorted(found, key=lambda e: e.created_at)

    def issue_edited_after(self, number: int, when: dt.datetime) -> bool:
        """Whether the issue's title or description changed after `when`, from the system notes GitLab
        writes for each edit ("changed the description", "changed title from … to …")."""
        issue = self.project.issues.get(number, lazy=True)
        notes = self._call(
            lambda: issue.notes.list(get_all=True, sort="asc", order_by="created_at"),
            f"reading the history of #{number}",
        )
        for note in notes:
            data = note.attributes
            body = str(data.get("body") or "")
            created = parse_time(data.get("created_at"))
            if data.get("system") and EDIT_NOTE.match(body) and (created is None or created >= when):
                return True
        return False

    def user(self, user_id: int) -> UserData | None:
        user = self._found(lambda: self.gl.users.get(user_id), f"reading user {user_id}")
        if user is None:
            return None
        data = user.attributes
        return UserData(
            int(data["id"]), data.get("username", ""), bool(data.get("bot")), data.get("state", "")
        )

    # ---------------------------------------------------------------- issues

    def _noteable(self, noteable: str, iid: int) -> Any:
        if noteable == "Issue":
            return self.project.issues.get(iid, lazy=True)
        if noteable == "MergeRequest":
            return self.project.mergerequests.get(iid, lazy=True)
        raise ForgeError(f"notes on a {noteable!r} are not supported")

    def confidential(self, number: int) -> bool:
        """Whether the issue is confidential: then its words must not reach a merge request or a note that
        everyone who sees the project can read, so the GitLab entry must not start on one."""
        issue = self._call(lambda: self.project.issues.get(number), f"reading issue #{number}")
        return bool(issue.attributes.get("confidential"))

    def issue(self, number: int) -> IssueData:
        issue = self._call(lambda: self.project.issues.get(number), f"reading issue #{number}")
        data = issue.attributes
        return IssueData(
            number=int(data["iid"]),
            title=data.get("title") or "",
            body=data.get("description") or "",
            author=(data.get("author") or {}).get("username", ""),
            state="open" if data.get("state") == "opened" else str(data.get("state", "")),
            labels=list(data.get("labels") or []),
            html_url=data.get("web_url", ""),
        )

    def _whoami(self) -> tuple[int, str] | None:
        """The user the token acts as (a project access token's bot user); None for a job token, which
        cannot read it (and cannot write notes either)."""
        if self._me is None:
            try:
                self.gl.auth()
                self._me = (int(self.gl.user.id), self.gl.user.username) if self.gl.user else (0, "")
            except self._gitlab_errors:
                self._me = (0, "")
        return self._me if self._me[0] else None

    def is_token_user(self, user_id: int) -> bool:
        """Whether `user_id` is the user gitbot's token acts as: a personal access token's notes are
        gitbot's own even though that user is no bot and its notes may lack the marker."""
        return user_id == self._me_id()

    def _me_id(self) -> int | None:
        me = self._whoami()
        return me[0] if me else None

    def _me_name(self) -> str | None:
        me = self._whoami()
        return me[1] if me else None

    def _is_bot(self, user_id: int) -> bool:
        if user_id == self._me_id():
            return True
        if user_id not in self._bots:
            found = self.user(user_id)
            self._bots[user_id] = bool(found and found.bot)
        return self._bots[user_id]

    def _comments(self, noteable: str, iid: int) -> list[CommentData]:
        parent = self._noteable(noteable, iid)
        notes = self._call(
            lambda: parent.notes.list(get_all=True, sort="asc", order_by="created_at"),
            f"reading the notes of {noteable} {iid}",
        )
        comments = []
        for note in notes:
            data = note.attributes
            if data.get("system"):
                continue  # "changed the description", "mentioned in …": GitLab's, not a person's
            if is_internal(data):
                continue  # never in a task: see `is_internal`
            author = data.get("author") or {}
            created = parse_time(data.get("created_at")) or dt.datetime.now(dt.UTC)
            comments.append(
                CommentData(
                    id=int(data["id"]),
                    author=author.get("username", ""),
                    author_type="Bot" if self._is_bot(int(author.get("id") or 0)) else "User",
                    body=data.get("body") or "",
                    created_at=created,
                    updated_at=parse_time(data.get("updated_at")) or created,
                )
            )
        return comments

    def comments(self, number: int) -> list[CommentData]:
        return self._comments("Issue", number)

    def label_added_at(
        self, number: int, label: str, actor: str, *, not_after: dt.datetime | None = None
    ) -> dt.datetime | None:
        """When `actor` last added `label` to the issue, not after `not_after` (the payload's snapshot
        time): the moment the task was approved, after which no comment counts."""
        times = [
            e.created_at
            for e in self.label_events(number, label)
            if e.action == "add" and e.username == actor and (not_after is None or e.created_at <= not_after)
        ]
        return max(times) if times else None

    def upsert_comment(
        self, number: int, body: str, *, marker: str, existing: list[CommentData] | None = None
    ) -> str:
        """Edit gitbot's status note on the issue (found by its marker, written by this token's user), or
        create it. Returns its URL."""
        issue = self.project.issues.get(number, lazy=True)
        comments = existing if existing is not None else self.comments(number)
        mine = [c for c in comments if marker in c.body and c.author == self._me_name()]
        doing = f"writing the status note on #{number}"
        for comment in reversed(mine):
            note = issue.notes.get(comment.id, lazy=True)
            note.body = body
            try:
                note.save()
                return f"{self.issue_url(number)}#note_{comment.id}"
            except self._gitlab_errors as exc:
                if getattr(exc, "response_code", None) not in (403, 404):
                    raise forge_error(exc, doing) from None
        created = self._call(lambda: issue.notes.create({"body": body}), doing)
        return f"{self.issue_url(number)}#note_{created.id}"

    # ---------------------------------------------------------------- a failed pipeline

    def failed_jobs(self, run_id: int) -> list[JobData]:
        """The pipeline's failed jobs (their latest attempts); a job allowed to fail is not a failure."""
        pipeline = self.project.pipelines.get(run_id, lazy=True)
        jobs = self._call(
            lambda: pipeline.jobs.list(get_all=True, scope=["failed"]),
            f"listing the jobs of pipeline {run_id}",
        )
        return [
            JobData(id=int(j.id), name=j.name, conclusion="failure", html_url=j.web_url, failed_steps=[])
            for j in jobs
            if j.status == "failed" and not j.attributes.get("allow_failure")
        ]

    def job_log(self, job_id: int) -> str:
        """A job's trace, at most LOG_MAX_BYTES of its end (where failures are)."""
        kept = bytearray()

        def keep(chunk: bytes) -> None:
            kept.extend(chunk)
            if len(kept) > 2 * LOG_MAX_BYTES:
                del kept[: len(kept) - LOG_MAX_BYTES]

        job = self.project.jobs.get(job_id, lazy=True)
        self._call(
            lambda: job.trace(streamed=True, action=keep, chunk_size=64 * 1024), f"reading job {job_id}"
        )
        return readable(bytes(kept[-LOG_MAX_BYTES:]).decode("utf-8", "replace"))  # as the log page shows it

    # ---------------------------------------------------------------- merge requests

    def _pull_data(self, data: dict[str, Any]) -> PullData:
        return PullData(
            number=int(data["iid"]),
            html_url=data.get("web_url", ""),
            draft=bool(data.get("draft")),
            head=data.get("source_branch", ""),
            base=data.get("target_branch", ""),
        )

    def open_pull(self, branch: str) -> PullData | None:
        found = self._call(
            lambda: self.project.mergerequests.list(state="opened", source_branch=branch, get_all=False),
            f"looking for an open merge request from {branch}",
        )
        ours = [m for m in found if m.attributes.get("source_project_id") == self.project.id]
        return self._pull_data(ours[0].attributes) if ours else None

    def create_pull(self, *, branch: str, base: str, title: str, body: str, draft: bool) -> PullData:
        if draft and not DRAFT_PREFIX.match(title):
            title = f"Draft: {title}"
        attributes = {
            "source_branch": branch,
            "target_branch": base,
            "title": title,
            "description": body,
            "remove_source_branch": True,
        }
        mr = self._call(lambda: self.project.mergerequests.create(attributes), "opening the merge request")
        return self._pull_data(mr.attributes)

    def _update(self, number: int, changes: dict[str, Any], doing: str) -> dict[str, Any]:
        # One PUT of the fields that change, without first spending a GET on the merge request.
        manager = self.project.mergerequests
        return self._call(lambda: manager.update(number, changes), doing)

    def update_pull(self, number: int, *, title: str, body: str) -> PullData:
        data = self._update(
            number, {"title": title, "description": body}, f"updating merge request !{number}"
        )
        return self._pull_data(data)

    def update_pull_body(self, number: int, body: str) -> None:
        self._update(number, {"description": body}, f"updating merge request !{number}")

    def get_pull(self, number: int) -> PullInfo:
        mr = self._call(lambda: self.project.mergerequests.get(number), f"reading merge request !{number}")
        data = mr.attributes
        source_id = data.get("source_project_id")
        source = self.path if source_id == self.project.id else self._project_path(source_id)
        return PullInfo(
            number=int(data["iid"]),
            node_id="",
            title=data.get("title") or "",
            body=data.get("description") or "",
            state={"opened": "open", "locked": "open"}.get(data.get("state", ""), data.get("state", "")),
            draft=bool(data.get("draft")),
            author=(data.get("author") or {}).get("username", ""),
            head_ref=data.get("source_branch", ""),
            head_sha=data.get("sha") or "",
            head_repository=source,
            base_ref=data.get("target_branch", ""),
            html_url=data.get("web_url", ""),
        )

    def _project_path(self, project_id: Any) -> str | None:
        """A fork's path_with_namespace; None when it is gone or this token cannot see it."""
        if not isinstance(project_id, int):
            return None
        fork = self._found(lambda: self.gl.projects.get(project_id), f"reading project {project_id}")
        return fork.path_with_namespace if fork is not None else None

    def mark_ready(self, pull: PullInfo) -> None:
        """Ready for review: the title without its Draft prefix (how GitLab's own "Mark as ready" does it)."""
        title = DRAFT_PREFIX.sub("", pull.title, count=1)
        data = self._update(pull.number, {"title": title}, "marking the merge request ready")
        if data.get("draft"):
            raise ForgeError("marking the merge request ready: it is still a draft")

    def _discussions(self, noteable: str, iid: int) -> list[dict[str, Any]]:
        parent = self._noteable(noteable, iid)
        found = self._call(
            lambda: parent.discussions.list(get_all=True), f"reading the discussions of {noteable} {iid}"
        )
        return [d.attributes for d in found]

    def _association(self, user_id: int) -> str:
        level = self.access_level(user_id) if user_id else None
        return ACCESS_NAMES.get(level or 0, "NONE")

    def _diffs(self, number: int) -> dict[str, str]:
        """Each changed file's patch in the merge request's latest diff version, by its new path."""
        mr = self.project.mergerequests.get(number, lazy=True)
        doing = f"reading the diff of !{number}"
        versions = self._call(lambda: mr.diffs.list(per_page=1, get_all=False), doing)
        if not versions:
            return {}
        latest = self._call(lambda: mr.diffs.get(versions[0].id), doing)
        return {
            d.get("new_path") or d.get("old_path"): d.get("diff") or "" for d in latest.attributes["diffs"]
        }

    def review_threads(self, number: int) -> list[ReviewThread]:
        """The merge request's diff discussions: a line of a file, the notes on it, resolved or not, and the
        hunk the line is in (read once from the merge request's diff, when there is a diff discussion)."""
        threads = []
        diffs: dict[str, str] | None = None
        for discussion in self._discussions("MergeRequest", number):
            notes = [n for n in discussion.get("notes") or [] if not n.get("system") and not is_internal(n)]
            position = next((n.get("position") for n in notes if n.get("position")), None)
            if not position:
                continue
            comments = [
                ThreadComment(
                    id=int(n["id"]),
                    author=(n.get("author") or {}).get("username", "ghost"),
                    association=self._association(int((n.get("author") or {}).get("id") or 0)),
                    body=n.get("body") or "",
                    created_at=parse_time(n.get("created_at")),
                    edited_at=parse_time(n.get("updated_at")),
                    review_id=None,
                )
                for n in notes
            ]
            line_range = position.get("line_range") or {}
            start = ((line_range.get("start") or {}).get("new_line")) if line_range else None
            path = position.get("new_path") or position.get("old_path") or ""
            diffs = self._diffs(number) if diffs is None else diffs
            hunk = hunk_upto(
                path,
                diffs.get(path, ""),
                new_line=position.get("new_line"),
                old_line=position.get("old_line"),
            )
            threads.append(
                ReviewThread(
                    path=path,
                    line=position.get("new_line") or position.get("old_line"),
                    start_line=start,
                    # GitLab's API does not say whether a diff note is outdated.
                    outdated=False,
                    resolved=all(n.get("resolved") for n in notes if n.get("resolvable")),
                    diff_hunk=hunk,
                    comments=comments,
                )
            )
        return threads

    def check_runs(self, sha: str) -> list[CheckRun]:
        """The jobs of the latest pipeline for the commit."""
        pipelines = self._call(
            lambda: self.project.pipelines.list(
                sha=sha, order_by="id", sort="desc", per_page=1, get_all=False
            ),
            f"reading the pipelines of {sha[:12]}",
        )
        if not pipelines:
            return []
        jobs = self._call(
            lambda: self.project.pipelines.get(pipelines[0].id, lazy=True).jobs.list(get_all=True),
            f"reading the jobs of pipeline {pipelines[0].id}",
        )
        checks = []
        for job in jobs:
            status = job.status
            conclusion = CONCLUSIONS.get(status)
            if status == "failed" and job.attributes.get("allow_failure"):
                conclusion = "neutral"
            checks.append(
                CheckRun(
                    name=job.name,
                    status="completed"
                    if conclusion
                    else ("queued" if status in ("created", "pending") else "in_progress"),
                    conclusion=conclusion,
                    html_url=job.web_url,
                    summary="",
                    job_id=int(job.id),
                )
            )
        return checks

    # ---------------------------------------------------------------- a request made in a note
    # The trigger is the adapter's CommentTrigger: `on_pull` (a merge request, else an issue), `number`
    # (the iid), `comment_id` (the note) and `key`. Where a reply goes is read from the API (the note's
    # discussion), never from the payload.

    @staticmethod
    def _noteable_of(trigger: CommentTrigger) -> str:
        return "MergeRequest" if trigger.on_pull else "Issue"

    def react(self, trigger: CommentTrigger) -> None:
        """👀 on the note that asked: it was heard. Once: GitLab refuses a second one, which is done too."""
        note = self._noteable(self._noteable_of(trigger), trigger.number).notes.get(
            trigger.comment_id, lazy=True
        )
        try:
            note.awardemojis.create({"name": EYES})
        except self._gitlab_errors as exc:
            if getattr(exc, "response_code", None) == 404 and ALREADY_AWARDED in str(exc):
                return
            raise forge_error(exc, "reacting to the note") from None

    def _thread_of(self, trigger: CommentTrigger) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The discussion holding the trigger's note (an individual note has one too: a reply in it makes it
        a thread, as GitLab's "Reply" does), and every note of the issue or merge request."""
        discussions = self._discussions(self._noteable_of(trigger), trigger.number)
        everything = [n for d in discussions for n in d.get("notes") or []]
        for discussion in discussions:
            if any(n.get("id") == trigger.comment_id for n in discussion.get("notes") or []):
                return discussion, everything
        return None, everything

    def find_reply(self, trigger: CommentTrigger) -> Reply | None:
        """gitbot's reply to this request, if one exists: then the request is taken (or answered). Only a
        note by this token's own user counts, since anyone can paste the marker."""
        me = self._me_id()
        thread, everything = self._thread_of(trigger)
        candidates = thread.get("notes") if thread is not None else everything
        for note in candidates or []:
            match = REPLY_PATTERN.search(note.get("body") or "")
            if match and match.group(1) == trigger.key and (note.get("author") or {}).get("id") == me:
                return Reply(int(note["id"]), match.group(2), thread is not None)
        return None

    def write_reply(self, trigger: CommentTrigger, body: str, existing: Reply | None) -> Reply:
        """Edit gitbot's reply, or write it in the note's discussion (on the issue or merge request only when
        GitLab no longer shows the note)."""
        run = REPLY_PATTERN.search(body)
        parent = self._noteable(self._noteable_of(trigger), trigger.number)
        doing = f"replying on {self.terms.change_prefix if trigger.on_pull else '#'}{trigger.number}"
        if existing is not None:
            note = parent.notes.get(existing.id, lazy=True)
            note.body = body
            self._call(note.save, doing)
            return existing
        thread, everything = self._thread_of(trigger)
        if thread is not None:  # GitLab keeps a reply to an internal note internal
            discussion = parent.discussions.get(thread["id"], lazy=True)
            created = self._call(lambda: discussion.notes.create({"body": body}), doing)
        else:
            # An answer to an internal note (members only) stays internal: it quotes and works from it.
            asked = next((n for n in everything if n.get("id") == trigger.comment_id), {})
            fields = {"body": body, **({"internal": True} if asked.get("internal") else {})}
            created = self._call(lambda: parent.notes.create(fields), doing)
        return Reply(int(created.id), run.group(2) if run else "", thread is not None)

    def unpushable(self, path: str) -> str | None:
        """CI/CD configuration (ci_config.py: the entry reads it from the work tree before the agent runs)."""
        return ci_config.REASON if self.ci_configuration.holds(path) else None
