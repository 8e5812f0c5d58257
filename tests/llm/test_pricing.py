"""The price table: Anthropic ids, Bedrock and Vertex ids priced as the model they name with the
platform's factor for the endpoint, and configured prices (zero included) winning over the table."""

from __future__ import annotations

import pytest

from gitbot.llm.base import Endpoint
from gitbot.llm.pricing import ModelPrice, load_prices, platform_model
from gitbot.llm.usage import Usage

USAGE = Usage(input_tokens=1_000, output_tokens=2_000, cache_creation_input_tokens=3_000,
              cache_read_input_tokens=40_000)


@pytest.mark.parametrize("model,family,kind", [
    ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929", "regional"),
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929", "regional"),
    ("global.anthropic.claude-opus-4-6-v1", "claude-opus-4-6", "global"),
    ("us-gov.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5-20251001", "regional"),
    ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-sonnet-5-5-v1:0",
     "claude-sonnet-5-5", "global"),
])
def test_bedrock_ids(model: str, family: str, kind: str):
    assert platform_model("bedrock", model, "us-east-1") == (family, kind)


def test_vertex_ids_and_regions():
    assert platform_model("vertex", "claude-sonnet-4-5@20250929", "global") == ("claude-sonnet-4-5", "global")
    assert platform_model("vertex", "claude-opus-5-5", "europe-west1") == ("claude-opus-5-5", "regional")


def test_platform_prices_are_the_anthropic_price_times_the_factor():
    table = load_prices()
    anthropic = table.cost("claude-sonnet-4-5", USAGE)
    assert table.cost("global.anthropic.claude-sonnet-4-5-20250929-v1:0", USAGE, Endpoint("bedrock")) == \
        pytest.approx(anthropic)
    assert table.cost("eu.anthropic.claude-sonnet-4-5-20250929-v1:0", USAGE, Endpoint("bedrock")) == \
        pytest.approx(anthropic * 1.1)
    assert table.cost("claude-sonnet-4-5@20250929", USAGE, Endpoint("vertex", region="us-east5")) == \
        pytest.approx(anthropic * 1.1)
    assert table.cost("claude-sonnet-4-5@20250929", USAGE, Endpoint("vertex", region="global")) == \
        pytest.approx(anthropic)
    # Tiers scale too: Haiku 5.5 above 100k prompt tokens on a regional endpoint.
    big = Usage(input_tokens=150_000, output_tokens=1_000)
    assert table.cost("claude-haiku-5-5", big, Endpoint("vertex", region="us-east5")) == \
        pytest.approx(table.cost("claude-haiku-5-5", big) * 1.1)


def test_unknown_models_cost_unknown_and_configured_prices_win():
    table = load_prices()
    assert table.price("meta.llama3-70b-instruct-v1:0", Endpoint("bedrock")) is None
    assert table.price("gpt-5", Endpoint("openai")) is None
    free = ModelPrice(input=0, output=0, cache_write=0, cache_read=0)
    assert table.cost("gpt-5", USAGE, Endpoint("openai", price=free)) == 0.0
    own = ModelPrice(input=1, output=2, cache_write=1, cache_read=0.5)
    assert table.cost("claude-sonnet-5-5", USAGE, Endpoint("anthropic", price=own)) == pytest.approx(
        (1_000 * 1 + 2_000 * 2 + 3_000 * 1 + 40_000 * 0.5) / 1e6)
