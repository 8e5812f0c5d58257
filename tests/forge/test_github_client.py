"""gitbot's GitHub calls through PyGithub, against the fake server."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from gitbot.forge.github.api import GitHubForge, connect
from gitbot.forge.interface import ForgeError
from gitbot.forge.issue_task import STATUS_MARKER


@pytest.fixture
def forge(seeded_github):
    return GitHubForge(connect(seeded_github.token, seeded_github.api_url), seeded_github.full_name)


@pytest.mark.slow
def test_permission_reads_the_role_and_unknown_users(seeded_github, forge):
    seeded_github.set_permission("max", "maintain")
    assert forge.permission("max") == ("write", "maintain")
    assert forge.permission("nobody") == (None, None)
    assert seeded_github.violations == []


@pytest.mark.slow
def test_a_secondary_rate_limit_is_waited_out(seeded_github, forge):
    seeded_github.set_permission("ada", "admin")
    seeded_github.secondary_rate_limits_left = 1
    started = time.monotonic()
    assert forge.permission("ada") == ("admin", "admin")
    assert time.monotonic() - started >= 0.9  # Retry-After: 1
    assert [r.status for r in seeded_github.api_requests("permission")] == [403, 200]


@pytest.mark.slow
def test_the_status_comment_is_created_once_then_edited(seeded_github, forge):
    seeded_github.add_issue(7, "t", "b")
    planted = seeded_github.add_comment(7, f"{STATUS_MARKER} I am a person pasting the marker")
    first = forge.upsert_comment(7, f"{STATUS_MARKER} working", marker=STATUS_MARKER)
    second = forge.upsert_comment(7, f"{STATUS_MARKER} done", marker=STATUS_MARKER)
    mine = [c for c in seeded_github.comments_on(7) if c.author == seeded_github.bot_login]
    assert first == second and len(mine) == 1 and mine[0].body.endswith("done")
    assert planted.body.endswith("pasting the marker")  # never edited (and GitHub would refuse)
    assert seeded_github.violations == []


@pytest.mark.slow
def test_label_time_is_the_senders_labeling(seeded_github, forge):
    seeded_github.add_issue(7, "t", "b")
    t1 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    seeded_github.label_issue(7, "gitbot", sender="ada", at=t1)
    seeded_github.label_issue(7, "gitbot", sender="mallory", at=t1 + dt.timedelta(hours=1))
    seeded_github.label_issue(7, "bug", sender="ada", at=t1 + dt.timedelta(hours=2))
    assert forge.label_added_at(7, "gitbot", "ada") == t1
    assert forge.label_added_at(7, "gitbot", "nobody") is None


@pytest.mark.slow
def test_failed_jobs_and_their_logs_are_read_without_sending_the_token_to_the_log_host(seeded_github, forge):
    run = seeded_github.add_workflow_run(head_branch="main", head_sha="c" * 40, actor="ada")
    seeded_github.add_job(run["id"], "lint", conclusion="success", steps=[("ruff", "success")], log="ok")
    failed = seeded_github.add_job(
        run["id"],
        "test",
        conclusion="failure",
        steps=[("setup", "success"), ("pytest", "failure")],
        log="E  boom\n",
    )
    assert [(j.name, j.failed_steps) for j in forge.failed_jobs(run["id"])] == [("test", ["pytest"])]
    assert forge.job_log(failed.id) == "E  boom\n"
    assert "authorization" not in seeded_github.log_fetches[0].headers
    assert seeded_github.violations == []


def test_errors_carry_the_status(seeded_github, forge):
    seeded_github.forbid_pull_creation = True
    with pytest.raises(ForgeError) as caught:
        forge.create_pull(branch="main", base="main", title="t", body="b", draft=True)
    assert caught.value.status == 403 and "not permitted" in str(caught.value)


@pytest.mark.slow
def test_the_label_time_is_the_triggering_events_not_a_later_ones(seeded_github, forge):
    seeded_github.add_issue(7, "t", "b")
    t1 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    first = seeded_github.label_issue(7, "gitbot", sender="ada", at=t1)
    seeded_github.label_issue(7, "gitbot", sender="ada", at=t1 + dt.timedelta(hours=1))  # the run was queued
    snapshot = dt.datetime.fromisoformat(first["issue"]["updated_at"])
    assert forge.label_added_at(7, "gitbot", "ada", not_after=snapshot) == t1
    assert forge.label_added_at(7, "gitbot", "ada") == t1 + dt.timedelta(hours=1)
    assert forge.label_added_at(7, "gitbot", "ada", not_after=t1 - dt.timedelta(seconds=1)) is None


@pytest.mark.slow
def test_links_quote_a_branch_that_holds_a_hash(seeded_github, forge):
    """A person's branch may be named `fix/#12-empty`: unquoted, its link would end at the `#`."""
    web = f"https://github.com/{seeded_github.full_name}"
    assert forge.branch_url("fix/#12-empty") == f"{web}/tree/fix/%2312-empty"
    assert forge.commit_url("abc") == f"{web}/commit/abc"
    assert forge.blob_url("abc", "src/a b.py") == f"{web}/blob/abc/src/a%20b.py"
    assert forge.issue_url(3) == f"{web}/issues/3"
