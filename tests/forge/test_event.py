"""Which events gitbot acts on, and which it ignores with a reason."""

from __future__ import annotations

import json

import pytest

from gitbot.forge.github.event import ContextError, decide, read_context
from gitbot.forge.triggers import Ignore, IssueTrigger, WorkflowTrigger

REPO = "octo-org/widgets"
SHA = "ab" * 20


def context(tmp_path, name: str, event: dict):
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    return read_context(
        {
            "GITHUB_EVENT_NAME": name,
            "GITHUB_EVENT_PATH": str(path),
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_RUN_ID": "77",
        }
    )


def labeled(label="gitbot", **issue):
    return {
        "action": "labeled",
        "label": {"name": label},
        "sender": {"login": "maria", "type": "User"},
        "issue": {"number": 7, "title": "t", "body": "b", "state": "open", **issue},
    }


def run_event(**run):
    base = {
        "id": 9001,
        "name": "CI",
        "conclusion": "failure",
        "head_branch": "feature/x",
        "head_sha": SHA,
        "head_repository": {"full_name": REPO},
        "actor": {"login": "maria"},
        "triggering_actor": {"login": "tom", "type": "User"},
        "html_url": "https://github.example/r/9001",
    }
    return {"action": "completed", "workflow_run": {**base, **run}, "sender": {"login": "maria"}}


def test_the_configured_label_on_an_open_issue_is_a_trigger(tmp_path):
    decision = decide(context(tmp_path, "issues", labeled()), label="gitbot")
    assert isinstance(decision, IssueTrigger)
    assert (decision.number, decision.sender.login, decision.branch) == (7, "maria", "gitbot/issue-7")
    assert decision.snapshot.title == "t"


@pytest.mark.parametrize(
    "event,why",
    [
        (labeled(label="bug"), "not 'gitbot'"),
        ({**labeled(), "action": "opened"}, "only when a label is added"),
        (labeled(pull_request={"url": "x"}), "pull request"),
        (labeled(state="closed"), "closed"),
    ],
)
def test_other_issue_events_are_ignored(tmp_path, event, why):
    decision = decide(context(tmp_path, "issues", event), label="gitbot")
    assert isinstance(decision, Ignore) and why in decision.reason


def test_a_dispatch_names_the_issue(tmp_path):
    event = {"inputs": {"issue-number": "#12"}, "sender": {"login": "maria"}}
    decision = decide(context(tmp_path, "workflow_dispatch", event), label="gitbot")
    assert isinstance(decision, IssueTrigger) and decision.number == 12 and decision.snapshot is None
    empty = {"inputs": {}, "sender": {"login": "m"}}
    assert isinstance(decide(context(tmp_path, "workflow_dispatch", empty), label="gitbot"), Ignore)


def test_a_failed_run_of_this_repository_is_a_trigger_checking_every_actor(tmp_path):
    decision = decide(context(tmp_path, "workflow_run", run_event()), label="gitbot")
    assert isinstance(decision, WorkflowTrigger)
    assert [a.login for a in decision.actors] == ["maria", "tom"]
    assert decision.branch == "gitbot/run-9001" and decision.head_sha == SHA


@pytest.mark.parametrize(
    "run,why",
    [
        ({"conclusion": "success"}, "not 'failure'"),
        ({"head_repository": {"full_name": "mallory/widgets"}}, "fork"),
        ({"head_branch": "gitbot/issue-3"}, "loop guard"),
        ({"head_sha": "not-a-sha"}, "no run id or head commit"),
    ],
)
def test_other_workflow_runs_are_ignored(tmp_path, run, why):
    decision = decide(context(tmp_path, "workflow_run", run_event(**run)), label="gitbot")
    assert isinstance(decision, Ignore) and why in decision.reason


def test_unknown_events_are_ignored_and_a_missing_environment_is_an_error(tmp_path):
    assert isinstance(decide(context(tmp_path, "push", {}), label="gitbot"), Ignore)
    with pytest.raises(ContextError):
        read_context({"GITHUB_EVENT_NAME": "issues"})
    with pytest.raises(ContextError):
        read_context(
            {
                "GITHUB_EVENT_NAME": "issues",
                "GITHUB_EVENT_PATH": str(tmp_path / "missing"),
                "GITHUB_REPOSITORY": REPO,
            }
        )
