"""Continue an interrupted run from its record: the conversation, the spend and the work tree.

The record has every reply and every user message the loop sent, so the conversation is rebuilt
exactly. A tool call that started but never finished is not run again: the model is told it was
interrupted, and if it could have changed files, the work tree goes back to the last checkpoint
first (a half-written file is worse than none). Usage already paid for is carried over, never
counted twice, and the limits apply to the whole run, not afresh.
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from gitbot import git
from gitbot.agent.conversation import Conversation
from gitbot.agent.loop import Agent, LoopState
from gitbot.agent.prompt import system_prompt
from gitbot.agent.result import RunResult, Status, StepRecord
from gitbot.agent.run import (
    _signals_as_interrupt,
    bind_policy,
    closing_runner,
    context_budget,
    drive,
    tool_context,
)
from gitbot.errors import ConfigError
from gitbot.llm.base import Provider
from gitbot.llm.pricing import load_prices
from gitbot.llm.providers import make_provider
from gitbot.llm.usage import Usage
from gitbot.policy import Limits, Policy
from gitbot.prompting import render_prompt
from gitbot.record import RunRecord, load_events, load_result, runs_dir
from gitbot.secrets import Secrets

NOT_REACHED = render_prompt("resume/not_reached")
RESUMED_NUDGE = render_prompt("resume/resumed")
CHANGES_FILES = ("write_to_file", "replace_in_file", "execute_command")


def resume_run(repo: Path, run_id: str, *, policy: Policy, provider: Provider | None = None,
               secrets: Secrets | None = None, reporter=None) -> RunResult:
    from gitbot.checkpoints import Checkpointer, RunLock, restore

    repo = git.repo_root(repo)
    events = _events(repo, run_id)
    start = next(e for e in events if e["event"] == "run_start")
    if start.get("replay"):
        raise ConfigError(f"run {run_id} was a replay; there is nothing to resume")
    # The limits are the run's own: resuming continues one budget, it does not grant a new one.
    policy = bind_policy(replace(policy, limits=Limits(**start["limits"])), repo)
    # The same provider, model and endpoint as before (a run must not move to another host when resumed);
    # credentials and region come from the environment, prices from the policy's [model] table.
    recorded = start.get("provider", "anthropic")
    provider = provider or make_provider(start["model"], provider=None if recorded == "replay" else recorded,
                                         base_url=start.get("base_url"), settings=policy.model)
    tools, ctx = tool_context(repo, policy, secrets, start.get("check_command"), start.get("review_on_submit", True))
    conversation = Conversation(system=system_prompt(), tools=[t.definition() for t in tools],
                                first_user_text=start["first_message"])
    state = _rebuild(events, conversation, ctx.state)
    cut_off = _unfinished_tool_calls(events, conversation)

    with closing_runner(ctx), _signals_as_interrupt(), RunLock(repo):
        record = RunRecord(repo, run_id, secrets=ctx.secrets)
        restored = False
        if any(call["name"] in CHANGES_FILES for call in cut_off if call["started"] and not call["finished"]):
            report = restore(repo, run_id, Checkpointer(repo, run_id).last_step, force=True)
            restored = True
            record.event("resume_restore", step=report.after_step, written=len(report.written),
                         removed=len(report.removed))
        # After a restore (it recorded steps of its own); the run's read_deny rules are in its manifests.
        checkpointer = Checkpointer(repo, run_id, read_deny=policy.read_deny)
        results = [_result_for(call, restored) for call in cut_off]
        if not cut_off and conversation.messages[-1]["role"] == "assistant":
            # Killed after a reply without tool calls, before its nudge was recorded.
            results = [{"type": "text", "text": RESUMED_NUDGE}]
        # Restore checkpoints took step numbers of their own: later tool calls are numbered after them.
        state.step_offset = max(state.step_offset, (checkpointer.last_step or 0) - state.tool_calls)
        record.event("resume", steps=state.steps, tool_calls=state.tool_calls,
                     interrupted=[c["id"] for c in cut_off if c["started"] and not c["finished"]],
                     cost_so_far=state.cost)
        prices = load_prices()
        agent = Agent(provider=provider, tools=tools, ctx=ctx, conversation=conversation, record=record,
                      prices=prices, limits=policy.limits, max_tokens=start["max_tokens"],
                      context_budget_tokens=start.get("context_budget_tokens")
                      or context_budget(prices, provider),
                      reporter=reporter or _null(), checkpointer=checkpointer, state=state)
        if state.cost is None or prices.price(provider.model, provider.endpoint) is None:
            agent.state.cost = None
        agent.last_checkpoint = checkpointer.last_commit
        if results:
            agent._add_user(results)
        return drive(agent, record, checkpointer, policy=policy, run_id=run_id)


def _events(repo: Path, run_id: str) -> list[dict[str, Any]]:
    run_dir = runs_dir(repo) / run_id
    if not (run_dir / "trajectory.jsonl").exists():
        raise ConfigError(f"no run {run_id!r} in {repo} (see `gitbot checkpoints list` for the runs)")
    finished = load_result(run_dir)
    if finished and finished.get("status") == Status.COMPLETED.value:
        raise ConfigError(f"run {run_id} already completed; there is nothing to resume")
    events = list(load_events(run_dir))
    if not any(e["event"] == "run_start" for e in events):
        raise ConfigError(f"run {run_id} has no start record; it cannot be resumed")
    return events


def _rebuild(events: list[dict[str, Any]], conversation: Conversation, tool_state: dict) -> LoopState:
    """The conversation and the loop's counters, as they were after the last recorded event."""
    state = LoopState()
    start_time = events[0]["t"]
    for event in events:
        kind = event["event"]
        if kind == "history":  # a run that continued an earlier one starts from its messages
            conversation.messages = copy.deepcopy(event["messages"])
        elif kind == "reply":
            conversation.add_assistant(event["content"])
            usage = Usage(**event["usage"])
            state.steps += 1
            state.usage += usage
            state.cost = event.get("total_cost_usd")
            state.output_tokens_seen.append(usage.output_tokens)
            state.last_cached_tokens = usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        elif kind == "user":
            conversation.add_user(event["content"])
            state.mistakes = event.get("mistakes", 0)
        elif kind == "tool_start":
            state.tool_calls += 1
            state.step_offset = event["step"] - state.tool_calls
        elif kind == "tool_end":
            state.step_log.append(StepRecord(step=event["step"], tool=event["tool"], target=event.get("target", ""),
                                             outcome=event.get("outcome", "ok"),
                                             checkpoint=event.get("checkpoint"), request=event.get("request", 0)))
            if event["tool"] == "attempt_completion" and not event.get("is_error"):
                tool_state["review_shown"] = True
        elif kind == "checkpoint" and event.get("commit"):  # a command's, taken while the next request was out
            for entry in state.step_log:
                if entry.step == event.get("step") and entry.checkpoint is None:
                    entry.checkpoint = event["commit"]
    # Time already spent counts against max_wall_seconds.
    state.started = time.monotonic() - max(0.0, events[-1]["t"] - start_time)
    return state


def _unfinished_tool_calls(events: list[dict[str, Any]], conversation: Conversation) -> list[dict[str, Any]]:
    """The tool calls of the last reply whose results never reached the conversation."""
    last = conversation.messages[-1]
    if last["role"] != "assistant":
        return []
    started = {e["tool_use_id"] for e in events if e["event"] == "tool_start"}
    finished = {e["tool_use_id"]: e for e in events if e["event"] == "tool_end"}
    calls = []
    for block in last["content"]:
        if block.get("type") != "tool_use":
            continue
        calls.append({"id": block["id"], "name": block["name"], "started": block["id"] in started,
                      "finished": finished.get(block["id"])})
    return calls


def _result_for(call: dict[str, Any], restored: bool) -> dict[str, Any]:
    """What the model is told about a tool call of the interrupted reply."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call["id"]}
    finished = call["finished"]
    if finished is not None:  # it ran to the end before the crash: its recorded result stands
        block["content"] = finished["result"]
        if finished.get("is_error"):
            block["is_error"] = True
        return block
    if call["started"]:
        note = render_prompt("resume/work_tree_restored") + " " if restored else ""
        block["content"] = render_prompt("resume/interrupted", work_tree_restored=note)
    else:
        block["content"] = NOT_REACHED
    block["is_error"] = True
    return block


def _null():
    from gitbot.progress import NullReporter

    return NullReporter()
