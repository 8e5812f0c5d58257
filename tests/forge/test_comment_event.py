"""Which comments are requests to gitbot: decided from the payload alone, before any API call."""

from __future__ import annotations

import pytest

from gitbot.forge.github.event import decide
from gitbot.forge.triggers import CommentTrigger, Ignore
from tests.forge.test_event import REPO, context

USER = {"login": "maria", "type": "User"}


def issue_comment(body="@gitbot fix it", *, pull=False, user=USER, action="created", state="open"):
    issue = {"number": 7, "title": "t", "body": "b", "state": state, "user": {"login": "rita"}}
    if pull:
        issue["pull_request"] = {"url": "https://api.example/pulls/7"}
    return {
        "action": action,
        "issue": issue,
        "comment": {
            "id": 55,
            "node_id": "IC_55",
            "body": body,
            "user": user,
            "created_at": "2026-11-01T10:00:00Z",
            "html_url": "https://github.example/i/7#c55",
        },
        "sender": user,
    }


def review_comment(body="@gitbot handle it", *, in_reply_to=None, head_repo=REPO):
    comment = {
        "id": 66,
        "node_id": "PRRC_66",
        "body": body,
        "user": USER,
        "path": "stats.py",
        "line": 7,
        "start_line": 5,
        "side": "RIGHT",
        "diff_hunk": "@@ -1 +1 @@",
        "commit_id": "c" * 40,
        "pull_request_review_id": 77,
        "created_at": "2026-11-01T10:00:00Z",
    }
    if in_reply_to:
        comment["in_reply_to_id"] = in_reply_to
    pull = {"number": 9, "state": "open", "head": {"ref": "gitbot/issue-7", "repo": {"full_name": head_repo}}}
    return {"action": "created", "comment": comment, "pull_request": pull, "sender": USER}


def review(body="@gitbot please address these", action="submitted"):
    pull = {"number": 9, "state": "open", "head": {"ref": "x", "repo": {"full_name": REPO}}}
    return {
        "action": action,
        "review": {
            "id": 88,
            "node_id": "PRR_88",
            "body": body,
            "user": USER,
            "submitted_at": "2026-11-01T10:00:00Z",
        },
        "pull_request": pull,
        "sender": USER,
    }


def test_a_mention_on_an_issue_works_like_the_label(tmp_path):
    t = decide(context(tmp_path, "issue_comment", issue_comment()), label="gitbot")
    assert isinstance(t, CommentTrigger) and not t.on_pull and t.mode == "fix"
    assert (t.number, t.comment_id, t.branch, t.key) == (7, 55, "gitbot/issue-7", "comment-55")
    assert t.issue_snapshot.title == "t" and t.actors == [t.sender]


def test_a_comment_on_a_pull_request_and_a_line_comment_in_a_thread(tmp_path):
    t = decide(context(tmp_path, "issue_comment", issue_comment(pull=True)), label="gitbot")
    assert t.on_pull and t.issue_snapshot is None
    t = decide(
        context(tmp_path, "pull_request_review_comment", review_comment(in_reply_to=60)), label="gitbot"
    )
    assert t.on_pull and t.thread_id == 60 and t.review_id == 77 and t.head_repository == REPO
    assert (t.line.path, t.line.start_line, t.line.line, t.line.diff_hunk) == (
        "stats.py",
        5,
        7,
        "@@ -1 +1 @@",
    )
    t = decide(context(tmp_path, "pull_request_review", review()), label="gitbot")
    assert t.key == "review-88" and t.review_id == 88 and t.mode == "auto"


@pytest.mark.parametrize(
    "name,event,why",
    [
        ("issue_comment", issue_comment(action="edited"), "created"),
        ("issue_comment", issue_comment("no mention here"), "does not mention"),
        ("issue_comment", issue_comment("> @gitbot fix\n\nquoted"), "does not mention"),
        ("issue_comment", issue_comment(state="closed"), "closed"),
        (
            "issue_comment",
            issue_comment(user={"login": "github-actions[bot]", "type": "Bot"}),
            "gitbot's own",
        ),
        (
            "issue_comment",
            issue_comment(
                "<!-- gitbot:reply comment-1 run 2 -->\n@gitbot", user={"login": "my-app[bot]", "type": "Bot"}
            ),
            "gitbot's own",
        ),
        ("pull_request_review", review(body=None), "no text"),
        ("pull_request_review", review(action="edited"), "submitted"),
    ],
)
def test_what_is_not_a_request(tmp_path, name, event, why):
    decision = decide(context(tmp_path, name, event), label="gitbot")
    assert isinstance(decision, Ignore) and why in decision.reason


def test_another_bot_is_a_request_left_to_the_permission_check(tmp_path):
    other = issue_comment(user={"login": "helper[bot]", "type": "Bot"})
    t = decide(context(tmp_path, "issue_comment", other), label="gitbot")
    assert isinstance(t, CommentTrigger) and t.author.is_bot


def test_the_trigger_phrase_is_configurable(tmp_path):
    event = issue_comment("/fixit now")
    assert isinstance(decide(context(tmp_path, "issue_comment", event), label="gitbot"), Ignore)
    assert isinstance(
        decide(context(tmp_path, "issue_comment", event), label="gitbot", trigger_phrase="/fixit"),
        CommentTrigger,
    )
