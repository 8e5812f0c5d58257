"""What a GitLab job is configured with: `GITBOT_*` CI/CD variables (the component sets them from its
inputs), the token and the model key, validated here and reported all at once, as the Action's
inputs are (github/inputs.py).

    GITBOT_GITLAB_TOKEN       a project access token (role Developer, scopes api and write_repository),
                              kept in a masked variable: gitbot's API calls and pushes
    ANTHROPIC_API_KEY         the model key (OPENAI_API_KEY with provider openai); masked variables
    GITBOT_PROVIDER GITBOT_MODEL GITBOT_BASE_URL
    GITBOT_CHECK_COMMAND GITBOT_LABEL GITBOT_TRIGGER_PHRASE GITBOT_POLICY GITBOT_BASE_BRANCH GITBOT_DRAFT
    GITBOT_MAX_COST_USD GITBOT_MAX_STEPS GITBOT_MAX_TOTAL_COST_USD GITBOT_MAX_ITERATIONS
    GITBOT_ALLOWED_BOTS       bot users (project or group access tokens, service accounts) that may ask
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

# A GitLab username: letters, digits, '_', '-' and '.', not starting with '-' or '.'.
USERNAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$")
PREFIX = "GITBOT_"


class SettingsError(ValueError):
    """One or more variables are missing or malformed (the messages are in `problems`)."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class GitLabSettings:
    gitlab_token: str
    anthropic_api_key: str = ""
    provider: str = "anthropic"
    openai_api_key: str = ""
    base_url: str | None = None
    model: str | None = None
    label: str = DEFAULT_LABEL
    check_command: str | None = None
    max_cost_usd: float | None = None
    max_steps: int | None = None
    policy: str | None = None
    base_branch: str | None = None
    draft: bool = False
    allowed_bots: frozenset[str] = field(default_factory=frozenset)  # usernames, lower-case
    trigger_phrase: str = DEFAULT_TRIGGER_PHRASE
    max_total_cost_usd: float = DEFAULT_MAX_TOTAL_COST_USD
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    # GitHub's workflow token starts no workflow runs; a GitLab project access token's pushes do start
    # pipelines, so the MR needs no such note.
    workflow_token: bool = False

    @property
    def model_api_key(self) -> str | None:
        """The chosen provider's key (Bedrock and Vertex take theirs from the job's environment)."""
        return {"anthropic": self.anthropic_api_key, "openai": self.openai_api_key}.get(self.provider) or None


def read_settings(environ: dict[str, str]) -> GitLabSettings:
    problems = Problems()

    def text(name: str) -> str:
        return environ.get(name, "").strip()

    def setting(name: str) -> tuple[str, str]:  # (its variable, its value)
        return PREFIX + name, text(PREFIX + name)

    token = text(PREFIX + "GITLAB_TOKEN")
    if not token:
        problems.append(
            "GITBOT_GITLAB_TOKEN is empty: create a project access token (role Developer, scopes api and "
            "write_repository) and store it as a masked CI/CD variable named GITBOT_GITLAB_TOKEN "
            "(CI_JOB_TOKEN cannot write notes or create merge requests)"
        )
    provider = problems.provider(*setting("PROVIDER"))
    api_key, openai_key = text("ANTHROPIC_API_KEY"), text("OPENAI_API_KEY")
    base_url = problems.base_url(*setting("BASE_URL"))
    if provider == "anthropic" and not api_key:
        problems.append(
            "ANTHROPIC_API_KEY is empty: store the key as a masked CI/CD variable named ANTHROPIC_API_KEY "
            "(or choose another provider with GITBOT_PROVIDER)"
        )
    if provider == "openai" and not openai_key and not base_url:
        problems.append(
            "OPENAI_API_KEY is empty: store it as a masked CI/CD variable (a self-hosted server needs "
            "GITBOT_BASE_URL instead)"
        )
    label = text(PREFIX + "LABEL") or DEFAULT_LABEL
    if len(label) > 255 or "\n" in label or "," in label:
        problems.append(f"GITBOT_LABEL must be one label name (one line, no comma), got {label!r}")
    check_command = problems.check_command(*setting("CHECK_COMMAND"))
    phrase = problems.trigger_phrase(*setting("TRIGGER_PHRASE"))
    draft = problems.flag(*setting("DRAFT"), False)
    bots: set[str] = set()
    for name in re.split(r"[,\s]+", text(PREFIX + "ALLOWED_BOTS")):
        if not name:
            continue
        if not USERNAME.match(name) or name == "*":
            problems.append(f"GITBOT_ALLOWED_BOTS: {name!r} is not a GitLab username")
        else:
            bots.add(name.lower())
    base_branch = problems.branch(*setting("BASE_BRANCH"))
    max_cost = problems.number(*setting("MAX_COST_USD"), float, 0.01)
    max_steps = problems.number(*setting("MAX_STEPS"), int, 1)
    max_total_cost = problems.number(*setting("MAX_TOTAL_COST_USD"), float, 0.01)
    max_iterations = problems.number(*setting("MAX_ITERATIONS"), int, 1)
    if problems:
        raise SettingsError(list(problems))
    return GitLabSettings(
        gitlab_token=token,
        anthropic_api_key=api_key,
        provider=provider,
        openai_api_key=openai_key,
        base_url=base_url,
        model=text(PREFIX + "MODEL") or None,
        label=label,
        check_command=check_command,
        max_cost_usd=max_cost,
        max_steps=max_steps,
        policy=text(PREFIX + "POLICY") or None,
        base_branch=base_branch,
        draft=draft,
        allowed_bots=frozenset(bots),
        trigger_phrase=phrase,
        max_total_cost_usd=DEFAULT_MAX_TOTAL_COST_USD if max_total_cost is None else max_total_cost,
        max_iterations=DEFAULT_MAX_ITERATIONS if max_iterations is None else int(max_iterations),
    )
