"""Which files of the repository GitLab runs as CI/CD configuration: gitbot never pushes a change to them.

A pushed branch runs the pipeline its own configuration describes, with the project's CI/CD variables
(every one not marked protected). The agent works from issue and note text anyone can write, so a change
it made to that configuration, once pushed, could run a job holding the project's secrets. Those files
are left out of gitbot's commit and named in the merge request, as workflow files are on GitHub.

The configuration is the file CI_CONFIG_PATH names (by default .gitlab-ci.yml), everything under
.gitlab/ (where projects keep included CI files and templates), and every file those include, followed
through their includes. Any repository path ending in .yml or .yaml written in them counts: a superset
of `include: local:` that needs no YAML parser and that no quoting or anchor style escapes. A path with
`*` counts for every file it matches.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CONFIG = ".gitlab-ci.yml"
CI_DIRECTORY = ".gitlab/"
MAX_FILES = 200  # includes followed; a configuration is a handful of files
MAX_BYTES = 1024 * 1024
YAML_PATH = re.compile(r"[\w./*@+-]*\.ya?ml\b")
REASON = (
    "GitLab would run it as CI/CD configuration of gitbot's branch, with this project's CI/CD variables; "
    "apply it yourself after review"
)


@dataclass(frozen=True)
class CIConfiguration:
    files: frozenset[str]
    patterns: tuple[str, ...] = ()

    def holds(self, path: str) -> bool:
        return (
            path in self.files
            or path.startswith(CI_DIRECTORY)
            or any(fnmatch.fnmatchcase(path, pattern) for pattern in self.patterns)
        )


def read(workspace: Path, config_path: str | None) -> CIConfiguration:
    """The configuration as the work tree holds it now (before the agent runs)."""
    root = workspace.resolve()
    first = _in_repository(config_path or DEFAULT_CONFIG)
    files = {DEFAULT_CONFIG} | ({first} if first else set())
    patterns: list[str] = []
    queue = sorted(files)
    seen: set[str] = set()
    while queue and len(seen) < MAX_FILES:
        name = queue.pop()
        if name in seen:
            continue
        seen.add(name)
        for mention in YAML_PATH.findall(_text(root, name)):
            path = _in_repository(mention)
            if path is None:
                continue
            if "*" in path:
                patterns.append(path)
                queue += [p for p in _matches(root, path) if p not in seen]
            else:
                files.add(path)
                queue.append(path)
    return CIConfiguration(frozenset(files), tuple(dict.fromkeys(patterns)))


def _in_repository(mention: str) -> str | None:
    """A path as the repository names it, or None for a remote file or another project's (`file@project`)."""
    if "://" in mention or "@" in mention:
        return None
    path = mention.lstrip("/")
    if not path or path.startswith("../") or "/../" in path:
        return None
    return path.removeprefix("./")


def _text(root: Path, name: str) -> str:
    path = root / name
    try:
        if path.is_symlink() or not path.resolve().is_relative_to(root) or not path.is_file():
            return ""
        with path.open("rb") as handle:
            return handle.read(MAX_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def _matches(root: Path, pattern: str) -> list[str]:
    try:
        return sorted(
            str(p.relative_to(root)) for p in root.glob(pattern) if p.is_file() and not p.is_symlink()
        )[:MAX_FILES]
    except (OSError, ValueError):
        return []
