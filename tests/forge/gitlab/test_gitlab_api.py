"""GitLabForge against the fake GitLab, through the real python-gitlab; and the fake's own checks.

One server per module: every test makes its own issues, merge requests and pipelines on it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import subprocess
from pathlib import Path

import gitlab
import pytest

from gitbot.forge.gitlab import api as gitlab_api
from gitbot.forge.gitlab import client as gitlab_client
from gitbot.forge.gitlab.api import GitLabForge
from gitbot.forge.interface import Forge, ForgeError
from gitbot.forge.triggers import Actor, CommentTrigger, reply_marker
from tests.fakes import gitlab_ops
from tests.fakes.gitlab_api import FakeGitLab
from tests.fakes.gitlab_state import Note
from tests.forge.gitlab.conftest import auth_config, push_files, run_git

pytestmark = pytest.mark.slow

FIX_BRANCH = "gitbot/issue-1"


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("gitlab")
    with FakeGitLab(root / "server") as server:
        work = root / "work"
        push_files(server, work, {"stats.py": "def mean(xs):\n    return sum(xs) / len(xs)\n"}, branch="main")
        push_files(server, work, {"stats.py": "def mean(xs):\n    return 0\n"}, branch=FIX_BRANCH)
        yield server


@pytest.fixture(scope="module")
def forge(fake: FakeGitLab) -> GitLabForge:
    return GitLabForge(fake.url, fake.token, fake.path_with_namespace)


@pytest.fixture(autouse=True)
def no_violations(fake: FakeGitLab):
    before = len(fake.violations)
    yield
    assert fake.violations[before:] == []


def trigger_for(note: Note, *, kind: str | None = None) -> CommentTrigger:
    """The trigger the GitLab entry builds for a note (what GitLabForge reads of it: the noteable, the note)."""
    on_pull = note.noteable_type == "MergeRequest"
    someone = Actor("someone")
    return CommentTrigger(
        kind=kind or ("merge_request_note" if on_pull else "issue_note"),
        number=note.noteable_iid,
        on_pull=on_pull,
        comment_id=note.id,
        node_id="",
        body=note.body,
        author=someone,
        sender=someone,
        created_at="",
        html_url="",
        mode="auto",
        thread_id=note.discussion_id,
    )


def marker(trigger: CommentTrigger, run: str = "77") -> str:
    return reply_marker(trigger, run)


# ---------------------------------------------------------------- the fake itself, through python-gitlab


def test_the_api_refuses_a_request_without_a_token_or_with_a_wrong_one(fake: FakeGitLab):
    for client in (gitlab.Gitlab(fake.url), gitlab.Gitlab(fake.url, private_token="glpat-wrong")):
        with pytest.raises(gitlab.exceptions.GitlabAuthenticationError) as caught:
            client.projects.get(fake.path_with_namespace)
        assert caught.value.response_code == 401
    with pytest.raises(ForgeError) as refused:
        GitLabForge(fake.url, "glpat-wrong", fake.path_with_namespace)
    assert refused.value.status == 401 and "glpat-wrong" not in str(refused.value)


def test_a_rate_limit_and_a_proxy_error_are_retried(forge: GitLabForge, fake: FakeGitLab):
    dev = fake.add_user("patient")
    issue = fake.add_issue("t", "b", author=dev)
    fake.fail_next = [(429, {"Retry-After": "0"}), (502, {})]
    before = len(fake.api_requests(rf"/issues/{issue.iid}$"))
    assert forge.issue(issue.iid).title == "t"
    assert len(fake.api_requests(rf"/issues/{issue.iid}$")) - before == 3
    fake.fail_next = [(403, {})]
    with pytest.raises(ForgeError) as refused:  # not a transient error: no retry
        forge.issue(issue.iid)
    assert refused.value.status == 403


def test_a_request_outside_the_documented_parameters_is_a_violation(fake: FakeGitLab):
    """GitLab ignores a parameter it does not know; the fake refuses it, so a typo cannot pass unseen."""
    client = gitlab.Gitlab(fake.url, private_token=fake.token)
    project = client.projects.get(fake.path_with_namespace, lazy=True)
    before = len(fake.violations)
    with pytest.raises(gitlab.exceptions.GitlabCreateError) as caught:
        project.mergerequests.create(
            {"source_branch": FIX_BRANCH, "target_branch": "main", "title": "t", "draft": True}
        )
    assert caught.value.response_code == 400
    with pytest.raises(gitlab.exceptions.GitlabListError):
        project.pipelines.list(shaa="abc", get_all=False)
    with pytest.raises(
        gitlab.exceptions.GitlabHttpError
    ):  # python-gitlab's own check would stop it: go around
        client.http_post(
            f"/projects/{fake.project_id}/merge_requests", post_data={"source_branch": FIX_BRANCH}
        )
    with pytest.raises(gitlab.exceptions.GitlabListError):  # GitLab says "opened", not GitHub's "open"
        project.mergerequests.list(state="open", get_all=False)
    found = fake.violations[before:]
    assert len(found) == 4
    assert "unknown body fields ['draft'] (not in openapi)" in found[0]
    assert "unknown query parameter 'shaa' (not in openapi)" in found[1]
    assert "target_branch is missing, title is missing" in found[2]
    assert "state does not have a valid value ('open' is not one of" in found[3]
    del fake.violations[before:]


def test_the_published_description_covers_what_it_can_and_the_documentation_the_rest():
    ops = gitlab_ops.operations()
    sources = {
        route: gitlab_ops.find(ops, *route.split(" "))[0].source
        for route in (
            "POST /projects/7/merge_requests",
            "GET /projects/7/pipelines/9/jobs",
            "POST /projects/7/issues/1/notes/2/award_emoji",
            "GET /projects/7/members/all/3",
            "GET /projects/7/issues/1/notes",
            "POST /projects/7/merge_requests/1/discussions/abc/notes",
        )
    }
    assert list(sources.values()) == ["openapi"] * 4 + ["notes.md", "discussions.md"]
    assert gitlab_ops.find(ops, "DELETE", "/projects/7") is None


def test_a_job_token_reads_pipelines_but_may_not_write_notes(fake: FakeGitLab):
    dev = fake.add_user("jobrunner")
    issue = fake.add_issue("x", "y", author=dev)
    pipeline = fake.add_pipeline(ref="main", sha="a" * 40)
    fake.add_job(pipeline, "test", status="failed", trace="boom\n")
    with pytest.raises(ForgeError, match="by its path"):
        GitLabForge(fake.api_url, fake.job_token, fake.project_id, job_token=True)
    job_forge = GitLabForge(fake.api_url, fake.job_token, fake.path_with_namespace, job_token=True)
    assert [j.name for j in job_forge.failed_jobs(pipeline.id)] == ["test"]
    assert job_forge.job_log(job_forge.failed_jobs(pipeline.id)[0].id) == "boom\n"
    assert job_forge.issue_url(issue.iid) == f"{fake.web_url}/-/issues/{issue.iid}"
    with pytest.raises(ForgeError, match="project access token"):
        _ = job_forge.default_branch
    with pytest.raises(ForgeError) as refused:
        job_forge.upsert_comment(issue.iid, "hello", marker="<!-- m -->", existing=[])
    assert refused.value.status == 403
    assert fake.notes_on("Issue", issue.iid) == []
    assert not any(
        r.path == f"/projects/{fake.project_id}" for r in fake.requests if "job-token" in r.headers
    )


def test_git_over_http_takes_an_access_token_or_a_job_token_for_fetching_only(
    fake: FakeGitLab, tmp_path: Path
):
    clone = tmp_path / "clone"
    run_git(
        tmp_path,
        *auth_config(fake, "gitlab-ci-token", fake.job_token),
        "clone",
        "-q",
        fake.clone_url,
        str(clone),
    )
    assert (clone / "stats.py").exists()
    (clone / "new.txt").write_text("new\n")
    run_git(clone, "add", "new.txt")
    run_git(clone, "commit", "-q", "-m", "new")
    push = ["push", "-q", fake.clone_url, "HEAD:refs/heads/from-job"]
    refused = subprocess.run(
        ["git", *auth_config(fake, "gitlab-ci-token", fake.job_token), *push],
        cwd=clone,
        capture_output=True,
        text=True,
        check=False,
        env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin"},
    )
    assert refused.returncode != 0 and fake.branch_sha("from-job") is None
    anonymous = subprocess.run(
        ["git", "ls-remote", fake.clone_url],
        capture_output=True,
        text=True,
        check=False,
        env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin"},
    )
    assert anonymous.returncode != 0
    run_git(clone, *auth_config(fake), *push)
    assert fake.branch_sha("from-job") == run_git(clone, "rev-parse", "HEAD").strip()


# ---------------------------------------------------------------- GitLabForge


def test_it_is_a_forge_with_gitlab_words_and_links(forge: GitLabForge, fake: FakeGitLab):
    for name in Forge.__dict__:
        if not name.startswith("_"):
            assert hasattr(forge, name), name
    assert forge.default_branch == "main"
    assert (forge.terms.change, forge.terms.change_prefix, forge.terms.run) == (
        "merge request",
        "!",
        "pipeline",
    )
    web = fake.web_url
    assert forge.branch_url("gitbot/issue-1") == f"{web}/-/tree/gitbot/issue-1"
    assert forge.commit_url("abc") == f"{web}/-/commit/abc"
    assert forge.blob_url("abc", "src/a b.py") == f"{web}/-/blob/abc/src/a%20b.py"
    assert forge.issue_url(3) == f"{web}/-/issues/3"


def test_issue_comments_and_the_label_that_approved_the_task(forge: GitLabForge, fake: FakeGitLab):
    dev = fake.add_user("labeller")
    helper = fake.add_user("renovate", bot=True)
    issue = fake.add_issue("Crash on empty input", "mean([]) raises", author=dev, labels=["bug"])
    fake.add_note("Issue", issue.iid, "me too", author=dev)
    fake.add_note("Issue", issue.iid, "changed the description", author=dev, system=True)
    fake.add_note("Issue", issue.iid, "deps bumped", author=helper)
    first = dt.datetime(2026, 1, 1, 10, tzinfo=dt.UTC)
    fake.label_issue(issue.iid, "gitbot", by=dev, at=first)
    fake.label_issue(issue.iid, "gitbot", by=dev, at=first + dt.timedelta(hours=2))

    data = forge.issue(issue.iid)
    assert (data.number, data.title, data.body, data.author) == (
        issue.iid,
        "Crash on empty input",
        "mean([]) raises",
        "labeller",
    )
    assert (
        data.state == "open"
        and data.labels == ["bug", "gitbot"]
        and data.html_url.endswith(f"/-/issues/{issue.iid}")
    )
    comments = forge.comments(issue.iid)
    assert [(c.body, c.author_type) for c in comments] == [("me too", "User"), ("deps bumped", "Bot")]
    assert forge.label_added_at(issue.iid, "gitbot", "labeller") == first + dt.timedelta(hours=2)
    assert (
        forge.label_added_at(issue.iid, "gitbot", "labeller", not_after=first + dt.timedelta(hours=1))
        == first
    )
    assert forge.label_added_at(issue.iid, "gitbot", "someone-else") is None


def test_a_confidential_issue_says_so(forge: GitLabForge, fake: FakeGitLab):
    dev = fake.add_user("secretive")
    open_issue = fake.add_issue("public", "", author=dev)
    hidden = fake.add_issue("security hole", "details", author=dev)
    hidden.confidential = True
    assert (forge.confidential(open_issue.iid), forge.confidential(hidden.iid)) == (False, True)


def test_the_status_note_is_edited_in_place_and_never_someone_elses(forge: GitLabForge, fake: FakeGitLab):
    dev = fake.add_user("paster")
    issue = fake.add_issue("t", "b", author=dev)
    pasted = fake.add_note("Issue", issue.iid, "copied <!-- gitbot:status -->", author=dev)
    url = forge.upsert_comment(issue.iid, "working <!-- gitbot:status -->", marker="<!-- gitbot:status -->")
    ours = [n for n in fake.notes_on("Issue", issue.iid) if n.author_id == fake.bot.id]
    assert len(ours) == 1 and url.endswith(f"/-/issues/{issue.iid}#note_{ours[0].id}")
    forge.upsert_comment(issue.iid, "done <!-- gitbot:status -->", marker="<!-- gitbot:status -->")
    ours = [n for n in fake.notes_on("Issue", issue.iid) if n.author_id == fake.bot.id]
    assert [n.body for n in ours] == ["done <!-- gitbot:status -->"]
    assert pasted.body == "copied <!-- gitbot:status -->"


def test_failed_jobs_and_their_traces(forge: GitLabForge, fake: FakeGitLab, monkeypatch: pytest.MonkeyPatch):
    pipeline = fake.add_pipeline(ref="main", sha="b" * 40)
    lint = fake.add_job(pipeline, "lint", status="failed", trace="E501 line too long\n", allow_failure=True)
    fake.add_job(pipeline, "unit", status="failed", trace="first try\n", retried=True)
    unit = fake.add_job(
        pipeline, "unit", status="failed", trace="x" * 5000 + "\nFAILED test_stats.py::test_mean\n"
    )
    fake.add_job(pipeline, "build", status="success", trace="ok\n")
    failed = forge.failed_jobs(pipeline.id)
    assert [(j.id, j.name, j.conclusion) for j in failed] == [(unit.id, "unit", "failure")]
    assert failed[0].html_url == f"{fake.web_url}/-/jobs/{unit.id}"
    assert forge.job_log(lint.id) == "E501 line too long\n"
    monkeypatch.setattr(gitlab_api, "LOG_MAX_BYTES", 100)
    tail = forge.job_log(unit.id)
    assert len(tail) == 100 and tail.endswith("FAILED test_stats.py::test_mean\n")
    with pytest.raises(ForgeError) as missing:
        forge.job_log(999_999)
    assert missing.value.status == 404


def test_a_merge_request_is_opened_as_a_draft_updated_and_marked_ready(forge: GitLabForge, fake: FakeGitLab):
    assert forge.open_pull(FIX_BRANCH) is None
    made = forge.create_pull(branch=FIX_BRANCH, base="main", title="Fix mean", body="the diff", draft=True)
    mr = fake.merge_requests[made.number]
    assert (mr.title, mr.draft, mr.remove_source_branch, mr.description) == (
        "Draft: Fix mean",
        True,
        True,
        "the diff",
    )
    assert made.draft and made.head == FIX_BRANCH and made.base == "main"
    assert made.html_url == f"{fake.web_url}/-/merge_requests/{made.number}"
    assert forge.open_pull(FIX_BRANCH) == made
    with pytest.raises(ForgeError) as again:
        forge.create_pull(branch=FIX_BRANCH, base="main", title="Fix mean", body="", draft=False)
    assert again.value.status == 409

    forge.update_pull(made.number, title="Draft: Fix mean (2)", body="new body")
    forge.update_pull_body(made.number, "newer body")
    info = forge.get_pull(made.number)
    assert (info.title, info.body, info.state, info.draft) == (
        "Draft: Fix mean (2)",
        "newer body",
        "open",
        True,
    )
    assert info.head_ref == FIX_BRANCH and info.head_sha == fake.branch_sha(FIX_BRANCH)
    assert info.head_repository == fake.path_with_namespace and info.base_ref == "main"
    forge.mark_ready(info)
    assert (mr.title, mr.draft) == ("Fix mean (2)", False)
    refs = run_git(fake.bare_repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/merge-requests")
    assert f"refs/merge-requests/{made.number}/head {info.head_sha}" in refs.splitlines()
    mr.state = "merged"


def test_a_merge_requests_head_ref_follows_its_source_branch(fake: FakeGitLab, tmp_path: Path):
    dev = fake.add_user("pusher")
    first = push_files(fake, tmp_path / "work", {"a.txt": "1\n"}, branch="feature-ref")
    mr = fake.add_merge_request("feature-ref", "Feature", author=dev)
    head = f"refs/merge-requests/{mr.iid}/head"
    assert run_git(fake.bare_repo, "rev-parse", head).strip() == first
    second = push_files(fake, tmp_path / "work", {"a.txt": "2\n"}, branch="feature-ref")
    assert run_git(fake.bare_repo, "rev-parse", head).strip() == second != first
    mr.state = "closed"


def test_a_fork_merge_request_names_its_source_project(forge: GitLabForge, fake: FakeGitLab):
    outsider = fake.add_user("forker")
    mr = fake.add_merge_request(
        "patch-1", "Improve docs", author=outsider, source_project=(9999, "forker/widgets"), sha="c" * 40
    )
    info = forge.get_pull(mr.iid)
    # The fork is private to its owner: the token cannot read it (GitLab answers 404, as for a deleted one).
    assert info.head_repository is None and info.head_sha == "c" * 40
    assert forge.open_pull("patch-1") is None  # a fork's branch of the same name is not ours
    public = fake.add_merge_request(
        "patch-2", "More docs", author=outsider, source_project=(9998, "forker/gadgets"), public_fork=True
    )
    assert forge.get_pull(public.iid).head_repository == "forker/gadgets"
    mr.state = public.state = "closed"


def test_review_threads_are_the_diff_discussions(forge: GitLabForge, fake: FakeGitLab):
    dev = fake.add_user("reviewer")
    fake.add_member(dev, fake.DEVELOPER)
    mr = fake.add_merge_request(FIX_BRANCH, "Review me", author=dev)
    position = fake.diff_position(mr.iid, "stats.py", 2)
    opening = fake.add_note(
        "MergeRequest", mr.iid, "@gitbot handle empty lists", author=dev, position=position
    )
    fake.add_note("MergeRequest", mr.iid, "and None", author=dev, discussion=opening.discussion_id)
    done = fake.add_note(
        "MergeRequest", mr.iid, "typo", author=dev, position=fake.diff_position(mr.iid, "stats.py", 1)
    )
    done.resolved = True
    fake.add_note("MergeRequest", mr.iid, "general remark", author=dev)
    threads = forge.review_threads(mr.iid)
    assert [(t.path, t.line, t.resolved) for t in threads] == [("stats.py", 2, False), ("stats.py", 1, True)]
    assert [(c.author, c.association, c.body) for c in threads[0].comments] == [
        ("reviewer", "DEVELOPER", "@gitbot handle empty lists"),
        ("reviewer", "DEVELOPER", "and None"),
    ]
    # The hunk up to the commented line, cut from the merge request's diff (main .. gitbot/issue-1).
    assert threads[0].diff_hunk.splitlines() == [
        "@@ -1,2 +1,2 @@",
        " def mean(xs):",
        "-    return sum(xs) / len(xs)",
        "+    return 0",
    ]
    assert threads[1].diff_hunk.splitlines() == ["@@ -1,2 +1,2 @@", " def mean(xs):"]
    mr.state = "closed"


def test_internal_notes_are_never_read_as_comments_or_threads(forge: GitLabForge, fake: FakeGitLab):
    dev = fake.add_user("insider")
    issue = fake.add_issue("Internal talk", "…", author=dev)
    fake.add_note("Issue", issue.iid, "public", author=dev)
    hidden = fake.add_note("Issue", issue.iid, "members only", author=dev, internal=True)
    assert [c.body for c in forge.comments(issue.iid)] == ["public"]
    assert forge.note("Issue", issue.iid, hidden.id).internal
    mr = fake.add_merge_request(FIX_BRANCH, "Internal review", author=dev)
    fake.add_note("MergeRequest", mr.iid, "members only", author=dev, internal=True,
                  position=fake.diff_position(mr.iid, "stats.py", 2))
    fake.add_note("MergeRequest", mr.iid, "public line", author=dev, position=fake.diff_position(mr.iid, "stats.py", 1))
    assert [[c.body for c in t.comments] for t in forge.review_threads(mr.iid)] == [["public line"]]
    mr.state = "closed"


def test_check_runs_are_the_jobs_of_the_latest_pipeline(forge: GitLabForge, fake: FakeGitLab):
    sha = "d" * 40
    old = fake.add_pipeline(ref="main", sha=sha)
    fake.add_job(old, "unit", status="failed")
    latest = fake.add_pipeline(ref="main", sha=sha, status="running")
    fake.add_job(latest, "unit", status="success")
    fake.add_job(latest, "lint", status="failed", allow_failure=True)
    fake.add_job(latest, "deploy", status="pending")
    checks = {c.name: (c.status, c.conclusion) for c in forge.check_runs(sha)}
    assert checks == {
        "unit": ("completed", "success"),
        "lint": ("completed", "neutral"),
        "deploy": ("queued", None),
    }
    assert forge.check_runs("e" * 40) == []


def test_eyes_are_given_once_per_note(forge: GitLabForge, fake: FakeGitLab):
    dev = fake.add_user("asker")
    issue = fake.add_issue("q", "?", author=dev)
    note = fake.add_note("Issue", issue.iid, "@gitbot why?", author=dev)
    trigger = trigger_for(note)
    forge.react(trigger)
    forge.react(trigger)  # a re-run: GitLab refuses the second award, which is what was wanted
    assert [(a.name, a.user_id) for a in fake.awards_on(note.id)] == [("eyes", fake.bot.id)]
    other = fake.add_issue("other", "", author=dev)
    with pytest.raises(ForgeError):  # the note is not on that issue
        forge.react(dataclasses.replace(trigger, number=other.iid))


def test_a_reply_to_an_individual_note_goes_in_its_discussion_and_is_found_again(
    forge: GitLabForge, fake: FakeGitLab
):
    dev = fake.add_user("issue-asker")
    issue = fake.add_issue("q", "?", author=dev)
    note = fake.add_note("Issue", issue.iid, "@gitbot explain", author=dev)
    trigger = trigger_for(note)
    fake.add_note("Issue", issue.iid, f"pasted {marker(trigger)}", author=dev)  # not gitbot's
    assert forge.find_reply(trigger) is None
    reply = forge.write_reply(trigger, f"on it {marker(trigger)}", None)
    assert reply.run == "77" and reply.in_thread
    written = fake.notes[reply.id]
    assert written.discussion_id == note.discussion_id and written.author_id == fake.bot.id
    assert fake.discussions[note.discussion_id].note_ids == [note.id, reply.id]  # GitLab's "Reply" made a thread
    assert forge.find_reply(trigger) == reply
    forge.write_reply(trigger, f"answered {marker(trigger)}", reply)
    assert written.body == f"answered {marker(trigger)}"


def test_a_reply_to_an_internal_note_is_internal_too(forge: GitLabForge, fake: FakeGitLab):
    """What answers an internal note (seen by members only) must not be shown to everyone who can see the
    issue: the reply quotes and works from it."""
    dev = fake.add_user("insider")
    issue = fake.add_issue("public issue", "", author=dev)
    note = fake.add_note(
        "Issue", issue.iid, "@gitbot the prod password rotation, see vault", author=dev, internal=True
    )
    reply = forge.write_reply(trigger_for(note), f"on it {marker(trigger_for(note))}", None)
    assert fake.notes[reply.id].internal
    public = fake.add_note("Issue", issue.iid, "@gitbot and this?", author=dev)
    reply = forge.write_reply(trigger_for(public), f"here {marker(trigger_for(public))}", None)
    assert not fake.notes[reply.id].internal


def test_a_reply_to_a_diff_note_goes_in_its_discussion(forge: GitLabForge, fake: FakeGitLab):
    dev = fake.add_user("line-asker")
    mr = fake.add_merge_request(FIX_BRANCH, "Thread", author=dev)
    opening = fake.add_note(
        "MergeRequest",
        mr.iid,
        "@gitbot fix this line",
        author=dev,
        position=fake.diff_position(mr.iid, "stats.py", 2),
    )
    trigger = trigger_for(opening, kind="diff_note")
    forge.react(trigger)
    reply = forge.write_reply(trigger, f"fixed {marker(trigger, '78')}", None)
    assert reply.in_thread and reply.run == "78"
    assert fake.notes[reply.id].discussion_id == opening.discussion_id
    assert fake.discussions[opening.discussion_id].note_ids == [opening.id, reply.id]
    assert forge.find_reply(trigger) == reply
    mr.state = "closed"


def test_access_levels_notes_and_users_are_read_from_the_api(forge: GitLabForge, fake: FakeGitLab):
    guest, dev, heir, stranger = (fake.add_user(n) for n in ("guest1", "dev1", "heir1", "stranger1"))
    fake.add_member(guest, fake.GUEST)
    fake.add_member(dev, fake.DEVELOPER)
    fake.add_member(heir, fake.MAINTAINER, inherited=True)
    assert [forge.access_level(u.id) for u in (guest, dev, heir, stranger)] == [10, 30, 40, None]

    issue = fake.add_issue("q", "?", author=dev)
    note = fake.add_note("Issue", issue.iid, "@gitbot go", author=dev)
    read = forge.note("Issue", issue.iid, note.id)
    assert (read.id, read.author_id, read.author, read.body, read.system) == (
        note.id,
        dev.id,
        "dev1",
        "@gitbot go",
        False,
    )
    assert forge.note("Issue", issue.iid, 987_654_321) is None  # a forged payload's note
    assert forge.note("MergeRequest", issue.iid, note.id) is None  # not on that merge request
    other = fake.add_issue("other", "", author=dev)
    assert forge.note("Issue", other.iid, note.id) is None

    bot = fake.add_user("deploy-bot", bot=True)
    assert forge.user(bot.id).bot and not forge.user(dev.id).bot
    assert forge.user(424_242) is None


def test_webhook_bodies_carry_what_the_trigger_needs(fake: FakeGitLab):
    dev = fake.add_user("hooker")
    issue = fake.add_issue("t", "b", author=dev)
    labelled = fake.label_issue(issue.iid, "gitbot", by=dev)
    assert labelled["object_kind"] == "issue" and labelled["user"]["username"] == "hooker"
    assert [label["title"] for label in labelled["changes"]["labels"]["current"]] == ["gitbot"]
    note = fake.add_note("Issue", issue.iid, "@gitbot hi", author=dev)
    body = fake.note_hook(note)
    assert body["object_attributes"]["id"] == note.id and body["issue"]["iid"] == issue.iid
    assert body["object_attributes"]["discussion_id"] == note.discussion_id
    pipeline = fake.add_pipeline(ref="main", sha="f" * 40)
    fake.add_job(pipeline, "unit", status="failed")
    hook = fake.pipeline_hook(pipeline)
    assert hook["object_attributes"]["status"] == "failed" and hook["builds"][0]["name"] == "unit"
    mr = fake.add_merge_request("feature", "MR", author=dev)
    assert fake.merge_request_hook(mr, by=dev)["object_attributes"]["iid"] == mr.iid
    mr.state = "closed"


def test_a_redirect_is_not_followed_with_the_token(fake: FakeGitLab, tmp_path: Path):
    """python-gitlab sets the token as a header of its own, which requests carries to wherever a GET is
    redirected (it strips only `Authorization`): the token would go to the other host."""
    forge = GitLabForge(fake.url, fake.token, fake.path_with_namespace)
    with FakeGitLab(tmp_path / "elsewhere") as elsewhere:
        fake.redirect_api_to = elsewhere.url
        try:
            with pytest.raises(ForgeError) as refused:
                forge.issue(1)
        finally:
            fake.redirect_api_to = None
        assert [r.headers.get("private-token") for r in elsewhere.requests] == []
    assert refused.value.status == 302 and elsewhere.url in str(refused.value)


# ---------------------------------------------------------------- a self-managed instance under a path prefix


def test_a_self_managed_instance_under_a_path_prefix(tmp_path: Path):
    with FakeGitLab(tmp_path / "server", prefix="/gitlab", namespace="team/sub", name="tool") as fake:
        assert fake.url.endswith("/gitlab")
        dev = fake.add_user("prefixed")
        issue = fake.add_issue("t", "b", author=dev)
        for n in range(gitlab_client.PER_PAGE + 5):  # two pages: the next-page link keeps the prefix
            fake.add_note("Issue", issue.iid, f"note {n}", author=dev)
        for url in (fake.url, fake.api_url, fake.api_url + "/"):
            forge = GitLabForge(url, fake.token, fake.project_id)
            assert forge.issue_url(issue.iid) == f"{fake.url}/team/sub/tool/-/issues/{issue.iid}"
        assert len(forge.comments(issue.iid)) == gitlab_client.PER_PAGE + 5
        assert len(fake.api_requests(r"/notes$")) == 2
        assert fake.violations == []
        with pytest.raises(ForgeError) as wrong:
            GitLabForge(fake.server_url, fake.token, fake.project_id)  # the prefix forgotten
        assert wrong.value.status == 404
