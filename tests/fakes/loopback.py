"""What every forge fake shares: an HTTP server on 127.0.0.1 in a thread, started and stopped with the fake,
the handler's reading of a request, the request as recorded, and the way a handler sends an answer."""

from __future__ import annotations

import datetime as dt
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from tests.fakes.git_http import read_body


class LoopbackServer:
    """Serves `handler_class()` on a free port of 127.0.0.1 between start() and stop(); `with` does both."""

    server_url = ""
    _server: ThreadingHTTPServer | None = None

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def start(self) -> Self:
        server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler_class())
        server.daemon_threads = True
        self._server = server
        self.server_url = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=type(self).__name__, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def utcnow() -> dt.datetime:
    """A fake's clock: whole seconds, as the forges' timestamps have them."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


@dataclass
class Recorded:
    """One request as a fake saw it, kept in the fake's `requests` for a test to inspect."""

    method: str
    path: str  # without the API's prefix and the query; still URL-encoded
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, raw bytes for git, or None
    status: int = 0
    at: float = field(default_factory=time.monotonic)  # CLOCK_MONOTONIC: comparable across processes

    @property
    def route(self) -> str:
        return f"{self.method} {self.path}"


class FakeHandler(BaseHTTPRequestHandler):
    """A fake forge's handler: HTTP/1.1 with keep-alive, quiet, each request read whole (the body, the path,
    the query, lower-cased header names) before the fake's `answer` sees it."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def answer(self, raw: bytes, path: str, query: dict[str, list[str]], headers: dict[str, str]) -> None:
        raise NotImplementedError

    def _handle(self) -> None:
        raw = read_body(self)
        url = urllib.parse.urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.answer(raw, url.path, urllib.parse.parse_qs(url.query, keep_blank_values=True), headers)

    def _send(self, status: int, headers: dict[str, str], data: bytes) -> None:
        send(self, status, headers, data)

    do_GET = do_POST = do_PUT = do_DELETE = _handle


def send(handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], data: bytes) -> None:
    """One whole answer with its length (the fakes speak HTTP/1.1 with keep-alive)."""
    handler.send_response(status)
    for name, value in headers.items():
        if name.lower() not in ("content-length", "transfer-encoding"):
            handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(data)
