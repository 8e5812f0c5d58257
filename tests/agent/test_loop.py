"""The agent loop end to end: the real SDK against the loopback Messages API, real git, real tools."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import anthropic
import pytest

from gitbot.agent.result import Status
from gitbot.agent.run import RunOptions, run_task, with_limits
from gitbot.llm.anthropic import AnthropicProvider
from gitbot.llm.pricing import load_prices
from gitbot.llm.usage import Usage
from gitbot.policy import Policy
from gitbot.record import load_events, load_result, runs_dir
from gitbot.secrets import Secrets
from gitbot.task import Task
from tests.conftest import FIX_DIFF
from tests.fakes.messages_api import FakeMessagesAPI, fault, message_turn, text_turn, tool_turn

MODEL = "claude-sonnet-5-5"
CHECK = "python3 -m unittest"


def provider_for(api: FakeMessagesAPI, model: str = MODEL) -> AnthropicProvider:
    client = anthropic.Anthropic(base_url=api.url, api_key=api.api_key, max_retries=0)
    return AnthropicProvider(model, client=client, backoff_base=0.001)


def run(repo: Path, api: FakeMessagesAPI, *, policy: Policy | None = None, model: str = MODEL,
        max_tokens: int = 4096, review: bool = True, task: str = "Fix the failing test.", **limits):
    policy = with_limits(policy or Policy(), **limits)
    return run_task(Task(text=task, check_command=CHECK), repo, policy=policy,
                    options=RunOptions(model=model, max_tokens=max_tokens, review_on_submit=review),
                    provider=provider_for(api, model), secrets=Secrets())


FIX_SCRIPT = [
    tool_turn(("execute_command", {"command": CHECK}), text="Reproduce first."),
    tool_turn(("read_file", {"path": "stats.py"})),
    tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})),
    tool_turn(("execute_command", {"command": CHECK})),
    tool_turn(("attempt_completion", {"result": "Fixed mean()."})),
    tool_turn(("attempt_completion", {"result": "Fixed mean(): divide by len(values)."})),
]


@pytest.mark.slow
def test_scripted_fix_completes_and_the_record_matches(buggy_repo: Path):
    with FakeMessagesAPI(FIX_SCRIPT) as api:
        result = run(buggy_repo, api)
    assert api.errors == []
    assert result.status is Status.COMPLETED, result.summary
    assert result.summary == "Fixed mean(): divide by len(values)."
    assert "/ len(values)" in (buggy_repo / "stats.py").read_text()
    assert result.files_changed == ["stats.py"]
    assert result.steps == 6 and result.tool_calls == 6
    # Usage and cost are exactly what the server reported, priced from the table.
    assert result.usage.to_dict() == api.total_usage()
    expected = sum(load_prices().cost(MODEL, Usage(**r["usage"])) for r in api.requests if r["usage"])
    assert result.cost_usd == pytest.approx(expected)
    # The review-on-submit step showed the model its diff before accepting.
    review = api.requests[5]["body"]["messages"][-1]["content"][0]
    assert "full diff" in review["content"] and "/ len(values)" in review["content"]
    # The first check run failed, the second passed: exit codes reach the model, non-zero is no error.
    first_run = api.requests[1]["body"]["messages"][-1]["content"][0]
    assert "is_error" not in first_run and "FAILED" in first_run["content"]
    # The record: every tool call has a start and an end, in order, and result.json is the result.
    events = list(load_events(runs_dir(buggy_repo) / result.run_id))
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert [e["step"] for e in events if e["event"] == "tool_end"] == [1, 2, 3, 4, 5, 6]
    assert [e["tool"] for e in events if e["event"] == "tool_end"][:4] == [
        "execute_command", "read_file", "replace_in_file", "execute_command"]
    assert load_result(runs_dir(buggy_repo) / result.run_id) == json.loads(json.dumps(result.to_dict()))
    # The work tree's git state is the user's: nothing staged or committed by the run.
    status = subprocess.run(["git", "status", "--porcelain"], cwd=buggy_repo, capture_output=True, text=True,
                            check=True)
    assert status.stdout == " M stats.py\n"


@pytest.mark.slow
def test_requests_follow_the_api_rules_and_cache_breakpoints(buggy_repo: Path):
    with FakeMessagesAPI(FIX_SCRIPT) as api:
        run(buggy_repo, api)
    for request in api.requests:
        body = request["body"]
        assert "temperature" not in body and "top_p" not in body and "top_k" not in body
        marked = json.dumps(body).count('"cache_control"')
        assert 1 <= marked <= 4
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        # The stable prefix has no timestamps: the system prompt is identical on every request.
        assert body["system"] == api.requests[0]["body"]["system"]
        assert body["tools"] == api.requests[0]["body"]["tools"]
    first = api.requests[0]["body"]["messages"][0]["content"][0]["text"]
    assert "<task>\nFix the failing test.\n</task>" in first
    assert "stats.py" in first and "test_stats.py" in first  # top-level listing
    later = [r["usage"] for r in api.requests[1:] if r["usage"]]
    assert all(u["cache_read_input_tokens"] > 0 for u in later)  # the rolling breakpoint is read back


@pytest.mark.slow
def test_streaming_is_used_for_large_max_tokens(buggy_repo: Path):
    script = [tool_turn(("attempt_completion", {"result": "nothing to do"}))]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, max_tokens=32_000, review=False)
    assert result.status is Status.COMPLETED
    assert api.requests[0]["body"].get("stream") is True
    with FakeMessagesAPI(script) as api:
        run(buggy_repo, api, max_tokens=4096, review=False)
    assert not api.requests[0]["body"].get("stream")


def test_step_limit(buggy_repo: Path):
    script = [tool_turn(("read_file", {"path": "stats.py"}))] * 5
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, max_steps=2)
    assert result.status is Status.STEP_LIMIT
    assert len(api.requests) == 2 and result.steps == 2
    assert "max_steps is 2" in result.summary


@pytest.mark.slow
def test_budget_is_checked_before_each_request(buggy_repo: Path):
    script = [tool_turn(("read_file", {"path": "stats.py"}))] * 30
    budget = 0.05
    with FakeMessagesAPI(script, min_cacheable_tokens=100_000) as api:  # no caching: every request costs
        result = run(buggy_repo, api, max_cost_usd=budget, max_steps=30)
    assert result.status is Status.BUDGET_EXCEEDED
    per_request = [load_prices().cost(MODEL, Usage(**r["usage"])) for r in api.requests if r["usage"]]
    assert result.cost_usd == pytest.approx(sum(per_request))
    # The projection errs high (new tokens priced as cache writes), so it stops before the budget is
    # crossed; it must never overshoot by more than one request in any case.
    assert result.cost_usd <= budget
    assert result.cost_usd > budget - 2 * max(per_request)  # and it did use the budget
    assert "budget" in result.summary


@pytest.mark.slow
def test_mistakes_end_the_run_and_a_success_resets_them(buggy_repo: Path):
    script = [
        text_turn("I think I'm done."),  # no tool: mistake 1
        tool_turn(("no_such_tool", {})),  # unknown tool: mistake 2
        tool_turn(("read_file", {"path": "stats.py"})),  # success: reset
        tool_turn(("read_file", {"pathname": "stats.py"})),  # invalid input: 1
        tool_turn(("read_file", {"path": "../outside.py"})),  # refused: 2
        text_turn("Still nothing."),  # 3: limit
        tool_turn(("attempt_completion", {"result": "never reached"})),
    ]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api)
    assert result.status is Status.MISTAKE_LIMIT
    assert len(api.requests) == 6
    nudge = api.requests[1]["body"]["messages"][-1]["content"]
    assert nudge[0]["type"] == "text" and "attempt_completion" in nudge[0]["text"]
    unknown = api.requests[2]["body"]["messages"][-1]["content"][0]
    assert unknown["is_error"] is True and "unknown tool" in unknown["content"]
    invalid = api.requests[4]["body"]["messages"][-1]["content"][0]
    assert invalid["is_error"] is True and "pathname" in invalid["content"]


@pytest.mark.slow
def test_a_failing_command_is_not_a_mistake(buggy_repo: Path):
    script = [tool_turn(("execute_command", {"command": CHECK}))] * 4 + [
        tool_turn(("attempt_completion", {"result": "gave up"}))]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, max_consecutive_mistakes=2, review=False)
    assert result.status is Status.COMPLETED


@pytest.mark.slow
def test_time_limit(buggy_repo: Path):
    slow = "python3 -c 'import time; time.sleep(1.2)'"
    script = [tool_turn(("execute_command", {"command": slow}))] * 3
    with FakeMessagesAPI(script) as api:
        result = run_task(Task(text="wait", check_command=slow), buggy_repo,
                          policy=with_limits(Policy(), max_wall_seconds=1.0),
                          options=RunOptions(model=MODEL, max_tokens=4096), provider=provider_for(api),
                          secrets=Secrets())
    assert result.status is Status.TIME_LIMIT
    assert len(api.requests) == 1


@pytest.mark.slow
def test_stop_reasons(buggy_repo: Path):
    script = [
        message_turn([{"type": "text", "text": "partial"}], stop_reason="max_tokens"),
        message_turn([{"type": "text", "text": "thinking…"}], stop_reason="pause_turn"),
        tool_turn(("ask_followup_question", {"question": "Which file?"})),
        text_turn("I can't help with that.", stop_reason="refusal"),
    ]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api)
    assert api.errors == []
    assert result.status is Status.ERROR and "refused" in result.summary
    cut_off = api.requests[1]["body"]["messages"][-1]["content"][0]["text"]
    assert "smaller step" in cut_off
    # pause_turn: the assistant content goes back unchanged as the last message.
    assert api.requests[2]["body"]["messages"][-1] == {"role": "assistant",
                                                       "content": [{"type": "text", "text": "thinking…"}]}
    answer = api.requests[3]["body"]["messages"][-1]["content"][0]["content"]
    assert "No human is available" in answer


@pytest.mark.slow
@pytest.mark.parametrize("kind,max_tokens", [
    ("429", 4096), ("500", 4096), ("529", 4096), ("503", 4096), ("reset", 4096), ("garbage", 4096),
    ("529", 32_000), ("reset", 32_000), ("garbage", 32_000), ("stream_error", 32_000), ("stream_cut", 32_000),
])
def test_transient_faults_are_retried_without_double_counting(buggy_repo: Path, kind: str, max_tokens: int):
    script = [fault(kind), tool_turn(("read_file", {"path": "stats.py"})), fault(kind), fault(kind),
              tool_turn(("attempt_completion", {"result": "done"}))]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, review=False, max_consecutive_mistakes=1, max_tokens=max_tokens)
    assert api.requests[-1]["body"].get("stream", False) is (max_tokens > 21_333)
    assert result.status is Status.COMPLETED, result.summary
    assert result.steps == 2
    assert result.usage.to_dict() == api.total_usage()
    events = list(load_events(runs_dir(buggy_repo) / result.run_id))
    replies = [e for e in events if e["event"] == "reply"]
    assert [r["attempts"] for r in replies] == [2, 3]


def test_retry_after_is_honoured(buggy_repo: Path):
    sleeps: list[float] = []
    script = [fault("429", retry_after=2), tool_turn(("attempt_completion", {"result": "ok"}))]
    with FakeMessagesAPI(script) as api:
        provider = provider_for(api)
        provider._sleep = sleeps.append
        run_task(Task(text="t"), buggy_repo, policy=Policy(), provider=provider, secrets=Secrets(),
                 options=RunOptions(model=MODEL, max_tokens=4096, review_on_submit=False))
    assert sleeps == [2.0]


@pytest.mark.parametrize("kind,words", [("401", "authentication failed"), ("400", "scripted invalid request"),
                                        ("spend_limit", "spend limit")])
def test_fatal_faults_end_the_run_at_once(buggy_repo: Path, kind: str, words: str):
    with FakeMessagesAPI([fault(kind), tool_turn(("attempt_completion", {"result": "x"}))]) as api:
        result = run(buggy_repo, api)
    assert result.status is Status.ERROR
    assert words in result.summary
    assert len(api.requests) == 1
    assert load_result(runs_dir(buggy_repo) / result.run_id)["status"] == "error"


@pytest.mark.slow
def test_six_consecutive_failures_give_up(buggy_repo: Path):
    with FakeMessagesAPI([fault("500")] * 6 + [tool_turn(("attempt_completion", {"result": "x"}))]) as api:
        result = run(buggy_repo, api)
    assert result.status is Status.ERROR
    assert "6 consecutive failures" in result.summary
    assert len(api.requests) == 6 and result.steps == 0


def test_unknown_model_runs_with_unknown_cost(buggy_repo: Path):
    with FakeMessagesAPI([tool_turn(("attempt_completion", {"result": "ok"}))]) as api:
        result = run(buggy_repo, api, model="claude-unknown-9", review=False)
    assert result.status is Status.COMPLETED
    assert result.cost_usd is None
    assert any("not in the price table" in w for w in result.warnings)


@pytest.mark.slow
def test_old_observations_are_elided_so_no_request_exceeds_the_budget(buggy_repo: Path):
    big = "\n".join(f"line {i}: " + "x" * 60 for i in range(90))
    (buggy_repo / "big.txt").write_text(big)
    script = [tool_turn(("read_file", {"path": "big.txt"}))] * 14 + [
        tool_turn(("attempt_completion", {"result": "ok"}))]
    budget = 18_000
    with FakeMessagesAPI(script) as api:
        result = run_task(Task(text="read a lot"), buggy_repo, policy=with_limits(Policy(), max_steps=20),
                          provider=provider_for(api), secrets=Secrets(),
                          options=RunOptions(model=MODEL, max_tokens=4096, review_on_submit=False,
                                             context_budget_tokens=budget))
    assert result.status is Status.COMPLETED, result.summary
    prompt_sizes = [r["usage"]["input_tokens"] + r["usage"]["cache_creation_input_tokens"]
                    + r["usage"]["cache_read_input_tokens"] for r in api.requests if r["usage"]]
    assert max(prompt_sizes) <= budget
    last = api.requests[-1]["body"]["messages"]
    results = [b for m in last if m["role"] == "user" for b in m["content"] if b.get("type") == "tool_result"]
    stubs = [b for b in results if "elided" in str(b["content"])]
    full = [b for b in results if "elided" not in str(b["content"])]
    assert stubs and len(full) >= 5  # the newest five observations are kept in full
    assert "<task>" in last[0]["content"][0]["text"]  # the task is never elided


@pytest.mark.slow
def test_a_tool_that_raises_becomes_an_error_result_and_the_loop_goes_on(buggy_repo: Path, monkeypatch):
    from gitbot.agent import run as run_module
    from gitbot.tools.base import Tool

    def explode(ctx, args):
        raise RuntimeError("disk on fire")

    broken = Tool(name="read_file", input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
                  function=explode)
    real_tools = run_module.all_tools
    monkeypatch.setattr(run_module, "all_tools",
                        lambda: [broken if t.name == "read_file" else t for t in real_tools()])
    script = [tool_turn(("read_file", {"path": "stats.py"})),
              tool_turn(("attempt_completion", {"result": "done anyway"}))]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, review=False)
    assert result.status is Status.COMPLETED
    seen = api.requests[1]["body"]["messages"][-1]["content"][0]
    assert seen["is_error"] is True and "RuntimeError: disk on fire" in seen["content"]
    events = list(load_events(runs_dir(buggy_repo) / result.run_id))
    assert any(e["event"] == "tool_crash" and "disk on fire" in e["traceback"] for e in events)


@pytest.mark.slow
def test_one_reply_with_several_failures_is_one_mistake(buggy_repo: Path):
    three_bad = tool_turn(("read_file", {"path": "nope1.py"}), ("read_file", {"path": "nope2.py"}),
                          ("read_file", {"path": "nope3.py"}))
    script = [three_bad, tool_turn(("read_file", {"path": "stats.py"}), ("read_file", {"path": "nope.py"})),
              three_bad, tool_turn(("attempt_completion", {"result": "done"}))]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, review=False, max_consecutive_mistakes=3)
    assert result.status is Status.COMPLETED  # 1, then [ok, error] = 1 more, then 1 more: 3 is reached only
    assert result.steps == 4                   # after the third reply, which still gets to complete


@pytest.mark.slow
def test_three_replies_of_failures_hit_the_mistake_limit_even_with_many_calls_each(buggy_repo: Path):
    bad = tool_turn(("read_file", {"path": "nope1.py"}), ("read_file", {"path": "nope2.py"}))
    with FakeMessagesAPI([bad, bad, bad, tool_turn(("attempt_completion", {"result": "x"}))]) as api:
        result = run(buggy_repo, api, review=False)
    assert result.status is Status.MISTAKE_LIMIT and result.steps == 3


def test_completion_is_refused_after_a_failed_call_in_the_same_reply(buggy_repo: Path):
    script = [tool_turn(("read_file", {"path": "missing.py"}), ("attempt_completion", {"result": "done"})),
              tool_turn(("attempt_completion", {"result": "done now"}))]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, review=False)
    assert result.status is Status.COMPLETED and result.summary == "done now"
    refused = api.requests[1]["body"]["messages"][-1]["content"][1]
    assert refused["is_error"] is True and "earlier tool call" in refused["content"]


def test_an_empty_reply_is_nudged_not_sent_back_empty(buggy_repo: Path):
    script = [text_turn(""), tool_turn(("attempt_completion", {"result": "ok"}))]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, review=False)
    assert api.errors == []  # an empty assistant message would be a 400
    assert result.status is Status.COMPLETED


@pytest.mark.slow
def test_context_window_exceeded_shrinks_the_next_request(buggy_repo: Path):
    (buggy_repo / "big.txt").write_text("\n".join("y" * 70 for _ in range(90)))
    script = [tool_turn(("read_file", {"path": "big.txt"}))] * 7 + [
        message_turn([{"type": "text", "text": "too long"}], stop_reason="model_context_window_exceeded"),
        tool_turn(("attempt_completion", {"result": "ok"}))]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, review=False, max_steps=20)
    assert result.status is Status.COMPLETED
    sizes = [sum(r["usage"][k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
             for r in api.requests if r["usage"]]
    assert sizes[-1] < 0.75 * sizes[-2]  # old observations were elided before trying again


@pytest.mark.slow
def test_the_wall_time_limit_also_bounds_retries(buggy_repo: Path):
    slow_faults = [fault("529", retry_after=2)] * 5
    with FakeMessagesAPI(slow_faults + [tool_turn(("attempt_completion", {"result": "x"}))]) as api:
        started = time.monotonic()
        result = run(buggy_repo, api, max_wall_seconds=1.0)
        elapsed = time.monotonic() - started
    assert result.status is Status.TIME_LIMIT
    assert elapsed < 4  # not 5 x 2 s of honoured retry-after


# --- the mistake limit stops loops, not a model learning the rules (issue 22) -------------------------
# Refusals by the policy: a deny rule refuses these commands inside the sandbox and out, before anything
# runs, so the tests start no command.
DENYING = Policy(command_deny=("curl *",))


@pytest.mark.slow
def test_new_refusals_are_the_model_learning_and_do_not_end_the_run(buggy_repo: Path):
    script = [tool_turn(("execute_command", {"command": f"curl example.com/{n}"})) for n in range(5)]
    script.append(tool_turn(("attempt_completion", {"result": "learned"})))
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, policy=DENYING, review=False, max_consecutive_mistakes=2)
    assert result.status is Status.COMPLETED, result.summary
    refused = api.requests[1]["body"]["messages"][-1]["content"][0]
    assert refused["is_error"] and "commands.deny" in refused["content"] and "Instead:" in refused["content"]


@pytest.mark.slow
def test_a_refusal_met_again_is_a_loop_and_counts(buggy_repo: Path):
    same = tool_turn(("execute_command", {"command": "curl example.com"}))
    with FakeMessagesAPI([same] * 4 + [tool_turn(("attempt_completion", {"result": "x"}))]) as api:
        result = run(buggy_repo, api, policy=DENYING, review=False, max_consecutive_mistakes=2)
    # The first refusal is new; the second and third are repeats: the limit of 2.
    assert result.status is Status.MISTAKE_LIMIT and result.steps == 3


@pytest.mark.slow
def test_only_new_refusals_without_a_success_still_end_the_run(buggy_repo: Path):
    from gitbot.agent.loop import REFUSALS_PER_MISTAKE

    script = [tool_turn(("execute_command", {"command": f"curl example.com/{n}"})) for n in range(20)]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, policy=DENYING, review=False, max_consecutive_mistakes=2)
    assert result.status is Status.MISTAKE_LIMIT and "refusals" in result.summary
    assert result.steps == REFUSALS_PER_MISTAKE * 2
