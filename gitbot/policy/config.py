"""Reading `.gitbot/policy.toml`: every key checked before a run, every error with file and line.

tomllib reports no positions for values, so errors about a key or a list item locate it by
scanning the text for the key inside its table.
"""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path
from typing import Any

from gitbot import git
from gitbot.errors import GitError
from gitbot.llm.settings import PROVIDERS, ModelSettings
from gitbot.policy.base import Limits, PolicyError
from gitbot.policy.defaults import DEFAULT_POLICY_PATH, SANDBOX_MODES, SANDBOXED_COMMANDS
from gitbot.policy.files import GlobError, validate_path_glob

# table -> key -> kind
SCHEMA: dict[str, dict[str, str]] = {
    "files": {"read_deny": "file_globs", "edit_allow": "file_globs", "edit_deny": "file_globs"},
    "commands": {"allow": "command_patterns", "deny": "command_patterns", "sandboxed": "sandboxed_commands"},
    "sandbox": {"mode": "sandbox_mode", "network": "bool", "read_only": "host_paths",
                "rebuildable": "file_globs"},
    "limits": {"max_steps": "positive_int", "max_cost_usd": "positive_number",
               "max_consecutive_mistakes": "positive_int", "max_wall_seconds": "positive_number",
               "command_timeout_seconds": "positive_number", "keep_run_records": "positive_int"},
    # Which model answers, and where (credentials never go here: each provider's standard chain).
    # Prices are USD per million tokens and win over gitbot's table; zero is allowed (self-hosted).
    "model": {"provider": "provider", "name": "text", "base_url": "text", "context_window": "positive_int",
              "max_output_tokens": "positive_int", "price_input": "price", "price_output": "price",
              "price_cache_read": "price", "price_cache_write": "price"},
}
KIND_DESCRIPTIONS = {
    "file_globs": "a list of file globs (strings) relative to the repository root",
    "command_patterns": "a list of command patterns (strings such as \"pytest *\")",
    "host_paths": "a list of absolute paths (or ~/…) on this machine",
    "sandbox_mode": "one of " + ", ".join(f'"{mode}"' for mode in SANDBOX_MODES),
    "sandboxed_commands": "one of " + ", ".join(f'"{rules}"' for rules in SANDBOXED_COMMANDS),
    "bool": "true or false",
    "positive_int": "a whole number greater than 0",
    "positive_number": "a number greater than 0",
    "provider": "one of " + ", ".join(f'"{name}"' for name in PROVIDERS),
    "text": "a non-empty string",
    "price": "a number of US dollars per million tokens, 0 or more",
}
TOML_TYPE_NAMES = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "a list",
                   dict: "a table"}


def _type_name(value: Any) -> str:
    return TOML_TYPE_NAMES.get(type(value), type(value).__name__)


class _Locator:
    """Finds the line of a table, a key or a list item in the policy text."""

    _TABLE = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\s*(?:#.*)?$")

    def __init__(self, text: str):
        self.lines = text.splitlines()

    def _table_of_each_line(self):
        current = ""
        for number, line in enumerate(self.lines, start=1):
            match = self._TABLE.match(line)
            if match:
                current = match.group(1).replace('"', "").replace("'", "").strip()
            yield number, current, line, bool(match)

    def table(self, table: str) -> int | None:
        for number, current, _line, is_header in self._table_of_each_line():
            if is_header and current == table:
                return number
        return None

    def key(self, table: str, key: str) -> int | None:
        quoted = rf"(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')"
        in_table = re.compile(rf"^\s*{quoted}\s*=")
        dotted = re.compile(rf"^\s*{re.escape(table)}\s*\.\s*{quoted}\s*=")
        for number, current, line, is_header in self._table_of_each_line():
            if is_header:
                continue
            if current == table and in_table.match(line):
                return number
            if current == "" and dotted.match(line):
                return number
        return self.table(table)

    def item(self, table: str, key: str, value: str) -> int | None:
        start = self.key(table, key)
        if start is None:
            return None
        literals = (f'"{value}"', f"'{value}'", '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
        depth = 0
        for number in range(start, len(self.lines) + 1):
            line = self.lines[number - 1]
            if any(literal in line for literal in literals):
                return number
            depth += line.count("[") - line.count("]")
            if number > start and depth <= 0:
                break
        return start


def parse_policy(text: str, *, source: str, repo: Path | None = None):
    """A Policy from the text of a policy file; raises PolicyError naming `source` and the line."""
    import tomllib  # only when there is a policy file: a check run under the defaults never parses TOML

    from gitbot.policy.model import Policy

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = re.search(r"at line (\d+)", message)
        line = int(match.group(1)) if match else getattr(exc, "lineno", None)
        if line is None and "end of document" in message:
            line = max(1, len(text.splitlines()))
        raise PolicyError(source, line, f"not valid TOML: {message}") from None
    locate = _Locator(text)
    for table, content in data.items():
        if table not in SCHEMA:
            import difflib

            suggestion = difflib.get_close_matches(table, SCHEMA, n=1)
            hint = f" (did you mean [{suggestion[0]}]?)" if suggestion else ""
            expected = ", ".join(f"[{name}]" for name in SCHEMA)
            raise PolicyError(source, locate.table(table) or locate.key("", table),
                              f"unknown table or key '{table}'{hint}; expected the tables {expected}")
        if not isinstance(content, dict):
            raise PolicyError(source, locate.key("", table),
                              f"'{table}' must be a table ([{table}]), got {_type_name(content)}")
        for key in content:
            if key not in SCHEMA[table]:
                import difflib

                suggestion = difflib.get_close_matches(key, SCHEMA[table], n=1)
                hint = f" (did you mean '{suggestion[0]}'?)" if suggestion else ""
                raise PolicyError(source, locate.key(table, key),
                                  f"unknown key '{key}' in [{table}]{hint}; expected one of: "
                                  + ", ".join(SCHEMA[table]))
    values: dict[str, dict[str, Any]] = {}
    for table, keys in SCHEMA.items():
        values[table] = {}
        for key, kind in keys.items():
            if key in data.get(table, {}):
                values[table][key] = _validate(data[table][key], kind, table, key, source, locate)

    files = values["files"]
    commands = values["commands"]
    sandbox = values["sandbox"]
    limits = Limits(**values["limits"])
    kwargs: dict[str, Any] = {"limits": limits, "repo": repo, "source": source}
    for key in ("read_deny", "edit_allow", "edit_deny"):
        if key in files:
            kwargs[key] = tuple(files[key])
    if "allow" in commands:
        kwargs["command_allow"] = tuple(commands["allow"])
    if "deny" in commands:
        kwargs["command_deny"] = tuple(commands["deny"])
    if "sandboxed" in commands:
        kwargs["command_sandboxed"] = commands["sandboxed"]
    if "mode" in sandbox:
        kwargs["sandbox_mode"] = sandbox["mode"]
    if "network" in sandbox:
        kwargs["network"] = sandbox["network"]
    if "read_only" in sandbox:
        kwargs["sandbox_read_only"] = tuple(sandbox["read_only"])
    if "rebuildable" in sandbox:
        kwargs["sandbox_rebuildable"] = tuple(sandbox["rebuildable"])
    if values["model"]:
        kwargs["model"] = _model_settings(values["model"], source, locate)
    return Policy(**kwargs)


def _model_settings(model: dict[str, Any], source: str, locate: _Locator) -> ModelSettings:
    from gitbot.llm.pricing import ModelPrice  # only a policy with [model] prices needs it

    prices = {key.removeprefix("price_"): model[key] for key in model if key.startswith("price_")}
    price = None
    if prices:
        missing = [f"price_{k}" for k in ("input", "output") if k not in prices]
        if missing:
            raise PolicyError(source, locate.key("model", next(f"price_{k}" for k in prices)),
                              f"[model] gives prices without {' and '.join(missing)}: give at least the input "
                              "and output prices (cache prices default to the input price)")
        # Without cache prices, cached tokens cost what input costs: the receipt never undercounts.
        price = ModelPrice(input=prices["input"], output=prices["output"],
                           cache_write=prices.get("cache_write", prices["input"]),
                           cache_read=prices.get("cache_read", prices["input"]),
                           context_window=model.get("context_window", 200_000))
    return ModelSettings(provider=model.get("provider"), name=model.get("name"), base_url=model.get("base_url"),
                         price=price, context_window=model.get("context_window"),
                         max_output_tokens=model.get("max_output_tokens"))


def _validate(value: Any, kind: str, table: str, key: str, source: str, locate: _Locator) -> Any:
    where = f"[{table}] {key}"

    def fail(message: str, line: int | None = None) -> PolicyError:
        return PolicyError(source, line or locate.key(table, key), message)

    expected = KIND_DESCRIPTIONS[kind]
    if kind in ("file_globs", "command_patterns"):
        if not isinstance(value, list):
            raise fail(f"{where} must be {expected}, got {_type_name(value)}")
        for item in value:
            if not isinstance(item, str):
                raise fail(f"{where} must be {expected}, but it contains {_type_name(item)} ({item!r})")
            try:
                if kind == "file_globs":
                    validate_path_glob(item)
                else:
                    from gitbot.policy.judge.rules import split_pattern

                    split_pattern(item)
            except (GlobError, ValueError) as exc:
                what = "glob" if kind == "file_globs" else "command pattern"
                raise fail(f"invalid {what} {item!r} in {where}: {exc}", locate.item(table, key, item)) from None
        return value
    if kind == "host_paths":
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise fail(f"{where} must be {expected}, got {_type_name(value)}")
        for item in value:
            if not item.startswith(("/", "~/")) or "\0" in item:
                raise fail(f"{where} must be {expected}, but it contains {item!r}", locate.item(table, key, item))
        return value
    if kind in ("sandbox_mode", "sandboxed_commands"):
        if value not in (SANDBOX_MODES if kind == "sandbox_mode" else SANDBOXED_COMMANDS):
            raise fail(f"{where} must be {expected}, got {value!r}")
        return value
    if kind in ("provider", "text"):
        if not isinstance(value, str) or not value.strip() or (kind == "provider" and value not in PROVIDERS):
            raise fail(f"{where} must be {expected}, got {value!r}")
        return value.strip()
    if kind == "price":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise fail(f"{where} must be {expected}, got {value!r}")
        return float(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise fail(f"{where} must be {expected}, got {_type_name(value)} ({value!r})")
        return value
    # Numbers: TOML booleans are not numbers here, whatever Python thinks.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(f"{where} must be {expected}, got {_type_name(value)} ({value!r})")
    if kind == "positive_int" and not isinstance(value, int):
        raise fail(f"{where} must be {expected}, got {value!r}")
    if value <= 0:
        raise fail(f"{where} must be {expected}, got {value!r}")
    return value


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return git.run(args, cwd=repo, ok=range(256), timeout=30)


def read_policy_at_revision(repo: Path, revision: str, relpath: str) -> str | None:
    """The policy file's text at a git revision, or None when it does not exist there."""
    label = f"{revision}:{relpath}"
    try:
        verified = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    except GitError as exc:
        raise PolicyError(label, None, f"cannot run git to read the base policy: {exc}") from None
    if verified.returncode != 0:
        raise PolicyError(label, None, f"the base revision {revision!r} does not exist in {repo}; "
                                       f"the policy must come from the base revision, so the run cannot start")
    commit = verified.stdout.decode().strip()
    if _git(repo, "cat-file", "-e", f"{commit}:{relpath}").returncode != 0:
        return None
    shown = _git(repo, "cat-file", "blob", f"{commit}:{relpath}")
    if shown.returncode != 0:
        why = shown.stderr.decode("utf-8", "replace").strip()
        raise PolicyError(label, None, f"cannot read the policy at the base revision: {why}")
    try:
        return shown.stdout.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PolicyError(label, None, f"cannot read the policy file: {exc}") from None


def load_policy(repo: Path, policy_file: Path | None = None, *, base_ref: str | None = None):
    """The policy for a run in `repo`.

    policy_file: an explicit file (`--policy`); otherwise `.gitbot/policy.toml` in the repository.
    base_ref: read the repository's policy file from this revision instead of the working tree, so a
    change under review cannot loosen the policy it is judged by. No policy file → the defaults."""
    from gitbot.policy.model import Policy

    repo = Path(repo)
    if policy_file is not None:
        path = Path(policy_file)
        inside = None
        if base_ref is not None:
            try:
                inside = path.resolve().relative_to(repo.resolve()).as_posix()
            except ValueError:
                inside = None
        if inside is not None:
            text = read_policy_at_revision(repo, base_ref, inside)
            if text is None:
                raise PolicyError(f"{base_ref}:{inside}", None, "the policy file does not exist at the base revision")
            return parse_policy(text, source=f"{base_ref}:{inside}", repo=repo)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PolicyError(str(path), None, "the policy file does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyError(str(path), None, f"cannot read the policy file: {exc}") from None
        return parse_policy(text, source=str(path), repo=repo)
    if base_ref is not None:
        text = read_policy_at_revision(repo, base_ref, DEFAULT_POLICY_PATH)
        if text is None:
            return Policy(repo=repo, source=f"built-in defaults (no {DEFAULT_POLICY_PATH} at {base_ref})")
        return parse_policy(text, source=f"{base_ref}:{DEFAULT_POLICY_PATH}", repo=repo)
    path = repo / DEFAULT_POLICY_PATH
    if not path.is_file():
        return Policy(repo=repo, source=f"built-in defaults (no {DEFAULT_POLICY_PATH})")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(str(path), None, f"cannot read the policy file: {exc}") from None
    return parse_policy(text, source=str(path), repo=repo)
