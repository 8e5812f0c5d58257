"""One Run: build everything a task needs, drive the loop, and leave a complete record.

Every way in (gitbot run, demo, fix-check, hook, action) calls `run_task`.
"""

from __future__ import annotations

import copy
import os
import signal
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from gitbot import git
from gitbot.agent.conversation import Conversation
from gitbot.agent.loop import Agent, Stop, build_result
from gitbot.agent.prompt import first_user_message, system_prompt
from gitbot.agent.result import RunResult, Status
from gitbot.llm.base import Provider
from gitbot.llm.pricing import load_prices
from gitbot.llm.providers import DEFAULT_MODEL, make_provider
from gitbot.policy import Policy
from gitbot.policy.rebuildable import program_directory_in
from gitbot.record import RunRecord, new_run_id
from gitbot.sandbox import crashnote
from gitbot.secrets import Secrets
from gitbot.task import Task
from gitbot.tools.registry import all_tools
from gitbot.tools.verdicts import run_context

DEFAULT_MAX_TOKENS = 32_000
# Requests stay under this many prompt tokens unless the model's window is smaller: long prompts
# cost on every step, and old tool results are rarely needed in full.
DEFAULT_CONTEXT_BUDGET_TOKENS = 150_000
CONTEXT_WINDOW_FRACTION = 0.6


@dataclass
class RunOptions:
    model: str = DEFAULT_MODEL
    max_tokens: int = DEFAULT_MAX_TOKENS
    review_on_submit: bool = True
    run_id: str | None = None
    context_budget_tokens: int | None = None


def run_task(task: Task, repo: Path, *, policy: Policy, options: RunOptions | None = None,
             provider: Provider | None = None, secrets: Secrets | None = None, reporter=None,
             history: list[dict] | None = None) -> RunResult:
    """`history`: the messages of an earlier run to continue (see agent/history.py); the task then
    comes as one more user message after them."""
    from gitbot.checkpoints import Checkpointer, RunLock

    options = options or RunOptions()
    repo = git.repo_root(repo)
    policy = bind_policy(policy, repo)
    provider = provider or make_provider(options.model)
    run_id = options.run_id or new_run_id()
    tools, ctx = tool_context(repo, policy, secrets, task.check_command, options.review_on_submit)
    first_text, stopped_in_task = ctx.secrets.scrub(first_user_message(task, repo, policy))
    conversation = Conversation(system=system_prompt(), tools=[t.definition() for t in tools],
                                first_user_text=first_text)
    if history:
        conversation.messages = copy.deepcopy(history)
        conversation.add_user([{"type": "text", "text": first_text}])
    prices = load_prices()
    budget = options.context_budget_tokens or context_budget(prices, provider)

    with closing_runner(ctx), _signals_as_interrupt(), RunLock(repo):
        record = RunRecord(repo, run_id, secrets=ctx.secrets)
        record.secrets_stopped("the task and the first message", stopped_in_task)
        try:
            # Files the agent may not read are not stored either: the store is uploaded as an artifact.
            checkpointer = Checkpointer(repo, run_id, read_deny=policy.read_deny,
                                        rebuildable=policy.sandbox_rebuildable)
            first = checkpointer.take(0)
        except KeyboardInterrupt:
            return close_record(record, RunResult(status=Status.ERROR, run_id=run_id, model=provider.model,
                                                  summary="interrupted before the loop started",
                                                  replay=provider.is_replay))
        record.event("run_start", run_id=run_id, task=task.text, source=task.source, title=task.title,
                     check_command=task.check_command, model=provider.model, repo=str(repo),
                     **endpoint_fields(provider),
                     limits=vars(policy.limits), replay=provider.is_replay, max_tokens=options.max_tokens,
                     context_budget_tokens=budget, review_on_submit=options.review_on_submit,
                     first_message=conversation.messages[0]["content"][0]["text"], continues=bool(history))
        if history:
            # What the record needs to rebuild this conversation (resume, or a later continuation).
            record.event("history", messages=history)
            record.event("user", n=0, content=[{"type": "text", "text": first_text}], mistakes=0)
        record.event("checkpoint", step=0, **first.to_event())
        agent = Agent(provider=provider, tools=tools, ctx=ctx, conversation=conversation, record=record,
                      prices=prices, limits=policy.limits, max_tokens=options.max_tokens,
                      context_budget_tokens=budget, reporter=reporter or _null_reporter(),
                      checkpointer=checkpointer)
        agent.last_checkpoint = first.commit
        return drive(agent, record, checkpointer, policy=policy, run_id=run_id)


def drive(agent: Agent, record: RunRecord, checkpointer, *, policy: Policy, run_id: str) -> RunResult:
    """Run the loop to its end and leave the record complete, whatever happens on the way."""
    agent.ctx.state["diff_of_work"] = checkpointer.diff_from_start
    for warning in agent.warnings:
        agent.reporter.note(f"warning: {warning}")
    provider = agent.provider
    if agent.ctx.runner.sandboxed:
        # A sandboxed command writes the repository only through its paths and leaves no process behind:
        # what it changed can be told from inotify (checkpoints/watch.py).
        checkpointer.watch()
    # What the run's checkpoints cannot bring back stays as it was: read-only for every command, and
    # refused to the file tools.
    runner = agent.ctx.runner
    kept = list(checkpointer.unrestorable())
    # ... and so does the check command's own program when it lies in a rebuildable directory.
    kept += [directory for command in agent.ctx.extra_allowed_commands
             if (directory := program_directory_in(command, agent.ctx.repo, checkpointer.rebuildable()))]
    runner.keep_read_only(kept)
    agent.ctx.policy = runner.policy
    try:
        stop = agent.run()
        result = finish(agent, stop, run_id=run_id, model=provider.model, replay=provider.is_replay,
                        checkpointer=checkpointer, sandbox=agent.ctx.runner.receipt_line)
    except KeyboardInterrupt:
        result = build_result(Stop(Status.ERROR, "interrupted (Ctrl-C or SIGTERM)"), agent, run_id=run_id,
                              model=provider.model, files_changed=[], replay=provider.is_replay)
    except Exception as exc:  # noqa: BLE001 — whatever broke, the run ends with a status and a complete record
        record.event("error", message=f"{type(exc).__name__}: {exc}",
                     traceback=agent.ctx.secrets.redact(traceback.format_exc()))
        result = build_result(Stop(Status.ERROR, f"internal error: {type(exc).__name__}: {exc}"), agent,
                              run_id=run_id, model=provider.model, files_changed=[], replay=provider.is_replay)
    finally:
        checkpointer.stop_watching()
    return close_record(record, result)


def close_record(record: RunRecord, result: RunResult) -> RunResult:
    record.event("run_end", status=result.status.value, summary=result.summary)
    note = record.stop_note()
    if note:
        result.warnings.append(note)
        result.extra["secrets_stopped"] = list(record.stopped)
    record.write_result(result.to_dict())
    record.close()
    return result


@contextmanager
def closing_runner(ctx):
    """Every way out of a run closes its runner: its launcher, and the sandbox made ready for a next
    command that will not come (a caller that runs many tasks in one process would keep them otherwise)."""
    try:
        yield ctx
    finally:
        ctx.close_runner()


def bind_policy(policy: Policy, repo: Path) -> Policy:
    """The policy with its repository set: the rules resolve symlinks and absolute paths against it."""
    if getattr(policy, "repo", repo) is None:
        return replace(policy, repo=repo)
    return policy


def tool_context(repo: Path, policy: Policy, secrets: Secrets | None, check_command: str | None,
                 review_on_submit: bool):
    tools = all_tools()
    # The same context `gitbot policy check` judges with (tools/verdicts.py).
    ctx = run_context(repo, policy, check_command=check_command, secrets=secrets)
    ctx.state["review_on_submit"] = review_on_submit
    return tools, ctx


def _null_reporter():
    from gitbot.progress import NullReporter

    return NullReporter()


def finish(agent: Agent, stop: Stop, *, run_id: str, model: str, replay: bool, checkpointer,
           sandbox: str) -> RunResult:
    """The files changed since the first checkpoint, and the RunResult.

    In per-step mode every tool call already has its checkpoint. After degrading to per-response
    mode the last response's work is checkpointed by the loop too; an interrupted tool call is not
    checkpointed at all (resume puts its half-done work back).
    """
    result = build_result(stop, agent, run_id=run_id, model=model, files_changed=checkpointer.changed_since_start(),
                          replay=replay)
    result.checkpoints = checkpointer.stats()
    result.sandbox = sandbox
    return result


def endpoint_fields(provider: Provider) -> dict:
    """What run_start keeps of the provider, for the record and for `gitbot resume` to call the same one."""
    endpoint = provider.endpoint
    return {"provider": endpoint.provider, "endpoint_host": endpoint.host, "base_url": endpoint.base_url,
            "region": endpoint.region}


def context_budget(prices, provider: Provider) -> int:
    price = prices.price(provider.model, provider.endpoint)
    window = provider.endpoint.context_window or (price.context_window if price else 200_000)
    budget = min(window * CONTEXT_WINDOW_FRACTION, DEFAULT_CONTEXT_BUDGET_TOKENS)
    if price is not None and price.tier_above_tokens:  # above it every token costs the higher tier
        budget = min(budget, price.tier_above_tokens * 0.95)
    return int(budget)


@contextmanager
def _signals_as_interrupt():
    """SIGTERM and SIGHUP (the terminal closed) end the run like Ctrl-C: the command running is stopped and
    what it left undone (the runner), the loop flushes the record and reports 'interrupted'. After a SIGHUP
    gitbot then dies of it, as a process that did not handle it would (its parent may look), its crash notes
    removed first (nothing is left to undo). A SIGHUP ignored already (nohup) stays ignored."""
    received: list[int] = []

    def handler(signum, frame):
        # Once: a second signal while the record is being closed must not cut that short.
        for number in handled:
            signal.signal(number, signal.SIG_IGN)
        received.append(signum)
        raise KeyboardInterrupt

    handled: dict[int, object] = {}
    try:
        for number in (signal.SIGTERM, signal.SIGHUP):
            previous = signal.signal(number, handler)
            if number == signal.SIGHUP and previous == signal.SIG_IGN:
                signal.signal(number, previous)
            else:
                handled[number] = previous
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        for number, previous in handled.items():
            signal.signal(number, previous)
        if signal.SIGHUP in received:
            crashnote.remove_all()
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGHUP)


def with_limits(policy: Policy, **overrides) -> Policy:
    """A copy of the policy with some limits replaced (CLI flags, hook configuration)."""
    limits = replace(policy.limits, **{k: v for k, v in overrides.items() if v is not None})
    return replace(policy, limits=limits)
