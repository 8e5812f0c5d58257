"""Load the run's policy for a command, turning a bad policy file into a configuration error."""

from __future__ import annotations

from pathlib import Path


def load_run_policy(repo: Path, policy_file: Path | None, *, base_ref: str | None = None):
    from gitbot import policy as policy_module
    from gitbot.agent.run import ConfigError

    loader = getattr(policy_module, "load_policy", None)
    if loader is None:
        return policy_module.Policy()
    try:
        return loader(repo, policy_file, base_ref=base_ref)
    except getattr(policy_module, "PolicyError", ValueError) as exc:
        raise ConfigError(f"bad policy file: {exc}") from None
