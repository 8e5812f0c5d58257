"""Each provider with its real SDK client pointed at its loopback fake: one way to build them all."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gitbot.llm.anthropic import AnthropicProvider
from gitbot.llm.base import Endpoint, ModelRequest
from gitbot.llm.openai import OpenAIProvider
from tests.fakes.bedrock_api import FakeBedrockAPI
from tests.fakes.messages_api import FakeMessagesAPI
from tests.fakes.openai_api import FakeChatCompletionsAPI
from tests.fakes.vertex_api import FakeVertexAPI

PROVIDERS = ("anthropic", "bedrock", "vertex", "openai")
MODELS = {"anthropic": "claude-sonnet-5-5", "bedrock": "us.anthropic.claude-sonnet-5-5-v1:0",
          "vertex": "claude-sonnet-5-5", "openai": "gpt-test"}
TOOLS = [
    {"name": "read_file", "description": "Read a file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "attempt_completion", "description": "Finish.",
     "input_schema": {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}},
]
SYSTEM = [{"type": "text", "text": "You are a careful coding agent. " * 200, "cache_control": {"type": "ephemeral"}}]


@dataclass
class Wired:
    name: str
    api: Any  # the fake
    provider: Any  # AnthropicProvider or OpenAIProvider, with the real SDK client


@contextmanager
def wired(name: str, script: list[dict], **fake_options: Any) -> Iterator[Wired]:
    """The provider `name` with its real SDK client, talking to its fake serving `script`."""
    import anthropic
    import openai

    fake = {"anthropic": FakeMessagesAPI, "bedrock": FakeBedrockAPI, "vertex": FakeVertexAPI,
            "openai": FakeChatCompletionsAPI}[name](script, **fake_options)
    with fake as api:
        if name == "anthropic":
            client = anthropic.Anthropic(base_url=api.url, api_key=api.api_key, max_retries=0)
        elif name == "bedrock":
            client = anthropic.AnthropicBedrock(aws_region=api.region, base_url=api.url, max_retries=0,
                                                **api.client_keys())
        elif name == "vertex":
            client = anthropic.AnthropicVertex(region=api.region, project_id=api.project, base_url=api.base_url,
                                               access_token=api.access_token, max_retries=0)
        else:
            client = openai.OpenAI(base_url=api.base_url, api_key=api.api_key, max_retries=0)
        kind = OpenAIProvider if name == "openai" else AnthropicProvider
        yield Wired(name, api, kind(MODELS[name], client=client, endpoint=Endpoint(name), backoff_base=0.001))


def request(messages: list[dict] | None = None, *, max_tokens: int = 4096) -> ModelRequest:
    return ModelRequest(system=SYSTEM, tools=TOOLS, max_tokens=max_tokens,
                        messages=messages or [{"role": "user", "content": [{"type": "text", "text": "Fix it."}]}])


def server_usage(api: Any) -> list[dict]:
    """The usage the fake reported for each reply, in the loop's four token classes."""
    usages = []
    for r in api.requests:
        u = r["usage"]
        if not u:
            continue
        if "prompt_tokens" in u:  # Chat Completions: cached tokens are part of prompt_tokens
            u = {"input_tokens": u["prompt_tokens"] - u["cached_tokens"], "output_tokens": u["completion_tokens"],
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": u["cached_tokens"]}
        usages.append(u)
    return usages
