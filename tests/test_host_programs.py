"""gitbot's own programs on the host (git, find, rg) never come from a PATH entry a command can write."""

from __future__ import annotations

import json
import os

import pytest

from gitbot import host_programs
from tests.conftest import make_repo, run_gitbot
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn


def test_host_path_leaves_out_relative_entries_and_every_git_work_tree(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo", {"README.md": "# project\n"})
    kept = tmp_path / "tools" / "bin"  # outside any work tree; need not exist
    path = f"{repo}/node_modules/.bin:node_modules/.bin::{repo}/.git/hooks:{kept}:{repo}/../repo/x:/usr/bin:{kept}"
    monkeypatch.setenv("PATH", path)
    assert host_programs.host_path().split(":") == [str(kept), "/usr/bin"]


@pytest.mark.slow
def test_gitbot_run_never_runs_a_git_or_rg_a_command_plants_in_a_path_entry(tmp_path):
    """The user's PATH has the repository's `node_modules/.bin` (absolute) and `tools/bin` (relative to
    where gitbot is started: the repository), neither there yet. The model's first command makes a `git`
    and an `rg` in both; then it searches, lists, and runs another command (checkpoints, diff, the
    record): none of gitbot's own programs may be the planted ones."""
    pytest.importorskip("tests.sandbox.support").require_bwrap()
    repo = make_repo(tmp_path / "repo", {"README.md": "# project\n", "app.py": "print('hi')\n"})
    markers = tmp_path / "ran"
    markers.mkdir()
    plant = " && ".join(
        f"mkdir -p {where} && printf '#!/bin/sh\\ntouch {markers}/{where.replace('/', '_')}-{name}\\n"
        f"exec /usr/bin/{name} \"$@\"\\n' > {where}/{name} && chmod +x {where}/{name}"
        for where in ("node_modules/.bin", "tools/bin") for name in ("git", "rg"))
    script = [tool_turn(("execute_command", {"command": plant})),
              tool_turn(("search_files", {"path": ".", "regex": "hi"})),
              tool_turn(("list_files", {"path": ".", "recursive": True})),
              tool_turn(("write_to_file", {"path": "app.py", "content": "print('hello')\n"})),
              tool_turn(("execute_command", {"command": "true"})),
              tool_turn(("attempt_completion", {"result": "done"})),
              tool_turn(("attempt_completion", {"result": "done"}))]  # review-on-submit asks once more
    with FakeMessagesAPI(script) as api:
        proc = run_gitbot(["run", "--task", "x", "--repo", str(repo), "--json"], cwd=repo,
                          env={**api.env(), "PATH": f"{repo}/node_modules/.bin:tools/bin:{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stderr[-800:]
    assert (repo / "node_modules" / ".bin" / "git").is_file() and (repo / "tools" / "bin" / "rg").is_file()
    assert sorted(p.name for p in markers.iterdir()) == []
    # The run did use git on the host: its checkpoints hold the edit.
    shown = run_gitbot(["checkpoints", "list", "--repo", str(repo), "--json"])
    assert shown.returncode == 0 and len(json.loads(shown.stdout)) >= 2, shown.stderr[-400:]
