"""Webhook bodies as GitLab sends them (Gitlab::DataBuilder::Note and ::Issuable, trimmed to the fields
gitbot reads plus a few it must ignore), and the CI job's predefined variables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PROJECT_ID = 7
PROJECT_PATH = "acme/widgets"
SERVER = "https://gitlab.example.com"


def project() -> dict[str, Any]:
    return {
        "id": PROJECT_ID,
        "name": "widgets",
        "path_with_namespace": PROJECT_PATH,
        "web_url": f"{SERVER}/{PROJECT_PATH}",
        "default_branch": "main",
    }


def user(username: str, user_id: int) -> dict[str, Any]:
    return {
        "id": user_id,
        "name": username.title(),
        "username": username,
        "avatar_url": "",
        "email": "[REDACTED]",
    }


def issue_label_event(
    iid: int, *, username: str, user_id: int, previous=(), current=("gitbot",), state: str = "opened"
) -> dict[str, Any]:
    def labels(titles):
        return [
            {"id": 100 + i, "title": t, "color": "#fff", "project_id": PROJECT_ID}
            for i, t in enumerate(titles)
        ]

    return {
        "object_kind": "issue",
        "event_type": "issue",
        "user": user(username, user_id),
        "project": project(),
        "object_attributes": {
            "id": 9000 + iid,
            "iid": iid,
            "title": "payload title",
            "description": "payload body",
            "state": state,
            "action": "update",
            "project_id": PROJECT_ID,
            "updated_at": "2026-11-26 20:00:00 UTC",
        },
        "labels": labels(current),
        "changes": {"labels": {"previous": labels(previous), "current": labels(current)}},
    }


def note_event(
    note_id: int,
    body: str,
    *,
    username: str,
    user_id: int,
    on: str = "issue",
    iid: int = 1,
    discussion_id: str = "d" * 40,
    position: dict | None = None,
    source_project_id: int = PROJECT_ID,
    action: str = "create",
    state: str = "opened",
) -> dict[str, Any]:
    noteable = {"issue": "Issue", "mr": "MergeRequest", "commit": "Commit"}[on]
    attributes = {
        "id": note_id,
        "note": body,
        "noteable_type": noteable,
        "author_id": user_id,
        "project_id": PROJECT_ID,
        "created_at": "2026-11-26 20:01:00 UTC",
        "updated_at": "2026-11-26 20:01:00 UTC",
        "system": False,
        "discussion_id": discussion_id,
        "type": "DiffNote" if position else None,
        "position": position,
        "action": action,
        "url": f"{SERVER}/{PROJECT_PATH}/-/issues/{iid}#note_{note_id}",
    }
    payload = {
        "object_kind": "note",
        "event_type": "note",
        "user": user(username, user_id),
        "project_id": PROJECT_ID,
        "project": project(),
        "object_attributes": attributes,
    }
    if on == "issue":
        payload["issue"] = {"id": 500 + iid, "iid": iid, "title": "t", "description": "d", "state": state}
    elif on == "mr":
        payload["merge_request"] = {
            "id": 600 + iid,
            "iid": iid,
            "title": "t",
            "state": state,
            "source_branch": "feature",
            "target_branch": "main",
            "source_project_id": source_project_id,
            "target_project_id": PROJECT_ID,
            "source": {
                "path_with_namespace": PROJECT_PATH if source_project_id == PROJECT_ID else "mallory/widgets"
            },
        }
    return payload


def diff_position(
    path: str,
    new_line: int | None,
    *,
    old_line: int | None = None,
    start: int | None = None,
    head_sha: str = "a" * 40,
) -> dict[str, Any]:
    position = {
        "base_sha": "b" * 40,
        "start_sha": "b" * 40,
        "head_sha": head_sha,
        "old_path": path,
        "new_path": path,
        "position_type": "text",
        "old_line": old_line,
        "new_line": new_line,
    }
    if start is not None:
        position["line_range"] = {
            "start": {"line_code": "x", "type": "new", "old_line": None, "new_line": start},
            "end": {"line_code": "y", "type": "new", "old_line": None, "new_line": new_line},
        }
    return position


def ci_variables(workdir: Path, *, source: str, payload: dict | None = None, **extra: str) -> dict[str, str]:
    """What GitLab sets in a job (the subset gitbot reads); the payload goes to a file, as a file variable's."""
    env = {
        "CI": "true",
        "GITLAB_CI": "true",
        "CI_SERVER_URL": SERVER,
        "CI_API_V4_URL": f"{SERVER}/api/v4",
        "CI_PROJECT_ID": str(PROJECT_ID),
        "CI_PROJECT_PATH": PROJECT_PATH,
        "CI_PROJECT_DIR": str(workdir / "project"),
        "CI_PIPELINE_SOURCE": source,
        "CI_PIPELINE_ID": "4242",
        "CI_PIPELINE_URL": f"{SERVER}/{PROJECT_PATH}/-/pipelines/4242",
        "CI_JOB_URL": f"{SERVER}/{PROJECT_PATH}/-/jobs/99",
        "CI_COMMIT_REF_NAME": "main",
        "CI_COMMIT_SHA": "c" * 40,
        "CI_JOB_TOKEN": "glcbt-64_jobTokenValue0123456789",
        "GITLAB_USER_LOGIN": "dev",
        "GITLAB_USER_ID": "21",
    }
    if payload is not None:
        path = workdir / "TRIGGER_PAYLOAD"
        path.write_text(json.dumps(payload))
        env["TRIGGER_PAYLOAD"] = str(path)
    env.update(extra)
    return env
