"""GitLab's variables and webhook bodies → the neutral triggers, decided without any API call."""

from __future__ import annotations

import pytest

from gitbot.forge.gitlab.ci import ContextError, decide, read_context
from gitbot.forge.triggers import Actor, CommentTrigger, Ignore, IssueTrigger, WorkflowTrigger
from tests.forge.gitlab.payloads import (
    PROJECT_ID,
    ci_variables,
    diff_position,
    issue_label_event,
    note_event,
)


def decision(tmp_path, *, source="trigger", payload=None, label="gitbot", **extra):
    return decide(read_context(ci_variables(tmp_path, source=source, payload=payload, **extra)), label=label)


def test_the_context_is_gitlabs_variables(tmp_path):
    ctx = read_context(
        ci_variables(
            tmp_path,
            source="push",
            CI_SERVER_URL="https://git.corp.example/",
            CI_API_V4_URL="https://git.corp.example/api/v4",
        )
    )
    assert (ctx.server_url, ctx.api_url, ctx.project_id, ctx.repository) == (
        "https://git.corp.example",
        "https://git.corp.example/api/v4",
        PROJECT_ID,
        "acme/widgets",
    )
    assert (ctx.run_id, ctx.actor, ctx.actor_id, ctx.ref) == ("4242", "dev", 21, "main")
    assert ctx.run_url.endswith("/-/pipelines/4242") and ctx.workspace == tmp_path / "project"


@pytest.mark.parametrize(
    "change",
    [
        {"CI_PROJECT_ID": ""},
        {"CI_PROJECT_ID": "seven"},
        {"CI_API_V4_URL": "file:///etc"},
        {"CI_PROJECT_PATH": "../x"},
        {"TRIGGER_PAYLOAD": "/nonexistent/payload"},
    ],
)
def test_a_broken_context_is_a_configuration_error(tmp_path, change):
    with pytest.raises(ContextError):
        read_context(ci_variables(tmp_path, source="trigger", **change))


def test_a_payload_file_that_is_not_a_json_object_is_refused(tmp_path):
    (tmp_path / "p").write_text("[1, 2]")
    with pytest.raises(ContextError, match="JSON object"):
        read_context(ci_variables(tmp_path, source="trigger", TRIGGER_PAYLOAD=str(tmp_path / "p")))


def test_the_label_added_to_an_issue_starts_a_run(tmp_path):
    got = decision(
        tmp_path,
        payload=issue_label_event(
            12, username="dev", user_id=21, previous=("bug",), current=("bug", "gitbot")
        ),
    )
    assert got == IssueTrigger(number=12, sender=Actor("dev"), label="gitbot")
    assert got.snapshot is None  # the payload's title and body are never the task (trust.py reads the API)


@pytest.mark.parametrize(
    "previous,current,state,reason",
    [
        (("gitbot",), ("gitbot", "bug"), "opened", "does not add"),  # another label added; ours was there
        ((), ("bug",), "opened", "does not add"),
        ((), ("gitbot",), "closed", "closed"),
    ],
)
def test_other_issue_events_are_ignored(tmp_path, previous, current, state, reason):
    got = decision(
        tmp_path,
        payload=issue_label_event(
            3, username="dev", user_id=21, previous=previous, current=current, state=state
        ),
    )
    assert isinstance(got, Ignore) and reason in got.reason


def test_a_payload_about_another_project_is_ignored(tmp_path):
    payload = issue_label_event(3, username="dev", user_id=21)
    payload["project"]["id"] = PROJECT_ID + 1
    got = decision(tmp_path, payload=payload)
    assert isinstance(got, Ignore) and "not this one" in got.reason


def test_a_mention_in_an_issue_note(tmp_path):
    got = decision(
        tmp_path,
        payload=note_event(
            55, "@gitbot fix the rounding", username="dev", user_id=21, iid=4, discussion_id="abc123"
        ),
    )
    assert isinstance(got, CommentTrigger)
    assert (got.kind, got.number, got.on_pull, got.comment_id, got.mode, got.thread_id) == (
        "issue_note",
        4,
        False,
        55,
        "fix",
        "abc123",
    )
    assert got.author == Actor("dev") and got.line is None and got.key == "comment-55"


def test_a_mention_in_a_merge_request_note_carries_the_source_project(tmp_path):
    got = decision(
        tmp_path,
        payload=note_event(
            56, "@gitbot answer why?", username="dev", user_id=21, on="mr", iid=9, source_project_id=99
        ),
    )
    assert (got.kind, got.number, got.on_pull, got.mode) == ("merge_request_note", 9, True, "answer")
    assert got.head_repository == "mallory/widgets"  # a fork: the flow refuses it with a reply


def test_a_diff_note_points_at_its_lines(tmp_path):
    position = diff_position("src/stats.py", 14, start=12, head_sha="e" * 40)
    got = decision(
        tmp_path,
        payload=note_event(
            57,
            "@gitbot use a median here",
            username="dev",
            user_id=21,
            on="mr",
            iid=9,
            position=position,
            discussion_id="f00d",
        ),
    )
    assert got.kind == "diff_note" and got.on_pull and got.thread_id == "f00d"
    assert (got.line.path, got.line.line, got.line.start_line, got.line.side, got.line.commit_id) == (
        "src/stats.py",
        14,
        12,
        "RIGHT",
        "e" * 40,
    )


def test_a_diff_note_on_a_removed_line_points_at_the_old_side(tmp_path):
    position = diff_position("old.py", None, old_line=3)
    got = decision(
        tmp_path,
        payload=note_event(
            58, "@gitbot why was this removed", username="dev", user_id=21, on="mr", position=position
        ),
    )
    assert (got.line.path, got.line.line, got.line.side) == ("old.py", 3, "LEFT")


@pytest.mark.parametrize(
    "body,change,reason",
    [
        ("no mention here", {}, "does not mention"),
        ("`@gitbot` in code", {}, "does not mention"),
        ("> @gitbot quoted\n\nthanks", {}, "does not mention"),
        ("@gitbot fix", {"on": "commit"}, "'Commit'"),
        ("@gitbot fix", {"action": "update"}, "new notes only"),
        ("@gitbot fix", {"state": "closed"}, "not open"),
    ],
)
def test_notes_that_ask_nothing_are_ignored(tmp_path, body, change, reason):
    got = decision(tmp_path, payload=note_event(60, body, username="dev", user_id=21, **change))
    assert isinstance(got, Ignore) and reason in got.reason


def test_a_system_note_is_ignored(tmp_path):
    payload = note_event(61, "@gitbot fix", username="dev", user_id=21)
    payload["object_attributes"]["system"] = True
    assert isinstance(decision(tmp_path, payload=payload), Ignore)


def test_a_manual_run_or_schedule_names_an_issue(tmp_path):
    assert decision(tmp_path, source="web", GITBOT_ISSUE="#8") == IssueTrigger(8, Actor("dev"), None)
    assert decision(tmp_path, source="schedule", GITBOT_ISSUE="8") == IssueTrigger(8, Actor("dev"), None)
    got = decision(tmp_path, source="web")
    assert isinstance(got, Ignore) and "GITBOT_ISSUE" in got.reason


def test_the_failure_job_fixes_its_branch_pipeline(tmp_path):
    got = decision(tmp_path, source="push", GITBOT_ON_FAILURE="true", CI_COMMIT_REF_NAME="feature/x")
    assert got == WorkflowTrigger(
        run_id=4242,
        name="pipeline",
        head_branch="feature/x",
        head_sha="c" * 40,
        html_url="https://gitlab.example.com/acme/widgets/-/pipelines/4242",
        actors=[Actor("dev")],
    )


@pytest.mark.parametrize(
    "extra,reason",
    [
        ({"CI_COMMIT_REF_NAME": "gitbot/issue-3"}, "loop guard"),
        ({"CI_PIPELINE_SOURCE": "trigger"}, "loop guard"),
        ({"CI_COMMIT_TAG": "v1"}, "tag"),
        ({"CI_PIPELINE_SOURCE": "merge_request_event", "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "99"}, "fork"),
    ],
)
def test_failed_pipelines_gitbot_leaves_alone(tmp_path, extra, reason):
    got = decision(tmp_path, source="push", GITBOT_ON_FAILURE="1", **extra)
    assert isinstance(got, Ignore) and reason in got.reason


def test_other_pipeline_sources_are_ignored(tmp_path):
    got = decision(tmp_path, source="push")
    assert isinstance(got, Ignore) and "'push'" in got.reason
    got = decision(tmp_path, source="trigger")
    assert isinstance(got, Ignore) and "TRIGGER_PAYLOAD" in got.reason
