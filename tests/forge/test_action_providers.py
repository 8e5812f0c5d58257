"""The Action with each provider: Bedrock with the job's AWS credentials (as configure-aws-credentials
leaves them), Vertex with the credentials file google-github-actions/auth writes into the workspace, and
an OpenAI-compatible endpoint with its key input. The credentials reach the SDK client even though gitbot
takes every secret out of its own environment, and nothing the model, the PR or the record sees holds them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from gitbot.forge.github.inputs import InputError, read_inputs
from tests.fakes.bedrock_api import FakeBedrockAPI
from tests.fakes.openai_api import FakeChatCompletionsAPI
from tests.fakes.vertex_api import FakeVertexAPI
from tests.forge.test_action_definition import ACTION
from tests.forge.test_action_e2e import CHECK, Harness, fix_script

pytestmark = pytest.mark.slow


@pytest.fixture
def harness(seeded_github, tmp_path):
    seeded_github.set_permission("maria", "maintain")
    seeded_github.add_issue(7, "mean() is wrong for three numbers", "mean([1, 2, 3]) returns 3.0.")
    return Harness(seeded_github, tmp_path)


def everything_seen(harness: Harness, ran, api) -> str:
    record = "".join(p.read_text(errors="replace") for p in (harness.workspace / ".git" / "gitbot").rglob("*")
                     if p.is_file() and p.suffix in (".jsonl", ".json"))
    fake = harness.fake
    log = "\n".join(line for line in ran.log.splitlines() if not line.startswith("::add-mask::"))
    return "".join([json.dumps([r["body"] for r in api.requests]), record, log, ran.summary,
                    *(p.body for p in fake.pulls), *(c.body for c in fake.comments)])


def test_bedrock_with_the_jobs_aws_credentials(harness):
    event = harness.fake.label_issue(7, "gitbot", sender="maria")
    model = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
    with FakeBedrockAPI(fix_script(), session_token="sts-session-token-0123456789") as api:
        ran = harness.run(api, "issues", event, check_command=CHECK, provider="bedrock", model=model,
                          extra_env={**api.env(), "INPUT_ANTHROPIC-API-KEY": ""})
    assert ran.exit_code == 0, ran.log
    assert api.errors == [] and api.models == [model] * 4
    [pr] = harness.fake.pulls
    assert "| Provider | bedrock (us-east-1, 127.0.0.1:" in pr.body
    seen = everything_seen(harness, ran, api)
    secret, token = api.keys[api.access_key]
    assert secret not in seen and token not in seen


def test_vertex_with_the_credentials_file_in_the_workspace(harness, tmp_path: Path):
    event = harness.fake.label_issue(7, "gitbot", sender="maria")
    with FakeVertexAPI(fix_script(), region="global") as api:
        # google-github-actions/auth writes gha-creds-<random>.json into the workspace.
        creds = api.credentials_file(tmp_path / "auth")
        planted = harness.workspace / "gha-creds-1a2b3c.json"
        planted.write_text(creds.read_text())
        ran = harness.run(api, "issues", event, check_command=CHECK, provider="vertex",
                          model="claude-sonnet-4-5@20250929",
                          extra_env={**api.env(planted), "INPUT_ANTHROPIC-API-KEY": ""})
    assert ran.exit_code == 0, ran.log
    assert api.errors == [] and api.refreshes == 1
    [pr] = harness.fake.pulls
    assert "| Provider | vertex (global, 127.0.0.1:" in pr.body
    private_key = json.loads(planted.read_text())["private_key"].splitlines()[1]
    assert private_key not in everything_seen(harness, ran, api)


def test_openai_with_its_key_input(harness):
    event = harness.fake.label_issue(7, "gitbot", sender="maria")
    with FakeChatCompletionsAPI(fix_script()) as api:
        ran = harness.run(api, "issues", event, check_command=CHECK, provider="openai", model="gpt-test",
                          openai_api_key=api.api_key, base_url=api.base_url,
                          extra_env={"INPUT_ANTHROPIC-API-KEY": ""})
    assert ran.exit_code == 0, ran.log
    assert api.errors == [] and len(api.requests) == 4
    assert ran.outputs["cost-usd"] == ""  # unknown: no price for this model, and none in the policy
    assert "model 'gpt-test' on openai (127.0.0.1:" in ran.log and "is not in the price table" in ran.log
    assert api.api_key not in everything_seen(harness, ran, api)


def test_provider_inputs_are_checked():
    base = {"INPUT_GITHUB-TOKEN": "ghs_x"}
    assert read_inputs({**base, "INPUT_PROVIDER": "vertex"}).provider == "vertex"
    for extra, words in [({"INPUT_PROVIDER": "bard"}, "provider must be one of"),
                         ({"INPUT_PROVIDER": "openai"}, "openai-api-key is required"),
                         ({}, "anthropic-api-key is required"),
                         ({"INPUT_PROVIDER": "openai", "INPUT_BASE-URL": "https://k:s@host/v1"}, "base-url must be")]:
        with pytest.raises(InputError) as raised:
            read_inputs({**base, **extra})
        assert words in str(raised.value)


@pytest.mark.parametrize("provider,installed", [("bedrock", "ACTION[bedrock]"), ("openai", "ACTION[openai]"),
                                                ("anthropic", "ACTION"), ("bedrock]; echo pwned #", "ACTION")])
def test_the_install_step_adds_the_providers_extra(tmp_path: Path, provider: str, installed: str):
    step = next(s for s in yaml.safe_load(ACTION.read_text())["runs"]["steps"] if s.get("name") == "Install gitbot")
    log = tmp_path / "log"
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nif [ "$2" = venv ]; then mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; fi\n'
                      f'echo "$*" >> {log}\n')
    python.chmod(0o755)
    env = {"PATH": "/bin:/usr/bin", "GITBOT_PYTHON": str(python), "GITBOT_PROVIDER": provider,
           "RUNNER_TEMP": str(tmp_path), "GITHUB_ACTION_PATH": "ACTION"}
    done = subprocess.run(["/bin/bash", "-e", "-c", step["run"]], env=env, capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert log.read_text().splitlines()[-1].endswith(f"--disable-pip-version-check {installed}")
    assert "pwned" not in done.stdout


def readme_oidc_examples() -> list[str]:
    text = (ACTION.parent / "README.md").read_text()
    section = text.split("### Bedrock or Vertex AI on Actions, with OIDC", 1)[1].split("\n## ", 1)[0]
    return [block.split("\n", 1)[1] for block in section.split("```")[1::2] if block.startswith("yaml")]


def test_the_readme_oidc_examples_use_real_inputs_and_pass_actionlint(tmp_path: Path):
    from tests.forge.test_action_definition import run_actionlint

    inputs = set(yaml.safe_load(ACTION.read_text())["inputs"])
    examples = readme_oidc_examples()
    assert len(examples) == 2
    steps = []
    for n, example in enumerate(examples):
        text = example.replace("<sha>", "0" * 40).replace("<owner>/gitbot", "octo-org/gitbot")
        parsed = yaml.safe_load(text if n == 0 else "steps:\n" + text)
        steps += parsed["steps"]
        gitbot = next(s for s in parsed["steps"] if s["uses"].startswith("octo-org/gitbot@"))
        assert set(gitbot["with"]) <= inputs and gitbot["with"]["provider"] in ("bedrock", "vertex")
    assert yaml.safe_load(examples[0].replace("<sha>", "x"))["permissions"]["id-token"] == "write"
    workflow = {"name": "gitbot", "on": {"issues": {"types": ["labeled"]}},
                "permissions": yaml.safe_load(examples[0].replace("<sha>", "x"))["permissions"],
                "jobs": {"fix": {"runs-on": "ubuntu-latest", "steps": steps}}}
    path = tmp_path / ".github" / "workflows" / "gitbot.yml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(workflow, sort_keys=False))
    done = run_actionlint(path, cwd=tmp_path)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")
