"""The webhook bodies GitLab posts (doc/user/project/integrations/webhook_events.md): Issue Hook, Note Hook,
Merge Request Hook, Pipeline Hook. A project webhook that calls the pipeline trigger API hands such a body
to the pipeline as the TRIGGER_PAYLOAD file variable, so these are what `gitbot gitlab` reads.

A mixin of FakeGitLab (tests/fakes/gitlab_api.py): the bodies describe its state.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.gitlab_state import Issue, MergeRequest, Note, Pipeline, User


class WebhookBodies:
    def _hook_user(self, user: User) -> dict[str, Any]:
        basic = self.user_basic(user.id)
        return {k: basic[k] for k in ("id", "name", "username", "avatar_url")} | {"email": "[REDACTED]"}

    def _hook_project(self) -> dict[str, Any]:
        return {
            "id": self.project_id,
            "name": self.name,
            "description": "",
            "web_url": self.web_url,
            "git_http_url": self.clone_url,
            "namespace": self.namespace.title(),
            "visibility_level": 0,
            "path_with_namespace": self.path_with_namespace,
            "default_branch": self.default_branch,
            "homepage": self.web_url,
            "url": self.clone_url,
            "http_url": self.clone_url,
        }

    def _hook_repository(self) -> dict[str, Any]:
        return {"name": self.name, "url": self.clone_url, "description": "", "homepage": self.web_url}

    def _hook_issue(self, issue: Issue) -> dict[str, Any]:
        return {
            "id": 500_000 + issue.iid,
            "iid": issue.iid,
            "title": issue.title,
            "description": issue.description,
            "author_id": issue.author_id,
            "project_id": self.project_id,
            "state": issue.state,
            "created_at": issue.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
            "updated_at": issue.updated_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
            "url": f"{self.web_url}/-/issues/{issue.iid}",
            "action": None,
            "labels": [self._hook_label(n) for n in issue.labels],
        }

    def _hook_mr(self, mr: MergeRequest) -> dict[str, Any]:
        source = self.forks.get(mr.source_project_id, self.path_with_namespace)
        return {
            "id": 700_000 + mr.iid,
            "iid": mr.iid,
            "title": mr.title,
            "description": mr.description,
            "author_id": mr.author_id,
            "source_branch": mr.source_branch,
            "target_branch": mr.target_branch,
            "source_project_id": mr.source_project_id,
            "target_project_id": self.project_id,
            "state": mr.state,
            "draft": mr.draft,
            "work_in_progress": mr.draft,
            "url": f"{self.web_url}/-/merge_requests/{mr.iid}",
            "source": {"path_with_namespace": source, "web_url": f"{self.url}/{source}"},
            "target": self._hook_project(),
            "last_commit": {"id": mr.sha or self.branch_sha(mr.source_branch) or "0" * 40},
            "labels": [self._hook_label(n) for n in mr.labels],
        }

    @staticmethod
    def _hook_label(name: str) -> dict[str, Any]:
        return {"id": 9000 + len(name), "title": name, "color": "#5319e7", "type": "ProjectLabel"}

    def issue_hook(
        self, issue: Issue, *, by: User, action: str = "open", labels_before: list[str] | None = None
    ) -> dict[str, Any]:
        attributes = {**self._hook_issue(issue), "action": action}
        changes: dict[str, Any] = {}
        if labels_before is not None and labels_before != issue.labels:
            changes["labels"] = {
                "previous": [self._hook_label(n) for n in labels_before],
                "current": [self._hook_label(n) for n in issue.labels],
            }
        return {
            "object_kind": "issue",
            "event_type": "issue",
            "user": self._hook_user(by),
            "project": self._hook_project(),
            "object_attributes": attributes,
            "repository": self._hook_repository(),
            "labels": attributes["labels"],
            "changes": changes,
        }

    def note_hook(self, note: Note) -> dict[str, Any]:
        noteable = (
            self.issues[note.noteable_iid]
            if note.noteable_type == "Issue"
            else self.merge_requests[note.noteable_iid]
        )
        attributes = {
            "id": note.id,
            "note": note.body,
            "noteable_type": note.noteable_type,
            "author_id": note.author_id,
            "created_at": note.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
            "updated_at": note.updated_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
            "project_id": self.project_id,
            "system": note.system,
            "type": note.type,
            "discussion_id": note.discussion_id,
            "position": note.position,
            "noteable_id": (500_000 if note.noteable_type == "Issue" else 700_000) + note.noteable_iid,
            "url": f"{self.web_url}/-/{'issues' if note.noteable_type == 'Issue' else 'merge_requests'}"
            f"/{note.noteable_iid}#note_{note.id}",
            "action": "create",
        }
        body = {
            "object_kind": "note",
            "event_type": "note",
            "user": self._hook_user(self.users[note.author_id]),
            "project_id": self.project_id,
            "project": self._hook_project(),
            "object_attributes": attributes,
            "repository": self._hook_repository(),
        }
        if isinstance(noteable, Issue):
            body["issue"] = self._hook_issue(noteable)
        else:
            body["merge_request"] = self._hook_mr(noteable)
        return body

    def merge_request_hook(self, mr: MergeRequest, *, by: User, action: str = "open") -> dict[str, Any]:
        return {
            "object_kind": "merge_request",
            "event_type": "merge_request",
            "user": self._hook_user(by),
            "project": self._hook_project(),
            "object_attributes": {**self._hook_mr(mr), "action": action},
            "repository": self._hook_repository(),
            "labels": [self._hook_label(n) for n in mr.labels],
            "changes": {},
        }

    def pipeline_hook(self, pipeline: Pipeline) -> dict[str, Any]:
        jobs = [j for j in self.jobs.values() if j.pipeline_id == pipeline.id]
        return {
            "object_kind": "pipeline",
            "object_attributes": {
                "id": pipeline.id,
                "iid": pipeline.iid,
                "ref": pipeline.ref,
                "tag": False,
                "sha": pipeline.sha,
                "source": pipeline.source,
                "status": pipeline.status,
                "detailed_status": pipeline.status,
                "stages": sorted({j.stage for j in jobs}),
                "created_at": pipeline.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                "url": f"{self.web_url}/-/pipelines/{pipeline.id}",
            },
            "merge_request": None,
            "user": self._hook_user(self.users[pipeline.user_id]),
            "project": self._hook_project(),
            "commit": {"id": pipeline.sha, "url": f"{self.web_url}/-/commit/{pipeline.sha}"},
            "builds": [
                {
                    "id": j.id,
                    "stage": j.stage,
                    "name": j.name,
                    "status": j.status,
                    "allow_failure": j.allow_failure,
                    "failure_reason": "script_failure" if j.status == "failed" else None,
                }
                for j in jobs
            ],
        }
