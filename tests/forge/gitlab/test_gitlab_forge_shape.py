"""GitLabForge answers every call of interface.Forge with the same parameters, so the flow can use it blind."""

from __future__ import annotations

import inspect

from gitbot.forge.gitlab.api import GitLabForge
from gitbot.forge.interface import Forge


def _members(cls: type) -> dict[str, object]:
    return {name: value for name, value in vars(cls).items() if not name.startswith("_")}


def _parameters(function) -> list[tuple[str, inspect._ParameterKind]]:
    return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()]


def test_every_call_of_the_forge_protocol_is_there_with_its_parameters():
    for name, wanted in _members(Forge).items():
        assert hasattr(GitLabForge, name), f"GitLabForge has no {name}"
        got = getattr(GitLabForge, name)
        if isinstance(wanted, property):
            assert isinstance(got, property), name
        elif callable(wanted):
            assert _parameters(got) == _parameters(wanted), name
    assert "terms" in Forge.__annotations__ and GitLabForge.terms.forge == "GitLab"
