"""A missing protected path gets nothing in the user's repository around a command (no mount point); one a
command creates is set aside right after it (sandbox/created.py), and so is a symlink it makes at a
read_deny name (sandbox/planted.py). Real bubblewrap, real commands, throwaway repositories."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox.created import ProtectedPathCreated
from gitbot.sandbox.planted import SET_ASIDE, CommandUndone
from gitbot.sandbox.runner import Runner
from tests.conftest import make_repo
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# project\n", "notes.txt": "notes\n"})


def sandboxed(repo: Path, **policy) -> Runner:
    require_bwrap()
    runner = Runner(Policy(repo=repo, sandbox_mode="required", **policy), repo)
    assert runner.sandboxed, runner.receipt_line
    return runner


def set_aside(repo: Path) -> list[Path]:
    store = repo / ".git" / "gitbot" / SET_ASIDE
    return sorted(store.iterdir()) if store.is_dir() else []


def test_a_commands_setup_leaves_the_repository_root_as_it_was(repo):
    # .gitbot, AGENTS.md and .github are all missing: a mount point for any of them would be made in the root.
    runner = sandboxed(repo)
    runner.run_shell("true", 30)  # the first command's one-off work (the read-deny index) is done
    before = os.lstat(repo).st_mtime_ns, sorted(os.listdir(repo))
    time.sleep(0.02)  # (past the file system's clock tick: a change would move the time)
    seen = runner.run_shell("ls -A", 30)
    assert (os.lstat(repo).st_mtime_ns, sorted(os.listdir(repo))) == before
    assert ".gitbot" not in seen.output.split() and "AGENTS.md" not in seen.output.split()


@pytest.mark.parametrize(("command", "made"), [
    ("mkdir -p .gitbot && printf '[commands]\\nallow = [\"*\"]\\n' > .gitbot/policy.toml", ".gitbot"),
    ("echo one > AGENTS.md && rm AGENTS.md && echo two > AGENTS.md", "AGENTS.md"),  # made, gone, made again
    ("ln -s /etc/passwd AGENTS.md", "AGENTS.md"),  # a symlink to a host path
    ("mkdir -p .github/workflows && echo 'on: push' > .github/workflows/ci.yml", ".github"),
])
def test_a_protected_path_a_command_creates_is_set_aside_and_the_command_fails(repo, command, made):
    runner = sandboxed(repo)
    with pytest.raises(ProtectedPathCreated, match=rf"created {made}, a protected path"):
        runner.run_shell(command, 30)
    assert not os.path.lexists(repo / made)
    kept = set_aside(repo)
    assert len(kept) == 1 and kept[0].name.endswith(f"-{made}")
    assert os.path.islink(kept[0]) == command.startswith("ln -s")  # the link itself, never what it leads to
    assert (repo / "README.md").read_text() == "# project\n"
    assert runner.run_shell("echo next", 30).output == "next\n"  # the run goes on


def test_a_protected_directory_under_a_parent_moved_away_and_made_again_is_set_aside(repo):
    (repo / ".github").mkdir()
    (repo / ".github" / "dependabot.yml").write_text("version: 2\n")
    runner = sandboxed(repo)
    with pytest.raises(ProtectedPathCreated, match=r"created \.github/workflows"):
        runner.run_shell("mv .github .github-old && mkdir -p .github/workflows && echo x > .github/workflows/ci.yml", 30)
    assert not os.path.lexists(repo / ".github" / "workflows")
    assert (repo / ".github-old" / "dependabot.yml").read_text() == "version: 2\n"  # the user's own, only moved


def test_a_parent_of_a_protected_directory_swapped_for_a_symlink_to_the_host_is_set_aside(repo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "workflows").mkdir(parents=True)
    (elsewhere / "workflows" / "ci.yml").write_text("on: push\n")
    (repo / ".github").mkdir()
    runner = sandboxed(repo)
    with pytest.raises(ProtectedPathCreated, match=r"created \.github,"):
        runner.run_shell(f"rmdir .github && ln -s {elsewhere} .github", 30)
    assert not os.path.lexists(repo / ".github")
    assert (elsewhere / "workflows" / "ci.yml").read_text() == "on: push\n"  # never followed


def test_a_background_process_cannot_create_a_protected_path_after_its_command_ends(repo):
    runner = sandboxed(repo)
    run = runner.run_shell("(sleep 0.5; mkdir .gitbot; echo x > .gitbot/policy.toml) >/dev/null 2>&1 &", 30)
    assert run.exit_code == 0
    time.sleep(1.0)  # it was killed when the command ended, before the check
    assert not os.path.lexists(repo / ".gitbot")


def test_without_a_sandbox_a_created_protected_path_is_set_aside_too(repo):
    runner = Runner(Policy(repo=repo, sandbox_mode="off"), repo)
    with pytest.raises(ProtectedPathCreated):
        runner.run_shell("mkdir .gitbot && echo x > .gitbot/policy.toml", 30)
    assert not os.path.lexists(repo / ".gitbot")
    assert len(set_aside(repo)) == 1


def test_a_check_that_creates_a_protected_path_fails_and_says_why(repo):
    runner = sandboxed(repo)
    run = runner.run_check(["sh", "-c", "touch AGENTS.md"], 30)
    assert run.exit_code == 1 and "AGENTS.md, a protected path" in run.output
    assert not os.path.lexists(repo / "AGENTS.md")


# -- symlinks at read_deny names --------------------------------------------------------------------------


def test_a_users_own_symlink_at_a_denied_name_is_left_alone_and_readable(repo):
    os.symlink("README.md", repo / "link.key")
    runner = sandboxed(repo)
    run = runner.run_shell("cat link.key && echo more >> notes.txt", 30)
    assert run.output == "# project\n"
    assert os.readlink(repo / "link.key") == "README.md"


def test_a_symlink_a_command_makes_at_a_denied_name_in_a_subdirectory_is_set_aside(repo):
    runner = sandboxed(repo)
    with pytest.raises(CommandUndone, match=r"symlink at a name the policy does not let you read \(config/\.env\)"):
        runner.run_shell("mkdir config && ln -s ../notes.txt config/.env", 30)
    assert not os.path.lexists(repo / "config" / ".env")
    assert any(path.name.endswith("config%.env") and path.is_symlink() for path in set_aside(repo))


def test_a_users_symlink_at_a_denied_name_a_command_points_elsewhere_is_put_back(repo):
    os.symlink("README.md", repo / "link.key")
    runner = sandboxed(repo)
    with pytest.raises(CommandUndone, match=r"\(link\.key\)"):
        runner.run_shell("ln -sfn notes.txt link.key", 30)
    assert os.readlink(repo / "link.key") == "README.md"
