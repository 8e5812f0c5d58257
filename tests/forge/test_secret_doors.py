"""Issue 12, end to end through `gitbot action`: a secret planted in git history, in an untracked
read-denied file, in a command's output and in a file the agent writes never appears in a model
request, the run record, the uploaded artifact, a pushed commit or anything posted, and the run says
where it stopped it. The real loop, the fake Messages API, the fake github.com, real git and bubblewrap."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.fakes.messages_api import FakeMessagesAPI, tool_turn
from tests.forge.conftest import run_git
from tests.forge.test_action_e2e import CHECK, Harness, bot_comments, fix_script, model_text
from tests.forge.test_action_hardening import push_to_main
from tests.secret_corpus import pem, planted

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SECRETS = planted()
AWS_KEY = SECRETS["aws access key id"][1]
SLACK = SECRETS["slack bot token"][1]
STRIPE = SECRETS["stripe live key"][1]
PRIVATE_KEY = pem("OPENSSH PRIVATE KEY", 90)
PLANTED = (AWS_KEY, SLACK, STRIPE, PRIVATE_KEY.splitlines()[2])


@pytest.fixture
def harness(seeded_github, tmp_path):
    seeded_github.set_permission("maria", "maintain")
    return Harness(seeded_github, tmp_path)


def git_objects_text(git_dir: Path, tmp: Path) -> str:
    """The content of every object a git directory stores itself (not its alternates), decompressed."""
    copy = tmp / f"objects-of-{git_dir.name}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(git_dir, copy, symlinks=True)
    (copy / "objects" / "info" / "alternates").unlink(missing_ok=True)
    done = subprocess.run(["git", f"--git-dir={copy}", "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=False)
    return done.stdout.decode("utf-8", "replace")


def tree_text(root: Path, tmp: Path) -> str:
    """Every file under `root` as text, and the objects of every git store in it decompressed."""
    if not root.exists():
        return ""
    parts = []
    for path in sorted(root.rglob("*")):
        if path.is_file():
            parts.append(path.read_bytes().decode("utf-8", "replace"))
        if path.is_dir() and (path / "HEAD").is_file() and (path / "objects").is_dir():
            parts.append(git_objects_text(path, tmp))
    return "\n".join(parts)


def uploaded_path(harness: Harness) -> Path:
    """The directory action.yml's upload-artifact step uploads, as this job would resolve it."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    [step] = [s for s in action["runs"]["steps"] if "upload-artifact" in s.get("uses", "")]
    path = step["with"]["path"]
    path = path.replace("${{ runner.temp }}", str(harness.runner_temp))
    return Path(path.replace("${{ github.workspace }}", str(harness.workspace)))


def pushed_text(harness: Harness) -> str:
    """Every object gitbot pushed: reachable from its branches, not from main."""
    bare = harness.fake.bare_repo
    heads = run_git(bare, "for-each-ref", "--format=%(refname)", "refs/heads/gitbot/").split()
    if not heads:
        return ""
    listing = run_git(bare, "rev-list", "--objects", *heads, "--not", "refs/heads/main")
    oids = "".join(line.split(" ")[0] + "\n" for line in listing.splitlines())
    done = subprocess.run(["git", "-C", str(bare), "cat-file", "--batch"], input=oids.encode(), capture_output=True,
                          check=True)
    return done.stdout.decode("utf-8", "replace")


def everything_seen(harness: Harness, api: FakeMessagesAPI, ran) -> dict[str, str]:
    fake = harness.fake
    return {
        "model requests": model_text(api),
        "run record": tree_text(harness.workspace / ".git" / "gitbot" / "runs", harness.tmp),
        "checkpoint store": git_objects_text(harness.workspace / ".git" / "gitbot" / "shadow", harness.tmp),
        "uploaded artifact": tree_text(uploaded_path(harness), harness.tmp),
        "pushed commits": pushed_text(harness),
        "PRs": json.dumps([[p.title, p.body] for p in fake.pulls]),
        "comments": json.dumps([c.body for c in fake.comments]),
        "summary": ran.summary,
        "log": ran.log,
    }


def assert_nowhere(seen: dict[str, str], values=PLANTED) -> None:
    for where, text in seen.items():
        for value in values:
            assert value not in text, f"a planted secret reached the {where}"


def record_events(harness: Harness) -> list[dict]:
    [trajectory] = (harness.workspace / ".git" / "gitbot" / "runs").glob("*/trajectory.jsonl")
    return [json.loads(line) for line in trajectory.read_text().splitlines()]


def test_a_secret_in_a_deleted_files_history_is_stopped_at_the_command_output(harness):
    # Committed, then deleted: the object store still has it. `config/settings.py` is not in read_deny,
    # so neither the judge nor the sandbox stops `git show`; the scanner must.
    push_to_main(harness, {"config/settings.py": f"AWS_KEY = '{AWS_KEY}'\nSLACK = '{SLACK}'\n",
                           ".env": f"STRIPE={STRIPE}\n"})
    run_git(harness.workspace, "rm", "-q", "config/settings.py", ".env")
    run_git(harness.workspace, "commit", "-q", "-m", "remove secrets")
    run_git(harness.workspace, "push", "-q", "origin", "HEAD:main")
    harness.fake.add_issue(7, "mean() is wrong", "fix it")
    event = harness.fake.label_issue(7, "gitbot", sender="maria")
    script = [
        tool_turn(("execute_command", {"command": "git show HEAD~1:config/settings.py"})),
        tool_turn(("execute_command", {"command": "git show HEAD~1:.env"})),
        tool_turn(("execute_command", {"command": "git log -p -n 2"})),
        *fix_script()[1:],
    ]
    with FakeMessagesAPI(script) as api:
        ran = harness.run(api, "issues", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert_nowhere(everything_seen(harness, api, ran))
    [pr] = harness.fake.pulls
    # The run says where: the step, the tool, the line and the kind.
    assert "step 1 (execute_command output): line 3 (aws-access-key-id), line 4 (slack-token)" in pr.body
    stops = [e for e in record_events(harness) if e["event"] == "secrets_stopped"]
    assert {"kind": "aws-access-key-id", "line": 3} in stops[0]["findings"]
    # `git show HEAD~1:.env` was refused (the judge applies read_deny to REV:PATH), or it ran in the sandbox,
    # whose object store holds a placeholder instead of the read-denied blob (sandbox/filtered_store.py).
    env_step = next(e for e in record_events(harness) if e["event"] == "tool_end" and e["step"] == 2)
    assert env_step["outcome"] == "denied" or "hidden by gitbot" in env_step["result"], env_step


def test_an_untracked_read_denied_file_reaches_neither_the_model_nor_the_store_nor_the_artifact(harness):
    # An earlier step of the job wrote it; .gitignore does not name it. The default read_deny does.
    (harness.workspace / ".env").write_text(f"STRIPE_KEY={STRIPE}\nAWS_ACCESS_KEY_ID={AWS_KEY}\n")
    harness.fake.add_issue(7, "mean() is wrong", "fix it")
    event = harness.fake.label_issue(7, "gitbot", sender="maria")
    script = [
        tool_turn(("read_file", {"path": ".env"})),
        tool_turn(("execute_command", {"command": "cat .env"})),
        tool_turn(("search_files", {"path": ".", "regex": "AKIA"})),
        *fix_script()[1:],
    ]
    with FakeMessagesAPI(script) as api:
        ran = harness.run(api, "issues", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    seen = everything_seen(harness, api, ran)
    assert_nowhere(seen)
    assert (harness.workspace / ".env").read_text().startswith("STRIPE_KEY=")  # the user's file is left alone
    events = record_events(harness)
    [first] = [e for e in events if e["event"] == "checkpoint" and e["step"] == 0]
    assert ".env" in first["not_captured"]  # the run says the store left it out
    read = next(e for e in events if e["event"] == "tool_end" and e["step"] == 1)
    assert read["outcome"] == "denied" and "read_deny" in read["result"]
    assert "shadow" in seen["uploaded artifact"] or (uploaded_path(harness) / "shadow").is_dir()


def test_a_secret_in_a_commands_output_is_replaced_and_the_run_says_where(harness):
    push_to_main(harness, {"docs/setup.md": f"# Setup\n\nPay with {STRIPE}.\n\n{PRIVATE_KEY}\n"})
    harness.fake.add_issue(7, "mean() is wrong", "fix it")
    event = harness.fake.label_issue(7, "gitbot", sender="maria")
    script = [
        tool_turn(("execute_command", {"command": "cat docs/setup.md"})),
        tool_turn(("read_file", {"path": "docs/setup.md"})),
        *fix_script()[1:],
    ]
    with FakeMessagesAPI(script) as api:
        ran = harness.run(api, "issues", event, check_command=CHECK)
    assert ran.exit_code == 0, ran.log
    assert_nowhere(everything_seen(harness, api, ran))
    assert "[REDACTED]" in model_text(api)
    [pr] = harness.fake.pulls
    assert "step 1 (execute_command output): line 5 (stripe-key), line 7 (private-key)" in pr.body
    assert "step 2 (read_file output)" in pr.body
    assert "step 1 (execute_command output)" in ran.summary


def test_a_secret_in_a_file_the_agent_writes_is_not_pushed_uploaded_or_sent_back(harness):
    harness.fake.add_issue(7, "mean() is wrong", "fix it")
    event = harness.fake.label_issue(7, "gitbot", sender="maria")
    creds = f"import os\n\nAWS_ACCESS_KEY_ID = '{AWS_KEY}'\nSLACK_TOKEN = '{SLACK}'\n"
    script = [
        tool_turn(("write_to_file", {"path": "deploy/creds.py", "content": creds})),
        *fix_script(),
    ]
    with FakeMessagesAPI(script) as api:
        ran = harness.run(api, "issues", event, check_command=CHECK)
    assert ran.exit_code == 1, ran.log
    assert ran.outputs["status"] == "secret_found"
    assert (harness.workspace / "deploy" / "creds.py").read_text() == creds  # the tool wrote what was asked
    seen = everything_seen(harness, api, ran)
    del seen["checkpoint store"]  # on the runner it holds the file the agent wrote; it is not uploaded
    assert_nowhere(seen)
    fake = harness.fake
    assert fake.pulls == [] and fake.branch_sha("gitbot/issue-7") is None  # nothing pushed, no PR
    [status] = bot_comments(fake, 7)
    assert "`deploy/creds.py:3 (aws-access-key-id)`" in status.body
    assert "`deploy/creds.py:4 (slack-token)`" in status.body
    # The artifact holds the record but not the store, and says why and where.
    assert (uploaded_path(harness) / "runs").is_dir() and not (uploaded_path(harness) / "shadow").exists()
    assert re.search(r"checkpoints were left out of the uploaded artifact.*deploy/creds\.py:3 \(aws-access-key-id\)",
                     status.body + ran.summary, re.DOTALL)
