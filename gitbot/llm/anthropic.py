"""Claude through the Anthropic SDK: the Messages API, Amazon Bedrock and Google Vertex AI.

The three speak the same Messages format through the SDK's own clients (`Anthropic`,
`AnthropicBedrock`, `AnthropicVertex`, built in gitbot/llm/providers.py); only the errors differ a
little. The SDK's own retries are off (max_retries=0): gitbot retries itself (gitbot/llm/retry.py) so
it can tell a spend limit from a rate limit, honour retry-after, cap consecutive failures, and count
usage exactly once (only a reply that arrived is counted).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from gitbot.llm.base import Endpoint, MalformedReply, ModelReply, ModelRequest
from gitbot.llm.retry import (
    BACKOFF_BASE_SECONDS,
    Failure,
    redirect_failure,
    retry_after,
    unexpected,
    with_retries,
)
from gitbot.llm.usage import Usage

# The SDK refuses non-streaming requests it expects to take over 10 minutes (max_tokens > ~21,333).
STREAMING_ABOVE_MAX_TOKENS = 21_333
REQUEST_TIMEOUT_SECONDS = 600.0
# Error types sent inside a stream that started fine and that are worth retrying: the Messages API's,
# and Bedrock's event-stream exceptions (the SDK reports their names as the error type).
TRANSIENT_STREAM_ERRORS = ("overloaded_error", "api_error", "rate_limit_error", "throttlingException",
                           "internalServerException", "serviceUnavailableException",
                           "modelStreamErrorException", "modelTimeoutException")


class AnthropicProvider:
    is_replay = False

    def __init__(self, model: str, *, client: Any = None, endpoint: Endpoint | None = None,
                 backoff_base: float = BACKOFF_BASE_SECONDS, sleep=time.sleep):
        import anthropic  # imported here: it costs about a second, and fast paths never need it

        self.model = model
        self._anthropic = anthropic
        self.client = client or anthropic.Anthropic(max_retries=0)
        self.endpoint = endpoint or Endpoint("anthropic")
        self.backoff_base = backoff_base
        self._sleep = sleep

    def complete(self, request: ModelRequest) -> ModelReply:
        kwargs = {"model": self.model, "max_tokens": request.max_tokens, "system": request.system,
                  "tools": request.tools, "messages": request.messages}
        outcome = with_retries(lambda remaining: self._send(kwargs, request.max_tokens, remaining), self._classify,
                               deadline=request.deadline, backoff_base=self.backoff_base, sleep=self._sleep)
        return self._reply(outcome.value, outcome.waited, outcome.attempts, outcome.retry_log)

    def _send(self, kwargs: dict[str, Any], max_tokens: int, remaining: float | None):
        client = self.client
        if remaining is not None and remaining < REQUEST_TIMEOUT_SECONDS:
            client = client.with_options(timeout=max(remaining, 1.0))
        if max_tokens > STREAMING_ABOVE_MAX_TOKENS:
            with client.messages.stream(**kwargs) as stream:
                started = False
                for event in stream:
                    started = started or event.type == "message_start"
                if not started:
                    # A 200 whose body is not an event stream (a proxy's HTML error page) has no events.
                    content_type = stream.response.headers.get("content-type", "no content-type")
                    raise MalformedReply(f"the reply stream held no message ({content_type})")
                message = stream.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        _check_complete(message)
        return message

    def _reply(self, message: Any, waited: float, attempts: int, retry_log: list[str]) -> ModelReply:
        content = [block.model_dump(mode="json", exclude_none=True) for block in message.content]
        return ModelReply(content=content, stop_reason=message.stop_reason, usage=Usage.from_api(message.usage),
                          request_id=getattr(message, "_request_id", None) or getattr(message, "id", None),
                          wait_seconds=waited, attempts=attempts, retry_log=retry_log,
                          raw_usage=message.usage.model_dump(mode="json", exclude_none=True))

    def _classify(self, exc: Exception) -> Failure:
        a = self._anthropic
        if isinstance(exc, a.APIStatusError):
            status = exc.status_code
            message = _api_message(exc)
            headers = exc.response.headers if exc.response is not None else {}
            request_id = headers.get("request-id") or headers.get("x-amzn-requestid")
            where = f" (request id {request_id})" if request_id else ""
            if (redirect := redirect_failure(status, headers)) is not None:
                return redirect
            if status in (401, 403):
                return Failure(False, f"authentication failed ({status}): {message}{where}")
            if status == 429 and _is_spend_limit(exc):
                return Failure(False, f"spend limit reached (429): {message}{where}")
            if status < 400:  # an `error` event in the middle of a stream that started fine
                transient = _error_type(exc) in TRANSIENT_STREAM_ERRORS
                return Failure(transient, f"error in the reply stream: {message}{where}")
            if status in (408, 409, 429) or status >= 500:
                return Failure(True, f"HTTP {status}: {message}{where}", retry_after(headers))
            return Failure(False, f"request rejected ({status}): {message}{where}")
        if isinstance(exc, a.APIConnectionError):
            return Failure(True, f"connection failed: {exc}")
        if isinstance(exc, a.APIResponseValidationError):
            return Failure(True, f"malformed reply: {exc}")
        return _cloud_credentials_failure(exc) or unexpected(exc)


def _cloud_credentials_failure(exc: Exception) -> Failure | None:
    """Bedrock signs and Vertex authorizes each request with credentials the cloud SDK refreshes:
    a refresh that fails is an authentication problem (or, when the SDK says so, a passing one)."""
    google = sys.modules.get("google.auth.exceptions")
    if google is not None:
        if isinstance(exc, google.RefreshError):
            transient = bool(getattr(exc, "retryable", False))
            return Failure(transient, f"authentication failed: the Google credentials could not be refreshed: {exc}")
        if isinstance(exc, google.TransportError):
            return Failure(True, f"connection failed while refreshing the Google credentials: {exc}")
    botocore = sys.modules.get("botocore.exceptions")
    if botocore is not None and isinstance(exc, (botocore.NoCredentialsError, botocore.CredentialRetrievalError)):
        return Failure(False, f"authentication failed: no AWS credentials to sign the request with: {exc}")
    return None


def _check_complete(message: Any) -> None:
    """A reply the loop can use has content, a stop_reason and usage; a stream cut before its end, or a
    body missing fields, does not (the SDK builds such messages without complaint)."""
    if isinstance(message, str):  # the SDK hands back the text of a body that is not JSON (an HTML page)
        raise MalformedReply(f"the reply is not a message: {message[:80]!r}")
    stop_reason = getattr(message, "stop_reason", None)
    if not isinstance(getattr(message, "content", None), list):
        raise MalformedReply("the reply has no content list")
    if not isinstance(stop_reason, str):
        raise MalformedReply(f"the reply ended without a stop_reason ({stop_reason!r}): cut before its end")
    if getattr(message, "usage", None) is None:
        raise MalformedReply("the reply has no usage")


def _error_type(exc: Any) -> str | None:
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("type") if isinstance(error, dict) else None


def _api_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error") if isinstance(body.get("error"), dict) else body
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", exc))


def _is_spend_limit(exc: Any) -> bool:
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    if isinstance(details, dict) and details.get("error_code") == "enforced_spend_limit_reached":
        return True
    headers = exc.response.headers if getattr(exc, "response", None) is not None else {}
    return headers.get("x-should-retry", "").lower() == "false"
