"""make_provider: the one place a provider is chosen and its SDK client built.

Credentials come from each platform's standard chain, never from gitbot's own configuration:
ANTHROPIC_API_KEY; AWS credentials and region as boto3 finds them (environment, profile, SSO, role,
`aws-actions/configure-aws-credentials` on Actions) or AWS_BEARER_TOKEN_BEDROCK; Google Application
Default Credentials (`google-github-actions/auth` on Actions) with CLOUD_ML_REGION; OPENAI_API_KEY.
A key handed over explicitly (the Action's input) goes to the client and nowhere else: never into
os.environ, where child processes would inherit it.

What is missing (a key, a region, the extra that installs a cloud SDK) is a ConfigError before any
model request. Every client is built never to follow a redirect: the SDKs' default client follows
one to any host, dropping only the key header, so a base URL that answered with a redirect would send
the prompt (system prompt, repository context) elsewhere. A redirect is a provider error instead. SDKs are imported only here and in the provider modules, only when a model is called.
"""

from __future__ import annotations

import ipaddress
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from gitbot.errors import ConfigError
from gitbot.llm.base import Endpoint, Provider
from gitbot.llm.settings import PROVIDERS, ModelSettings

# Sonnet 5.5: strong at routine code fixes at half Opus 5.5's price, and its cache reads cost
# $0.10/M, which is what an agent loop mostly pays for. See README "Choosing a model".
DEFAULT_MODEL = "claude-sonnet-5-5"
# Model ids differ per platform, and which ones an account may call is the account's business:
# only the Anthropic API has a default.
MODEL_EXAMPLES = {
    "bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0 (an id or inference profile from the Bedrock console)",
    "vertex": "claude-sonnet-4-5@20250929 (a model id from the Vertex AI Model Garden)",
    "openai": "gpt-5, or the name your server gives the model (vLLM: the served model name)",
}
EXTRAS = {"bedrock": ("boto3", "bedrock"), "vertex": ("google.auth", "vertex"), "openai": ("openai", "openai")}
OPENAI_DEFAULT_HOST = "api.openai.com"
VERTEX_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


def make_provider(model: str | None = None, *, replay: Path | None = None, provider: str | None = None,
                  base_url: str | None = None, settings: ModelSettings | None = None, api_key: str | None = None,
                  environ: Mapping[str, str] | None = None) -> Provider:
    """The provider for a run. Arguments win over `settings` (the policy's [model] table), which win
    over the defaults; `api_key` is a key handed over explicitly (else the provider's standard one)."""
    if replay is not None:
        from gitbot.llm.replay import ReplayProvider

        return ReplayProvider(replay)
    settings = settings or ModelSettings()
    env = os.environ if environ is None else environ
    name = (provider or settings.provider or "anthropic").strip().lower()
    if name not in PROVIDERS:
        raise ConfigError(f"unknown provider {name!r}: expected one of {', '.join(PROVIDERS)}")
    if (settings.provider or "anthropic") != name:
        settings = ModelSettings()  # the policy describes another provider's model: none of it applies
    model = model or settings.name or (DEFAULT_MODEL if name == "anthropic" else None)
    if not model:
        raise ConfigError(f"the {name} provider needs a model id (--model, or `name` in the policy's [model] "
                          f"table), for example {MODEL_EXAMPLES[name]}")
    if not base_url and settings.base_url and not _is_loopback(settings.base_url):
        # The policy file travels with the repository: a repository must not be able to send the user's
        # key (or cloud token) to a host of its choosing. A remote endpoint is chosen by the user.
        raise ConfigError(f"the policy's [model] base_url {settings.base_url!r} is not on this machine: a "
                          "repository's policy may only point at a local server (localhost, 127.0.0.1, ::1). "
                          "Give a remote endpoint with --base-url, the provider's base-URL variable (e.g. "
                          "OPENAI_BASE_URL) or the Action's base-url input")
    url = _checked_url(base_url or settings.base_url)
    _require_extra(name)
    build = {"anthropic": _anthropic, "bedrock": _bedrock, "vertex": _vertex, "openai": _openai}[name]
    return build(model, url, settings, api_key, env)


def _endpoint(name: str, explicit: str | None, used: str | None, settings: ModelSettings,
              region: str | None = None, default_host: str | None = None) -> Endpoint:
    """`explicit`: the base URL the configuration chose (kept, so a resumed run goes back to it); `used`:
    the one the client talks to (explicit, or the SDK's own variable), shown unless it is the default."""
    host = urlsplit(used).netloc if used else None
    return Endpoint(provider=name, host=None if host == default_host else host, base_url=explicit, region=region,
                    price=settings.price, context_window=settings.context_window)


def _anthropic(model: str, url: str | None, settings: ModelSettings, api_key: str | None, env) -> Provider:
    if not (api_key or env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN")):
        raise ConfigError("ANTHROPIC_API_KEY is not set: gitbot needs an Anthropic API key to call the model "
                          "(export ANTHROPIC_API_KEY=…; ANTHROPIC_BASE_URL selects a compatible gateway)")
    import anthropic

    from gitbot.llm.anthropic import AnthropicProvider

    used = url or env.get("ANTHROPIC_BASE_URL") or None
    kwargs = {"api_key": api_key} if api_key else {}
    client = anthropic.Anthropic(base_url=used, max_retries=0, http_client=_no_redirects(anthropic), **kwargs)
    endpoint = _endpoint("anthropic", url, used, settings, default_host="api.anthropic.com")
    return AnthropicProvider(model, client=client, endpoint=endpoint)


def _no_redirects(sdk):
    """The SDK's own default HTTP client (its timeouts, limits and keep-alive), minus redirects."""
    return sdk.DefaultHttpxClient(follow_redirects=False)


def _bedrock(model: str, url: str | None, settings: ModelSettings, api_key: str | None, env) -> Provider:
    import anthropic
    import boto3
    from anthropic import AnthropicBedrock

    from gitbot.llm.anthropic import AnthropicProvider

    # Keys in the environment are passed on explicitly: in the Action they are no longer in os.environ
    # (nothing gitbot starts may inherit them), where boto3 would look.
    keys = {"aws_access_key": env.get("AWS_ACCESS_KEY_ID"), "aws_secret_key": env.get("AWS_SECRET_ACCESS_KEY"),
            "aws_session_token": env.get("AWS_SESSION_TOKEN")}
    keys = {k: v for k, v in keys.items() if v} if keys["aws_access_key"] and keys["aws_secret_key"] else {}
    session = boto3.Session(aws_access_key_id=keys.get("aws_access_key"),
                            aws_secret_access_key=keys.get("aws_secret_key"),
                            aws_session_token=keys.get("aws_session_token"))
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or session.region_name
    if not region:
        raise ConfigError("the bedrock provider needs an AWS region: set AWS_REGION (on Actions, the "
                          "aws-region input of aws-actions/configure-aws-credentials does)")
    bearer = api_key or env.get("AWS_BEARER_TOKEN_BEDROCK")
    if bearer:
        keys = {}
    elif session.get_credentials() is None:
        raise ConfigError("no AWS credentials found for the bedrock provider: configure them the standard way "
                          "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, an instance role; on "
                          "Actions aws-actions/configure-aws-credentials with OIDC), or AWS_BEARER_TOKEN_BEDROCK")
    used = url or env.get("ANTHROPIC_BEDROCK_BASE_URL") or None
    client = AnthropicBedrock(aws_region=region, base_url=used, max_retries=0, api_key=bearer or None,
                              http_client=_no_redirects(anthropic), **keys)
    return AnthropicProvider(model, client=client, endpoint=_endpoint("bedrock", url, used, settings, region))


def _vertex(model: str, url: str | None, settings: ModelSettings, api_key: str | None, env) -> Provider:
    import anthropic
    import google.auth
    import google.auth.exceptions
    from anthropic import AnthropicVertex

    from gitbot.llm.anthropic import AnthropicProvider

    region = env.get("CLOUD_ML_REGION")
    if not region:
        raise ConfigError("the vertex provider needs a region: set CLOUD_ML_REGION (for example `global`, "
                          "`us-east5` or `europe-west1`)")
    project = env.get("ANTHROPIC_VERTEX_PROJECT_ID") or env.get("GOOGLE_CLOUD_PROJECT")
    kwargs = {}
    if api_key:  # an access token handed over explicitly
        kwargs["access_token"] = api_key
    else:
        try:
            # The file named in the environment is read explicitly: in the Action the variable is no
            # longer in os.environ, where google.auth.default would look.
            path = env.get("GOOGLE_APPLICATION_CREDENTIALS")
            if path:
                # The file the environment names is trusted exactly as google.auth.default trusts it (which
                # silences the same warning about files from untrusted sources).
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    credentials, found_project = google.auth.load_credentials_from_file(
                        path, scopes=list(VERTEX_SCOPES))
            else:
                credentials, found_project = google.auth.default(scopes=list(VERTEX_SCOPES))
        except google.auth.exceptions.DefaultCredentialsError as exc:
            raise ConfigError(f"no usable Google credentials for the vertex provider ({exc}); run `gcloud auth "
                              "application-default login`, or on Actions google-github-actions/auth "
                              "with Workload Identity Federation") from None
        kwargs["credentials"] = credentials
        project = project or found_project
    if not project:
        raise ConfigError("the vertex provider needs a Google Cloud project: set ANTHROPIC_VERTEX_PROJECT_ID")
    used = url or env.get("ANTHROPIC_VERTEX_BASE_URL") or None
    client = AnthropicVertex(region=region, project_id=project, base_url=used, max_retries=0,
                             http_client=_no_redirects(anthropic), **kwargs)
    return AnthropicProvider(model, client=client, endpoint=_endpoint("vertex", url, used, settings, region))


def _openai(model: str, url: str | None, settings: ModelSettings, api_key: str | None, env) -> Provider:
    import openai

    from gitbot.llm.openai import OpenAIProvider

    used = url or env.get("OPENAI_BASE_URL") or None
    key = api_key or env.get("OPENAI_API_KEY")
    if not key:
        if not used:
            raise ConfigError("OPENAI_API_KEY is not set: the openai provider needs a key for api.openai.com "
                              "(or a base URL: --base-url, OPENAI_BASE_URL, or base_url in [model])")
        key = "unused"  # self-hosted servers (vLLM, Ollama, LM Studio) ignore it; the SDK wants one
    client = openai.OpenAI(api_key=key, base_url=used, max_retries=0, http_client=_no_redirects(openai))
    return OpenAIProvider(model, client=client,
                          endpoint=_endpoint("openai", url, used, settings, default_host=OPENAI_DEFAULT_HOST),
                          max_output_tokens=settings.max_output_tokens)


def _checked_url(url: str | None) -> str | None:
    if not url:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"base URL {url!r} is not an http(s) URL")
    if parts.username or parts.password:
        # The URL is shown on receipts and kept in the run record; a key belongs in the key variable.
        raise ConfigError("the base URL must not hold credentials (user:password@); put the key in the "
                          "provider's key variable instead")
    return url.strip()


def _is_loopback(url: str) -> bool:
    host = (urlsplit(url.strip()).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _require_extra(name: str) -> None:
    if name not in EXTRAS:
        return
    module, extra = EXTRAS[name]
    try:
        __import__(module)
    except ImportError:
        raise ConfigError(f"the {name} provider needs the {extra} extra: pip install 'gitbot[{extra}]'") from None
