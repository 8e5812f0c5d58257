"""One job of any forge, once its adapter has built it (the trigger decided, who asked checked):

    plan → status comment → work → report

A request made in a comment goes through converse.py first (👀, taken once; a pull request's is
handled there). Every failure ends in a report too. An adapter's entry point (github/action.py)
calls `execute`; nothing here knows which forge it is.
"""

from __future__ import annotations

from gitbot.agent.result import ExitCode
from gitbot.forge.interface import ForgeError
from gitbot.forge.job import Job
from gitbot.forge.plan import Refused, make_plan
from gitbot.forge.report import Report
from gitbot.forge.triggers import CommentTrigger
from gitbot.forge.work import work


def execute(job: Job) -> int:
    """plan → status comment → work → report; every failure ends in a report too. A request made in a
    comment goes through converse.py first (👀, taken once; a pull request's is handled there)."""

    warm_up_the_model_client(job.inputs.provider)
    report = Report(job)
    if isinstance(job.trigger, CommentTrigger):
        from gitbot.forge.converse import begin

        done = begin(job, report)
        if done is not None:
            return done
    try:
        report.planned(make_plan(job))
    except Refused as exc:
        return report.refused(str(exc))
    except ForgeError as exc:
        return report.fail(f"reading the task from {job.forge.terms.forge} failed: {exc}", ExitCode.INFRA)
    report.comment(
        f"🤖 gitbot is working on this issue. Follow along in the [{job.forge.terms.run}]({job.ctx.run_url}); "
        "this comment will say how it went."
    )
    return report.guarded(lambda: report.report(work(job, report.plan)))


def warm_up_the_model_client(provider: str) -> None:
    """Import the model's SDK in the background: it takes about a second, which the forge's API calls and git
    fetches before the first model request can hide (they wait on the network, or on git processes)."""
    import importlib
    import threading

    module = "openai" if provider == "openai" else "anthropic"  # Bedrock and Vertex: the anthropic SDK's clients
    threading.Thread(target=_import_quietly, args=(importlib, module), name="warm-up", daemon=True).start()


def _import_quietly(importlib, module: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError:  # an extra that is not installed: make_provider says so, with the fix
        pass
