"""The bubblewrap arguments layout.py builds for every command, made with fewer system calls: they must
say exactly what asking about each path on its own says."""

from __future__ import annotations

import os

from gitbot.sandbox import layout
from gitbot.sandbox.env import under
from gitbot.sandbox.toolchain import CREDENTIAL_FILES, SYSTEM_DIRS


def masks_asked_one_by_one(empty: str) -> list[str]:
    args: list[str] = []
    for path in (*(os.path.join("/etc", name) for name in sorted(CREDENTIAL_FILES)), "/etc/xdg/pip/pip.conf"):
        if os.path.islink(path):
            path = os.path.realpath(path)
            if not any(under(path, directory) for directory in SYSTEM_DIRS):
                continue
        if os.path.isdir(path):
            args += ["--tmpfs", path]
        elif os.path.exists(path):
            args += ["--ro-bind", empty, path]
    return args


def test_etc_credential_masks_are_those_each_path_asked_on_its_own_gives():
    assert layout.etc_credential_masks("/empty") == masks_asked_one_by_one("/empty")


def test_a_protected_path_is_made_relative_as_relpath_would(tmp_path):
    repo = os.path.realpath(tmp_path)
    for path in (".gitbot", "AGENTS.md", "a/b/../c", f"{repo}/x/y", "./z", "a//b/", "../outside", repo, "/etc",
                 f"{repo}/.git/config", f"{repo}x/y"):
        expected = os.path.relpath(os.path.normpath(os.path.join(repo, path)), repo)
        inside = under(os.path.normpath(os.path.join(repo, path)), repo) and \
            os.path.normpath(os.path.join(repo, path)) != repo and expected.split("/", 1)[0] != ".git"
        assert layout._clean_relative(repo, path) == (expected if inside else None), path
