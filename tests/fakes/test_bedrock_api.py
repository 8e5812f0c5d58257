"""The loopback Bedrock Runtime against the real AnthropicBedrock client and botocore: SigV4 is really
checked, the event-stream framing is what botocore decodes, and Bedrock's body rules hold."""

from __future__ import annotations

import json

import anthropic
import httpx2
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

from tests.fakes.bedrock_api import FakeBedrockAPI, chunk_frame, exception_frame
from tests.fakes.messages_api import fault, text_turn

pytestmark = pytest.mark.slow

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BODY = {"model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}


def client(api: FakeBedrockAPI, **changes) -> anthropic.AnthropicBedrock:
    keys = {**api.client_keys(), **changes}
    region = keys.pop("aws_region", api.region)
    return anthropic.AnthropicBedrock(aws_region=region, base_url=api.url, max_retries=0, **keys)


def signed_post(api: FakeBedrockAPI, path: str, signed_body: bytes, sent_body: bytes | None = None):
    """A request signed with botocore for one body, sent (over real HTTP) with another."""
    url = f"{api.url}{path}"
    request = AWSRequest(method="POST", url=url, data=signed_body,
                         headers={"content-type": "application/json", "host": api.url.removeprefix("http://")})
    secret, token = api.keys[api.access_key]
    SigV4Auth(Credentials(api.access_key, secret, token), "bedrock", api.region).add_auth(request)
    return httpx2.post(url, content=sent_body if sent_body is not None else signed_body,
                       headers=dict(request.headers.items()), timeout=10)


def test_a_signed_request_is_served_and_the_model_comes_from_the_path():
    with FakeBedrockAPI([text_turn("hello"), text_turn("again")]) as api:
        message = client(api).messages.create(**BODY)
        body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 5,
                           "messages": [{"role": "user", "content": "x"}]}).encode()
        raw = signed_post(api, f"/model/{MODEL}/invoke", body)
    assert message.content[0].text == "hello" and api.models == [MODEL, MODEL]
    assert raw.status_code == 200 and raw.headers["x-amzn-bedrock-input-token-count"] == str(
        api.requests[1]["usage"]["input_tokens"])
    assert "model" not in api.requests[0]["body"] and "anthropic_version" in api.requests[0]["body"]


@pytest.mark.parametrize("changes,error", [
    ({"aws_secret_key": "not/the/secret"}, "InvalidSignatureException"),
    ({"aws_access_key": "AKIAUNKNOWNKEY000000"}, "UnrecognizedClientException"),
    ({"aws_region": "eu-west-1"}, "InvalidSignatureException"),
])
def test_a_bad_signature_is_refused(changes: dict, error: str):
    with FakeBedrockAPI([text_turn("never")]) as api, pytest.raises(anthropic.PermissionDeniedError):
        client(api, **changes).messages.create(**BODY)
    assert api.remaining_turns == 1 and error in api.errors[0] and " 403 " in api.errors[0]


def test_a_body_changed_after_signing_is_refused_and_a_session_token_is_required():
    body = json.dumps({"anthropic_version": "v", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})
    with FakeBedrockAPI([text_turn("never")]) as api:
        response = signed_post(api, f"/model/{MODEL}/invoke", body.encode(), body.replace("x", "y").encode())
    assert response.status_code == 403 and response.headers["x-amzn-errortype"].startswith("InvalidSignature")
    with FakeBedrockAPI([text_turn("never")], session_token="sts-token") as api, \
            pytest.raises(anthropic.PermissionDeniedError):
        client(api, aws_session_token=None).messages.create(**BODY)  # signed without the token


@pytest.mark.parametrize("change,words", [({"model": MODEL}, "extraneous key [model]"),
                                          ({"stream": True}, "extraneous key [stream]"),
                                          ({"anthropic_version": None}, "required key [anthropic_version]")])
def test_bedrock_body_rules(change: dict, words: str):
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    body = {k: v for k, v in {**body, **change}.items() if v is not None}
    with FakeBedrockAPI([text_turn("never")]) as api:
        response = signed_post(api, f"/model/{MODEL}/invoke", json.dumps(body).encode())
    assert response.status_code == 400 and words in response.json()["message"]
    assert response.headers["x-amzn-errortype"].startswith("ValidationException:")


def test_frames_are_what_botocore_decodes_and_a_bad_checksum_is_caught():
    buffer = EventStreamBuffer()
    buffer.add_data(chunk_frame({"type": "ping"}) + exception_frame("throttlingException", "slow down"))
    first, second = list(buffer)
    assert first.headers[":event-type"] == "chunk" and json.loads(first.payload)["bytes"]
    assert (second.headers[":message-type"], second.headers[":exception-type"]) == ("exception", "throttlingException")
    broken = bytearray(chunk_frame({"type": "ping"}))
    broken[-1] ^= 0xFF
    buffer = EventStreamBuffer()
    buffer.add_data(bytes(broken))
    with pytest.raises(ChecksumMismatch):
        list(buffer)


def test_streams_carry_invocation_metrics_and_errors_arrive_as_exceptions():
    with FakeBedrockAPI([text_turn("streamed"), fault("stream_error")]) as api:
        with client(api).messages.stream(**BODY) as stream:
            events = [e.type for e in stream]
            message = stream.get_final_message()
        with pytest.raises(anthropic.APIStatusError) as raised, client(api).messages.stream(**BODY) as stream:
            stream.get_final_message()
    assert events[0] == "message_start" and message.content[0].text == "streamed"
    assert raised.value.body["error"]["type"] == "modelStreamErrorException"


@pytest.mark.parametrize("kind,error", [("429", anthropic.RateLimitError), ("503", anthropic.ServiceUnavailableError),
                                        ("500", anthropic.InternalServerError),
                                        ("400", anthropic.BadRequestError)])
def test_http_faults_use_bedrock_error_shapes(kind: str, error: type):
    with FakeBedrockAPI([fault(kind)]) as api, pytest.raises(error) as raised:
        client(api).messages.create(**BODY)
    assert set(raised.value.body) == {"message"}
    assert raised.value.response.headers["x-amzn-errortype"].endswith("com.amazon.bedrock/")
