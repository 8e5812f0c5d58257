"""The OpenAI-compatible provider in the real loop: parallel tool calls, a model that cannot call tools,
long replies streamed, the output cap of a small model."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from gitbot.agent.result import Status
from gitbot.agent.run import RunOptions, run_task
from gitbot.llm.base import Endpoint
from gitbot.llm.openai import OpenAIProvider
from gitbot.policy import Policy
from gitbot.secrets import Secrets
from gitbot.task import Task
from tests.fakes.messages_api import text_turn, tool_turn
from tests.fakes.openai_api import FakeChatCompletionsAPI, fault

pytestmark = pytest.mark.slow


def run(repo: Path, api: FakeChatCompletionsAPI, *, max_tokens: int = 4096, cap: int | None = None):
    client = openai.OpenAI(base_url=api.base_url, api_key=api.api_key, max_retries=0)
    provider = OpenAIProvider("local-model", client=client, endpoint=Endpoint("openai", host="127.0.0.1"),
                              max_output_tokens=cap, backoff_base=0.001)
    return run_task(Task(text="Fix the failing test."), repo, policy=Policy(), provider=provider, secrets=Secrets(),
                    options=RunOptions(model="local-model", max_tokens=max_tokens, review_on_submit=False))


def test_parallel_tool_calls_run_in_one_step_and_are_answered_in_order(buggy_repo: Path):
    script = [tool_turn(("read_file", {"path": "stats.py"}), ("read_file", {"path": "test_stats.py"})),
              tool_turn(("attempt_completion", {"result": "read both"}))]
    with FakeChatCompletionsAPI(script) as api:
        result = run(buggy_repo, api)
    assert result.status is Status.COMPLETED and result.tool_calls == 3 and api.errors == []
    second = api.requests[1]["body"]["messages"]
    calls = second[-3]["tool_calls"]
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "tool"]
    assert [m["tool_call_id"] for m in second[-2:]] == [c["id"] for c in calls]
    assert "def mean" in second[-2]["content"] and "MeanTest" in second[-1]["content"]


def test_a_server_that_refuses_tools_is_a_configuration_error_after_one_request(buggy_repo: Path):
    with FakeChatCompletionsAPI([fault("tools_unsupported"), text_turn("hi")]) as api:
        result = run(buggy_repo, api)
    assert result.status is Status.ERROR and len(api.requests) == 1
    assert "configuration: the model 'local-model' cannot be used with tools" in result.summary
    assert "--enable-auto-tool-choice" in result.summary


def test_a_model_that_writes_its_tool_calls_as_text_is_a_configuration_error(buggy_repo: Path):
    text = json.dumps({"name": "read_file", "arguments": {"path": "stats.py"}})
    with FakeChatCompletionsAPI([text_turn(text), text_turn("x")]) as api:
        result = run(buggy_repo, api)
    assert result.status is Status.ERROR and len(api.requests) == 1
    assert "wrote a call to 'read_file' as text" in result.summary


def test_long_replies_stream_and_a_small_model_gets_its_output_cap(buggy_repo: Path):
    script = [tool_turn(("attempt_completion", {"result": "nothing to do"}))]
    with FakeChatCompletionsAPI(script) as api:
        assert run(buggy_repo, api, max_tokens=32_000).status is Status.COMPLETED
    body = api.requests[0]["body"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 32_000
    with FakeChatCompletionsAPI(script) as api:
        assert run(buggy_repo, api, max_tokens=32_000, cap=2048).status is Status.COMPLETED
    body = api.requests[0]["body"]
    assert "stream" not in body and body["max_completion_tokens"] == 2048
