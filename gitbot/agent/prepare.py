"""Getting a run ready, the same way for every way in: the repository, the policy with the caller's
limits, the provider and the run options. `gitbot run`, `fix-check`, the hooks and the Action all
call `prepare_run`; only what differs between them is a parameter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gitbot import git
from gitbot.agent.run import RunOptions, with_limits
from gitbot.llm.base import Provider
from gitbot.llm.providers import make_provider
from gitbot.policy import Policy, load_policy
from gitbot.sandbox.crashnote import recover_after_crash


@dataclass(frozen=True)
class PreparedRun:
    repo: Path
    policy: Policy
    provider: Provider
    options: RunOptions


def prepare_run(repo: Path, *, policy: Policy | None = None, policy_file: Path | None = None,
                base_ref: str | None = None, model: str | None = None, replay: Path | None = None,
                provider: Provider | None = None, provider_name: str | None = None, base_url: str | None = None,
                api_key: str | None = None, environ: Mapping[str, str] | None = None,
                max_steps: int | None = None, max_cost_usd: float | None = None,
                min_command_timeout: float | None = None) -> PreparedRun:
    """Raises ConfigError (a bad policy file is one) before anything is spent.

    `policy`: already loaded by the caller (fix-check needs it to run the check first); otherwise
    read from `policy_file` or the repository, at `base_ref` when given, so a change under review
    cannot loosen its own policy. `min_command_timeout`: the agent must be able to re-run the check
    it is fixing within its command timeout. `provider_name`, `base_url`, `api_key`, `environ`: who serves
    the model, where, and with which credentials (gitbot/llm/providers.py), over the policy's [model] table;
    `provider`: one built already."""
    repo = git.repo_root(repo)
    recover_after_crash(repo)  # what a command of a gitbot that died mid-command left is not this run's policy
    if policy is None:
        policy = load_policy(repo, policy_file, base_ref=base_ref)
    timeout = policy.limits.command_timeout_seconds
    if min_command_timeout is not None and timeout < min_command_timeout:
        timeout = min_command_timeout
    policy = with_limits(policy, max_steps=max_steps, max_cost_usd=max_cost_usd, command_timeout_seconds=timeout)
    provider = provider or make_provider(model, replay=replay, provider=provider_name, base_url=base_url,
                                         settings=policy.model, api_key=api_key, environ=environ)
    return PreparedRun(repo, policy, provider, RunOptions(model=provider.model))
