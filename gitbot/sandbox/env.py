"""The environments commands run with.

`build_env` is the agent's: built from an allow-list (plus the PATH and toolchain variables of the
user's toolchain view), never a secret, the same inside bubblewrap and without it. `user_check_env` is the user's own environment minus gitbot's credentials and git's
pointers at the commit in progress, for a hook's first run of the user's check. And
`protect_process_environ` keeps gitbot's own /proc/<pid>/environ, where the API key and tokens are,
away from every command.

This module is on the git hook's fast path: it imports only `os`, `sys` and gitbot.git at import time.
"""

from __future__ import annotations

import os
import sys

from gitbot.git import GIT_LOCAL_ENV

SANDBOX_HOME = "/tmp/gitbot-home"
# Copied from gitbot's environment when set; nothing else is.
PASSTHROUGH_VARIABLES = ("PATH", "LANG", "LC_ALL", "TZ", "CI")
FIXED_ENVIRONMENT = {
    "TERM": "dumb",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "NO_COLOR": "1",
    "CLICOLOR": "0",
    "PY_COLORS": "0",
    # Progress bars and prompts are noise (or a hang) for a non-interactive agent.
    "PIP_PROGRESS_BAR": "off",
    "PIP_NO_INPUT": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "npm_config_progress": "false",
    "npm_config_fund": "false",
    "npm_config_update_notifier": "false",
    "CARGO_TERM_PROGRESS_WHEN": "never",
    "DEBIAN_FRONTEND": "noninteractive",
    # Anything that would open an editor gets one that exits at once.
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_EDITOR": "true",
    "GIT_MERGE_AUTOEDIT": "no",
    "GIT_TERMINAL_PROMPT": "0",
    # Command-line-level git configuration (beats any config file): no bare repositories found by
    # discovery (a directory the agent wrote could carry core.fsmonitor), no hooks, no ext:: transport.
    "GIT_CONFIG_COUNT": "4",
    "GIT_CONFIG_KEY_0": "safe.bareRepository",
    "GIT_CONFIG_VALUE_0": "explicit",
    "GIT_CONFIG_KEY_1": "core.hooksPath",
    "GIT_CONFIG_VALUE_1": "/dev/null",
    "GIT_CONFIG_KEY_2": "protocol.ext.allow",
    "GIT_CONFIG_VALUE_2": "never",
    "GIT_CONFIG_KEY_3": "core.fsmonitor",
    "GIT_CONFIG_VALUE_3": "false",
}
DEFAULT_LANG = "C.UTF-8"

# Credentials gitbot itself uses: a check run in the user's own environment (the hook's first run)
# does not get them. (Checks that gitbot runs around a fix get the allow-listed environment.)
CHECK_SECRET_PREFIXES = ("ANTHROPIC_",)
CHECK_SECRET_NAMES = frozenset({"GITHUB_TOKEN", "GH_TOKEN", "GITBOT_GITHUB_TOKEN"})


# ---------------------------------------------------------------------------------------------
# The agent's environment


def _secret_like(name: str) -> bool:
    from gitbot.secrets import SECRET_ENV_NAMES, SECRET_NAME_HINTS

    upper = name.upper()
    return upper in SECRET_ENV_NAMES or any(hint in upper for hint in SECRET_NAME_HINTS)


def under(path: str, directory: str) -> bool:
    directory = directory.rstrip("/")
    return bool(directory) and (path == directory or path.startswith(directory + "/"))


def _writable_roots(repo: os.PathLike | str | None) -> list[str]:
    """Directories the agent (or anything else on the runner) can write programs into: a PATH entry
    there would let a program the agent wrote shadow a real one (`grep` in `.venv/bin`)."""
    roots = ["/tmp", "/var/tmp", "/dev/shm"]
    for candidate in (repo, os.environ.get("GITHUB_WORKSPACE"), os.path.expanduser("~")):
        if candidate:
            roots.append(str(candidate))
    found = set()
    for root in roots:
        if os.path.isabs(root):
            found.add(os.path.normpath(root))
            found.add(os.path.realpath(root))
    found.discard("/")
    return sorted(found)


def clean_path(value: str, repo: os.PathLike | str | None = None) -> str:
    # For gitbot's own helpers (finding bwrap and git), not for commands (their PATH is the user's, see
    # toolchain.py). Relative and empty entries mean "the current directory": the repository. Entries
    # inside the repository, /tmp, /var/tmp or $HOME hold programs others can write, so they go too.
    roots = _writable_roots(repo)
    entries = []
    for entry in value.split(":"):
        if not entry.startswith("/"):
            continue
        forms = {os.path.normpath(entry), os.path.realpath(entry)}
        if any(under(form, root) for form in forms for root in roots):
            continue
        entries.append(entry)
    return ":".join(dict.fromkeys(entries)) or "/usr/local/bin:/usr/bin:/bin"


def build_env(extra: dict[str, str] | None = None, *, home: str = SANDBOX_HOME,
              repo: os.PathLike | str | None = None, toolchain=None) -> dict[str, str]:
    """The complete environment for a tool's process, built from an allow-list.

    `extra` adds variables set by gitbot's own code; names that look like secrets are refused.
    `toolchain` (a toolchain.ToolchainView): the user's PATH as the sandbox keeps it and the variables
    that select their toolchain. Without one (gitbot's own helpers), PATH leaves out every directory
    the agent could write (`clean_path`, relative to `repo`)."""
    # Every command is prepared through here: make gitbot's own /proc/<pid>/environ unreadable first.
    protect_process_environ()
    env: dict[str, str] = {}
    for name in PASSTHROUGH_VARIABLES:
        value = os.environ.get(name)
        if value:
            env[name] = value
    if toolchain is not None:
        env["PATH"] = toolchain.path_value
        env.update({name: value for name, value in toolchain.variables.items() if not _secret_like(name)})
    else:
        env["PATH"] = clean_path(env.get("PATH", ""), repo)
    env.setdefault("LANG", DEFAULT_LANG)
    env.update(FIXED_ENVIRONMENT)
    env["HOME"] = home
    for name, value in (extra or {}).items():
        if _secret_like(name):
            raise ValueError(f"refusing to pass {name} to a tool: it looks like a secret")
        env[name] = str(value)
    _assert_no_secrets(env)
    return env


def _assert_no_secrets(env: dict[str, str]) -> None:
    from gitbot.secrets import Secrets

    known = Secrets.from_environment()
    for name, value in env.items():
        for secret in known.values:
            if secret in value:
                raise ValueError(f"refusing to pass {name} to a tool: its value contains a secret")


# ---------------------------------------------------------------------------------------------
# The user's environment, for the user's own check


def user_check_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a check the user configured, run in the user's own environment (a hook's
    checks before any fix): everything the hook got, minus gitbot's credentials, git's
    repository-locating variables, and the pre-commit framework's private virtual environment."""
    source = os.environ if environ is None else environ
    env = {name: value for name, value in source.items()
           if name not in CHECK_SECRET_NAMES and name not in GIT_LOCAL_ENV
           and not name.startswith(CHECK_SECRET_PREFIXES)}
    return without_framework_venv(env)


def framework_venv(environ: dict[str, str] | None = None) -> str | None:
    """The pre-commit framework's private virtual environment gitbot runs in, or None.

    Under the framework (`language: python`), `python` on PATH is that environment's interpreter, which
    has gitbot but not the project's tools: `python -m pytest` would fail with "No module named pytest".
    Detected by PRE_COMMIT=1 (set by the framework for every hook) or by the interpreter living in one
    of its environments (`py_env-*`)."""
    source = os.environ if environ is None else environ
    if sys.prefix == sys.base_prefix:
        return None  # not in a virtual environment at all
    if source.get("PRE_COMMIT") == "1" or os.path.basename(sys.prefix).startswith("py_env-"):
        return sys.prefix
    return None


def without_framework_venv(env: dict[str, str]) -> dict[str, str]:
    """`env` with the pre-commit framework's environment (see framework_venv) taken off PATH and
    VIRTUAL_ENV, so that a check's `python` is the project's, as when the user runs it by hand."""
    venv = framework_venv(env)
    if venv is None:
        return env
    real = os.path.realpath(venv)
    bin_dir = os.path.join(real, "bin")
    entries = env.get("PATH", "").split(os.pathsep)
    kept = [entry for entry in entries if not (entry and os.path.realpath(entry) == bin_dir)]
    env = dict(env)
    if len(kept) != len(entries):
        env["PATH"] = os.pathsep.join(kept)
    if env.get("VIRTUAL_ENV") and os.path.realpath(env["VIRTUAL_ENV"]) == real:
        del env["VIRTUAL_ENV"]
    return env


# ---------------------------------------------------------------------------------------------
# Keeping gitbot's own secrets away from every command

_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3
_LIBC = None


def protect_process_environ() -> bool:
    """Make gitbot's process non-dumpable, so processes of the same (non-root) user cannot read
    /proc/<gitbot>/environ, where the API key and tokens are. Called whenever a command is prepared
    (sandboxed or not); cheap and idempotent: one prctl to check, a second only when needed (the
    kernel resets the flag when the process changes credentials)."""
    global _LIBC
    import ctypes

    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(None, use_errno=True)
        if _LIBC.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) == 0:
            return True
        return _LIBC.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
