"""What gitbot allows when a repository has no policy file (and what `gitbot policy init` writes)."""

from __future__ import annotations

# Secrets that commonly sit in a checkout. `**/` also covers the repository root.
DEFAULT_READ_DENY: tuple[str, ...] = (
    "**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx",
    "**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*",
    "**/.netrc", "**/.pypirc", "**/.git-credentials",
    # google-github-actions/auth writes its credentials file into the workspace.
    "**/gha-creds-*.json",
)
DEFAULT_EDIT_ALLOW: tuple[str, ...] = ("**",)
# CI definitions run with the repository's secrets, and .gitbot holds this very policy.
DEFAULT_EDIT_DENY: tuple[str, ...] = (".git/**", ".github/workflows/**", ".gitbot/**")

# Read-only inspection. The run's check command is added to these for the run that needs it.
DEFAULT_COMMAND_ALLOW: tuple[str, ...] = (
    "ls *", "cat *", "head *", "tail *", "wc *", "grep *", "rg *", "find *", "pwd", "echo *",
    "git status *", "git diff *", "git log *", "git show *",
)
DEFAULT_COMMAND_DENY: tuple[str, ...] = ()

DEFAULT_SANDBOX_MODE = "auto"
SANDBOX_MODES = ("required", "auto", "off")
DEFAULT_NETWORK = False

DEFAULT_POLICY_PATH = ".gitbot/policy.toml"
