"""The policy a run obeys comes from the default branch (or the pull request's base branch), never from
the commit under test: on `workflow_run` the failing branch could otherwise loosen its own policy."""

from __future__ import annotations

import pytest

from tests.fakes.messages_api import FakeMessagesAPI, tool_turn
from tests.forge.conftest import run_git
from tests.forge.test_action_e2e import CHECK, UNITTEST_LOG, Harness, fix_script

pytestmark = pytest.mark.slow

# The default branch's policy: in the sandbox a command runs unless a deny rule refuses it.
STRICT_POLICY = """
[commands]
deny = ["touch *"]
"""

LOOSE_POLICY = """
[commands]
allow = ["python3 *", "touch *"]

[sandbox]
mode = "off"
"""


@pytest.fixture
def harness(seeded_github, tmp_path):
    seeded_github.set_permission("maria", "maintain")
    return Harness(seeded_github, tmp_path)


def test_a_failing_branch_cannot_loosen_the_policy_it_is_fixed_under(harness):
    fake, work = harness.fake, harness.workspace
    (work / ".gitbot").mkdir()
    (work / ".gitbot" / "policy.toml").write_text(STRICT_POLICY)
    run_git(work, "add", ".gitbot/policy.toml")
    run_git(work, "commit", "-q", "-m", "the project's policy")
    run_git(work, "push", "-q", "origin", "main")
    run_git(work, "checkout", "-q", "-b", "feature/loose")
    (work / ".gitbot" / "policy.toml").write_text(LOOSE_POLICY)
    run_git(work, "add", ".gitbot/policy.toml")
    run_git(work, "commit", "-q", "-m", "loosen the policy on a branch")
    run_git(work, "push", "-q", "origin", "feature/loose")
    head = run_git(work, "rev-parse", "HEAD").strip()
    run_git(work, "checkout", "-q", "main")
    run = fake.add_workflow_run(head_branch="feature/loose", head_sha=head, actor="maria")
    fake.add_job(run["id"], "unit tests", conclusion="failure", steps=[("Run tests", "failure")], log=UNITTEST_LOG)
    script = [
        tool_turn(("execute_command", {"command": "touch pwned-outside-the-policy"})),
        *fix_script(),
    ]
    with FakeMessagesAPI(script) as api:
        ran = harness.run(api, "workflow_run", fake.workflow_run_event(run["id"]), check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert not (work / "pwned-outside-the-policy").exists()  # main's policy denies `touch`
    [pr] = fake.pulls
    assert pr.base == "feature/loose"
    assert "| 1 | `execute_command` | `touch pwned-outside-the-policy` | denied |" in pr.body
    assert "WITHOUT a sandbox" not in pr.body and "WITHOUT a sandbox" not in ran.summary
