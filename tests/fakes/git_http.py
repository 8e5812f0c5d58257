"""Git's smart HTTP protocol served by the real `git http-backend`, for the fake forges on loopback.

The forge fakes decide who may fetch or push; this module only runs the CGI and reads what it answers,
so pushes land in a real bare repository exactly as git sends them.
"""

from __future__ import annotations

import os
import subprocess
import urllib.parse
from http.server import BaseHTTPRequestHandler
from pathlib import Path


def bare_repository(path: Path, default_branch: str) -> Path:
    """A new bare repository at `path` that http-backend serves and lets a client push to."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", default_branch, str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "config", "http.receivepack", "true"], check=True)
    return path


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body, whether sent with a length or chunked (git sends large pushes chunked)."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()
                break
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
        return b"".join(chunks)
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def http_backend(
    project_root: Path,
    *,
    path_info: str,
    method: str,
    query: dict[str, list[str]],
    headers: dict[str, str],
    body: bytes,
    remote_user: str,
) -> tuple[int, dict[str, str], bytes]:
    """Run `git http-backend` for one request; `headers` has lower-cased names."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_PROJECT_ROOT": str(project_root),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": path_info,
        "QUERY_STRING": urllib.parse.urlencode([(k, v) for k, vs in query.items() for v in vs]),
        "REQUEST_METHOD": method,
        "CONTENT_TYPE": headers.get("content-type", ""),
        "CONTENT_LENGTH": str(len(body)),
        "REMOTE_USER": remote_user,
        "REMOTE_ADDR": "127.0.0.1",
    }
    if headers.get("git-protocol"):
        env["GIT_PROTOCOL"] = headers["git-protocol"]
    if headers.get("content-encoding"):
        env["HTTP_CONTENT_ENCODING"] = headers["content-encoding"]
    done = subprocess.run(
        ["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60, check=False
    )
    head, sep, payload = done.stdout.partition(b"\r\n\r\n")
    if not sep:
        head, _, payload = done.stdout.partition(b"\n\n")
    status, answer = 200, {}
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.strip().split()[0])
        elif name:
            answer[name.strip()] = value.strip()
    return status, answer, payload
