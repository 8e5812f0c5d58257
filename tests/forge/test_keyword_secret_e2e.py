"""Issue 20, finding 7, end to end through `gitbot action`: a plain password under a secret's name never
reaches the model or a pushed branch. The real loop, the fake Messages API and github.com, real git and
bubblewrap."""

from __future__ import annotations

import pytest

from tests.fakes.messages_api import FakeMessagesAPI, tool_turn
from tests.forge.test_action_e2e import CHECK, Harness, bot_comments, fix_script, model_text
from tests.forge.test_action_hardening import push_to_main

pytestmark = pytest.mark.slow
PASSWORD = "plainpassword123"
PIN = "4417-9921-velvet"


@pytest.fixture
def harness(seeded_github, tmp_path):
    seeded_github.set_permission("maria", "maintain")
    return Harness(seeded_github, tmp_path)


def test_a_plain_password_is_redacted_for_the_model_and_stops_the_push(harness):
    push_to_main(harness, {"deploy/notes.txt": f"Staging:\nADMIN_PIN={PIN}\n"})
    harness.fake.add_issue(7, "mean() is wrong", "fix it")
    event = harness.fake.label_issue(7, "gitbot", sender="maria")
    script = [
        tool_turn(("execute_command", {"command": "cat deploy/notes.txt"})),
        tool_turn(("write_to_file", {"path": "deploy/db.env", "content": f"DB_HOST=db\nDB_PASS={PASSWORD}\n"})),
        *fix_script(),
    ]
    with FakeMessagesAPI(script) as api:
        ran = harness.run(api, "issues", event, check_command=CHECK)
    sent = model_text(api)
    assert PIN not in sent and "ADMIN_PIN=[REDACTED]" in sent  # the command's output, scrubbed
    assert ran.exit_code == 1, ran.log
    assert ran.outputs["status"] == "secret_found"
    fake = harness.fake
    assert fake.pulls == [] and fake.branch_sha("gitbot/issue-7") is None  # nothing pushed
    [status] = bot_comments(fake, 7)
    assert "`deploy/db.env:2 (password-assignment)`" in status.body
    assert PASSWORD not in status.body + ran.log + ran.summary
