"""Who may trigger, and the inputs' validation."""

from __future__ import annotations

import pytest

from gitbot.forge.github.inputs import InputError, read_inputs
from gitbot.forge.github.permissions import check_actor, check_actors
from gitbot.forge.triggers import Actor

ROLES = {
    "ada": ("admin", "admin"),
    "max": ("write", "maintain"),
    "wes": ("write", "write"),
    "tia": ("read", "triage"),
    "rea": ("read", "read"),
}


def lookup(login):
    return ROLES.get(login, (None, None))


@pytest.mark.parametrize(
    "login,allowed",
    [("ada", True), ("max", True), ("wes", True), ("tia", False), ("rea", False), ("stranger", False)],
)
def test_people_need_admin_maintain_or_write(login, allowed):
    assert bool(check_actor(Actor(login), allowed_bots=frozenset(), lookup=lookup)) is allowed


def test_a_bot_suffix_grants_nothing_and_the_allow_list_is_exact():
    calls = []

    def spying(login):
        calls.append(login)
        return ("admin", "admin")

    assert not check_actor(Actor("evil[bot]", "Bot"), allowed_bots=frozenset(), lookup=spying)
    assert not check_actor(Actor("renovate", "Bot"), allowed_bots=frozenset({"dependabot"}), lookup=spying)
    assert check_actor(Actor("dependabot[bot]", "Bot"), allowed_bots=frozenset({"dependabot"}), lookup=spying)
    assert calls == []  # a bot is never looked up as if it were a collaborator


def test_every_actor_must_pass():
    verdict = check_actors([Actor("wes"), Actor("tia")], allowed_bots=frozenset(), lookup=lookup)
    assert not verdict and "tia" in verdict.reason
    assert not check_actors([], allowed_bots=frozenset(), lookup=lookup)


def env(**values):
    base = {"INPUT_ANTHROPIC-API-KEY": "sk-ant-test-123456", "INPUT_GITHUB-TOKEN": "ghs_token_123456"}
    return {**base, **{f"INPUT_{k.upper()}": v for k, v in values.items()}}


def test_inputs_are_read_from_hyphenated_upper_case_names():
    inputs = read_inputs(
        env(
            **{
                "max-cost-usd": "1.5",
                "max-steps": "20",
                "check-command": "pytest -q",
                "allowed-bots": "dependabot[bot], renovate",
                "draft": "true",
                "label": "fix-me",
            }
        )
    )
    got = (inputs.max_cost_usd, inputs.max_steps, inputs.check_command, inputs.draft, inputs.label)
    assert got == (1.5, 20, "pytest -q", True, "fix-me")
    assert inputs.allowed_bots == {"dependabot", "renovate"}


def test_every_bad_input_is_reported_at_once():
    with pytest.raises(InputError) as caught:
        read_inputs(
            {
                "INPUT_MAX-COST-USD": "lots",
                "INPUT_MAX-STEPS": "0",
                "INPUT_ALLOWED-BOTS": "*",
                "INPUT_DRAFT": "maybe",
                "INPUT_BASE-BRANCH": "--upload-pack=x",
            }
        )
    text = " ".join(caught.value.problems)
    for name in (
        "anthropic-api-key",
        "github-token",
        "max-cost-usd",
        "max-steps",
        "allowed-bots",
        "draft",
        "base-branch",
    ):
        assert name in text


def test_the_conversation_inputs_and_their_defaults():
    base = {"INPUT_ANTHROPIC-API-KEY": "k", "INPUT_GITHUB-TOKEN": "t"}
    inputs = read_inputs(base)
    assert (inputs.trigger_phrase, inputs.max_total_cost_usd, inputs.max_iterations) == ("@gitbot", 10.0, 10)
    inputs = read_inputs(
        {
            **base,
            "INPUT_TRIGGER-PHRASE": "/fixit",
            "INPUT_MAX-TOTAL-COST-USD": "2.5",
            "INPUT_MAX-ITERATIONS": "3",
        }
    )
    assert (inputs.trigger_phrase, inputs.max_total_cost_usd, inputs.max_iterations) == ("/fixit", 2.5, 3)
    with pytest.raises(InputError) as caught:
        read_inputs(
            {
                **base,
                "INPUT_TRIGGER-PHRASE": "hey bot",
                "INPUT_MAX-TOTAL-COST-USD": "0",
                "INPUT_MAX-ITERATIONS": "1.5",
            }
        )
    assert len(caught.value.problems) == 3
