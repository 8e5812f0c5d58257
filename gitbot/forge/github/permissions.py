"""Who may start gitbot: decided before any model call, and failing closed.

A person needs the `admin`, `maintain` or `write` role on the repository, read from
`GET /repos/{owner}/{repo}/collaborators/{username}/permission` (whose legacy `permission` field
folds maintain into write, so `role_name` is read too). A bot — a payload type of "Bot" or a login
ending in "[bot]" — passes only when the workflow names it in `allowed-bots`; the suffix alone
never grants anything (a GitHub App can be installed by anyone who controls it, and
claude-code-action's auto-trust of `[bot]` actors was an exploited bypass). For a workflow run
every actor involved (the event's sender, the run's actor and its triggering actor) must pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gitbot.forge.triggers import Actor

WRITE_ROLES = frozenset({"admin", "maintain", "write"})

# login -> (permission, role_name); (None, None) when the user is not a collaborator at all.
PermissionLookup = Callable[[str], tuple[str | None, str | None]]


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str

    def __bool__(self) -> bool:
        return self.allowed


def check_actor(actor: Actor, *, allowed_bots: frozenset[str], lookup: PermissionLookup) -> Verdict:
    if actor.is_bot:
        name = actor.login.lower().removesuffix("[bot]")
        if name in allowed_bots:
            return Verdict(True, f"{actor.login} is listed in allowed-bots")
        return Verdict(False, f"{actor.login} is a bot and is not listed in allowed-bots")
    permission, role = lookup(actor.login)
    if permission in WRITE_ROLES or role in WRITE_ROLES:
        return Verdict(True, f"{actor.login} has {role or permission} access")
    have = "no access" if permission is None else f"only {role or permission} access"
    return Verdict(
        False, f"{actor.login} has {have} to the repository; gitbot needs admin, maintain or write"
    )


def check_actors(
    actors: Iterable[Actor], *, allowed_bots: frozenset[str], lookup: PermissionLookup
) -> Verdict:
    """All must pass; the first refusal is the answer."""
    reasons = []
    for actor in actors:
        verdict = check_actor(actor, allowed_bots=allowed_bots, lookup=lookup)
        if not verdict:
            return verdict
        reasons.append(verdict.reason)
    if not reasons:
        return Verdict(False, "nobody to check: the event names no actor")
    return Verdict(True, "; ".join(reasons))
