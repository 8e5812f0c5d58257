"""make_provider: which provider, which model, which endpoint, and every missing piece a ConfigError
before any request. The clients built are the SDKs' own; nothing here sends a request."""

from __future__ import annotations

import os
import sys

import pytest

from gitbot.errors import ConfigError
from gitbot.llm.pricing import ModelPrice
from gitbot.llm.providers import make_provider
from gitbot.llm.settings import ModelSettings

NO_FILES = {"AWS_CONFIG_FILE": "/nonexistent/config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/creds",
            "AWS_EC2_METADATA_DISABLED": "true"}


def test_anthropic_is_the_default_with_its_default_model():
    provider = make_provider(environ={"ANTHROPIC_API_KEY": "sk-ant-test"})
    assert (provider.endpoint.provider, provider.model, provider.endpoint.host) == ("anthropic",
                                                                                   "claude-sonnet-5-5", None)


def test_an_explicit_key_goes_to_the_client_and_nowhere_else():
    before = dict(os.environ)
    provider = make_provider("gpt-x", provider="openai", api_key="sk-explicit-key-123", environ={})
    assert provider.client.api_key == "sk-explicit-key-123"
    assert provider.endpoint.host is None  # api.openai.com: nothing worth showing
    anthropic_provider = make_provider(api_key="sk-ant-explicit", environ={})
    assert anthropic_provider.client.api_key == "sk-ant-explicit"
    assert dict(os.environ) == before


def test_the_policy_settings_apply_to_their_own_provider_only():
    settings = ModelSettings(provider="openai", name="qwen", base_url="http://127.0.0.1:8000/v1",
                             price=ModelPrice(0, 0, 0, 0), context_window=32_000, max_output_tokens=4096)
    provider = make_provider(settings=settings, environ={})
    assert (provider.model, provider.endpoint.host, provider.max_output_tokens) == ("qwen", "127.0.0.1:8000", 4096)
    assert provider.endpoint.price == ModelPrice(0, 0, 0, 0) and provider.endpoint.context_window == 32_000
    assert str(provider.client.base_url) == "http://127.0.0.1:8000/v1/"
    # The command line chose another provider: none of the [model] table applies.
    other = make_provider(provider="anthropic", settings=settings, environ={"ANTHROPIC_API_KEY": "sk-ant-x"})
    assert other.model == "claude-sonnet-5-5" and other.endpoint.price is None


@pytest.mark.parametrize("url", ["https://attacker.example/v1", "http://10.1.2.3:8000/v1",
                                 "http://localhost.attacker.example/v1"])
def test_a_policy_cannot_send_the_key_to_a_remote_host(url: str):
    settings = ModelSettings(provider="openai", name="m", base_url=url)
    with pytest.raises(ConfigError, match="not on this machine"):
        make_provider(settings=settings, environ={"OPENAI_API_KEY": "sk-user-key"})
    # The user may point anywhere: on the command line, or in the environment.
    chosen = make_provider(base_url=url, settings=settings, environ={"OPENAI_API_KEY": "sk-user-key"})
    assert chosen.endpoint.host == url.split("/")[2]


@pytest.mark.parametrize("url", ["http://localhost:11434/v1", "http://127.0.0.1:8000/v1", "http://[::1]:1234/v1"])
def test_a_policy_may_name_a_local_server(url: str):
    assert make_provider(settings=ModelSettings(provider="openai", name="m", base_url=url), environ={}).model == "m"


@pytest.mark.parametrize("url,words", [("ftp://host/v1", "not an http(s) URL"),
                                       ("https://user:pw@host/v1", "must not hold credentials")])
def test_bad_base_urls(url: str, words: str):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        make_provider("m", provider="openai", base_url=url, environ={"OPENAI_API_KEY": "k"})


def test_unknown_provider_and_missing_model():
    with pytest.raises(ConfigError, match="unknown provider 'azure'"):
        make_provider("m", provider="azure", environ={})
    for name in ("bedrock", "vertex", "openai"):
        with pytest.raises(ConfigError, match=f"the {name} provider needs a model id"):
            make_provider(provider=name, environ={})


def test_bedrock_credentials_region_and_endpoint_from_the_given_environment():
    env = {**NO_FILES, "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret/key",
           "AWS_SESSION_TOKEN": "session-token", "AWS_REGION": "eu-central-1",
           "ANTHROPIC_BEDROCK_BASE_URL": "http://127.0.0.1:9"}
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("AWS_")}
    try:
        provider = make_provider("eu.anthropic.claude-sonnet-4-5-20250929-v1:0", provider="bedrock", environ=env)
    finally:
        os.environ.update(saved)
    client = provider.client
    assert (client.aws_access_key, client.aws_secret_key, client.aws_session_token) == (
        "AKIAEXAMPLE", "secret/key", "session-token")
    assert client.aws_region == "eu-central-1" and provider.endpoint.region == "eu-central-1"
    assert provider.endpoint.describe() == "bedrock (eu-central-1, 127.0.0.1:9)"


def test_bedrock_without_region_or_credentials(monkeypatch):
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    for name, value in NO_FILES.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match="needs an AWS region"):
        make_provider("m", provider="bedrock", environ=NO_FILES)
    with pytest.raises(ConfigError, match="no AWS credentials found"):
        make_provider("m", provider="bedrock", environ={**NO_FILES, "AWS_REGION": "us-east-1"})
    bearer = make_provider("m", provider="bedrock",
                           environ={**NO_FILES, "AWS_REGION": "us-east-1", "AWS_BEARER_TOKEN_BEDROCK": "bedrock-key"})
    assert bearer.client.api_key == "bedrock-key"


def test_vertex_with_an_access_token_and_region():
    provider = make_provider("claude-sonnet-4-5@20250929", provider="vertex", api_key="ya29.token",
                             environ={"CLOUD_ML_REGION": "global", "ANTHROPIC_VERTEX_PROJECT_ID": "proj"})
    assert provider.client.access_token == "ya29.token" and provider.client.project_id == "proj"
    assert provider.endpoint.describe() == "vertex (global)"
    with pytest.raises(ConfigError, match="needs a Google Cloud project"):
        make_provider("m", provider="vertex", api_key="ya29.token", environ={"CLOUD_ML_REGION": "global"})


def test_a_missing_extra_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)  # a machine where `gitbot[bedrock]` is not installed
    with pytest.raises(ConfigError, match=r"pip install 'gitbot\[bedrock\]'"):
        make_provider("m", provider="bedrock", environ={"AWS_REGION": "us-east-1"})


def test_openai_without_a_key_needs_a_base_url():
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        make_provider("m", provider="openai", environ={})
    local = make_provider("m", provider="openai", environ={"OPENAI_BASE_URL": "http://localhost:11434/v1"})
    assert local.client.api_key == "unused" and local.endpoint.host == "localhost:11434"
