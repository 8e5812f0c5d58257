"""The project configuration file, `.gitbot/config.toml` (committed with the project).

    [hooks.pre-commit]
    checks = ["ruff check .", "python -m pytest -q -x"]   # run in order, from the repository root
    fix = true                      # let the agent fix a failing check (needs the provider's credentials);
                                    # off unless set (`gitbot hook install` sets it, --no-fix does not)
    max_cost_usd = 0.50             # budget of one fix
    check_timeout_seconds = 300     # a check running longer counts as failed
    # model = "claude-sonnet-5-5"   # optional
    # max_steps = 30                # optional

    [hooks.pre-push]
    checks = ["python -m pytest -q"]

Each check is one command line, split like a shell would split it but not run by a shell (for
pipes or `&&`, write `sh -c '…'`). Unknown keys inside a [hooks.*] table are errors (a typo must
not silently disable a check); other top-level tables belong to other parts of gitbot.

This module is on the hook's fast path. It imports no dataclasses or pathlib, and a hook that finds
the file unchanged since its last run reads a parsed copy (marshal, built into the interpreter) from
`.git/gitbot/hooks/config.marshal` instead of importing tomllib and shlex (together ~8 ms at start-up).
"""

from __future__ import annotations

import marshal
import os

from gitbot.errors import ConfigError

CONFIG_RELPATH = ".gitbot/config.toml"
STAGES = ("pre-commit", "pre-push")
DEFAULT_HOOK_MAX_COST_USD = 0.50
DEFAULT_HOOK_CHECK_TIMEOUT_SECONDS = 300.0
STAGE_KEYS = {"checks", "fix", "max_cost_usd", "check_timeout_seconds", "model", "max_steps"}
CACHE_NAME = "config.marshal"
STATE_DIR = "gitbot/hooks"  # inside the git common dir: install records and the parsed-configuration cache
CACHE_FORMAT = 2  # bump when StageConfig's fields or defaults change


class ConfigFileError(ConfigError):
    """The configuration file exists but cannot be used; the message says where and why."""


class HookError(ConfigError):
    """A user-facing problem with installing or running a hook (exit 2)."""


def check_stage(stage: str) -> None:
    if stage not in STAGES:
        raise HookError(f"unknown hook stage {stage!r}; gitbot hooks run at {', '.join(STAGES)}")


class StageConfig:
    """One [hooks.<stage>] table, with the defaults filled in."""

    FIELDS = ("checks", "argv", "fix", "max_cost_usd", "check_timeout_seconds", "model", "max_steps")

    def __init__(self) -> None:
        self.checks: list[str] = []
        self.argv: list[list[str]] = []  # each check split into arguments, once, when the file is parsed
        self.fix = False  # opt-in: a hook never calls a paid API unless the configuration says so
        self.max_cost_usd = DEFAULT_HOOK_MAX_COST_USD
        self.check_timeout_seconds = DEFAULT_HOOK_CHECK_TIMEOUT_SECONDS
        self.model: str | None = None
        self.max_steps: int | None = None


class Config:
    def __init__(self, path: str, exists: bool, hooks: dict[str, StageConfig] | None = None):
        self.path = path
        self.exists = exists
        self.hooks = hooks or {}

    def stage(self, name: str) -> StageConfig:
        return self.hooks.get(name) or StageConfig()


def config_path(repo: str | os.PathLike) -> str:
    return os.path.join(os.fspath(repo), CONFIG_RELPATH)


def load_config(repo: str | os.PathLike, cache_dir: str | None = None) -> Config:
    """The configuration of the work tree at `repo`. With `cache_dir` (an existing directory), a parsed
    copy kept there is used while the file's size, times and inode are unchanged, and refreshed otherwise."""
    path = config_path(repo)
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return Config(path=path, exists=False)
    except OSError as exc:
        raise ConfigFileError(f"cannot read {CONFIG_RELPATH}: {exc}") from None
    key = (CACHE_FORMAT, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
    cache_file = os.path.join(cache_dir, CACHE_NAME) if cache_dir else None
    if cache_file:
        cached = _read_cache(cache_file, key)
        if cached is not None:
            return Config(path=path, exists=True, hooks=cached)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConfigFileError(f"cannot read {CONFIG_RELPATH}: {exc}") from None
    hooks = parse_hooks(parse_toml(raw))
    if cache_file and os.path.isdir(cache_dir):
        _write_cache(cache_file, key, hooks)
    return Config(path=path, exists=True, hooks=hooks)


def _read_cache(cache_file: str, key: tuple) -> dict[str, StageConfig] | None:
    try:
        with open(cache_file, "rb") as f:
            data = marshal.load(f)
        if data["key"] != key:
            return None
        hooks = {}
        for stage, fields in data["hooks"].items():
            config = StageConfig()
            for name in StageConfig.FIELDS:
                setattr(config, name, fields[name])
            hooks[stage] = config
        return hooks
    except (OSError, EOFError, ValueError, TypeError, KeyError, AttributeError):
        return None  # missing, stale format or damaged: parse the file instead


def _write_cache(cache_file: str, key: tuple, hooks: dict[str, StageConfig]) -> None:
    data = {"key": key, "hooks": {stage: {name: getattr(config, name) for name in StageConfig.FIELDS}
                                  for stage, config in hooks.items()}}
    tmp = f"{cache_file}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            marshal.dump(data, f)
        os.replace(tmp, cache_file)
    except OSError:
        pass  # a cache that cannot be written only costs the next run a parse


def parse_toml(raw: bytes) -> dict:
    import tomllib

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"{CONFIG_RELPATH} is not valid TOML: {exc}") from None


def parse_hooks(data: dict) -> dict[str, StageConfig]:
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigFileError(f"{CONFIG_RELPATH}: `hooks` must be a table, like [hooks.pre-commit]")
    stages = {}
    for stage, table in hooks.items():
        where = f"{CONFIG_RELPATH} [hooks.{stage}]"
        if stage not in STAGES:
            raise ConfigFileError(f"{where}: unknown stage; gitbot hooks run at {', '.join(STAGES)}")
        if not isinstance(table, dict):
            raise ConfigFileError(f"{where} must be a table")
        unknown = set(table) - STAGE_KEYS
        if unknown:
            raise ConfigFileError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                                  f"known: {', '.join(sorted(STAGE_KEYS))}")
        stages[stage] = _stage_config(table, where)
    return stages


def _stage_config(table: dict, where: str) -> StageConfig:
    config = StageConfig()
    checks = table.get("checks", [])
    if isinstance(checks, str):
        checks = [checks]
    if not isinstance(checks, list) or not all(isinstance(c, str) and c.strip() for c in checks):
        raise ConfigFileError(f"{where}: `checks` must be a list of command lines (strings)")
    config.checks = list(checks)
    config.argv = [_split(check, where) for check in checks]
    if "fix" in table:
        if not isinstance(table["fix"], bool):
            raise ConfigFileError(f"{where}: `fix` must be true or false")
        config.fix = table["fix"]
    for key in ("max_cost_usd", "check_timeout_seconds"):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigFileError(f"{where}: `{key}` must be a positive number")
            setattr(config, key, float(value))
    if "model" in table:
        if not isinstance(table["model"], str) or not table["model"]:
            raise ConfigFileError(f"{where}: `model` must be a model id (string)")
        config.model = table["model"]
    if "max_steps" in table:
        steps = table["max_steps"]
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ConfigFileError(f"{where}: `max_steps` must be a positive integer")
        config.max_steps = table["max_steps"]
    return config


def _split(check: str, where: str) -> list[str]:
    import shlex

    try:
        argv = shlex.split(check)
    except ValueError as exc:
        raise ConfigFileError(f"{where}: cannot split the check {check!r} into arguments: {exc}") from None
    if not argv:
        raise ConfigFileError(f"{where}: a check is empty")
    return argv


def example_stage_table(stage: str, checks: list[str] | None = None) -> str:
    """What to add to the configuration file for a stage (used in messages)."""
    return render_stage_table(stage, {"checks": checks or ["python -m pytest -q -x"], "fix": True,
                                      "max_cost_usd": DEFAULT_HOOK_MAX_COST_USD})


def render_stage_table(stage: str, values: dict) -> str:
    lines = [f"[hooks.{stage}]"]
    for key, value in values.items():
        lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _toml_value(value) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # A JSON string with non-ASCII kept literal is a valid TOML basic string.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def updated_config_text(existing: str | None, stage: str, *, checks: list[str] | None,
                        fix: bool | None) -> str:
    """The configuration text with [hooks.<stage>] updated; everything outside that table is kept verbatim.

    The table itself is rewritten from its parsed values (comments inside it are not kept).
    """
    existing = existing or ""
    data = parse_toml(existing.encode("utf-8")) if existing else {}
    current = dict(data.get("hooks", {}).get(stage, {}))
    if checks is not None:
        current["checks"] = list(checks)
    if fix is not None:
        current["fix"] = fix
    current.setdefault("checks", [])
    table = render_stage_table(stage, current)
    lines = existing.splitlines(keepends=True)
    header = f"[hooks.{stage}]"
    start = next((i for i, line in enumerate(lines) if line.strip() == header), None)
    if start is None:
        if not existing or existing.endswith("\n\n"):
            separator = ""
        else:
            separator = "\n" if existing.endswith("\n") else "\n\n"
        text = existing + separator + table
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
        # Keep a blank line before the next table, as it was.
        trailing = "".join(line for line in lines[start + 1:end] if not line.strip())
        text = "".join(lines[:start]) + table + (trailing if end < len(lines) else "") + "".join(lines[end:])
    try:
        parse_hooks(parse_toml(text.encode("utf-8")))  # never write a file the loader would refuse
    except ConfigFileError as exc:
        raise ConfigFileError(f"cannot update [hooks.{stage}] in {CONFIG_RELPATH} automatically ({exc}); "
                              "edit it by hand") from None
    return text
