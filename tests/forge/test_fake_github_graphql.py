"""The fake GitHub's GraphQL endpoint: GitHub's schema (the vendored subset) decides what is valid."""

from __future__ import annotations

import pytest

from gitbot.forge.github import graphql
from gitbot.forge.github.api import GitHubForge, connect
from gitbot.forge.interface import ForgeError, PullInfo
from tests.fakes.github_graphql import check


@pytest.mark.parametrize("query", graphql.QUERIES)
def test_every_operation_gitbot_sends_is_valid_against_githubs_schema(query):
    assert check(query) == []


@pytest.mark.parametrize(
    "query,problem",
    [
        (
            'query { repository(owner: "o", name: "r") { pullRequest(number: 1) { isResolved } } }',
            "isResolved",
        ),
        (
            'mutation { markPullRequestReady(input: {pullRequestId: "x"}) { clientMutationId } }',
            "markPullRequestReady",
        ),
        ('mutation { addReaction(input: {subjectId: "x", content: LOOK}) { reaction { content } } }', "LOOK"),
        ('query { repository(owner: "o") { id } }', "name"),
        ("query { repository(", "syntax"),
    ],
)
def test_a_field_argument_or_value_github_does_not_have_is_refused(query, problem):
    problems = check(query)
    assert problems and any(problem in p for p in problems), problems


@pytest.mark.slow
def test_pygithub_gets_githubs_error_answer_and_the_fake_records_the_violation(fake_github):
    from github import GithubException

    forge = GitHubForge(connect(fake_github.token, fake_github.api_url), fake_github.full_name)
    bad = graphql.MARK_READY_MUTATION.replace("isDraft", "isDrafty")
    with pytest.raises(GithubException):
        forge.gh.requester.graphql_query(bad, {"id": "PR_kw1"})
    assert fake_github.violations and "isDrafty" in fake_github.violations[0]
    with pytest.raises(ForgeError, match="marking the pull request ready"):
        forge.mark_ready(PullInfo(1, "PR_missing", "", "", "open", True, "", "", "", None, "", ""))  # valid, but no such node: GitHub's NOT_FOUND error


@pytest.mark.slow
def test_review_threads_are_read_page_by_page(seeded_github, monkeypatch):
    fake = seeded_github
    pr = fake.add_pull("main", title="x")
    for line in range(1, 6):
        fake.review_comment_event(pr.number, f"note {line}", author="sam", path="stats.py", line=line)
    fake.resolved_threads.add(fake.review_comments[0].id)
    forge = GitHubForge(connect(fake.token, fake.api_url), fake.full_name)
    monkeypatch.setattr(graphql, "THREADS_PER_PAGE", 2)
    threads = forge.review_threads(pr.number)
    assert [t.resolved for t in threads] == [True, False, False, False, False]
    assert [t.comments[0].body for t in threads] == [f"note {n}" for n in range(1, 6)]
    assert threads[0].comments[0].id == fake.review_comments[0].id and fake.violations == []
    assert len(fake.api_requests(r"POST /api/graphql")) == 3  # 2 + 2 + 1
