"""What a run keeps when the provider fails in a way nobody classified: the console gets one line, the
run record the (redacted) traceback, and the run ends with status error, not a crash."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import httpx2
import openai
import pytest

from gitbot.agent.result import Status
from gitbot.agent.run import RunOptions, run_task
from gitbot.llm.anthropic import AnthropicProvider
from gitbot.llm.base import Endpoint
from gitbot.llm.openai import OpenAIProvider
from gitbot.policy import Policy
from gitbot.record import load_events, runs_dir
from gitbot.secrets import Secrets
from gitbot.task import Task
from tests.fakes.messages_api import FakeMessagesAPI, fault, tool_turn

pytestmark = pytest.mark.slow  # real runs: git, checkpoints, the record

SECRET = "sk-planted-secret-value-0123456789"
# A reply shape nobody anticipated: a tool call whose function is null (a buggy OpenAI-compatible server).
ODD_REPLY = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
             "choices": [{"index": 0, "finish_reason": "tool_calls",
                          "message": {"role": "assistant", "content": f"calling with {SECRET}",
                                      "tool_calls": [{"id": "call_1", "type": "function", "function": None}]}}],
             "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

# Usage whose count is not a number: the error message quotes the value.
REPLY_WITH_A_SECRET = {**ODD_REPLY, "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": "done"}}],
                       "usage": {"prompt_tokens": SECRET, "completion_tokens": 5, "total_tokens": 15}}


def test_an_unexpected_error_keeps_its_traceback_in_the_record_and_one_line_on_the_console(buggy_repo: Path):
    served = []

    def server(request: httpx2.Request) -> httpx2.Response:
        served.append(request)
        return httpx2.Response(200, json=ODD_REPLY)

    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-unused-key", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    provider = OpenAIProvider("m", client=client, endpoint=Endpoint("openai"), backoff_base=0.001)
    result = run_task(Task(text="Fix it."), buggy_repo, policy=Policy(), provider=provider,
                      secrets=Secrets({SECRET}), options=RunOptions(max_tokens=4096, review_on_submit=False))
    assert result.status is Status.ERROR and len(served) == 1  # fatal: not retried
    assert result.summary.startswith("provider error: unexpected provider error: AttributeError")
    assert "\n" not in result.summary
    error = next(e for e in load_events(runs_dir(buggy_repo) / result.run_id) if e["event"] == "error")
    assert "Traceback (most recent call last)" in error["traceback"]
    assert "gitbot/llm/openai.py" in error["traceback"] and "AttributeError" in error["traceback"]
    assert error["message"] == result.summary.removeprefix("provider error: ")


def test_the_traceback_is_redacted(buggy_repo: Path):
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-unused-key", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(
                               lambda request: httpx2.Response(200, json=REPLY_WITH_A_SECRET))))
    provider = OpenAIProvider("m", client=client, endpoint=Endpoint("openai"), backoff_base=0.001)
    result = run_task(Task(text="Fix it."), buggy_repo, policy=Policy(), provider=provider,
                      secrets=Secrets({SECRET}), options=RunOptions(max_tokens=4096, review_on_submit=False))
    record = (runs_dir(buggy_repo) / result.run_id / "trajectory.jsonl").read_text()
    assert result.status is Status.ERROR and "ValueError" in result.summary
    error = next(e for e in load_events(runs_dir(buggy_repo) / result.run_id) if e["event"] == "error")
    assert "[REDACTED]" in error["traceback"] and "[REDACTED]" in error["message"]
    assert SECRET not in record and SECRET not in result.summary


def test_a_classified_failure_records_no_traceback(buggy_repo: Path):
    with FakeMessagesAPI([fault("401"), tool_turn(("attempt_completion", {"result": "x"}))]) as api:
        client = anthropic.Anthropic(base_url=api.url, api_key=api.api_key, max_retries=0)
        provider = AnthropicProvider("claude-sonnet-5-5", client=client, endpoint=Endpoint("anthropic"))
        result = run_task(Task(text="Fix it."), buggy_repo, policy=Policy(), provider=provider, secrets=Secrets(),
                          options=RunOptions(max_tokens=4096, review_on_submit=False))
    assert result.status is Status.ERROR and "authentication failed (401)" in result.summary
    error = next(e for e in load_events(runs_dir(buggy_repo) / result.run_id) if e["event"] == "error")
    assert "traceback" not in error
    assert json.loads(json.dumps(error))["message"].startswith("authentication failed")
