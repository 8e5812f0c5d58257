"""The GitLab job's own variables: defaults, every problem reported at once, nothing guessed."""

from __future__ import annotations

import pytest

from gitbot.forge.gitlab.settings import SettingsError, read_settings

BASE = {
    "GITBOT_GITLAB_TOKEN": "glpat-0123456789abcdefghij",
    "ANTHROPIC_API_KEY": "sk-ant-test-key-0123456789",
}


def test_defaults_mirror_the_actions():
    s = read_settings(BASE)
    assert (s.provider, s.label, s.trigger_phrase, s.draft) == ("anthropic", "gitbot", "@gitbot", False)
    assert (s.max_total_cost_usd, s.max_iterations, s.check_command, s.max_steps) == (10.0, 10, None, None)
    assert s.workflow_token is False  # a project access token's pushes start pipelines


def test_every_setting_is_read():
    s = read_settings(
        {
            **BASE,
            "GITBOT_PROVIDER": "OpenAI",
            "OPENAI_API_KEY": "sk-openai-0123456789",
            "GITBOT_BASE_URL": "http://127.0.0.1:9/v1",
            "GITBOT_MODEL": "m",
            "GITBOT_LABEL": "bot fix",
            "GITBOT_CHECK_COMMAND": "pytest -q",
            "GITBOT_MAX_COST_USD": "0.5",
            "GITBOT_MAX_STEPS": "7",
            "GITBOT_POLICY": ".gitbot/p.toml",
            "GITBOT_BASE_BRANCH": "develop",
            "GITBOT_DRAFT": "yes",
            "GITBOT_ALLOWED_BOTS": "renovate-bot, Project_12_bot_ab",
            "GITBOT_TRIGGER_PHRASE": "@helper",
            "GITBOT_MAX_TOTAL_COST_USD": "3",
            "GITBOT_MAX_ITERATIONS": "2",
        }
    )
    assert (s.provider, s.openai_api_key, s.base_url, s.model, s.label) == (
        "openai",
        "sk-openai-0123456789",
        "http://127.0.0.1:9/v1",
        "m",
        "bot fix",
    )
    assert (s.check_command, s.max_cost_usd, s.max_steps, s.policy, s.base_branch, s.draft) == (
        "pytest -q",
        0.5,
        7,
        ".gitbot/p.toml",
        "develop",
        True,
    )
    assert s.allowed_bots == {"renovate-bot", "project_12_bot_ab"}
    assert (s.trigger_phrase, s.max_total_cost_usd, s.max_iterations) == ("@helper", 3.0, 2)


def test_all_problems_are_reported_together():
    with pytest.raises(SettingsError) as caught:
        read_settings(
            {
                "GITBOT_PROVIDER": "x",
                "GITBOT_MAX_STEPS": "0",
                "GITBOT_MAX_COST_USD": "nan",
                "GITBOT_DRAFT": "maybe",
                "GITBOT_CHECK_COMMAND": "a\nb",
                "GITBOT_TRIGGER_PHRASE": "@ bad",
                "GITBOT_ALLOWED_BOTS": "*",
                "GITBOT_BASE_BRANCH": "-x",
                "GITBOT_BASE_URL": "http://u:p@h/",
                "GITBOT_LABEL": "a,b",
            }
        )
    text = "\n".join(caught.value.problems)
    for name in (
        "GITBOT_GITLAB_TOKEN",
        "GITBOT_PROVIDER",
        "GITBOT_MAX_STEPS",
        "GITBOT_MAX_COST_USD",
        "GITBOT_DRAFT",
        "GITBOT_CHECK_COMMAND",
        "GITBOT_TRIGGER_PHRASE",
        "GITBOT_ALLOWED_BOTS",
        "GITBOT_BASE_BRANCH",
        "GITBOT_BASE_URL",
        "GITBOT_LABEL",
    ):
        assert name in text
    assert len(caught.value.problems) == 11


def test_the_model_key_is_required_for_its_provider_only():
    with pytest.raises(SettingsError, match="ANTHROPIC_API_KEY"):
        read_settings({"GITBOT_GITLAB_TOKEN": "glpat-0123456789abcdefghij"})
    assert read_settings({"GITBOT_GITLAB_TOKEN": "glpat-0123456789abcdefghij", "GITBOT_PROVIDER": "bedrock"})


def test_without_the_gitlab_extra_the_job_says_which_extra_to_install(tmp_path):
    """A job whose image installed plain `gitbot` fails as a configuration error naming the extra, not with
    a traceback (python-gitlab is hidden from the child as an uninstalled package is)."""
    import os
    import subprocess
    import sys

    hide = "import sys; sys.modules['gitlab'] = None; import importlib.util as u; f = u.find_spec; "
    hide += "u.find_spec = lambda name, *a: None if name == 'gitlab' else f(name, *a); "
    run = "from gitbot.forge.gitlab.entry import run_gitlab; sys.exit(run_gitlab())"
    env = {**os.environ, **BASE, "GITBOT_OUTPUT_DIR": str(tmp_path / "out")}
    done = subprocess.run([sys.executable, "-c", hide + run], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "gitbot[gitlab]" in done.stdout and "Traceback" not in done.stdout + done.stderr


def test_tried_outside_a_gitlab_job_it_says_so_and_writes_nothing_where_it_was_run(tmp_path):
    """`gitbot gitlab` run by hand in a checkout: a configuration error, and no .gitbot-out/ left there."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CI_", "GITBOT_", "GITLAB_"))}
    env.update(BASE)
    done = subprocess.run(
        [sys.executable, "-m", "gitbot", "gitlab"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not running in a GitLab CI job" in done.stdout
    assert list(tmp_path.iterdir()) == []
