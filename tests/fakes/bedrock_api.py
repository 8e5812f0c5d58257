"""A loopback Amazon Bedrock Runtime for Claude: SigV4 checked with botocore, invoke and
invoke-with-response-stream, AWS event-stream framing.

`FakeBedrockAPI(script)` is the Messages fake (tests/fakes/messages_api.py: the same turns, validation,
token counting and prompt cache) behind Bedrock's wire format, so the real `AnthropicBedrock` client
talks to it over a real socket:

    with FakeBedrockAPI([tool_turn(("read_file", {"path": "a.py"}))]) as api:
        client = AnthropicBedrock(aws_region=api.region, base_url=api.url, max_retries=0, **api.client_keys())

Requests:

- `POST /model/{modelId}/invoke` and `POST /model/{modelId}/invoke-with-response-stream`, the model id
  URL-encoded in the path. The body is the Messages body without `model` and `stream` (Bedrock refuses
  both: "extraneous key") and with `anthropic_version` (required). Every model id is accepted and recorded.
- Authentication: an AWS Signature Version 4 over the signed headers, the path and the body, recomputed
  with botocore from the server's own copy of the secret key (service `bedrock`, the server's region, a
  timestamp within 5 minutes, `x-amz-security-token` when the key has a session token); or a Bedrock API
  key as `Authorization: Bearer`. Failures are 403 with AWS's error types (InvalidSignatureException,
  UnrecognizedClientException, MissingAuthenticationTokenException).

Responses: `invoke` answers the Message JSON with `x-amzn-requestid` and the
`X-Amzn-Bedrock-Input-Token-Count` / `-Output-Token-Count` headers. The stream answers
`application/vnd.amazon.eventstream`: one binary event-stream message per Messages event, headers
`:event-type: chunk`, `:content-type: application/json`, `:message-type: event`, payload
`{"bytes": base64(event JSON), "p": padding}`; `message_stop` carries `amazon-bedrock-invocationMetrics`.
Errors are `{"message": ...}` with an `x-amzn-ErrorType` header; an error inside a stream is an exception
message (`:message-type: exception`, `:exception-type: modelStreamErrorException`).

Faults (`fault(kind)`): "429" ThrottlingException, "500" InternalServerException, "503" and "529"
ServiceUnavailableException (all transient, no retry-after: Bedrock sends none), "401" (403
UnrecognizedClientException), "400" ValidationException, "spend_limit" (400 ServiceQuotaExceededException);
"reset", "stream_cut", "stream_error", "no_sse", "missing_fields" as in the Messages fake, framed as
Bedrock frames them; "garbage" is a non-JSON body, or on a stream a frame whose checksum is wrong.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hmac
import json
import re
import struct
import zlib
from typing import Any
from urllib.parse import unquote

from tests.fakes.messages_api import FakeMessagesAPI, _invalid, _random_id, _Refusal

SERVICE = "bedrock"
PATH = re.compile(r"^/model/(?P<model>[^/]+)/(?P<op>invoke|invoke-with-response-stream)$")
AUTHORIZATION = re.compile(r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
                           r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), "
                           r"Signature=(?P<signature>[0-9a-f]{64})$")
MAX_CLOCK_SKEW = _dt.timedelta(minutes=5)
ERROR_TYPE_URL = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
# kind -> (HTTP status, Bedrock error type); the kinds not here behave as in the Messages fake.
HTTP_FAULTS = {
    "429": (429, "ThrottlingException", "Too many requests, please wait before trying again."),
    "500": (500, "InternalServerException", "The server encountered an internal error."),
    "503": (503, "ServiceUnavailableException", "Bedrock is unable to process your request."),
    "529": (503, "ServiceUnavailableException", "Model is getting throttled. Try your request again."),
    "401": (403, "UnrecognizedClientException", "The security token included in the request is invalid."),
    "400": (400, "ValidationException", "fake server: scripted invalid request"),
    "spend_limit": (400, "ServiceQuotaExceededException", "fake server: scripted service quota exceeded"),
}
STATUS_TYPES = {400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException",
                429: "ThrottlingException", 500: "InternalServerException", 503: "ServiceUnavailableException"}
PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123"


def event_stream_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude (total length, headers length, CRC32), string headers
    (type 7), payload, CRC32 of everything before it."""
    encoded = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        encoded += struct.pack("!B", len(raw_name)) + raw_name + struct.pack("!BH", 7, len(raw_value)) + raw_value
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack("!II", total, len(encoded))
    prelude += struct.pack("!I", zlib.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + encoded + payload
    return message + struct.pack("!I", zlib.crc32(message) & 0xFFFFFFFF)


def chunk_frame(event: dict) -> bytes:
    payload = json.dumps({"bytes": base64.b64encode(json.dumps(event).encode()).decode(), "p": PADDING}).encode()
    return event_stream_message({":event-type": "chunk", ":content-type": "application/json",
                                 ":message-type": "event"}, payload)


def exception_frame(exception_type: str, message: str) -> bytes:
    return event_stream_message({":exception-type": exception_type, ":content-type": "application/json",
                                 ":message-type": "exception"}, json.dumps({"message": message}).encode())


class FakeBedrockAPI(FakeMessagesAPI):
    """The Messages fake behind Bedrock Runtime's paths, SigV4 and event-stream framing."""

    def __init__(self, script: list[dict], *, region: str = "us-east-1", access_key: str = "AKIAFAKEBEDROCK0001",
                 secret_key: str = "fake/secret/key/for/loopback/tests/only", session_token: str | None = None,
                 bearer_token: str | None = None, **kwargs: Any):
        super().__init__(script, **kwargs)
        self.region = region
        self.keys = {access_key: (secret_key, session_token)}
        self.access_key = access_key
        self.bearer_token = bearer_token
        self.models: list[str] = []  # the model id of each routed request

    def client_keys(self) -> dict[str, str]:
        secret, token = self.keys[self.access_key]
        keys = {"aws_access_key": self.access_key, "aws_secret_key": secret}
        if token:
            keys["aws_session_token"] = token
        return keys

    def env(self) -> dict[str, str]:
        """The standard AWS variables (and the SDK's base-URL one) pointing a process at this server."""
        secret, token = self.keys[self.access_key]
        env = {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": self.region,
               "ANTHROPIC_BEDROCK_BASE_URL": self.url, "AWS_EC2_METADATA_DISABLED": "true",
               "AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-creds"}
        if token:
            env["AWS_SESSION_TOKEN"] = token
        return env

    # -- requests

    def _accept(self, method: str, path: str, headers: dict, raw: bytes, body: Any,
                target: str) -> tuple[Any, Any]:
        match = PATH.match(path)
        if method != "POST" or match is None:
            raise _Refusal(404, "UnknownOperationException", f"fake server: no route for {method} {path}")
        self._authenticate(method, target, headers, raw)
        if body is None or not isinstance(body, dict):
            raise _invalid("Malformed input request, please reformat your input and try again.")
        for key in ("model", "stream"):
            if key in body:
                raise _invalid(f"Malformed input request: #: extraneous key [{key}] is not permitted, please "
                               f"reformat your input and try again.")
        if not isinstance(body.get("anthropic_version"), str):
            raise _invalid("Malformed input request: #: required key [anthropic_version] not found, please "
                           "reformat your input and try again.")
        model = unquote(match.group("model"))
        self.models.append(model)
        messages = {k: v for k, v in body.items() if k not in ("anthropic_version", "anthropic_beta")}
        messages["model"] = model
        if match.group("op") == "invoke-with-response-stream":
            messages["stream"] = True
        return "messages", messages

    def _authenticate(self, method: str, target: str, headers: dict, raw: bytes) -> None:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        authorization = headers.get("authorization", "")
        if self.bearer_token is not None and authorization == f"Bearer {self.bearer_token}":
            return
        match = AUTHORIZATION.match(authorization)
        if match is None:
            raise _Refusal(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
        if match.group("key") not in self.keys:
            raise _Refusal(403, "UnrecognizedClientException", "The security token included in the request is invalid.")
        secret, token = self.keys[match.group("key")]
        if match.group("region") != self.region or match.group("service") != SERVICE:
            raise _Refusal(403, "InvalidSignatureException",
                           f"Credential should be scoped to a valid region and service ({self.region}/{SERVICE})")
        signed = match.group("signed").split(";")
        if "host" not in signed or "x-amz-date" not in signed or any(name not in headers for name in signed):
            raise _Refusal(403, "IncompleteSignatureException", "Signed headers must include host and x-amz-date")
        stamp = headers["x-amz-date"]
        try:
            when = _dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=_dt.UTC)
        except ValueError:
            raise _Refusal(403, "IncompleteSignatureException", f"bad x-amz-date {stamp!r}") from None
        if abs(_dt.datetime.now(_dt.UTC) - when) > MAX_CLOCK_SKEW or stamp[:8] != match.group("date"):
            raise _Refusal(403, "InvalidSignatureException", "Signature expired or not yet valid")
        if token is not None and (headers.get("x-amz-security-token") != token
                                  or "x-amz-security-token" not in signed):
            raise _Refusal(403, "UnrecognizedClientException", "The security token included in the request is invalid.")
        request = AWSRequest(method=method, url=f"http://{headers['host']}{target}",
                             headers={name: headers[name] for name in signed}, data=raw)
        request.context["timestamp"] = stamp
        signer = SigV4Auth(Credentials(match.group("key"), secret, token), SERVICE, self.region)
        expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        if not hmac.compare_digest(expected, match.group("signature")):
            raise _Refusal(403, "InvalidSignatureException",
                           "The request signature we calculated does not match the signature you provided.")

    # -- responses

    def _reply(self, turn: dict, body: dict, streaming: bool, record: dict) -> tuple:
        action = super()._reply(turn, body, streaming, record)
        if action[0] == "raw":
            usage = record["usage"]
            action[3]["x-amzn-bedrock-input-token-count"] = str(usage["input_tokens"])
            action[3]["x-amzn-bedrock-output-token-count"] = str(usage["output_tokens"])
        return action

    def _events(self, message: dict) -> list[tuple[str, dict]]:
        events = super()._events(message)
        usage = message["usage"]
        name, stop = events[-1]
        metrics = {"inputTokenCount": usage["input_tokens"], "outputTokenCount": usage["output_tokens"],
                   "invocationLatency": 5, "firstByteLatency": 1}
        events[-1] = (name, {**stop, "amazon-bedrock-invocationMetrics": metrics})
        return events

    def _stream(self, events: list[tuple[str, dict]]) -> tuple:
        frames = []
        for name, data in events:
            if name == "error":
                frames.append(exception_frame("modelStreamErrorException", data["error"]["message"]))
            else:
                frames.append(chunk_frame(data))
        return ("stream", 200, frames, {"content-type": "application/vnd.amazon.eventstream",
                                       "x-amzn-requestid": _random_id("", 32)})

    def _garbage_stream(self) -> tuple:
        frame = bytearray(chunk_frame({"type": "message_start"}))
        frame[-1] ^= 0xFF  # the message checksum no longer matches
        return ("stream", 200, [bytes(frame)], {"content-type": "application/vnd.amazon.eventstream"})

    def _fault(self, turn: dict, streaming: bool, model: str) -> tuple:
        kind = turn["fault"]
        if kind == "stream_error" and not streaming:
            kind = "529"
        if kind in HTTP_FAULTS:
            status, error_type, message = HTTP_FAULTS[kind]
            return self._error(status, error_type, turn.get("message") or message)
        return super()._fault(turn, streaming, model)

    def _error(self, status: int, error_type: str, message: str, *, headers: dict | None = None,
               details: dict | None = None) -> tuple:
        if not error_type.endswith("Exception"):  # a refusal of the Messages validation
            error_type = STATUS_TYPES.get(status, "ValidationException")
        request_id = _random_id("", 32)
        return self._json(status, {"message": message},
                          {"x-amzn-errortype": error_type + ERROR_TYPE_URL, "x-amzn-requestid": request_id})
