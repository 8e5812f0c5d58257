"""`gitbot action`: one GitHub Actions job, from the event to a pull request with its proof and receipt.

    protect /proc/self/environ → mask secrets → secrets out of os.environ → read inputs and the
    event → decide → check who triggered → build the task → status comment → [checkout credential
    removed: prepare the bot branch → policy, sandbox required → check before, agent, check after →
    commit what the policy allows → scan the diff for secrets → push] → PR created or updated →
    status comment edited → outputs, summary

This module holds the start (secrets, inputs, event, who triggered), builds the Job (job.py) with
GitHub's side of the interface (api.py, actions_io.py, inputs.py, the event's context) and hands it
to the forge-neutral flow (flow.py: plan.py → work.py → report.py).

Nothing reaches the model before the permission check has passed. The agent never holds a
credential: the checkout's token is out of `.git/config`, every secret is out of the process
environment (the API key goes to the SDK client directly), gitbot's process is not dumpable (so no
child can read its original environment in /proc), its commands run in the bubblewrap sandbox unless
the repository's policy says `mode = "off"`, and its tools' output is redacted. What it wrote is
published only after the policy's edit rules and a secret scan; its words are rendered so that
nothing in them can render (see mdsafe.py). Exit codes follow the README: 0 done (or nothing to do,
or a refused trigger), 1 gave up (also: a secret in the change), 2 configuration, 3 infrastructure.
"""

from __future__ import annotations

import os
from typing import TextIO

from gitbot import __version__
from gitbot.agent.result import ExitCode
from gitbot.forge import pull_request as prmod
from gitbot.forge.flow import execute
from gitbot.forge.github.actions_io import ActionsIO
from gitbot.forge.github.api import GitHubForge, connect
from gitbot.forge.github.event import ContextError, decide, read_context
from gitbot.forge.github.inputs import InputError, read_inputs
from gitbot.forge.github.permissions import check_actors
from gitbot.forge.interface import ForgeError
from gitbot.forge.job import Job
from gitbot.forge.job_start import (
    configuration_error,
    nothing_to_do,
    secret_name,
    secrets_out_of_environment,
    trigger_refused,
)
from gitbot.forge.report import outputs
from gitbot.forge.triggers import Ignore
from gitbot.secrets import Secrets


def run_action(environ: dict[str, str] | None = None, *, stdout: TextIO | None = None) -> int:
    from gitbot.sandbox.env import protect_process_environ

    # The runner started this process with the key and the token in its environment, and
    # /proc/<pid>/environ keeps showing that original block whatever os.environ becomes: a
    # non-dumpable process's /proc files are readable by root only, not by its children.
    protect_process_environ()
    environ = dict(os.environ if environ is None else environ)
    secrets = known_secrets(environ)
    io = ActionsIO(secrets, stdout=stdout, environ=environ)
    io.mask_secrets()  # before anything else is printed
    # Nothing gitbot starts (git, the check command, the agent's tools) inherits a secret: they are out
    # of this process's environment for the whole run.
    with secrets_out_of_environment(secrets, also=lambda name: name.upper().startswith("INPUT_")):
        return _run_action(environ, io, secrets)


def known_secrets(environ: dict[str, str]) -> Secrets:
    """Every secret gitbot can know: secret-named variables, the token and key inputs and any other
    secret-named input (Secrets also covers the base64 form the token takes in an extraheader)."""
    secrets = Secrets.from_environment(environ)
    secrets.add(environ.get("INPUT_GITHUB-TOKEN", "").strip())
    secrets.add(environ.get("INPUT_ANTHROPIC-API-KEY", "").strip())
    for name, value in environ.items():
        if name.upper().startswith("INPUT_") and secret_name(name.replace("-", "_")):
            secrets.add(value.strip())
    return secrets


def _run_action(environ: dict[str, str], io: ActionsIO, secrets: Secrets) -> int:
    try:
        inputs = read_inputs(environ)
        ctx = read_context(environ)
    except (InputError, ContextError) as exc:
        return configuration_error(io, exc.problems if isinstance(exc, InputError) else [str(exc)])

    decision = decide(ctx, label=inputs.label, trigger_phrase=inputs.trigger_phrase)
    if isinstance(decision, Ignore):
        return nothing_to_do(io, decision.reason)

    try:
        forge = GitHubForge(connect(inputs.github_token, ctx.api_url), ctx.repository, ctx.server_url)
        verdict = check_actors(decision.actors, allowed_bots=inputs.allowed_bots, lookup=forge.permission)
    except ForgeError as exc:
        io.error(f"cannot check who triggered gitbot: {exc}", title="gitbot: GitHub API")
        io.set_outputs(outputs("error"))
        return ExitCode.INFRA
    if not verdict:
        return trigger_refused(io, verdict.reason)
    io.info(f"gitbot {__version__}: {verdict.reason}")
    auth = prmod.auth_env(inputs.github_token, ctx.server_url)
    return execute(Job(io, inputs, ctx, forge, decision, secrets, auth))
