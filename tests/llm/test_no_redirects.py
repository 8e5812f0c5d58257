"""A provider's client never follows a redirect (issue 20, finding 5): an endpoint that answers 307/308
pointing elsewhere gets a clear provider error, and the other address receives nothing — not the
system prompt, not the repository's context. Real SDK clients built by make_provider, against the
provider's loopback fake behind a loopback redirector."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

import pytest

from gitbot.llm.base import ProviderError
from gitbot.llm.providers import make_provider
from tests.fakes.bedrock_api import FakeBedrockAPI
from tests.fakes.messages_api import FakeMessagesAPI, text_turn
from tests.fakes.openai_api import FakeChatCompletionsAPI
from tests.fakes.vertex_api import FakeVertexAPI
from tests.llm.conftest import MODELS, PROVIDERS, request

pytestmark = pytest.mark.slow


class Redirector:
    """127.0.0.1:<port> answering every request with `status` to the same path on `target`."""

    def __init__(self, target: str, status: int):
        self.target, self.status, self.hits = target, status, 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _redirect(self) -> None:
                outer.hits += 1
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                self.send_response(outer.status)
                self.send_header("Location", f"{outer.target}{self.path}")
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _redirect

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Self:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _fake(name: str):
    kind = {"openai": FakeChatCompletionsAPI, "anthropic": FakeMessagesAPI, "bedrock": FakeBedrockAPI, "vertex": FakeVertexAPI}[name]  # the OpenAI fake takes the same turns
    return kind([text_turn("hello")])


def _provider(name: str, api, base: str):
    if name == "anthropic":
        return make_provider(MODELS[name], provider=name, base_url=base, api_key=api.api_key, environ={})
    if name == "bedrock":
        env = {k: v for k, v in api.env().items() if k != "ANTHROPIC_BEDROCK_BASE_URL"}
        return make_provider(MODELS[name], provider=name, base_url=base, environ=env)
    if name == "vertex":
        return make_provider(MODELS[name], provider=name, base_url=f"{base}/v1", api_key=api.access_token,
                             environ={"CLOUD_ML_REGION": api.region, "ANTHROPIC_VERTEX_PROJECT_ID": api.project})
    return make_provider(MODELS[name], provider=name, base_url=f"{base}/v1", environ={"OPENAI_API_KEY": api.api_key})


@pytest.mark.parametrize("status", [307, 308])
@pytest.mark.parametrize("name", PROVIDERS)
def test_a_redirect_is_a_provider_error_and_the_other_host_gets_nothing(name: str, status: int):
    with _fake(name) as api, Redirector(api.url, status) as hop:
        provider = _provider(name, api, hop.url)
        with pytest.raises(ProviderError) as raised:
            provider.complete(request())
    assert hop.hits == 1  # asked once: a redirect is not a passing fault to retry
    assert api.requests == []
    assert f"redirect ({status})" in str(raised.value) and not raised.value.unexpected
