"""The Action's inputs, read from `INPUT_<NAME>` variables and validated here.

`action.yml` passes each input through `env:` under the name GitHub's own toolkit would use: the
input's id upper-cased, spaces turned into underscores, hyphens kept (`INPUT_MAX-COST-USD`). The
runner does not enforce `required:` for composite actions, so this module does, and it reports
every problem at once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from gitbot.forge.mention import valid_phrase

DEFAULT_LABEL = "gitbot"
DEFAULT_TRIGGER_PHRASE = "@gitbot"
# A pull request's conversation with gitbot, unless the workflow says otherwise: at most this many
# follow-up iterations, and at most this much spent on the pull request in all.
DEFAULT_MAX_ITERATIONS = 10
DEFAULT_MAX_TOTAL_COST_USD = 10.0
# What a bot login may look like in allowed-bots: a GitHub App slug, optionally with "[bot]".
BOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}(\[bot\])?$")
TRUE_WORDS = {"true", "yes", "1", "on"}
FALSE_WORDS = {"false", "no", "0", "off", ""}


class InputError(ValueError):
    """One or more inputs are missing or malformed (the messages are in `problems`)."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def env_name(input_id: str) -> str:
    return "INPUT_" + input_id.replace(" ", "_").upper()


PROVIDERS = ("anthropic", "bedrock", "vertex", "openai")


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
    problems: list[str] = []

    def text(input_id: str) -> str:
        return environ.get(env_name(input_id), "").strip()

    def number(input_id: str, kind: type, minimum: float) -> float | int | None:
        raw = text(input_id)
        if not raw:
            return None
        try:
            value = kind(raw)
        except ValueError:
            problems.append(f"{input_id} must be a {'whole ' if kind is int else ''}number, got {raw!r}")
            return None
        if (isinstance(value, float) and not math.isfinite(value)) or value < minimum:
            problems.append(f"{input_id} must be at least {minimum}, got {raw!r}")
            return None
        return value

    def flag(input_id: str, default: bool) -> bool:
        raw = text(input_id).lower()
        if not raw:
            return default
        if raw in TRUE_WORDS:
            return True
        if raw in FALSE_WORDS:
            return False
        problems.append(f"{input_id} must be true or false, got {raw!r}")
        return default

    api_key, token = text("anthropic-api-key"), text("github-token")
    provider = (text("provider") or "anthropic").lower()
    openai_key, base_url = text("openai-api-key"), text("base-url") or None
    if provider not in PROVIDERS:
        problems.append(f"provider must be one of {', '.join(PROVIDERS)}, got {provider!r}")
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
    if base_url and not re.match(r"^https?://[^\s/@]+(/\S*)?$", base_url):
        problems.append(f"base-url must be an http(s) URL without credentials, got {base_url!r}")
    if not token:
        problems.append(
            "github-token is empty: leave it unset to use the workflow's token, or pass a GitHub "
            "App installation token"
        )
    label = text("label") or DEFAULT_LABEL
    if len(label) > 50 or "\n" in label:
        problems.append(f"label must be one line of at most 50 characters, got {label!r}")
    check_command = text("check-command") or None
    if check_command and "\n" in check_command:
        problems.append("check-command must be one line (for several commands use `sh -c '…'`)")
    max_cost = number("max-cost-usd", float, 0.01)
    max_steps = number("max-steps", int, 1)
    max_total_cost = number("max-total-cost-usd", float, 0.01)
    max_iterations = number("max-iterations", int, 1)
    phrase = text("trigger-phrase") or DEFAULT_TRIGGER_PHRASE
    if not valid_phrase(phrase):
        problems.append(
            f"trigger-phrase must be 2 to 40 characters without spaces, backticks, brackets or `>`, got {phrase!r}"
        )
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
    base_branch = text("base-branch") or None
    if base_branch and (base_branch.startswith("-") or any(c in base_branch for c in " ~^:?*[\\")):
        problems.append(f"base-branch is not a valid branch name: {base_branch!r}")
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
        draft=flag("draft", False),
        allowed_bots=frozenset(bots),
        workflow_token=environ.get("GITBOT_WORKFLOW_TOKEN", "true").strip().lower() != "false",
        trigger_phrase=phrase,
        max_total_cost_usd=DEFAULT_MAX_TOTAL_COST_USD if max_total_cost is None else max_total_cost,
        max_iterations=DEFAULT_MAX_ITERATIONS if max_iterations is None else int(max_iterations),
    )
    if problems:
        raise InputError(problems)
    return inputs
