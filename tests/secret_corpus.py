"""Planted secrets for tests, one per kind the scanner knows, built at run time from random characters
(so this file holds no secret-shaped literal that a push protection or gitbot's own scan would flag)."""

from __future__ import annotations

import base64
import json
import random
import string

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def rand(alphabet: str, n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def pem(kind: str = "RSA PRIVATE KEY", seed: int = 1) -> str:
    body = "\n".join(rand(B64, 64, seed + i) for i in range(6))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


def planted() -> dict[str, tuple[str, str]]:
    """name -> (text holding the secret, the secret's value as it appears in the text)."""
    pk = pem()
    sa_key = pem("PRIVATE KEY", 7)
    key_id = rand("0123456789abcdef", 40, 8)
    service_account = json.dumps({"type": "service_account", "project_id": "demo", "private_key_id": key_id,
                                  "private_key": sa_key + "\n", "client_email": "a@demo.iam.gserviceaccount.com"},
                                 indent=2)
    jwt = f"{_b64url({'alg': 'HS256', 'typ': 'JWT'})}.{_b64url({'sub': '1234567890', 'name': 'x'})}." \
          f"{rand(URLSAFE, 43, 9)}"
    values = {
        "rsa private key": (f"key:\n{pk}\n", pk),
        "openssh private key": (pem("OPENSSH PRIVATE KEY", 2), pem("OPENSSH PRIVATE KEY", 2)),
        "ec private key": (pem("EC PRIVATE KEY", 3), pem("EC PRIVATE KEY", 3)),
        "encrypted private key": (pem("ENCRYPTED PRIVATE KEY", 4), pem("ENCRYPTED PRIVATE KEY", 4)),
        "pgp private key": (pem("PGP PRIVATE KEY BLOCK", 5), pem("PGP PRIVATE KEY BLOCK", 5)),
        "gcp service account json": (service_account, json.dumps(sa_key + "\n")[1:-1]),
        "gcp service account key id": (service_account, key_id),
        "aws access key id": ("", "AKIA" + rand(UPPER, 16, 10)),
        "aws session key id": ("", "ASIA" + rand(UPPER, 16, 11)),
        "aws secret access key": ("aws_secret_access_key = {}\n", rand(B64, 40, 12)),
        "google api key": ("", "AIza" + rand(URLSAFE, 35, 13)),
        "google oauth client secret": ("", "GOCSPX-" + rand(URLSAFE, 28, 14)),
        "azure storage key": ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=x",
                              rand(B64, 86, 15) + "=="),
        "azure ad client secret": ("", rand(ALNUM, 3, 16) + "8Q~" + rand(ALNUM + "_~.-", 34, 17)),
        "github classic pat": ("", "ghp_" + rand(ALNUM, 36, 18)),
        "github oauth token": ("", "gho_" + rand(ALNUM, 36, 19)),
        "github app installation token": ("", "ghs_" + rand(ALNUM, 36, 20)),
        "github user-to-server token": ("", "ghu_" + rand(ALNUM, 36, 21)),
        "github refresh token": ("", "ghr_" + rand(ALNUM, 76, 22)),
        "github fine-grained pat": ("", "github_pat_11" + rand(UPPER, 20, 23) + "_" + rand(ALNUM, 59, 24)),
        "gitlab pat": ("", "glpat-" + rand(URLSAFE, 20, 25)),
        "gitlab runner token": ("", "glrt-" + rand(URLSAFE, 20, 26)),
        "slack bot token": ("", (f"xoxb-{rand(string.digits, 12, 27)}-{rand(string.digits, 13, 28)}-"
                                 f"{rand(ALNUM, 24, 29)}")),
        "slack webhook": ("", (f"https://hooks.slack.com/services/T{rand(UPPER, 8, 30)}/B{rand(UPPER, 10, 31)}/"
                               f"{rand(ALNUM, 24, 32)}")),
        "stripe live key": ("", "sk_live_" + rand(ALNUM, 24, 33)),
        "stripe restricted key": ("", "rk_live_" + rand(ALNUM, 24, 34)),
        "stripe webhook secret": ("", "whsec_" + rand(ALNUM, 32, 35)),
        "jwt": ("Authorization header value: {}", jwt),
        "anthropic key": ("", "sk-ant-api03-" + rand(URLSAFE, 93, 36) + "AA"),
        "openai project key": ("", "sk-proj-" + rand(URLSAFE, 120, 37)),
        "openai legacy key": ("", "sk-" + rand(ALNUM, 20, 38) + "T3BlbkFJ" + rand(ALNUM, 20, 39)),
        "npm token": ("", "npm_" + rand(ALNUM, 36, 40)),
        "pypi token": ("", "pypi-AgEIcHlwaS5vcmc" + rand(URLSAFE, 60, 41)),
        "huggingface token": ("", "hf_" + rand(string.ascii_letters, 34, 42)),
        "sendgrid key": ("", "SG." + rand(URLSAFE, 22, 43) + "." + rand(URLSAFE, 43, 44)),
        "telegram bot token": ("", rand(string.digits, 10, 45) + ":AA" + rand(URLSAFE, 33, 46)),
        "password assignment": ('DB_PASSWORD = "{}"\n', rand(ALNUM, 24, 47)),
        "client secret in json": ('{{"client_secret": "{}"}}', rand(ALNUM, 32, 48)),
        "api key in env file": ("PAYMENT_API_KEY={}\n", rand(ALNUM + "-_", 40, 49)),
        "url credentials": ("DATABASE_URL=postgres://admin:{}@db.internal:5432/app", rand(ALNUM, 20, 50)),
        "bearer header": ("curl -H 'Authorization: Bearer {}' https://api", rand(ALNUM, 40, 51)),
    }
    out = {}
    for name, (template, value) in values.items():
        text = template.format(value) if "{}" in template else (template or f"found: {value} (end)")
        out[name] = (text, value)
    return out


# Text that looks a little like a secret and is not one: none of it may be found.
NOT_SECRETS = [
    'password = os.environ["DB_PASSWORD"]',
    'api_key = "your-api-key-here-1234"',
    'secret = "xxxxxxxxxxxxxxxxxxxxxxxx"',
    "token = get_token(request, timeout=30)",
    '"input_tokens": 123456789012345678, "output_tokens": 12',
    '"integrity": "sha512-' + rand(B64, 86, 60) + '=="',
    "commit " + rand("0123456789abcdef", 40, 61),
    "checkout https://user@github.com/o/r and postgres://app:${DB_PASSWORD}@db/app",
    "id = 123e4567-e89b-12d3-a456-426614174000",
    "PASSWORD_MIN_LENGTH = 12",
    "tokenizer = Tokenizer.from_pretrained(model_name_or_path)",
    '"tool_use_id": "toolu_' + rand(ALNUM, 24, 62) + '"',
    "See https://example.com/docs?page=2#section for the sk- prefix",
    "-----BEGIN PUBLIC KEY-----\n" + rand(B64, 64, 63) + "\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\n" + rand(B64, 64, 64) + "\n-----END CERTIFICATE-----",
    "author: 41898282+github-actions[bot]@users.noreply.github.com",
]
