"""What a run decides about a command, a read or an edit, before anything runs: one function for
the tools and for `gitbot policy check`, so the CLI answers exactly what a run would.

A run judges with more than the policy file: the policy bound to the repository and as the sandbox
enforces it (the policy and instruction files, in-repository toolchain directories read-only:
sandbox/runner.py's protected_policy), the run's check command allowed, interactive programs refused,
every command refused when the sandbox is required but does not work, and paths confined to the
repository with `.git` refused (tools/paths.py). `run_context` builds that context, `command_verdict`
and `path_verdict` decide; the shell and file tools raise from the same verdicts.

`judge_for_run` is the one adapter onto the command judge's entry point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from gitbot.policy import Policy
from gitbot.policy.base import Decision
from gitbot.secrets import Secrets
from gitbot.tools.base import ToolContext, ToolDenied, ToolError
from gitbot.tools.interactive import interactive_refusal

# Why a verdict refused, so each tool raises what it raised before: the policy (ToolDenied), a program
# that would wait for a person (ToolError), or the sandbox mode (ToolDenied, SandboxRefused's words).
POLICY, INTERACTIVE, SANDBOX, PATH = "policy", "interactive", "sandbox", "path"
_RULE = re.compile(r"\brule `((?:[^`]|``)*)`")


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str
    rule: str | None = None
    instead: str | None = None  # what to do instead; set on a refusal when known
    refused_by: str | None = None  # POLICY, INTERACTIVE, SANDBOX or PATH on a refusal

    def to_json(self) -> dict:
        return {"allowed": self.allowed, "reason": self.reason, "rule": self.rule, "instead": self.instead}


def run_context(repo: Path, policy: Policy, *, check_command: str | None = None,
                secrets: Secrets | None = None) -> ToolContext:
    """The ToolContext a run's tools get: the policy bound to the repository, as the sandbox enforces it."""
    if policy.repo is None:
        policy = replace(policy, repo=repo)
    ctx = ToolContext(repo=repo, policy=policy, secrets=secrets or Secrets.from_environment(),
                      extra_allowed_commands=(check_command,) if check_command else ())
    # The file tools and the command judge refuse what the sandbox keeps read-only.
    ctx.policy = ctx.runner.policy
    return ctx


def judge_for_run(policy: Policy, command: str, *, extra_allowed: tuple[str, ...], sandboxed: bool) -> Decision:
    """The command judge's decision for a run: the one place that calls the judge's entry point. In the
    sandbox a command runs unless a deny rule refuses it (policy [commands] sandboxed)."""
    return policy.check_command(command, extra_allowed, sandboxed=sandboxed)


def command_verdict(ctx: ToolContext, command: str, *, sandboxed: bool | None = None) -> Verdict:
    """What a run with `ctx` decides about a command line. `sandboxed`: judge as if the sandbox did (not)
    run it, whatever this machine's probe says (None: as this run will)."""
    runner = ctx.runner
    if sandboxed is None:
        sandboxed = runner.sandboxed
    decision = judge_for_run(runner.policy, command, extra_allowed=tuple(ctx.extra_allowed_commands),
                             sandboxed=sandboxed)
    rule = _rule_in(decision.reason) or decision.rule  # the pattern that decided, where the reason names it
    if not decision.allowed:
        return Verdict(False, decision.reason, rule, decision.instead, POLICY)
    refusal = interactive_refusal(decision.commands, decision.fed)
    if refusal:
        return Verdict(False, refusal, None, refusal, INTERACTIVE)
    if not sandboxed and runner.mode == "required":
        from gitbot.sandbox.bwrap import FIX_HINT

        reason = runner.refusal or 'commands must run in the sandbox ([sandbox] mode = "required")'
        return Verdict(False, reason, None, FIX_HINT, SANDBOX)
    return Verdict(True, decision.reason, rule)


def path_verdict(ctx: ToolContext, path: str, *, for_edit: bool) -> Verdict:
    """What a file tool of a run with `ctx` decides about reading (or editing) `path`."""
    from gitbot.tools.paths import resolve

    try:
        _, relpath = resolve(ctx, path, for_edit=for_edit)
    except ToolDenied as exc:
        return Verdict(False, str(exc), _rule_in(str(exc)), _path_instead(str(exc), for_edit), POLICY)
    except ToolError as exc:
        return Verdict(False, str(exc), None, _path_instead(str(exc), for_edit), PATH)
    action = "edit" if for_edit else "read"
    return Verdict(True, f"{relpath} may be {action}{'ed' if for_edit else ''} by the file tools")


def raise_refusal(verdict: Verdict, prefix: str = "") -> None:
    """Raise what the tool raised for this refusal before there were verdicts (`prefix`: before a policy's reason)."""
    if verdict.refused_by == INTERACTIVE:
        raise ToolError(f"command refused: {verdict.reason}")
    instead = f"\nInstead: {verdict.instead}" if verdict.refused_by == POLICY and verdict.instead else ""
    raise ToolDenied((prefix if verdict.refused_by == POLICY else "") + verdict.reason + instead)


def _rule_in(reason: str) -> str | None:
    match = _RULE.search(reason)
    return match.group(1) if match else None


def _path_instead(reason: str, for_edit: bool) -> str:
    if ".git directory" in reason:
        return "use git commands such as `git log` or `git show` through execute_command"
    if "outside the repository" in reason or "absolute path" in reason:
        return "give a path inside the repository, relative to its root"
    if "read_deny" in reason:
        return "leave this file out: the policy keeps its content from the agent"
    if for_edit:
        return "leave this file as it is and change only files the edit rules allow"
    return "work with the files the policy lets the agent read"
