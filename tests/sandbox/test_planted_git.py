"""Issue 20, finding 2: code a command runs (here a test module under `python3 -m unittest`, as a check
would) must not leave anything that makes the user's own git run a program on the host afterwards.

Each attack goes through a real `gitbot run` with a scripted model, in the sandbox and without it; then
the user's own `git status`, `git diff`, `git log` and `git submodule status` run (as the user, on the
host, in the repository and in the planted directory) and the hostile hook's marker must not exist."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import GIT_IDENTITY, git, make_repo, run_gitbot
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

pytestmark = pytest.mark.slow

# What the hostile code does, as a test module's import. MARKER is where the hook would leave its mark.
HOOK = "import os, pathlib\nHOOK = pathlib.Path('hook.sh')\n" \
       "HOOK.write_text('#!/bin/sh\\necho pwned >> MARKER\\n'); HOOK.chmod(0o755)\n" \
       "FSMONITOR = '[core]\\n\\tfsmonitor = ' + str(HOOK.resolve()) + '\\n'\n"
ATTACKS = {
    # The review's attack: the submodule's gitfile pointed at a git directory the code wrote itself.
    "gitfile": HOOK + (
        "import shutil\n"
        "shutil.copytree('.git/modules/libsub', '.evil-libsub')\n"
        "config = pathlib.Path('.evil-libsub/config')\n"
        "config.write_text(config.read_text().replace('../../../libsub', '../libsub') + FSMONITOR)\n"
        "pathlib.Path('libsub/.git').write_text('gitdir: ../.evil-libsub\\n')\n"),
    # A nested repository's own config given an fsmonitor.
    "nested_config": HOOK + (
        "with open('nested/.git/config', 'a') as f: f.write(FSMONITOR)\n"),
    # A new repository inside the work tree, its config running the hook.
    "new_repo": HOOK + (
        "import subprocess\n"
        "subprocess.run(['git', 'init', '-q', 'planted'], check=True)\n"
        "with open('planted/.git/config', 'a') as f: f.write(FSMONITOR)\n"),
    # A bare git directory (git takes one for a repository when run inside it).
    "bare": HOOK + (
        "import subprocess\n"
        "subprocess.run(['git', 'init', '-q', '--bare', 'docs/bare'], check=True)\n"
        "with open('docs/bare/config', 'a') as f: f.write(FSMONITOR)\n"),
    # A .gitmodules setting that runs a command.
    "gitmodules": HOOK + (
        "with open('.gitmodules', 'a') as f: f.write('\\tupdate = !sh hook.sh\\n')\n"),
}


def user_git(repo: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The user's own git on the host, with their environment (no GIT_* of the test's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_IDENTITY)
    return subprocess.run(["git", *args], cwd=cwd or repo, capture_output=True, text=True, env=env, check=False)


def attacked_repo(tmp_path: Path) -> Path:
    lib = make_repo(tmp_path / "lib", {"lib.py": "X = 1\n"})
    nested_origin = make_repo(tmp_path / "nested-origin", {"n.txt": "n\n"})
    hostile = {f"test_{name}.py": code.replace("MARKER", str(tmp_path / "MARKER")) for name, code in ATTACKS.items()}
    harmless = {"test_ok.py": "import unittest\n\n\nclass Ok(unittest.TestCase):\n    def test_ok(self):\n        pass\n"}
    repo = make_repo(tmp_path / "repo", {"app.py": "print('app')\n", "docs/index.md": "# docs\n", **hostile,
                                         **harmless})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(lib), "libsub")
    git(repo, "commit", "-q", "-m", "submodule")
    git(repo, "clone", "-q", str(nested_origin), "nested")  # a nested repository, untracked
    return repo


def run_attacks(repo: Path, tmp_path: Path, mode: str) -> tuple[dict, dict[str, str]]:
    """One run whose steps are the attacks, in order; (its result, what the model was told after each)."""
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[commands]\nallow = ["python3 -m unittest *"]\n[sandbox]\nmode = "{mode}"\n')
    attacks = sorted(ATTACKS)
    # A step that succeeds after each attack: failed steps in a row would end the run (its mistake limit).
    script = [tool_turn(("execute_command", {"command": f"python3 -m unittest test_{name}"}))
              for name in attacks for name in (name, "ok")]
    script += [tool_turn(("attempt_completion", {"result": "done"}))] * 2
    with FakeMessagesAPI(script) as api:
        proc = run_gitbot(["run", "--task", "run the tests", "--repo", str(repo), "--policy", str(policy), "--json"],
                          env=api.env())
        told = {name: json.dumps(api.requests[2 * step + 1]["body"]["messages"][-1])
                for step, name in enumerate(attacks) if 2 * step + 1 < len(api.requests)}
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout), told


@pytest.mark.parametrize("mode", ["required", "off"])
def test_the_users_git_runs_nothing_the_agent_planted(tmp_path: Path, mode: str):
    if mode == "required":
        from tests.sandbox.support import require_bwrap

        require_bwrap()
    repo = attacked_repo(tmp_path)
    gitmodules = (repo / ".gitmodules").read_bytes()
    gitfile = (repo / "libsub" / ".git").read_bytes()
    nested_config = (repo / "nested" / ".git" / "config").read_bytes()
    result, told = run_attacks(repo, tmp_path, mode)
    # The user's own git, everywhere the planted metadata was, runs nothing of the agent's.
    places = [repo, repo / "libsub", repo / "nested", repo / "planted", repo / "docs" / "bare"]
    for place in (p for p in places if p.is_dir()):
        for args in (["status"], ["diff"], ["log", "-1"], ["submodule", "status"]):
            user_git(repo, *args, cwd=place)
    assert not (tmp_path / "MARKER").exists(), "the user's git ran the agent's hook"
    # Each step failed and said why (in the sandbox, the nested repository's config is read-only outright).
    for name in ATTACKS:
        refused = "Read-only file system" if mode == "required" and name == "nested_config" else "git metadata"
        assert refused in told[name], (name, told[name][-1500:])
    # What the run found is as it was, and what it planted is gone.
    assert (repo / ".gitmodules").read_bytes() == gitmodules
    assert (repo / "libsub" / ".git").read_bytes() == gitfile
    assert (repo / "nested" / ".git" / "config").read_bytes() == nested_config
    assert not (repo / ".evil-libsub").exists() and not (repo / "planted" / ".git").exists()
    assert not (repo / "docs" / "bare" / "HEAD").exists()
    # And none of it is in a checkpoint (from which a commit would be made).
    stored = git(repo, "--git-dir", str(repo / ".git" / "gitbot" / "shadow"), "ls-tree", "-r", "--name-only",
                 f"refs/gitbot/{result['run_id']}/{2 * len(ATTACKS)}")
    assert not [p for p in stored.splitlines() if p.startswith((".evil-libsub/", "planted/", "docs/bare/"))], stored
