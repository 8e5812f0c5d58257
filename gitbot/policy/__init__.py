"""The auto-approval policy: file rules, command rules, sandbox settings and limits, enforced in code.

Nobody is there to click "approve" in CI or a git hook, so `.gitbot/policy.toml` decides what the
agent may do, and the same functions decide inside runs and in `gitbot policy check`:

    policy = load_policy(repo)                   # or load_policy(repo, base_ref="origin/main")
    policy.check_read("src/app.py")              # Decision(allowed, reason)
    policy.check_edit(".github/workflows/ci.yml")
    policy.check_command("pytest -q && ruff check .", extra_allowed=("make test",))

Modules: config (the TOML format, errors with line numbers), files (path globs), judge/ (the
tree-sitter-bash command judge), defaults, init (`gitbot policy init`).
"""

from __future__ import annotations

from gitbot.policy.base import Decision, Limits, PolicyError
from gitbot.policy.config import load_policy, parse_policy
from gitbot.policy.model import Policy

__all__ = ["Decision", "Limits", "Policy", "PolicyError", "load_policy", "parse_policy"]
