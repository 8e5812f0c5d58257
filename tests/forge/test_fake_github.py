"""The fake GitHub server itself: it must reject what GitHub would, or the other tests prove nothing."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request

import github
import pytest
from github import Auth

from tests.fakes.github_api import FakeGitHub
from tests.forge.conftest import actions_checkout, run_git


def call(fake: FakeGitHub, method: str, path: str, body=None, *, token: str | None = None):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"token {token or fake.token}", "Content-Type": "application/json"}
    request = urllib.request.Request(fake.api_url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_a_create_pull_request_without_head_is_a_recorded_violation(seeded_github):
    status, body = call(
        seeded_github, "POST", f"/repos/{seeded_github.full_name}/pulls", {"title": "x", "base": "main"}
    )
    assert status == 422
    assert "head" in body["message"]
    assert len(seeded_github.violations) == 1
    assert seeded_github.pulls == []


def test_a_body_field_the_operation_does_not_define_is_a_violation(seeded_github):
    path = f"/repos/{seeded_github.full_name}/pulls/1"
    status, _ = call(seeded_github, "PATCH", path, {"body": "x", "drafts": True})
    assert status == 422
    assert "drafts" in seeded_github.violations[0]


def test_wrong_types_and_bad_query_values_are_violations(seeded_github):
    repo = f"/repos/{seeded_github.full_name}"
    assert call(seeded_github, "POST", f"{repo}/issues/1/comments", {"body": 5})[0] == 422
    assert call(seeded_github, "GET", f"{repo}/pulls?state=merged")[0] == 422
    assert len(seeded_github.violations) == 2


def test_a_wrong_token_is_refused_without_touching_state(seeded_github):
    seeded_github.add_issue(1, "t", "b")
    path = f"/repos/{seeded_github.full_name}/issues/1/comments"
    status, _ = call(seeded_github, "POST", path, {"body": "x"}, token="ghs_wrong")
    assert status == 401
    assert seeded_github.comments == []


@pytest.mark.slow
def test_pygithub_lists_every_page(seeded_github):
    seeded_github.add_issue(3, "t", "b")
    for n in range(35):
        seeded_github.add_comment(3, f"comment {n}")
    gh = github.Github(
        auth=Auth.Token(seeded_github.token),
        base_url=seeded_github.api_url,
        per_page=10,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )
    bodies = [c.body for c in gh.get_repo(seeded_github.full_name).get_issue(3).get_comments()]
    assert bodies == [f"comment {n}" for n in range(35)]
    assert len(seeded_github.api_requests(r"GET .*/issues/3/comments")) == 4
    assert seeded_github.violations == []


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_job_logs_redirect_to_a_single_use_link_that_must_not_get_the_token(seeded_github):
    run = seeded_github.add_workflow_run(head_branch="main", head_sha="a" * 40, actor="alice")
    job = seeded_github.add_job(
        run["id"], "test", conclusion="failure", steps=[("pytest", "failure")], log="boom"
    )
    opener = urllib.request.build_opener(NoRedirect)
    url = f"{seeded_github.api_url}/repos/{seeded_github.full_name}/actions/jobs/{job.id}/logs"
    request = urllib.request.Request(url, headers={"Authorization": f"token {seeded_github.token}"})
    with pytest.raises(urllib.error.HTTPError) as redirect:
        opener.open(request)
    assert redirect.value.code == 302
    link = redirect.value.headers["Location"]
    leaked = urllib.request.Request(link, headers={"Authorization": f"token {seeded_github.token}"})
    assert urllib.request.urlopen(leaked).read() == b"boom"
    assert seeded_github.violations == ["GET log blob: sent an Authorization header to the log storage host"]
    with pytest.raises(urllib.error.HTTPError) as again:
        urllib.request.urlopen(link)
    assert again.value.code == 403  # single use, like a signed URL


@pytest.mark.slow
def test_git_over_http_needs_the_token(seeded_github, tmp_path):
    done = subprocess.run(
        ["git", "clone", "-q", seeded_github.clone_url, str(tmp_path / "anon")],
        capture_output=True,
        text=True,
        env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode != 0
    work = actions_checkout(seeded_github, tmp_path / "work")
    (work / "new.txt").write_text("x\n")
    run_git(work, "add", "new.txt")
    run_git(work, "commit", "-q", "-m", "add")
    run_git(work, "push", "-q", "origin", "HEAD:refs/heads/feature")
    assert seeded_github.branch_sha("feature") == run_git(work, "rev-parse", "HEAD").strip()
