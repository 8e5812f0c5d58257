"""Issue 20, finding 1, end to end through `gitbot action`: a file named like git pathspec magic must
not turn the commit into `git add` of the whole work tree. The real loop and tools, the fake Messages
API and github.com, real git and bubblewrap."""

from __future__ import annotations

import pytest

from tests.fakes.messages_api import FakeMessagesAPI, tool_turn
from tests.forge.conftest import run_git
from tests.forge.test_action_e2e import CHECK, Harness, fix_script

pytestmark = pytest.mark.slow


@pytest.fixture
def harness(seeded_github, tmp_path):
    seeded_github.set_permission("maria", "maintain")
    return Harness(seeded_github, tmp_path)


ATTACKS = {
    # A command writes a file named like pathspec magic: `git add --all -- ':(glob)*'` took everything.
    "glob": (tool_turn(("execute_command", {"command": "printf '' > ':(glob)*'"})), ":(glob)*"),
    # A file tool writes a name git's pathspec parser rejects: `git add` exited 128 and sank the run.
    "nope": (tool_turn(("write_to_file", {"path": ":nope", "content": ""})), ":nope"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_pathspec_named_file_commits_itself_and_nothing_of_the_work_tree_besides(harness, attack):
    turn, name = ATTACKS[attack]
    work = harness.workspace
    # What earlier steps of the job left in the workspace: none of it is the run's change.
    (work / ".env").write_text("DB_PASS=plainpassword123\n")
    (work / "gha-creds-5f2e.json").write_text('{"type": "external_account"}\n')
    (work / ".gitbot").mkdir()
    (work / ".gitbot" / "local.toml").write_text("[files]\nedit_allow = ['**']\n")
    harness.fake.add_issue(7, "mean() is wrong", "fix it")
    event = harness.fake.label_issue(7, "gitbot", sender="maria")
    script = [turn, *fix_script()]
    with FakeMessagesAPI(script) as api:
        ran = harness.run(api, "issues", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert ran.outputs["status"] == "completed"
    assert (work / name).exists(), "the tool ran"
    [pr] = harness.fake.pulls
    tip = harness.fake.branch_sha(pr.head)
    pushed = sorted(n for n in run_git(work, "ls-tree", "-r", "-z", "--name-only", tip).split("\0") if n)
    assert pushed == sorted([name, "README.md", "stats.py", "test_stats.py"])
    assert "return sum(values) / len(values)" in run_git(work, "show", f"{tip}:stats.py")
    assert (work / ".env").read_text() == "DB_PASS=plainpassword123\n"  # left where it was
