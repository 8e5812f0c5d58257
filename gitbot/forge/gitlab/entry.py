"""`gitbot gitlab`: one GitLab CI job, from the pipeline's variables to a merge request, a commit on one,
or a reply.

    protect /proc/self/environ → secrets out of os.environ → settings and the job's variables (with
    TRIGGER_PAYLOAD) → decide (ci.py, from the payload alone) → confirm (trust.py: the note, the label,
    the person, re-read from the API) → the runner's credential out of the clone's config → the
    forge-neutral flow (flow.execute: plan → work → report) → summary and dotenv outputs

Nothing reaches the model before trust.py has confirmed the request. The agent never holds a credential:
every secret is out of the process environment (the model key goes to the SDK client directly, the token
to each git process and to python-gitlab), the clone's config has no job token while the run lasts, and
gitbot's process is not dumpable. Exit codes are the Action's: 0 done (or nothing to do, or a refused
trigger), 1 gave up, 2 configuration, 3 infrastructure.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from gitbot import __version__
from gitbot.agent.result import ExitCode
from gitbot.forge import pull_request as prmod
from gitbot.forge.gitlab import out_dir
from gitbot.forge.gitlab.ci import ContextError, GitLabContext, decide, read_context
from gitbot.forge.gitlab.ci_io import GitLabIO
from gitbot.forge.gitlab.settings import GitLabSettings, SettingsError, read_settings
from gitbot.forge.interface import ForgeError
from gitbot.forge.job_start import (
    configuration_error,
    nothing_to_do,
    secrets_out_of_environment,
    trigger_refused,
)
from gitbot.forge.report import outputs
from gitbot.forge.triggers import CommentTrigger, Ignore, reply_marker
from gitbot.secrets import Secrets

# The variables GitLab (or the job) sets whose values are credentials, whatever their names say.
SECRET_VARIABLES = (
    "GITBOT_GITLAB_TOKEN",
    "CI_JOB_TOKEN",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "CI_REGISTRY_PASSWORD",
    "CI_DEPENDENCY_PROXY_PASSWORD",
    "CI_JOB_JWT",
    "CI_JOB_JWT_V2",
)
# The user name gitbot's git processes give with the token (GitLab takes any with an access token).
GIT_USER = "oauth2"


def run_gitlab(environ: dict[str, str] | None = None, *, stdout: TextIO | None = None) -> int:
    from gitbot.sandbox.env import protect_process_environ

    # The runner started this process with the token and the key in its environment, and
    # /proc/<pid>/environ keeps showing that block: a non-dumpable process's /proc files are root's only.
    protect_process_environ()
    environ = dict(os.environ if environ is None else environ)
    secrets = known_secrets(environ)
    io = GitLabIO(secrets, stdout=stdout, environ=environ)
    refusal = out_dir.problem(io.out_dir) if io.out_dir is not None else None
    if refusal is not None:  # nothing is written there: the directory is not gitbot's
        io.error(refusal, title="gitbot: configuration")
        return ExitCode.CONFIG
    # The run's record is prepared here, outside the work tree the agent may write, and moved into the
    # output directory at the end.
    record = Path(tempfile.mkdtemp(prefix="gitbot-record-"))
    try:
        with secrets_out_of_environment(secrets, also=SECRET_VARIABLES.__contains__):
            return _run(environ, io, secrets, record)
    finally:
        if not io.outputs_written:  # an unexpected failure: the report is still gitbot's, never a planted one
            io.set_outputs(outputs("error"))
        io.finish(record)


def known_secrets(environ: dict[str, str]) -> Secrets:
    secrets = Secrets.from_environment(environ)
    for name in SECRET_VARIABLES:
        secrets.add(environ.get(name, "").strip())
    return secrets


def _run(environ: dict[str, str], io: GitLabIO, secrets: Secrets, record: Path) -> int:
    if importlib.util.find_spec("gitlab") is None:  # the extra is missing: say which, before anything else
        return configuration_error(
            io, ["python-gitlab is not installed: install gitbot with its gitlab extra (pip install 'gitbot[gitlab]')"]
        )
    try:
        settings = read_settings(environ)
        ctx = read_context(environ)
    except (SettingsError, ContextError) as exc:
        return configuration_error(io, exc.problems if isinstance(exc, SettingsError) else [str(exc)])

    decision = decide(ctx, label=settings.label, trigger_phrase=settings.trigger_phrase)
    if isinstance(decision, Ignore):
        return nothing_to_do(io, decision.reason)

    from gitbot.forge.gitlab.api import GitLabForge
    from gitbot.forge.gitlab.trust import Refused, confirm

    try:
        forge = GitLabForge(ctx.api_url, settings.gitlab_token, ctx.project_id)
        verdict = confirm(decision, forge, settings=settings, ctx=ctx)
    except ForgeError as exc:
        io.error(f"cannot check who triggered gitbot: {exc}", title="gitbot: GitLab API")
        io.set_outputs(outputs("error"))
        return ExitCode.INFRA
    if isinstance(verdict, Ignore):
        return nothing_to_do(io, verdict.reason)
    if isinstance(verdict, Refused):
        if verdict.reply is not None and isinstance(decision, CommentTrigger):
            _reply(io, forge, decision, f"{reply_marker(decision, ctx.run_id)}\n{verdict.reply}")
        return trigger_refused(io, verdict.reason)
    io.info(f"gitbot {__version__}: {verdict.reason}")
    from gitbot.forge.gitlab import ci_config

    # Read before the agent runs: what it writes cannot take a file out of the configuration.
    forge.ci_configuration = ci_config.read(ctx.workspace, environ.get("CI_CONFIG_PATH"))
    return _execute(io, settings, replace(ctx, runner_temp=record), forge, verdict.trigger, secrets)


def _reply(io: GitLabIO, forge, trigger: CommentTrigger, body: str) -> None:
    """Answer the note (a re-run edits its own answer), where GitLab keeps it beside the note."""
    try:
        forge.write_reply(trigger, body, forge.find_reply(trigger))
    except ForgeError as exc:
        io.warning(f"could not reply to the note: {exc}", title="gitbot: GitLab API")


def _execute(
    io: GitLabIO, settings: GitLabSettings, ctx: GitLabContext, forge, trigger, secrets: Secrets
) -> int:
    from gitbot.forge.flow import execute
    from gitbot.forge.gitlab.checkout import clone_credentials_removed
    from gitbot.forge.job import Job

    io.prepared()
    auth = prmod.auth_env(settings.gitlab_token, ctx.server_url, user=GIT_USER)
    with (
        clone_credentials_removed(ctx.workspace.resolve()) as taken,
        out_dir.excluded(ctx.workspace, io.out_dir),
    ):
        if taken:
            io.info(f"the runner's credential is out of .git/config while gitbot works ({', '.join(taken)})")
        return execute(Job(io, settings, ctx, forge, trigger, secrets, auth))
