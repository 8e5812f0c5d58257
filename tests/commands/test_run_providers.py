"""`gitbot run --provider bedrock|vertex|openai` as a user runs it: a real subprocess, the real SDK client
of each platform with its standard credentials, the loopback fake of its wire format, the scripted fix.

The cost on the receipt must be the server's reported usage times the prices: the platform's price for
Bedrock and Vertex, the policy's [model] prices for an OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitbot.llm.base import Endpoint
from gitbot.llm.pricing import ModelPrice, load_prices
from gitbot.llm.usage import Usage
from gitbot.record import load_events, runs_dir
from tests.conftest import FIX_DIFF, run_gitbot
from tests.fakes.bedrock_api import FakeBedrockAPI
from tests.fakes.messages_api import tool_turn
from tests.fakes.openai_api import FakeChatCompletionsAPI
from tests.fakes.vertex_api import FakeVertexAPI
from tests.llm.conftest import server_usage

pytestmark = pytest.mark.slow

SCRIPT = [
    tool_turn(("read_file", {"path": "stats.py"})),
    tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})),
    tool_turn(("attempt_completion", {"result": "fixed"})),
    tool_turn(("attempt_completion", {"result": "fixed mean"})),
]


def run_fix(repo: Path, env: dict[str, str], *args: str):
    proc = run_gitbot(["run", "--task", "Fix mean()", "--repo", str(repo), "--json", *args], env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "completed" and result["summary"] == "fixed mean", result
    assert "/ len(values)" in (repo / "stats.py").read_text()
    assert result["files_changed"] == ["stats.py"]
    return result, proc.stderr


def expected_cost(api, model: str, endpoint: Endpoint) -> float:
    return sum(load_prices().cost(model, Usage(**u), endpoint) for u in server_usage(api))


def test_bedrock_with_aws_keys_and_sigv4(buggy_repo: Path):
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    with FakeBedrockAPI(SCRIPT, session_token="fake-session-token-from-sts") as api:
        result, stderr = run_fix(buggy_repo, api.env(), "--provider", "bedrock", "--model", model)
    assert api.errors == [] and api.models == [model] * 4
    assert result["provider"] == f"bedrock (us-east-1, {api.url.removeprefix('http://')})"
    assert result["usage"] == {k: sum(u[k] for u in server_usage(api)) for k in result["usage"]}
    # A geographic inference profile (us.) costs the regional price: 10% over Anthropic's.
    cost = expected_cost(api, model, Endpoint("bedrock", region="us-east-1"))
    assert result["cost_usd"] == pytest.approx(cost, abs=1e-6)  # the JSON rounds to 6 places
    list_price = sum(load_prices().cost("claude-sonnet-4-5", Usage(**u)) for u in server_usage(api))
    assert cost == pytest.approx(list_price * 1.10)
    assert "bedrock (us-east-1" in stderr and "fake-session-token" not in stderr


def test_vertex_with_application_default_credentials(buggy_repo: Path, tmp_path: Path):
    model = "claude-sonnet-4-5@20250929"
    with FakeVertexAPI(SCRIPT, region="global") as api:
        env = api.env(api.credentials_file(tmp_path))
        result, _ = run_fix(buggy_repo, env, "--provider", "vertex", "--model", model)
    assert api.errors == [] and api.models == [model] * 4
    assert api.refreshes == 1  # one token from the service account's grant, reused for every request
    assert result["provider"].startswith("vertex (global, 127.0.0.1:")
    # The global endpoint costs Anthropic's list price.
    cost = expected_cost(api, model, Endpoint("vertex", region="global"))
    assert result["cost_usd"] == pytest.approx(cost, abs=1e-6)  # the JSON rounds to 6 places
    assert cost == pytest.approx(sum(load_prices().cost("claude-sonnet-4-5", Usage(**u)) for u in server_usage(api)))
    later = server_usage(api)[1:]
    assert all(u["cache_read_input_tokens"] > 0 for u in later)  # caching works on Vertex too


def test_openai_compatible_server_with_policy_prices(buggy_repo: Path, tmp_path: Path):
    policy = tmp_path / "policy.toml"
    policy.write_text('[model]\nprovider = "openai"\nname = "qwen-coder"\n'
                      "price_input = 0.6\nprice_output = 2.4\nprice_cache_read = 0.06\n")
    with FakeChatCompletionsAPI(SCRIPT) as api:
        result, stderr = run_fix(buggy_repo, {"OPENAI_API_KEY": api.api_key}, "--base-url", api.base_url,
                                 "--policy", str(policy))
    assert api.errors == []
    assert {r["body"]["model"] for r in api.requests} == {"qwen-coder"}
    assert result["provider"] == f"openai ({api.url.removeprefix('http://')})"
    usages = server_usage(api)
    assert sum(u["cache_read_input_tokens"] for u in usages) > 0  # cached_tokens counted as cache reads
    assert result["usage"]["cache_read_input_tokens"] == api.total_usage()["cached_tokens"]
    price = ModelPrice(input=0.6, output=2.4, cache_write=0.6, cache_read=0.06)
    assert result["cost_usd"] == pytest.approx(sum(price.cost(Usage(**u)) for u in usages), abs=1e-6)
    assert result["price_source"] == "policy" and "prices from the policy's [model] table" in stderr
    assert api.api_key not in stderr


def test_self_hosted_server_priced_at_zero_from_the_policy(buggy_repo: Path, tmp_path: Path):
    with FakeChatCompletionsAPI(SCRIPT, api_key=None) as api:
        policy = tmp_path / "policy.toml"
        policy.write_text(f'[model]\nprovider = "openai"\nname = "local-model"\nbase_url = "{api.base_url}"\n'
                          "price_input = 0\nprice_output = 0\n")
        # No key at all: a self-hosted server needs none.
        result, stderr = run_fix(buggy_repo, {}, "--policy", str(policy))
    assert result["cost_usd"] == 0.0 and "not in the price table" not in stderr
    assert {r["headers"]["authorization"] for r in api.requests} == {"Bearer unused"}
    events = list(load_events(runs_dir(buggy_repo) / result["run_id"]))
    start = events[0]
    assert (start["provider"], start["endpoint_host"]) == ("openai", api.url.removeprefix("http://"))
    replies = [e for e in events if e["event"] == "reply"]
    assert all("prompt_tokens" in r["provider_usage"] for r in replies)  # the server's own figures, kept


def test_openai_model_without_a_price_runs_with_unknown_cost(buggy_repo: Path):
    with FakeChatCompletionsAPI(SCRIPT) as api:
        result, stderr = run_fix(buggy_repo, api.env(), "--provider", "openai", "--model", "gpt-test")
    assert result["cost_usd"] is None
    assert "not in the price table" in stderr and "[model] table" in stderr


def test_a_provider_without_its_model_or_credentials_is_a_config_error(buggy_repo: Path, gitbot_in_process):
    # What the command decides before any request; the five starts are in this worker, not five SDK imports.
    proc = gitbot_in_process(["run", "--task", "x", "--repo", str(buggy_repo), "--provider", "bedrock"])
    assert proc.returncode == 2 and "needs a model id" in proc.stderr
    nowhere = {"AWS_CONFIG_FILE": "/nonexistent/config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/creds",
               "CLOUDSDK_CONFIG": "/nonexistent/gcloud"}
    proc = gitbot_in_process(["run", "--task", "x", "--repo", str(buggy_repo), "--provider", "bedrock", "--model", "m"],
                             env={**nowhere, "AWS_REGION": "us-east-1"})
    assert proc.returncode == 2 and "no AWS credentials found" in proc.stderr
    proc = gitbot_in_process(["run", "--task", "x", "--repo", str(buggy_repo), "--provider", "vertex", "--model", "m"],
                             env=nowhere)
    assert proc.returncode == 2 and "CLOUD_ML_REGION" in proc.stderr
    proc = gitbot_in_process(["run", "--task", "x", "--repo", str(buggy_repo), "--provider", "vertex", "--model", "m"],
                             env={**nowhere, "CLOUD_ML_REGION": "global"})
    assert proc.returncode == 2 and "no usable Google credentials" in proc.stderr
    proc = gitbot_in_process(["run", "--task", "x", "--repo", str(buggy_repo), "--provider", "openai", "--model", "m"])
    assert proc.returncode == 2 and "OPENAI_API_KEY is not set" in proc.stderr
    assert not runs_dir(buggy_repo).exists()


def test_resume_goes_back_to_the_same_endpoint(buggy_repo: Path):
    from tests.fakes.openai_api import fault

    script = [SCRIPT[0], fault("quota"), *SCRIPT[1:]]
    with FakeChatCompletionsAPI(script) as api, FakeChatCompletionsAPI([]) as decoy:
        first = run_gitbot(["run", "--task", "Fix mean()", "--repo", str(buggy_repo), "--json", "--provider",
                            "openai", "--model", "m", "--base-url", api.base_url], env={"OPENAI_API_KEY": api.api_key})
        assert first.returncode == 3 and "quota exhausted" in json.loads(first.stdout)["summary"]
        run_id = json.loads(first.stdout)["run_id"]
        # The environment now points elsewhere: the resumed run must still talk to the server it started with.
        resumed = run_gitbot(["resume", run_id, "--repo", str(buggy_repo), "--json"], env=decoy.env())
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "completed" and decoy.requests == []
    assert len(api.requests) == 5 and api.errors == []
