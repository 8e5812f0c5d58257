"""The fake GitLab's state: plain objects a test sets up and inspects (tests/fakes/gitlab_api.py serves them)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.loopback import utcnow

# GitLab's MergeRequest::DRAFT_REGEX: a title starting with one of these makes the merge request a draft.
DRAFT_TITLE = re.compile(r"\A\s*(?:\[draft\]|draft:|\(draft\)|draft\s-\s|draft\s)+\s*", re.IGNORECASE)


@dataclass
class User:
    id: int
    username: str
    name: str
    bot: bool = False
    state: str = "active"


@dataclass
class Member:
    user_id: int
    access_level: int
    inherited: bool = False  # through a parent group: listed by members/all only


@dataclass
class Issue:
    iid: int
    title: str
    description: str
    author_id: int
    labels: list[str] = field(default_factory=list)
    state: str = "opened"
    created_at: dt.datetime = field(default_factory=utcnow)
    updated_at: dt.datetime = field(default_factory=utcnow)
    confidential: bool = False  # seen only by its author, assignees and members at least Planner


@dataclass
class Note:
    id: int
    noteable_type: str  # "Issue" or "MergeRequest"
    noteable_iid: int
    body: str
    author_id: int
    discussion_id: str
    system: bool = False
    position: dict[str, Any] | None = None  # a diff note's place in the diff
    resolvable: bool = False
    resolved: bool = False
    created_at: dt.datetime = field(default_factory=utcnow)
    updated_at: dt.datetime = field(default_factory=utcnow)
    type: str | None = None  # None (a plain note), "DiscussionNote" or "DiffNote"
    internal: bool = False  # seen only by project members at least Reporter (GitLab's internal notes)


@dataclass
class Discussion:
    id: str
    noteable_type: str
    noteable_iid: int
    individual_note: bool
    note_ids: list[int] = field(default_factory=list)


@dataclass
class Award:
    id: int
    name: str
    user_id: int
    note_id: int
    created_at: dt.datetime = field(default_factory=utcnow)


@dataclass
class MergeRequest:
    iid: int
    title: str
    description: str
    source_branch: str
    target_branch: str
    author_id: int
    source_project_id: int
    state: str = "opened"
    remove_source_branch: bool = False
    sha: str | None = None  # a fork's head commit (a branch here is read from the bare repository)
    labels: list[str] = field(default_factory=list)
    created_at: dt.datetime = field(default_factory=utcnow)
    updated_at: dt.datetime = field(default_factory=utcnow)

    @property
    def draft(self) -> bool:
        return bool(DRAFT_TITLE.match(self.title))


@dataclass
class Pipeline:
    id: int
    iid: int
    sha: str
    ref: str
    status: str
    source: str
    user_id: int
    created_at: dt.datetime = field(default_factory=utcnow)
    variables: dict[str, str] = field(default_factory=dict)  # passed when it was created (a trigger's)


@dataclass
class Job:
    id: int
    pipeline_id: int
    name: str
    stage: str
    status: str
    trace: str
    allow_failure: bool = False
    retried: bool = False


@dataclass
class LabelEvent:
    id: int
    issue_iid: int
    user_id: int
    label: str
    action: str  # "add" or "remove"
    created_at: dt.datetime = field(default_factory=utcnow)
