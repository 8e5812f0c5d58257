"""Load the run's policy for a command, turning a bad policy file into a configuration error (exit 2)."""

from __future__ import annotations

from pathlib import Path


def load_run_policy(repo: Path, policy_file: Path | None, *, base_ref: str | None = None):
    from gitbot.agent.run import ConfigError
    from gitbot.policy import PolicyError, load_policy

    try:
        return load_policy(repo, policy_file, base_ref=base_ref)
    except PolicyError as exc:
        raise ConfigError(f"bad policy file: {exc}") from None
