"""The agent loop: model call → tool calls → results appended → repeat, until attempt_completion
or a limit. Headless: it never waits for a human, never loops forever, never spends past its budget.
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from gitbot.agent.conversation import Conversation
from gitbot.agent.result import RunResult, Status, StepRecord
from gitbot.llm.base import DeadlineReached, ModelReply, ModelRequest, Provider, ProviderError
from gitbot.llm.pricing import PriceTable
from gitbot.llm.usage import Usage
from gitbot.policy import Limits
from gitbot.prompting import render_prompt
from gitbot.textsafe import encodable
from gitbot.tools.base import Tool, ToolContext, ToolDenied, ToolError, ToolResult
from gitbot.tools.registry import validate_input

NUDGE_NO_TOOL = render_prompt("loop/no_tool_call")
NUDGE_MAX_TOKENS = render_prompt("loop/max_tokens")
NOT_AFTER_AN_ERROR = render_prompt("loop/not_after_an_error")
ALREADY_COMPLETED = render_prompt("loop/already_completed")
EMPTY_REPLY = render_prompt("loop/empty_reply")  # the API rejects an assistant message without content
MIN_PROJECTED_OUTPUT_TOKENS = 512
# New policy refusals in a row (no successful call between) that end a run, per allowed mistake: a model
# adapting to the rules meets a few; one that only ever meets new ones is not getting anywhere.
REFUSALS_PER_MISTAKE = 3
TARGET_ARGS = ("path", "command", "regex", "question")


@dataclass
class Stop:
    status: Status
    summary: str


class CheckpointWorker:
    """The one thread that takes a run's background checkpoints, started with the first. A thread per
    command step cost the loop more than the rest of its own work in that step: starting one waits until
    it runs."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue | None = None

    def run_later(self, job) -> None:
        """Run `job()` (which must not raise) in the thread, after the jobs given before it."""
        if self._jobs is None:
            self._jobs = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(self._jobs,), name="gitbot-checkpoints", daemon=True).start()
        self._jobs.put(job)

    def stop(self) -> None:
        """The thread ends once the jobs already given are done; a later run_later starts another."""
        if self._jobs is not None:
            self._jobs.put(None)
            self._jobs = None

    @staticmethod
    def _serve(jobs: queue.SimpleQueue) -> None:
        while (job := jobs.get()) is not None:
            job()


class PendingCheckpoint:
    """The checkpoint after a command, taken while the next model request is out: on a large tree it is
    most of a command step's own cost, and nothing changes files while the model thinks. It is finished
    before anything else touches the work tree or the checkpoints: the next tool call, a checkpoint at
    the end of a response, the end of the run."""

    def __init__(self, entry: StepRecord, take, worker: CheckpointWorker):
        self.entry = entry  # the step's StepRecord, given its commit once taken
        self._taken = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        worker.run_later(lambda: self._run(take))

    def _run(self, take) -> None:
        try:
            self._taken = take()
        except BaseException as exc:  # noqa: BLE001 - raised in the loop's thread by result()
            self._error = exc
        finally:
            self._done.set()

    def result(self):
        """The Checkpoint, once taken. A Ctrl-C meanwhile is held back until it is: a run must not end (and
        release its lock) while git still writes its checkpoint."""
        interrupted = False
        while not self._done.is_set():
            try:
                self._done.wait()
            except KeyboardInterrupt:
                interrupted = True
        if self._error is not None:
            raise self._error
        if interrupted:
            raise KeyboardInterrupt
        return self._taken


@dataclass
class LoopState:
    started: float = field(default_factory=time.monotonic)
    steps: int = 0
    tool_calls: int = 0
    mistakes: int = 0
    # Policy refusals since the last successful tool call, and every refusal seen in this run: a
    # refusal the model has not met before is it learning the rules, not a mistake (see _count_failure).
    refusals: int = 0
    refusals_seen: set[str] = field(default_factory=set)
    usage: Usage = field(default_factory=Usage)
    cost: float | None = 0.0
    # Prompt tokens of the last request that were cached (read or written): readable next time.
    last_cached_tokens: int = 0
    output_tokens_seen: list[int] = field(default_factory=list)
    step_log: list[StepRecord] = field(default_factory=list)
    # Checkpoint steps used by something other than a tool call (a restore during resume): tool call k
    # is checkpoint step k + step_offset, so step numbers stay unique without inflating tool_calls.
    step_offset: int = 0
    interrupted: bool = False


class Agent:
    def __init__(self, *, provider: Provider, tools: list[Tool], ctx: ToolContext, conversation: Conversation,
                 record, prices: PriceTable, limits: Limits, max_tokens: int, context_budget_tokens: int,
                 reporter, checkpointer=None, state: LoopState | None = None):
        self.provider = provider
        self.tools = {t.name: t for t in tools}
        self.ctx = ctx
        self.conversation = conversation
        self.record = record
        self.prices = prices
        self.limits = limits
        self.max_tokens = max_tokens
        self.context_budget_tokens = context_budget_tokens
        self.reporter = reporter
        self.checkpointer = checkpointer
        self.state = state or LoopState()
        self.last_checkpoint: str | None = None
        self.pending_checkpoint: PendingCheckpoint | None = None
        self.checkpoint_worker = CheckpointWorker()
        self.warnings: list[str] = []
        if prices.price(provider.model, provider.endpoint) is None:
            self.state.cost = None
            on = "" if provider.endpoint.provider in ("anthropic", "replay") else f" on {provider.endpoint.describe()}"
            self.warnings.append(f"model {provider.model!r}{on} is not in the price table "
                                 f"(prices of {prices.effective_date}): cost is unknown and the "
                                 f"max_cost_usd budget cannot be enforced (the policy's [model] table can "
                                 f"give its prices)")

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> Stop:
        try:
            while True:
                stop = self._limit_reached() or self._one_step()
                if stop:
                    return stop
        except KeyboardInterrupt:
            self.state.interrupted = True
            self.record.event("error", message="interrupted")
            return Stop(Status.ERROR, "interrupted (Ctrl-C or SIGTERM); the record is complete up to here")
        finally:
            try:
                self._finish_pending_checkpoint()
            finally:
                self.checkpoint_worker.stop()

    def _limit_reached(self) -> Stop | None:
        s, limits = self.state, self.limits
        elapsed = time.monotonic() - s.started
        if elapsed >= limits.max_wall_seconds:
            return self._limit(Status.TIME_LIMIT, f"stopped after {elapsed:.0f} s: the wall-time limit is "
                                                  f"{limits.max_wall_seconds:g} s")
        if s.steps >= limits.max_steps:
            return self._limit(Status.STEP_LIMIT, f"stopped after {s.steps} model requests: max_steps is "
                                                  f"{limits.max_steps}")
        if s.mistakes >= limits.max_consecutive_mistakes:
            return self._limit(Status.MISTAKE_LIMIT, f"stopped after {s.mistakes} consecutive mistakes "
                                                     f"(replies without a usable tool call, failed tool calls, "
                                                     f"or a refusal met again)")
        if s.refusals >= REFUSALS_PER_MISTAKE * limits.max_consecutive_mistakes:
            return self._limit(Status.MISTAKE_LIMIT, f"stopped after {s.refusals} refusals by the policy "
                                                     f"without a successful tool call in between")
        return None

    def _limit(self, status: Status, message: str) -> Stop:
        self.record.event("limit", status=status.value, message=message)
        return Stop(status, message)

    def _one_step(self) -> Stop | None:
        s = self.state
        elided = self.conversation.fit(self.context_budget_tokens)
        if elided:
            self.record.event("elided", count=elided, estimate_tokens=self.conversation.estimate_tokens())
        estimate = self.conversation.estimate_tokens()
        projected = self._projected_cost(estimate)
        if s.cost is not None and projected is not None and s.cost + projected > self.limits.max_cost_usd:
            return self._limit(Status.BUDGET_EXCEEDED,
                               f"stopped before request {s.steps + 1}: spent ${s.cost:.4f} of the "
                               f"${self.limits.max_cost_usd:.2f} budget and the next request would cost about "
                               f"${projected:.4f}")
        request = ModelRequest(system=self.conversation.system_blocks(), tools=self.conversation.tools,
                               messages=self.conversation.request_messages(), max_tokens=self.max_tokens,
                               deadline=s.started + self.limits.max_wall_seconds)
        chars = self.conversation.size_chars()
        self.record.event("request", n=s.steps + 1, messages=len(request.messages), estimate_tokens=estimate,
                          projected_cost_usd=projected)
        self.reporter.waiting(s.steps + 1)
        try:
            reply = self.provider.complete(request)
        except DeadlineReached as exc:
            return self._limit(Status.TIME_LIMIT, f"stopped at the wall-time limit of "
                                                  f"{self.limits.max_wall_seconds:g} s: {exc}")
        except ProviderError as exc:
            # A server's error text may echo what it was sent: redacted like everything else kept or shown.
            message = self.ctx.secrets.redact(encodable(str(exc)))
            details = {}
            if exc.unexpected:  # nobody classified it: the record keeps the whole story, the console one line
                details["traceback"] = self.ctx.secrets.redact(encodable("".join(traceback.format_exception(exc))))
            self.record.event("error", message=message, **details)
            return Stop(Status.ERROR, f"provider error: {message}")
        finally:
            self.reporter.done_waiting()
        s.steps += 1
        self._account(reply, chars)
        return self._handle(reply)

    def _account(self, reply: ModelReply, chars: int) -> None:
        s = self.state
        s.usage += reply.usage
        cost = self.prices.cost(self.provider.model, reply.usage, self.provider.endpoint)
        if s.cost is not None and cost is not None:
            s.cost += cost
        s.last_cached_tokens = reply.usage.cache_read_input_tokens + reply.usage.cache_creation_input_tokens
        s.output_tokens_seen.append(reply.usage.output_tokens)
        self.conversation.calibrate(reply.usage.prompt_tokens, chars)
        self.record.event("reply", n=s.steps, content=reply.content, stop_reason=reply.stop_reason,
                          usage=reply.usage.to_dict(), cost_usd=cost, total_cost_usd=s.cost,
                          wait_seconds=round(reply.wait_seconds, 4), request_id=reply.request_id,
                          attempts=reply.attempts, retries=reply.retry_log, provider_usage=reply.raw_usage)

    def _projected_cost(self, estimate_tokens: int) -> float | None:
        """What the next request will probably cost: what the last request cached is read back, the rest
        is written to the cache (priced above plain input, so the guess errs high), and as much output as
        the replies so far (at least a few hundred tokens)."""
        price = self.prices.price(self.provider.model, self.provider.endpoint)
        if price is None:
            return None
        cached = min(self.state.last_cached_tokens, estimate_tokens)
        seen = self.state.output_tokens_seen
        output = max(MIN_PROJECTED_OUTPUT_TOKENS, int(sum(seen) / len(seen)) if seen else 0)
        return price.cost(Usage(input_tokens=0, output_tokens=output,
                                cache_creation_input_tokens=estimate_tokens - cached, cache_read_input_tokens=cached))

    # -- one reply ----------------------------------------------------------------------------
    def _handle(self, reply: ModelReply) -> Stop | None:
        s = self.state
        # The model's own words go back to it in every later request: a secret it wrote (into a file it
        # creates, say) is replaced there too. The tool calls run with the input as given. (The record
        # scrubs and reports its copy of the reply.)
        self.conversation.add_assistant(_scrubbed_content(reply.content, self.ctx.secrets)
                                        or [{"type": "text", "text": EMPTY_REPLY}])
        tool_uses = reply.tool_uses
        if reply.stop_reason == "refusal":
            return Stop(Status.ERROR, f"the model refused to continue: {reply.text or '(no explanation)'}")
        if reply.stop_reason == "pause_turn":
            return None  # the assistant content goes back unchanged and the model continues
        if reply.stop_reason in ("max_tokens", "model_context_window_exceeded"):
            if reply.stop_reason == "model_context_window_exceeded":
                # Our estimate was too optimistic for this model: aim well below where it failed.
                self.context_budget_tokens = max(1, int(min(self.context_budget_tokens,
                                                            self.conversation.estimate_tokens()) * 0.7))
            results = [self._not_executed(t, NUDGE_MAX_TOKENS) for t in tool_uses]
            s.mistakes += 1
            self._add_user(results or [{"type": "text", "text": NUDGE_MAX_TOKENS}])
            return None
        if not tool_uses:
            s.mistakes += 1
            self._add_user([{"type": "text", "text": NUDGE_NO_TOOL}])
            self.reporter.note(f"request {s.steps}: no tool call (mistake {s.mistakes})")
            return None
        results, completed, failed, counts = [], None, False, False
        for tool_use in tool_uses:
            if completed is not None:
                results.append(self._not_executed(tool_use, ALREADY_COMPLETED))
                continue
            if failed and tool_use.get("name") == "attempt_completion":
                results.append(self._not_executed(tool_use, NOT_AFTER_AN_ERROR))
                continue
            block, completed, refusal = self._execute(tool_use)
            results.append(block)
            # One reply counts at most one mistake; a success after a failure in it clears the slate.
            failed = bool(block.get("is_error"))
            counts = failed and self._count_failure(refusal)
            if not failed:
                s.mistakes = s.refusals = 0
        if counts:
            s.mistakes += 1
        # A checkpoint still being taken is this response's last step's (only a command's is put off).
        if self.pending_checkpoint is None and self.checkpointer is not None \
                and not self.checkpointer.should_checkpoint_step():
            self._checkpoint_after_response()
        self._add_user(results)
        if completed is not None:
            return Stop(Status.COMPLETED, completed)
        return None

    def _count_failure(self, refusal: str | None) -> bool:
        """Does this failed call count toward the mistake limit? A policy refusal does only when the
        same refusal was met before in this run (the model repeats itself: a loop); a new one is the
        model learning what the policy allows, and counts only toward REFUSALS_PER_MISTAKE times the
        limit of refusals in a row without a success. Every other failure counts."""
        if refusal is None:
            return True
        s = self.state
        s.refusals += 1
        repeated = refusal in s.refusals_seen
        s.refusals_seen.add(refusal)
        return repeated

    def _add_user(self, blocks: list[dict[str, Any]]) -> None:
        """Append the next user message, and record it so `gitbot resume` can rebuild the conversation."""
        self.conversation.add_user(blocks)
        self.record.event("user", n=self.state.steps, content=blocks, mistakes=self.state.mistakes)

    def _not_executed(self, tool_use: dict[str, Any], why: str) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": why, "is_error": True}

    def _execute(self, tool_use: dict[str, Any]) -> tuple[dict[str, Any], str | None, str | None]:
        """The tool_result block, the completion summary (attempt_completion), and the refusal's text
        when the policy refused the call."""
        self._finish_pending_checkpoint()
        s = self.state
        s.tool_calls += 1
        step = s.tool_calls + s.step_offset
        name, args = tool_use.get("name", ""), tool_use.get("input")
        target = _target(args)
        self.record.event("tool_start", step=step, request=s.steps, tool=name, tool_use_id=tool_use["id"],
                          input=args, target=target)
        started = time.monotonic()
        tool = self.tools.get(name)
        outcome, completed, touched = "ok", None, None
        try:
            if tool is None:
                raise ToolError(f"unknown tool {name!r}. Available tools: {', '.join(self.tools)}")
            problem = validate_input(tool, args)
            if problem:
                raise ToolError(f"invalid input for {name}: {problem}")
            if tool.changes_files and self.checkpointer is not None:
                # The index refresh started by the first checkpoint runs while the first request is out; a
                # tool must not change files while git is still reading them into the index.
                self.checkpointer.settle()
            if tool.changes_files and name != "execute_command":
                self.ctx.files_changing()
            output = tool.function(self.ctx, args)
            if isinstance(output, ToolResult):
                text, completed, touched = output.text, output.completed, output.touched
            else:
                text = output
        except ToolDenied as exc:
            outcome, text = "denied", f"Refused by policy: {exc}"
        except ToolError as exc:
            outcome, text = "error", str(exc)
        except KeyboardInterrupt:
            # No tool_end: resume treats the call as cut off, puts the files back and says so.
            self.record.event("tool_interrupted", step=step, tool=name, tool_use_id=tool_use["id"],
                              duration_seconds=round(time.monotonic() - started, 4))
            raise
        except Exception as exc:  # noqa: BLE001 — a tool bug must not kill the run: the model sees an error
            outcome, text = "error", f"{name} failed unexpectedly: {type(exc).__name__}: {exc}"
            self.record.event("tool_crash", step=step,
                              traceback=self.ctx.secrets.redact(encodable(traceback.format_exc())))
        text, stopped = self.ctx.secrets.scrub(encodable(text) if text.strip() else "(no output)")
        self.record.secrets_stopped(f"step {step} ({name} output)", stopped)
        is_error = outcome != "ok"
        checkpoint, take_later = self._checkpoint_after_tool(step, tool, touched)
        duration = time.monotonic() - started
        self.record.event("tool_end", step=step, request=s.steps, tool=name, target=target,
                          tool_use_id=tool_use["id"], result=text, is_error=is_error, outcome=outcome,
                          duration_seconds=round(duration, 4), **checkpoint)
        entry = StepRecord(step=step, tool=name, target=target, outcome=outcome,
                           checkpoint=checkpoint.get("checkpoint"), request=s.steps)
        s.step_log.append(entry)
        if take_later is not None:
            self.pending_checkpoint = PendingCheckpoint(entry, take_later, self.checkpoint_worker)
        self.reporter.tool(step, name, target, outcome, s.cost)
        block = {"type": "tool_result", "tool_use_id": tool_use["id"], "content": text}
        if is_error:
            block["is_error"] = True
        return block, completed, text if outcome == "denied" else None

    # -- checkpoints ----------------------------------------------------------------------------
    def _checkpoint_after_tool(self, step: int, tool: Tool | None, touched) -> tuple[dict[str, Any], Any]:
        """The checkpoint fields of the step's tool_end, and a take() to run in the background (a command's
        full scan, see PendingCheckpoint) or None."""
        cp = self.checkpointer
        if cp is None:
            return {}, None
        if tool is not None and tool.changes_files and cp.should_checkpoint_step():
            # A file tool names what it wrote (the fast path); after a command anything may have changed.
            paths = list(touched) if touched and tool.name != "execute_command" else None
            if paths is None:
                # Until the checkpoint event comes, the record says this step has none of its own: a run
                # killed meanwhile refuses to restore to it rather than stand the previous one in.
                return {"checkpoint": None}, lambda: cp.take(step, touched=None)
            taken = cp.take(step, touched=paths)
            self.last_checkpoint = taken.commit
            return taken.to_event(), None
        if cp.should_checkpoint_step():  # a read-only step: its ref points at the last checkpoint
            return {"checkpoint": cp.mark(step).commit, "files_changed": []}, None
        # Per-response mode: only the response's last step gets a checkpoint (marking this one with the
        # last checkpoint would point it at a tree from before earlier writes in the same response).
        return {"checkpoint": None, "files_changed": []}, None

    def _finish_pending_checkpoint(self) -> None:
        pending, self.pending_checkpoint = self.pending_checkpoint, None
        if pending is None:
            return
        taken = pending.result()
        self.last_checkpoint = pending.entry.checkpoint = taken.commit
        self.record.event("checkpoint", **taken.record_fields())

    def _checkpoint_after_response(self) -> None:
        step = self.state.tool_calls + self.state.step_offset
        taken = self.checkpointer.take(step, touched=None)
        self.last_checkpoint = taken.commit
        self.record.event("checkpoint", **taken.record_fields(), reason="per-response mode")


def _scrubbed_content(content: list[dict[str, Any]], secrets) -> list[dict[str, Any]]:
    """Text and tool-call inputs scrubbed; thinking blocks are left as they are, since their signature
    covers their text and the API refuses an altered one."""
    out = []
    for block in content:
        if block.get("type") == "text":
            block = {**block, "text": secrets.redact(block.get("text", ""))}
        elif block.get("type") == "tool_use":
            block = {**block, "input": secrets.scrub_data(block.get("input"))[0]}
        out.append(block)
    return out


def _target(args: Any) -> str:
    if not isinstance(args, dict):
        return ""
    for key in TARGET_ARGS:
        value = args.get(key)
        if isinstance(value, str) and value:
            value = " ".join(value.split())
            return value if len(value) <= 80 else value[:77] + "..."
    return ""


def build_result(stop: Stop, agent: Agent, *, run_id: str, model: str, files_changed: list[str],
                 replay: bool) -> RunResult:
    s = agent.state
    return RunResult(status=stop.status, run_id=run_id, model=model, summary=stop.summary, steps=s.steps,
                     tool_calls=s.tool_calls, usage=s.usage, cost_usd=s.cost, files_changed=files_changed,
                     duration_seconds=time.monotonic() - s.started, replay=replay,
                     warnings=list(agent.warnings), step_log=list(s.step_log),
                     price_table_date=agent.prices.effective_date, max_cost_usd=agent.limits.max_cost_usd,
                     provider=None if replay else agent.provider.endpoint.describe(),
                     price_source="policy" if agent.provider.endpoint.price is not None else None)
