"""GitLabForge answers every call of interface.Forge with the same parameters, so the flow can use it blind
(the GitLab entry's JobIO, RunPlace and Settings are checked beside its own code)."""

from __future__ import annotations

import inspect

from gitbot.forge import interface
from gitbot.forge.gitlab.api import GitLabForge
from tests.forge.test_interface import has_attribute, parameters, protocol_members


def test_gitlab_forge_has_every_member_of_the_forge_protocol():
    attributes, methods = protocol_members(interface.Forge)
    assert sorted(a for a in attributes if not has_attribute(GitLabForge, a)) == []
    for name, wanted in methods.items():
        method = getattr(GitLabForge, name, None)
        assert callable(method), f"GitLabForge has no {name}"
        assert parameters(inspect.signature(method)) == parameters(wanted), name
    assert GitLabForge.terms.forge == "GitLab" and GitLabForge.terms.change_prefix == "!"
