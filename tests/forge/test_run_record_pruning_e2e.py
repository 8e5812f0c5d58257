"""Run records do not pile up (issue 20): a conversation's new record replaces the pull request's older
ones beyond the policy's `[limits] keep_run_records`, end to end through `gitbot action` with the fake
github.com (its bare repository is origin) and the fake Messages API."""

from __future__ import annotations

import pytest

from tests.fakes.messages_api import FakeMessagesAPI
from tests.forge.conftest import run_git
from tests.forge.test_action_e2e import CHECK, fix_script
from tests.forge.test_action_hardening import push_to_main
from tests.forge.test_conversation_e2e import follow_up_script, open_pr, runner  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow


def records_on_origin(fake) -> list[str]:
    return run_git(fake.bare_repo, "for-each-ref", "--format=%(refname)", "refs/gitbot/runs/").split()


def test_a_follow_up_keeps_only_the_last_records_the_policy_asks_for(runner):  # noqa: F811
    fake = runner.fake
    push_to_main(runner, {".gitbot/policy.toml": "[limits]\nkeep_run_records = 1\n"})
    with FakeMessagesAPI(fix_script() + follow_up_script()) as api:
        pr, first = open_pr(runner, api)
        assert records_on_origin(fake) == [f"refs/gitbot/runs/{first.outputs['run-id']}"]
        event = fake.review_comment_event(pr.number, "@gitbot also handle the empty list: return 0.0",
                                          author="maria", path="stats.py", line=7)
        ran = runner.run(api, "pull_request_review_comment", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert "continuing the conversation of run" in ran.log  # the old record was read before it went
    assert records_on_origin(fake) == [f"refs/gitbot/runs/{ran.outputs['run-id']}"]
    assert "deleted 1 older run record(s) (keep_run_records = 1)" in ran.log
