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

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from gitbot import __version__
from gitbot.agent.result import ExitCode
from gitbot.forge import pull_request as prmod
from gitbot.forge.gitlab.ci import ContextError, GitLabContext, decide, read_context
from gitbot.forge.gitlab.ci_io import GitLabIO
from gitbot.forge.gitlab.settings import GitLabSettings, SettingsError, read_settings
from gitbot.forge.interface import ForgeError
from gitbot.forge.mdsafe import md_cell
from gitbot.forge.report import outputs
from gitbot.forge.triggers import Ignore
from gitbot.secrets import SECRET_ENV_NAMES, SECRET_NAME_HINTS, Secrets

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
    try:
        with secrets_out_of_environment(secrets):
            return _run(environ, io, secrets)
    finally:
        if not io.outputs_written:  # an unexpected failure: the report is still gitbot's, never a planted one
            io.set_outputs(outputs("error"))


def known_secrets(environ: dict[str, str]) -> Secrets:
    secrets = Secrets.from_environment(environ)
    for name in SECRET_VARIABLES:
        secrets.add(environ.get(name, "").strip())
    return secrets


@contextmanager
def secrets_out_of_environment(secrets: Secrets) -> Iterator[None]:
    """No secret stays in this process's environment while inside, whatever a child process inherits."""
    removed = {}
    for name, value in list(os.environ.items()):
        upper = name.upper()
        if (
            upper in SECRET_ENV_NAMES
            or any(hint in upper for hint in SECRET_NAME_HINTS)
            or name in SECRET_VARIABLES
            or value in secrets.values
        ):
            removed[name] = os.environ.pop(name)
    try:
        yield
    finally:
        os.environ.update(removed)


def _run(environ: dict[str, str], io: GitLabIO, secrets: Secrets) -> int:
    try:
        settings = read_settings(environ)
        ctx = read_context(environ)
    except (SettingsError, ContextError) as exc:
        problems = exc.problems if isinstance(exc, SettingsError) else [str(exc)]
        for problem in problems:
            io.error(problem, title="gitbot: configuration")
        io.set_outputs(outputs("error"))
        return ExitCode.CONFIG

    decision = decide(ctx, label=settings.label, trigger_phrase=settings.trigger_phrase)
    if isinstance(decision, Ignore):
        return _nothing_to_do(io, decision.reason)

    from gitbot.forge.gitlab.api import GitLabForge
    from gitbot.forge.gitlab.trust import Refused, confirm

    try:
        forge = GitLabForge(ctx.api_url, settings.gitlab_token, ctx.project_id)
        verdict = confirm(decision, forge, settings=settings, payload=ctx.payload, actor_id=ctx.actor_id)
    except ForgeError as exc:
        io.error(f"cannot check who triggered gitbot: {exc}", title="gitbot: GitLab API")
        io.set_outputs(outputs("error"))
        return ExitCode.INFRA
    if isinstance(verdict, Ignore):
        return _nothing_to_do(io, verdict.reason)
    if isinstance(verdict, Refused):
        io.notice(f"gitbot will not run: {verdict.reason}", title="gitbot: trigger refused")
        io.write_summary(f"## gitbot: trigger refused\n\n{md_cell(verdict.reason)}. No model was called.\n")
        io.set_outputs(outputs("refused"))
        return ExitCode.OK
    io.info(f"gitbot {__version__}: {verdict.reason}")
    return _execute(io, settings, ctx, forge, verdict.trigger, secrets)


def _execute(
    io: GitLabIO, settings: GitLabSettings, ctx: GitLabContext, forge, trigger, secrets: Secrets
) -> int:
    from gitbot.forge.flow import execute
    from gitbot.forge.gitlab.checkout import clone_credentials_removed
    from gitbot.forge.job import Job

    auth = prmod.auth_env(settings.gitlab_token, ctx.server_url, user=GIT_USER)
    with clone_credentials_removed(ctx.workspace.resolve()) as taken:
        if taken:
            io.info(f"the runner's credential is out of .git/config while gitbot works ({', '.join(taken)})")
        return execute(Job(io, settings, ctx, forge, trigger, secrets, auth))


def _nothing_to_do(io: GitLabIO, reason: str) -> int:
    io.notice(f"gitbot has nothing to do: {reason}", title="gitbot")
    io.write_summary(f"## gitbot: nothing to do\n\n{md_cell(reason)}\n")
    io.set_outputs(outputs("skipped"))
    return ExitCode.OK
