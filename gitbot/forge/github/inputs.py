"""The Action's inputs, read from `INPUT_<NAME>` variables and validated here.

`action.yml` passes each input through `env:` under the name GitHub's own toolkit would use: the
input's id upper-cased, spaces turned into underscores, hyphens kept (`INPUT_MAX-COST-USD`). The
runner does not enforce `required:` for composite actions, so this module does, and it reports
every problem at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gitbot.forge.settings_check import (
    DEFAULT_LABEL,
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_MAX_TOTAL_COST_USD,
    DEFAULT_TRIGGER_PHRASE,
    Problems,
)

# What a bot login may look like in allowed-bots: a GitHub App slug, optionally with "[bot]".
BOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}(\[bot\])?$")


class InputError(ValueError):
    """One or more inputs are missing or malformed (the messages are in `problems`)."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def env_name(input_id: str) -> str:
    return "INPUT_" + input_id.replace(" ", "_").upper()


@dataclass(frozen=True)
class ActionInputs:
    anthropic_api_key: str
    github_token: str
    model: str | None = None
    # Who serves the model. bedrock and vertex take no key input: their credentials come from the job
    # (aws-actions/configure-aws-credentials, google-github-actions/auth, both with OIDC).
    provider: str = "anthropic"
    openai_api_key: str = ""
    base_url: str | None = None
    label: str = DEFAULT_LABEL
    check_command: str | None = None
    max_cost_usd: float | None = None
    max_steps: int | None = None
    policy: str | None = None
    base_branch: str | None = None
    draft: bool = False  # always open the PR as a draft, even when verified
    allowed_bots: frozenset[str] = field(default_factory=frozenset)  # logins without "[bot]", lower-case
    # True when github-token is the workflow's own GITHUB_TOKEN (action.yml compares the two), whose
    # pushes and PRs start no workflow runs: the PR then says so.
    workflow_token: bool = True
    trigger_phrase: str = DEFAULT_TRIGGER_PHRASE
    max_total_cost_usd: float = DEFAULT_MAX_TOTAL_COST_USD  # per pull request, every iteration together
    max_iterations: int = DEFAULT_MAX_ITERATIONS  # follow-up iterations per pull request

    @property
    def model_api_key(self) -> str | None:
        """The key input of the chosen provider (Bedrock and Vertex take theirs from the job's environment)."""
        return {"anthropic": self.anthropic_api_key, "openai": self.openai_api_key}.get(self.provider) or None


def read_inputs(environ: dict[str, str]) -> ActionInputs:
    problems = Problems()

    def text(input_id: str) -> str:
        return environ.get(env_name(input_id), "").strip()

    api_key, token = text("anthropic-api-key"), text("github-token")
    provider = problems.provider("provider", text("provider"))
    openai_key, base_url = text("openai-api-key"), problems.base_url("base-url", text("base-url"))
    if provider == "anthropic" and not api_key:
        problems.append(
            "anthropic-api-key is required: add an ANTHROPIC_API_KEY repository secret and pass it "
            "as `anthropic-api-key: ${{ secrets.ANTHROPIC_API_KEY }}` (or choose another provider)"
        )
    if provider == "openai" and not openai_key and not base_url:
        problems.append(
            "openai-api-key is required with provider openai: pass it as "
            "`openai-api-key: ${{ secrets.OPENAI_API_KEY }}` (a self-hosted server needs base-url instead)"
        )
    if not token:
        problems.append(
            "github-token is empty: leave it unset to use the workflow's token, or pass a GitHub "
            "App installation token"
        )
    label = text("label") or DEFAULT_LABEL
    if len(label) > 50 or "\n" in label:
        problems.append(f"label must be one line of at most 50 characters, got {label!r}")
    check_command = problems.check_command("check-command", text("check-command"))
    max_cost = problems.number("max-cost-usd", text("max-cost-usd"), float, 0.01)
    max_steps = problems.number("max-steps", text("max-steps"), int, 1)
    max_total_cost = problems.number("max-total-cost-usd", text("max-total-cost-usd"), float, 0.01)
    max_iterations = problems.number("max-iterations", text("max-iterations"), int, 1)
    phrase = problems.trigger_phrase("trigger-phrase", text("trigger-phrase"))
    bots: set[str] = set()
    for name in re.split(r"[,\s]+", text("allowed-bots")):
        if not name:
            continue
        if name == "*":
            problems.append("allowed-bots cannot be '*': name each GitHub App whose actions may start gitbot")
        elif not BOT_NAME.match(name):
            problems.append(f"allowed-bots: {name!r} is not a bot login")
        else:
            bots.add(name.lower().removesuffix("[bot]"))
    base_branch = problems.branch("base-branch", text("base-branch"))
    inputs = ActionInputs(
        anthropic_api_key=api_key,
        github_token=token,
        model=text("model") or None,
        provider=provider,
        openai_api_key=openai_key,
        base_url=base_url,
        label=label,
        check_command=check_command,
        max_cost_usd=max_cost,
        max_steps=max_steps,
        policy=text("policy") or None,
        base_branch=base_branch,
        draft=problems.flag("draft", text("draft"), False),
        allowed_bots=frozenset(bots),
        workflow_token=environ.get("GITBOT_WORKFLOW_TOKEN", "true").strip().lower() != "false",
        trigger_phrase=phrase,
        max_total_cost_usd=DEFAULT_MAX_TOTAL_COST_USD if max_total_cost is None else max_total_cost,
        max_iterations=DEFAULT_MAX_ITERATIONS if max_iterations is None else int(max_iterations),
    )
    if problems:
        raise InputError(list(problems))
    return inputs
