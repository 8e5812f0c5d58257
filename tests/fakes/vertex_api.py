"""A loopback Vertex AI for Claude: rawPredict and streamRawPredict under a project and region, OAuth
bearer tokens, Google's error bodies, and an OAuth token endpoint for google-auth's refresh.

`FakeVertexAPI(script)` is the Messages fake (tests/fakes/messages_api.py: the same turns, validation,
token counting and prompt cache) behind Vertex's wire format, so the real `AnthropicVertex` client talks
to it over a real socket:

    with FakeVertexAPI([text_turn("hi")]) as api:
        client = AnthropicVertex(region=api.region, project_id=api.project, access_token=api.access_token,
                                 base_url=api.base_url, max_retries=0)

Requests:

- `POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict` and
  `…:streamRawPredict`, for the server's project and region only (404 NOT_FOUND otherwise). The body is
  the Messages body without `model` (it is in the path; Vertex refuses it in the body) and with
  `anthropic_version` (required); `stream` must be true on streamRawPredict and absent or false on
  rawPredict. Every model id is accepted and recorded.
- `Authorization: Bearer <token>` with a token the server issued: `access_token` (static) or one from
  the token endpoint; anything else is 401 UNAUTHENTICATED.
- `POST /token` is an OAuth 2.0 token endpoint for the JWT-bearer grant a service account uses
  (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`, `assertion` = an RS256 JWT, form-encoded): the
  assertion's signature is checked against the service account's public key, its `iss`, `aud` (Google's
  token endpoint, as google-auth always names it), `scope` (cloud-platform) and times, and a new access token is issued. `credentials_file()`
  writes a `service_account` key file whose `token_uri` is this endpoint, so google-auth's Application
  Default Credentials refresh against it. (google-auth ignores the `token_uri` of `authorized_user` files.)

Responses are the Messages API's (JSON, or server-sent events for streamRawPredict). Errors are Google's
`{"error": {"code", "message", "status"}}`, except 529 overloaded, which passes Anthropic's body through.

Faults (`fault(kind)`): "429" (RESOURCE_EXHAUSTED), "500" (INTERNAL), "503" (UNAVAILABLE), "529"
(overloaded_error), "401" (UNAUTHENTICATED), "400" (INVALID_ARGUMENT), all without retry-after (Vertex sends
none); "reset", "garbage", "stream_error", "stream_cut", "no_sse", "missing_fields" as in the Messages fake.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

from tests.fakes.messages_api import FakeMessagesAPI, _invalid, _Refusal

PATH = re.compile(r"^/v1/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/publishers/anthropic/models/"
                  r"(?P<model>[^/:]+):(?P<method>rawPredict|streamRawPredict)$")
TOKEN_PATH = "/token"
# The audience a service account's assertion names, wherever its token_uri points (as Google expects).
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
HTTP_FAULTS = {
    "429": (429, "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model."),
    "500": (500, "Internal error encountered."),
    "503": (503, "The service is currently unavailable."),
    "401": (401, "Request had invalid authentication credentials. Expected OAuth 2 access token."),
    "400": (400, "fake server: scripted invalid request"),
}
UNSUPPORTED_FAULTS = ("spend_limit",)


class FakeVertexAPI(FakeMessagesAPI):
    """The Messages fake behind Vertex AI's rawPredict paths and OAuth bearer tokens."""

    def __init__(self, script: list[dict], *, project: str = "fake-project", region: str = "us-east5",
                 access_token: str = "ya29.fake-static-access-token", **kwargs: Any):
        for turn in script:
            if turn.get("fault") in UNSUPPORTED_FAULTS:
                raise ValueError(f"Vertex has no {turn['fault']!r} fault")
        super().__init__(script, **kwargs)
        self.project = project
        self.region = region
        self.access_token = access_token
        self.tokens = {access_token}
        self.client_email = f"gitbot@{project}.iam.gserviceaccount.com"
        self._public_key: Any = None
        self.refreshes = 0
        self.models: list[str] = []

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def credentials_file(self, directory: Path) -> Path:
        """A `service_account` key file (a fresh RSA key) whose token endpoint is this server."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._public_key = key.public_key()
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
        Path(directory).mkdir(parents=True, exist_ok=True)
        path = Path(directory) / "service-account.json"
        path.write_text(json.dumps({"type": "service_account", "project_id": self.project,
                                    "private_key_id": "fake-key-1", "private_key": pem,
                                    "client_email": self.client_email, "client_id": "1234567890",
                                    "token_uri": f"{self.url}{TOKEN_PATH}"}))
        return path

    def env(self, credentials: Path | None = None) -> dict[str, str]:
        """The standard variables pointing a process at this server (ADC from `credentials`)."""
        env = {"CLOUD_ML_REGION": self.region, "ANTHROPIC_VERTEX_PROJECT_ID": self.project,
               "ANTHROPIC_VERTEX_BASE_URL": self.base_url, "NO_GCE_CHECK": "True",
               "CLOUDSDK_CONFIG": "/nonexistent/gcloud"}
        if credentials is not None:
            env["GOOGLE_APPLICATION_CREDENTIALS"] = str(credentials)
        return env

    # -- requests

    def _accept(self, method: str, path: str, headers: dict, raw: bytes, body: Any,
                target: str) -> tuple[Any, Any]:
        if method == "POST" and path == TOKEN_PATH:
            return self._token(raw), None
        match = PATH.match(path)
        if method != "POST" or match is None or match.group("project") != self.project \
                or match.group("region") != self.region:
            raise _Refusal(404, "NOT_FOUND", f"fake server: no route for {method} {path}")
        authorization = headers.get("authorization", "")
        if not authorization.startswith("Bearer ") or authorization.removeprefix("Bearer ") not in self.tokens:
            raise _Refusal(401, "UNAUTHENTICATED", HTTP_FAULTS["401"][1])
        if body is None or not isinstance(body, dict):
            raise _invalid("Invalid JSON payload received.")
        if "model" in body:
            raise _invalid('Invalid JSON payload received. Unknown name "model": the model is in the URL.')
        if not isinstance(body.get("anthropic_version"), str):
            raise _invalid("anthropic_version: Field required")
        streaming = match.group("method") == "streamRawPredict"
        if (body.get("stream") is True) != streaming:
            raise _invalid(f"stream must be {'true' if streaming else 'false'} for {match.group('method')}")
        model = unquote(match.group("model"))
        self.models.append(model)
        return "messages", {**{k: v for k, v in body.items() if k != "anthropic_version"}, "model": model}

    def _token(self, raw: bytes) -> tuple:
        form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        problem = self._bad_assertion(form)
        if problem:
            self.errors.append(f"{TOKEN_PATH}: 400 invalid_grant: {problem}")
            return self._json(400, {"error": "invalid_grant", "error_description": problem})
        token = "ya29." + secrets.token_urlsafe(24)
        self.tokens.add(token)
        self.refreshes += 1
        return self._json(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    def _bad_assertion(self, form: dict[str, str]) -> str | None:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        if form.get("grant_type") != JWT_BEARER or "assertion" not in form or self._public_key is None:
            return "expected a JWT-bearer grant from the service account"
        try:
            header, payload, signature = form["assertion"].split(".")
            claims = json.loads(_unbase64(payload))
            if json.loads(_unbase64(header)).get("alg") != "RS256":
                return "the assertion is not RS256"
            self._public_key.verify(_unbase64(signature), f"{header}.{payload}".encode(), padding.PKCS1v15(),
                                    hashes.SHA256())
        except (ValueError, InvalidSignature):
            return "the assertion's signature is invalid"
        now = time.time()
        if claims.get("iss") != self.client_email or claims.get("aud") != GOOGLE_TOKEN_AUDIENCE:
            return "wrong issuer or audience"
        if CLOUD_PLATFORM not in str(claims.get("scope", "")).split():
            return "the cloud-platform scope is missing"
        if not claims.get("iat", now + 999) - 300 <= now <= claims.get("exp", 0):
            return "the assertion is expired or not yet valid"
        return None

    # -- responses

    def _fault(self, turn: dict, streaming: bool, model: str) -> tuple:
        kind = turn["fault"]
        if kind in HTTP_FAULTS:
            status, message = HTTP_FAULTS[kind]
            return self._error(status, STATUS_NAMES[status], turn.get("message") or message)
        return super()._fault(turn, streaming, model)

    def _error(self, status: int, error_type: str, message: str, *, headers: dict | None = None,
               details: dict | None = None) -> tuple:
        if status == 529:  # the model's own overload, passed through as Anthropic says it
            return super()._error(status, error_type, message)
        return self._json(status, {"error": {"code": status, "message": message,
                                             "status": STATUS_NAMES.get(status, "UNKNOWN")}})


def _unbase64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
