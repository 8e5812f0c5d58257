"""Where a GitLab CI job runs and what started it: GitLab's predefined variables and, for a pipeline
started through the trigger API, the webhook's body in the `TRIGGER_PAYLOAD` file variable.

`decide` maps them to one of the neutral triggers (forge/triggers.py):
  IssueTrigger     an Issue Hook whose `changes.labels` add the configured label; or a manual run
                   (`web`) or a schedule with GITBOT_ISSUE naming an issue
  WorkflowTrigger  the component's `when: on_failure` job (GITBOT_ON_FAILURE) in a failed branch
                   pipeline: the pipeline is CI_PIPELINE_ID, its failed jobs are read from the API
  CommentTrigger   a Note Hook creating a note that holds the live trigger phrase: on an issue
                   (issue_note), on a merge request (merge_request_note) or on a line of its diff
                   (diff_note, with its position); the discussion is where the reply goes
  Ignore           anything else, with the reason

The variables are GitLab's and can be trusted. The payload cannot: anyone holding the trigger token
can send any body (and GitLab once expanded `$VARIABLES` inside it). Here it only says what to look
at — which project, which issue or merge request, which note — and lets cheap refusals happen without
an API call. trust.py re-reads everything a decision rests on from the API (the note, its author and
their access, who added the label, the issue's text) before anything reaches the model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitbot.forge.gitlab.ci_io import output_dir
from gitbot.forge.mention import DEFAULT_PHRASE, find_request
from gitbot.forge.triggers import (
    BRANCH_PREFIX,
    Actor,
    CommentTrigger,
    Decision,
    Ignore,
    IssueTrigger,
    LineRef,
    WorkflowTrigger,
)

# A webhook body is small; anything far larger is not one (GitLab caps webhook bodies at 25 MB).
PAYLOAD_LIMIT_BYTES = 25 * 1024 * 1024
NOTE_KINDS = {"Issue": "issue_note", "MergeRequest": "merge_request_note"}
TRUE_WORDS = {"true", "yes", "1", "on"}


class ContextError(ValueError):
    """The job's variables are incomplete, or the payload file is unreadable."""


@dataclass(frozen=True)
class GitLabContext:
    """The job's place (interface.RunPlace) and the facts GitLab gave it."""

    repository: str  # CI_PROJECT_PATH: group/subgroup/project
    server_url: str  # CI_SERVER_URL: https://gitlab.com or a self-managed instance
    api_url: str  # CI_API_V4_URL
    project_id: int
    run_id: str  # CI_PIPELINE_ID
    pipeline_url: str
    job_url: str
    workspace: Path  # CI_PROJECT_DIR
    source: str  # CI_PIPELINE_SOURCE
    ref: str  # CI_COMMIT_REF_NAME
    sha: str  # CI_COMMIT_SHA
    actor: str = ""  # GITLAB_USER_LOGIN: who started the pipeline (the trigger token's owner, for a trigger)
    actor_id: int | None = None  # GITLAB_USER_ID
    tag: str = ""  # CI_COMMIT_TAG
    mr_source_project_id: int | None = None  # CI_MERGE_REQUEST_SOURCE_PROJECT_ID, in an MR pipeline
    on_failure: bool = False  # GITBOT_ON_FAILURE: the component's when: on_failure job
    dispatch_issue: str = ""  # GITBOT_ISSUE: a manual run's or a schedule's issue
    payload: dict[str, Any] | None = None  # TRIGGER_PAYLOAD's JSON; None when there is none
    runner_temp: Path | None = None  # where the run's record is prepared for the artifact

    @property
    def run_url(self) -> str:
        return self.pipeline_url or f"{self.server_url}/{self.repository}/-/pipelines/{self.run_id}"


def read_context(environ: dict[str, str]) -> GitLabContext:
    required = (
        "CI_SERVER_URL",
        "CI_API_V4_URL",
        "CI_PROJECT_ID",
        "CI_PROJECT_PATH",
        "CI_PROJECT_DIR",
        "CI_PIPELINE_SOURCE",
        "CI_PIPELINE_ID",
    )
    missing = [name for name in required if not environ.get(name)]
    if missing:
        raise ContextError(f"not running in a GitLab CI job: {', '.join(missing)} not set")
    server, api = environ["CI_SERVER_URL"].rstrip("/"), environ["CI_API_V4_URL"].rstrip("/")
    for name, url in (("CI_SERVER_URL", server), ("CI_API_V4_URL", api)):
        if not re.match(r"^https?://[^\s/@]+(/\S*)?$", url):
            raise ContextError(f"{name} is not an http(s) URL: {url!r}")
    path = environ["CI_PROJECT_PATH"]
    if not re.fullmatch(r"\w[\w.-]*(/\w[\w.-]*)+", path):
        raise ContextError(f"CI_PROJECT_PATH is not group/project: {path!r}")
    project_id = _positive(environ["CI_PROJECT_ID"])
    if project_id is None:
        raise ContextError(f"CI_PROJECT_ID is not a project id: {environ['CI_PROJECT_ID']!r}")
    return GitLabContext(
        repository=path,
        server_url=server,
        api_url=api,
        project_id=project_id,
        run_id=environ["CI_PIPELINE_ID"],
        pipeline_url=environ.get("CI_PIPELINE_URL", ""),
        job_url=environ.get("CI_JOB_URL", ""),
        workspace=Path(environ["CI_PROJECT_DIR"]),
        source=environ["CI_PIPELINE_SOURCE"],
        ref=environ.get("CI_COMMIT_REF_NAME", ""),
        sha=environ.get("CI_COMMIT_SHA", ""),
        actor=environ.get("GITLAB_USER_LOGIN", ""),
        actor_id=_positive(environ.get("GITLAB_USER_ID", "")),
        tag=environ.get("CI_COMMIT_TAG", ""),
        mr_source_project_id=_positive(environ.get("CI_MERGE_REQUEST_SOURCE_PROJECT_ID", "")),
        on_failure=environ.get("GITBOT_ON_FAILURE", "").strip().lower() in TRUE_WORDS,
        dispatch_issue=environ.get("GITBOT_ISSUE", "").strip(),
        payload=_read_payload(environ.get("TRIGGER_PAYLOAD", "")),
        # The run's record, scanned, goes beside the summary: the component keeps that directory as the
        # job's artifact (named gitbot-run-<pipeline id>, as the merge request says).
        runner_temp=output_dir(environ),
    )


def _read_payload(value: str) -> dict[str, Any] | None:
    """TRIGGER_PAYLOAD is a file variable: its value is the path of a file holding the body."""
    if not value:
        return None
    path = Path(value)
    try:
        with open(path, "rb") as f:
            data = f.read(PAYLOAD_LIMIT_BYTES + 1)
    except OSError as exc:
        raise ContextError(f"cannot read TRIGGER_PAYLOAD ({path}): {exc.strerror}") from None
    if len(data) > PAYLOAD_LIMIT_BYTES:
        raise ContextError(f"TRIGGER_PAYLOAD is larger than {PAYLOAD_LIMIT_BYTES} bytes: not a webhook body")
    try:
        payload = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ContextError(
            "TRIGGER_PAYLOAD does not hold JSON (is the webhook's body the trigger's?)"
        ) from None
    if not isinstance(payload, dict):
        raise ContextError("TRIGGER_PAYLOAD does not hold a JSON object")
    return payload


def decide(ctx: GitLabContext, *, label: str, trigger_phrase: str = DEFAULT_PHRASE) -> Decision:
    if ctx.on_failure:
        return _failed_pipeline(ctx)
    if ctx.source == "trigger":
        if ctx.payload is None:
            return Ignore(
                "a trigger pipeline without TRIGGER_PAYLOAD: point a project webhook at the "
                "pipeline trigger API, or start a manual run with GITBOT_ISSUE"
            )
        return _decide_payload(ctx, ctx.payload, label, trigger_phrase)
    if ctx.source in ("web", "schedule"):
        raw = ctx.dispatch_issue.lstrip("#")
        if not raw.isdigit() or int(raw) <= 0:
            return Ignore(f"a {ctx.source} pipeline without GITBOT_ISSUE naming an issue (its iid, e.g. 12)")
        if not ctx.actor:
            return Ignore(f"the {ctx.source} pipeline names nobody who started it (GITLAB_USER_LOGIN)")
        return IssueTrigger(number=int(raw), sender=Actor(ctx.actor), label=None)
    return Ignore(
        f"gitbot does not act on {ctx.source!r} pipelines (only trigger, web, schedule, and "
        "the component's job after a failure)"
    )


def _failed_pipeline(ctx: GitLabContext) -> Decision:
    if ctx.source in ("trigger", "web", "schedule"):
        return Ignore(f"a {ctx.source} pipeline failed: that is gitbot's own run, not fixing it (loop guard)")
    if ctx.tag or not ctx.ref:
        return Ignore("the failed pipeline is for a tag, not a branch")
    if ctx.mr_source_project_id is not None and ctx.mr_source_project_id != ctx.project_id:
        return Ignore(
            "the failed pipeline runs a fork's code: gitbot never works on code from outside this project"
        )
    if ctx.ref.startswith(BRANCH_PREFIX):
        return Ignore(
            f"the failed pipeline is on {ctx.ref!r}, a branch gitbot created: not fixing its own "
            "work (loop guard)"
        )
    if not re.fullmatch(r"[0-9a-f]{40}", ctx.sha) or not ctx.run_id.isdigit():
        return Ignore("the failed pipeline has no commit or id (CI_COMMIT_SHA, CI_PIPELINE_ID)")
    if not ctx.actor:
        return Ignore("the failed pipeline names nobody who started it (GITLAB_USER_LOGIN)")
    return WorkflowTrigger(
        run_id=int(ctx.run_id),
        name="pipeline",
        head_branch=ctx.ref,
        head_sha=ctx.sha,
        html_url=ctx.run_url,
        actors=[Actor(ctx.actor)],
    )


def _decide_payload(ctx: GitLabContext, payload: dict[str, Any], label: str, phrase: str) -> Decision:
    project = payload.get("project") if isinstance(payload.get("project"), dict) else {}
    project_id = _int(project.get("id")) or _int(payload.get("project_id"))
    if project_id != ctx.project_id:
        return Ignore(f"the payload is about project {project_id!r}, not this one ({ctx.project_id})")
    kind = payload.get("object_kind")
    if kind == "note":
        return _decide_note(payload, phrase)
    if kind == "issue":
        return _decide_label(payload, label)
    if kind == "merge_request":
        return Ignore("a merge request event: gitbot acts on labels on issues, and on notes")
    return Ignore(f"gitbot does not act on {str(kind)[:40]!r} webhook events (send issue and comment events)")


def _decide_label(payload: dict[str, Any], label: str) -> Decision:
    issue = _dict(payload.get("object_attributes"))
    changes = _dict(_dict(payload.get("changes")).get("labels"))
    before = {_dict(item).get("title") for item in changes.get("previous") or [] if isinstance(item, dict)}
    after = {_dict(item).get("title") for item in changes.get("current") or [] if isinstance(item, dict)}
    if label not in after or label in before:
        return Ignore(f"the issue event does not add the {label!r} label")
    if issue.get("state") not in (None, "opened"):
        return Ignore("the issue is closed")
    number, user = _int(issue.get("iid")), _user(payload.get("user"))
    if number is None or user is None:
        return Ignore("the issue event has no issue iid or no user")
    return IssueTrigger(number=number, sender=user, label=label)


def _decide_note(payload: dict[str, Any], phrase: str) -> Decision:
    note = _dict(payload.get("object_attributes"))
    kind = NOTE_KINDS.get(str(note.get("noteable_type")))
    if kind is None:
        return Ignore(
            f"a note on a {str(note.get('noteable_type'))[:40]!r}: gitbot answers on issues and "
            "merge requests"
        )
    if note.get("action") not in (None, "create"):
        return Ignore(f"a note event with action {note.get('action')!r}: gitbot acts on new notes only")
    if note.get("system"):
        return Ignore("a system note")
    body = note.get("note")
    if not isinstance(body, str) or not body.strip():
        return Ignore("the note has no text")
    request = find_request(body, phrase)
    if request is None:
        return Ignore(f"the note does not mention {phrase} (outside code and quotes)")
    note_id, author = _int(note.get("id")), _user(payload.get("user"))
    if note_id is None or author is None:
        return Ignore("the note event has no note id or no user")
    target = _dict(payload.get("issue") if kind == "issue_note" else payload.get("merge_request"))
    number = _int(target.get("iid"))
    if number is None:
        return Ignore("the note event names no issue or merge request iid")
    if target.get("state") not in (None, "opened"):
        return Ignore(f"{'#' if kind == 'issue_note' else '!'}{number} is not open")
    position = note.get("position")
    line = line_ref(position, _dict(note.get("st_diff")).get("diff")) if isinstance(position, dict) else None
    discussion = note.get("discussion_id")
    return CommentTrigger(
        kind="diff_note" if line is not None else kind,
        number=number,
        on_pull=kind == "merge_request_note",
        comment_id=note_id,
        node_id="",
        body=body,
        author=author,
        sender=author,
        created_at=str(note.get("created_at") or ""),
        html_url=str(note.get("url") or ""),
        mode=request.mode,
        line=line,
        thread_id=discussion if isinstance(discussion, str) and discussion else None,
        head_repository=_dict(target.get("source")).get("path_with_namespace")
        if kind != "issue_note"
        else None,
    )


def line_ref(position: dict[str, Any], diff: Any = None) -> LineRef | None:
    """A diff note's place (the webhook's or the API's `position`): the new side's line where the note
    is on one, else the old side's; the range's start for a comment on several lines."""
    if position.get("position_type") not in (None, "text"):
        return None  # an image or a file: no line to point at
    new_line, old_line = _int(position.get("new_line")), _int(position.get("old_line"))
    path = position.get("new_path") if new_line is not None else position.get("old_path")
    if not isinstance(path, str) or not path or (new_line is None and old_line is None):
        return None
    start = _dict(_dict(position.get("line_range")).get("start"))
    start_line = _int(start.get("new_line")) if new_line is not None else _int(start.get("old_line"))
    line = new_line if new_line is not None else old_line
    return LineRef(
        path=path,
        line=line,
        start_line=start_line if start_line is not None and start_line != line else None,
        side="RIGHT" if new_line is not None else "LEFT",
        diff_hunk=diff if isinstance(diff, str) else "",
        commit_id=str(position.get("head_sha") or ""),
    )


def _user(data: Any) -> Actor | None:
    if not isinstance(data, dict) or not isinstance(data.get("username"), str) or not data["username"]:
        return None
    return Actor(login=data["username"])  # whether it is a bot, only the API says (trust.py)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _positive(raw: str) -> int | None:
    raw = raw.strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None
