"""The loopback Vertex AI against the real AnthropicVertex client and google-auth: paths, bearer tokens,
the service-account token grant, Vertex's body rules and Google's error shapes."""

from __future__ import annotations

from pathlib import Path

import anthropic
import google.auth.exceptions
import httpx2
import pytest
from google.oauth2 import service_account

from tests.fakes.messages_api import fault, text_turn
from tests.fakes.vertex_api import FakeVertexAPI

pytestmark = pytest.mark.slow

MODEL = "claude-sonnet-4-5@20250929"
BODY = {"model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


def client(api: FakeVertexAPI, **changes) -> anthropic.AnthropicVertex:
    options = {"region": api.region, "project_id": api.project, "access_token": api.access_token, **changes}
    return anthropic.AnthropicVertex(base_url=api.base_url, max_retries=0, **options)


def test_raw_and_stream_raw_predict_with_a_static_token():
    with FakeVertexAPI([text_turn("plain"), text_turn("streamed")]) as api:
        assert client(api).messages.create(**BODY).content[0].text == "plain"
        with client(api).messages.stream(**BODY) as stream:
            assert stream.get_final_message().content[0].text == "streamed"
    assert [r["path"].rsplit(":", 1)[1] for r in api.requests] == ["rawPredict", "streamRawPredict"]
    assert api.models == [MODEL, MODEL] and api.errors == []
    assert all("model" not in r["body"] and r["body"]["anthropic_version"] for r in api.requests)


def test_a_wrong_token_project_or_region_is_refused():
    with FakeVertexAPI([text_turn("never")]) as api:
        with pytest.raises(anthropic.AuthenticationError) as raised:
            client(api, access_token="ya29.stolen").messages.create(**BODY)
        assert raised.value.body["error"]["status"] == "UNAUTHENTICATED"
        with pytest.raises(anthropic.NotFoundError):
            client(api, project_id="other-project").messages.create(**BODY)
        with pytest.raises(anthropic.NotFoundError):
            client(api, region="europe-west1").messages.create(**BODY)
    assert api.remaining_turns == 1 and len(api.errors) == 3


@pytest.mark.parametrize("body,words", [
    ({"model": MODEL, "anthropic_version": "v", "max_tokens": 5, "messages": []}, 'Unknown name "model"'),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}, "anthropic_version: Field required"),
    ({"anthropic_version": "v", "stream": True, "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
     "stream must be false for rawPredict"),
])
def test_vertex_body_rules(body: dict, words: str):
    with FakeVertexAPI([text_turn("never")]) as api:
        response = httpx2.post(f"{api.base_url}/projects/{api.project}/locations/{api.region}/publishers/anthropic/"
                               f"models/{MODEL}:rawPredict", json=body, timeout=10,
                               headers={"authorization": f"Bearer {api.access_token}"})
    assert response.status_code == 400 and words in response.json()["error"]["message"]
    assert response.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_service_account_credentials_refresh_against_the_token_endpoint(tmp_path: Path):
    with FakeVertexAPI([text_turn("one"), text_turn("two")]) as api:
        credentials = service_account.Credentials.from_service_account_file(api.credentials_file(tmp_path),
                                                                            scopes=SCOPES)
        vertex = client(api, access_token=None, credentials=credentials)
        vertex.messages.create(**BODY)
        vertex.messages.create(**BODY)
    assert api.refreshes == 1 and api.errors == []
    assert credentials.token in api.tokens and credentials.token != api.access_token


def test_an_assertion_signed_by_another_key_gets_no_token(tmp_path: Path):
    with FakeVertexAPI([text_turn("never")]) as api:
        first = api.credentials_file(tmp_path / "first")
        api.credentials_file(tmp_path / "second")  # a new key: the server now trusts only that one
        credentials = service_account.Credentials.from_service_account_file(first, scopes=SCOPES)
        with pytest.raises(google.auth.exceptions.RefreshError):
            client(api, access_token=None, credentials=credentials).messages.create(**BODY)
    assert api.refreshes == 0 and "signature is invalid" in api.errors[0]


@pytest.mark.parametrize("kind,error,status", [("429", anthropic.RateLimitError, "RESOURCE_EXHAUSTED"),
                                               ("503", anthropic.ServiceUnavailableError, "UNAVAILABLE"),
                                               ("500", anthropic.InternalServerError, "INTERNAL")])
def test_http_faults_use_google_error_shapes(kind: str, error: type, status: str):
    with FakeVertexAPI([fault(kind)]) as api, pytest.raises(error) as raised:
        client(api).messages.create(**BODY)
    assert raised.value.body["error"]["status"] == status and raised.value.body["error"]["code"] == int(kind)
