"""How gitbot talks to a GitLab instance: one python-gitlab client, configured once.

gitlab.com and self-managed instances alike: the client is pointed at the instance's URL (CI_SERVER_URL,
which may carry a path prefix: https://example.com/gitlab), or at CI_API_V4_URL. It authenticates with a
project (or personal) access token, or with the job's CI_JOB_TOKEN. python-gitlab and requests are imported
only when a client is made: `gitbot hook run` must start fast.
"""

from __future__ import annotations

from typing import Any

from gitbot.forge.interface import ForgeError

TIMEOUT_SECONDS = 30
PER_PAGE = 100
USER_AGENT = "gitbot"


def api_base(url: str) -> str:
    """The instance's URL from CI_SERVER_URL or CI_API_V4_URL (python-gitlab appends /api/v4 itself)."""
    return url.rstrip("/").removesuffix("/api/v4")


def connect(url: str, token: str, *, job_token: bool = False) -> Any:
    import gitlab
    import requests

    auth = {"job_token": token} if job_token else {"private_token": token}
    # python-gitlab sends the token as a header of its own (PRIVATE-TOKEN, JOB-TOKEN), which requests
    # carries along when a GET is redirected, to any host: no redirect is followed at all.
    session = requests.Session()
    session.max_redirects = 0
    return gitlab.Gitlab(
        api_base(url),
        session=session,
        timeout=TIMEOUT_SECONDS,
        per_page=PER_PAGE,
        # 429 is retried honouring Retry-After (python-gitlab's default); this adds 5xx and dropped
        # connections, with its backoff, at most ten times.
        retry_transient_errors=True,
        user_agent=USER_AGENT,
        # Follow pagination on the URL we were given, not the one the instance believes it has (behind a
        # proxy or a path prefix the two differ, and the token must not go elsewhere).
        keep_base_url=True,
        **auth,
    )


def errors() -> tuple[type[Exception], ...]:
    """What a call through the client raises when GitLab, or the way to it, fails."""
    import gitlab
    import requests

    return gitlab.exceptions.GitlabError, requests.RequestException


def forge_error(exc: Exception, doing: str) -> ForgeError:
    response = getattr(exc, "response", None)
    if response is not None and 300 <= response.status_code < 400:  # requests' TooManyRedirects
        where = response.headers.get("Location", "?")
        return ForgeError(
            f"{doing}: GitLab answered with a redirect to {where}; gitbot does not follow it with its token "
            "(is the instance URL right?)",
            response.status_code,
        )
    status = getattr(exc, "response_code", None)
    message = getattr(exc, "error_message", None) or str(exc)
    return ForgeError(f"{doing}: {status or ''} {message}".replace("  ", " ").strip(), status)
