"""The policy's [model] table: which provider and model, a local base URL, and prices (zero allowed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitbot.llm.pricing import ModelPrice
from gitbot.llm.settings import ModelSettings
from gitbot.policy import PolicyError, load_policy, parse_policy


def test_a_self_hosted_model_with_zero_prices(tmp_path: Path):
    policy = parse_policy('[model]\nprovider = "openai"\nname = "qwen2.5-coder"\nbase_url = "http://localhost:8000/v1"\n'
                          "context_window = 32768\nmax_output_tokens = 4096\nprice_input = 0\nprice_output = 0\n",
                          source="p.toml", repo=tmp_path)
    assert policy.model == ModelSettings(provider="openai", name="qwen2.5-coder", base_url="http://localhost:8000/v1",
                                         price=ModelPrice(0.0, 0.0, 0.0, 0.0, context_window=32768),
                                         context_window=32768, max_output_tokens=4096)


def test_cache_prices_default_to_the_input_price_and_no_table_means_no_settings(tmp_path: Path):
    policy = parse_policy("[model]\nprice_input = 1.5\nprice_output = 6\nprice_cache_read = 0.15\n",
                          source="p.toml", repo=tmp_path)
    assert policy.model.price == ModelPrice(input=1.5, output=6.0, cache_write=1.5, cache_read=0.15)
    assert parse_policy("", source="p.toml", repo=tmp_path).model == ModelSettings()


@pytest.mark.parametrize("text,line,words", [
    ('[model]\nprovider = "azure"\n', 2, 'must be one of "anthropic", "bedrock", "vertex", "openai"'),
    ("[model]\nname = 5\n", 2, "must be a non-empty string"),
    ("[model]\n\nprice_output = 2\n", 3, "without price_input"),
    ("[model]\nprice_input = -0.5\nprice_output = 1\n", 2, "0 or more"),
    ("[model]\nprice_input = true\nprice_output = 1\n", 2, "0 or more"),
    ("[model]\nmax_output_tokens = 0\n", 2, "a whole number greater than 0"),
    ("[model]\nbase_uri = 'http://localhost'\n", 2, "did you mean 'base_url'?"),
])
def test_model_table_errors(tmp_path: Path, text: str, line: int, words: str):
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path, path)
    assert caught.value.line == line and words in str(caught.value)
