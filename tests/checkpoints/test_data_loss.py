"""Nothing a sandboxed command does loses the user's files: what a restore to step 0 cannot bring back
(an ignored directory over the caps, a file over the size cap, a nested repository) it cannot touch,
and everything else, ignored files included, comes back byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitbot.checkpoints import Checkpointer, restore
from gitbot.policy import Policy
from gitbot.sandbox.runner import Runner
from tests.conftest import git, make_repo, run_gitbot

pytestmark = pytest.mark.slow
SIZE_CAP = 4096
WIPES = ["rm -rf ./* .[!.]*", "git clean -fdx", "find . -mindepth 1 -delete",
         "mv notes.txt moved.txt; mv cfg moved-cfg; mv vendor moved-vendor; mv .venv moved-venv; mv big.bin moved.bin"]
DIRECTORY_CAP = 20  # files in an ignored directory captured whole (a smaller cap than gitbot's: a faster test)


def user_files(repo: Path) -> dict[str, bytes]:
    """Every file and symlink of the work tree and its nested repositories, .git aside."""
    found = {}
    for directory, subdirs, files in os.walk(repo):
        subdirs[:] = [d for d in subdirs if not (directory == str(repo) and d == ".git")]
        for name in files:
            path = Path(directory, name)
            rel = str(path.relative_to(repo))
            found[rel] = b"-> " + os.fsencode(os.readlink(path)) if path.is_symlink() else path.read_bytes()
    return found


def a_users_repository(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {
        "app.py": "print('app')\n", "pkg/mod.py": "X = 1\n", "cfg/settings.toml": "a = 1\n",
        ".gitignore": "config.local.py\n*.pyc\nbig.bin\n.venv/\ndata/\n.env\ncfg/.env\n"})
    (repo / "notes.txt").write_text("untracked notes\n")
    (repo / "app.py").write_text("print('edited, not committed')\n")
    (repo / "config.local.py").write_text("DEBUG = True  # the user's own\n")
    (repo / "pkg" / "__pycache__").mkdir()
    (repo / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(bytes(range(256)))
    (repo / "data").mkdir()
    (repo / "data" / "small.csv").write_text("a,b\n1,2\n")
    os.symlink("small.csv", repo / "data" / "latest.csv")
    (repo / "big.bin").write_bytes(os.urandom(SIZE_CAP * 3))  # ignored, over the size cap
    (repo / "untracked-big.dat").write_bytes(os.urandom(SIZE_CAP * 2))  # untracked, over the size cap
    venv = repo / ".venv" / "lib"
    venv.mkdir(parents=True)
    for n in range(DIRECTORY_CAP + 1):  # an ignored directory over the caps
        (venv / f"m{n}.py").write_text(f"n = {n}\n")
    (repo / ".env").write_text("TOKEN=root-secret\n")  # read_deny, ignored
    (repo / "cfg" / ".env").write_text("TOKEN=nested-secret\n")  # read_deny, in a directory of its own
    nested = make_repo(repo / "vendor" / "lib", {"lib.py": "L = 1\n"})
    (nested / "scratch.txt").write_text("the nested repository's own untracked file\n")
    return repo


@pytest.mark.parametrize("wipe", WIPES)
def test_a_sandboxed_wipe_loses_nothing_that_restoring_step_0_does_not_bring_back(tmp_path: Path, wipe: str,
                                                                                    monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("gitbot.checkpoints.ignored.DIRECTORY_FILES_CAP", DIRECTORY_CAP)
    repo = a_users_repository(tmp_path)
    before = user_files(repo)
    dot_git = {p: (repo / ".git" / p).read_bytes() for p in ("HEAD", "index", "config")}
    policy = Policy(read_deny=(".env", "**/.env"))
    runner = Runner(policy, repo)
    assert runner.sandboxed, "bubblewrap must work here"
    checkpointer = Checkpointer(repo, "wipe", size_cap_bytes=SIZE_CAP, read_deny=policy.read_deny)
    checkpointer.take(0)
    runner.keep_read_only(checkpointer.unrestorable())
    assert "secret" not in runner.run_shell("cat .env cfg/.env", timeout=60).output  # kept, and still masked

    runner.run_shell(wipe, timeout=60)
    assert user_files(repo) != before, "the command changed nothing: the test proves nothing"
    checkpointer.take(1)
    report = restore(repo, "wipe", 0)

    assert user_files(repo) == before, report.summary()
    assert {p: (repo / ".git" / p).read_bytes() for p in dot_git} == dot_git


def test_a_file_changed_since_the_start_is_left_unless_forced_and_then_kept_in_a_copy(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", ".gitignore": "local.cfg\n"})
    (repo / "local.cfg").write_text("the user's\n")
    checkpointer = Checkpointer(repo, "changed")
    checkpointer.take(0)
    (repo / "local.cfg").write_text("rewritten by a build\n")
    checkpointer.take(1)

    kept = restore(repo, "changed", 0)
    assert (repo / "local.cfg").read_text() == "rewritten by a build\n"
    assert "--force" in kept.skipped["local.cfg"]

    forced = restore(repo, "changed", 0, force=True)
    assert (repo / "local.cfg").read_text() == "the user's\n"
    assert Path(forced.backed_up["local.cfg"]).read_text() == "rewritten by a build\n"
    git(repo, "status")  # the user's repository is still a repository


def test_an_agents_git_clean_is_undone_by_restoring_step_0_from_the_command_line(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch):
    from tests.agent.test_checkpoint_overlap import run_commands

    monkeypatch.setattr("gitbot.checkpoints.ignored.DIRECTORY_FILES_CAP", DIRECTORY_CAP)
    monkeypatch.setenv("GITBOT_CHECKPOINT_SIZE_CAP", str(SIZE_CAP))
    repo = a_users_repository(tmp_path)
    before = user_files(repo)
    result, _ = run_commands(repo, ["git clean -fdx", "mv cfg moved-cfg; mv big.bin moved.bin"],
                             Policy(command_allow=("git clean *", "mv *"), read_deny=(".env", "**/.env"),
                                    sandbox_rebuildable=("**/.venv",)))
    assert "config.local.py" not in user_files(repo)

    restored = run_gitbot(["checkpoints", "restore", result.run_id, "0", "--repo", str(repo)])
    assert restored.returncode == 0, restored.stderr
    # .venv is over the capture's cap and `[sandbox] rebuildable` names it (opted in): the run left it
    # writable for builds and installs, and the restore says it does not bring it back.
    assert user_files(repo) == {path: content for path, content in before.items() if not path.startswith(".venv/")}
    assert ".venv" in restored.stdout + restored.stderr and "not restored" in restored.stdout + restored.stderr


def test_what_no_restore_brings_back_is_refused_to_the_file_tools_too(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", ".github/workflows/ci.yml": "on: push\n"})
    (repo / "weird[1]*.bin").write_bytes(b"big")
    (repo / "vendor" / "lib").mkdir(parents=True)
    runner = Runner(Policy(), repo)
    runner.keep_read_only(["weird[1]*.bin", "vendor/lib"])
    rules = runner.policy.file_rules
    assert not rules.check_edit("weird[1]*.bin").allowed and not rules.check_edit("vendor/lib/a/b.py").allowed
    assert rules.check_edit("weird1x.bin").allowed and rules.check_edit("vendor/lib2.py").allowed
    # Kept paths are no protected directories: a command may not create those when missing, and these may come back.
    assert rules.protected_directories() == Policy().file_rules.protected_directories()


def test_a_kept_file_beside_a_protected_directory_leaves_both_read_only(tmp_path: Path):
    # Each pins .github; a pin made after the other's read-only mount would hide it (bwrap binds from the host).
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", ".github/workflows/ci.yml": "on: push\n"})
    (repo / ".github" / "big.bin").write_bytes(b"the user's big file")
    (repo / ".github" / "deep").mkdir()
    (repo / ".github" / "deep" / "data.bin").write_bytes(b"another")
    runner = Runner(Policy(), repo)
    runner.keep_read_only([".github/big.bin", ".github/deep/data.bin"])
    run = runner.run_shell("echo changed > .github/workflows/ci.yml; rm -f .github/big.bin .github/deep/data.bin; "
                           "mv .github/deep .github/moved; mv .github .gh", timeout=60)
    assert run.output.count("Read-only file system") + run.output.count("busy") >= 4, run.output
    assert (repo / ".github" / "workflows" / "ci.yml").read_text() == "on: push\n"
    assert (repo / ".github" / "big.bin").read_bytes() == b"the user's big file"
    assert (repo / ".github" / "deep" / "data.bin").read_bytes() == b"another"


def test_a_read_deny_file_there_at_the_start_is_refused_to_the_file_tools(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", ".gitignore": ".env\nlocal/\n"})
    (repo / ".env").write_text("TOKEN=the user's\n")
    (repo / "local").mkdir()
    (repo / "local" / "id_rsa").write_text("a key\n")
    policy = Policy()  # the default read_deny: .env, **/id_rsa*, ...
    checkpointer = Checkpointer(repo, "denied", read_deny=policy.read_deny)
    checkpointer.take(0)
    runner = Runner(policy, repo)
    runner.keep_read_only(checkpointer.unrestorable())
    rules = runner.policy.file_rules
    assert not rules.check_edit(".env").allowed and not rules.check_edit("local/id_rsa").allowed
    assert rules.check_edit(".env.example").allowed is policy.file_rules.check_edit(".env.example").allowed


def test_ignored_files_beyond_the_capture_budget_are_kept_read_only_not_lost(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("gitbot.checkpoints.ignored.IGNORED_FILES_CAP", 2)
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", ".gitignore": "*.local\n"})
    for name in ("a.local", "b.local", "c.local"):
        (repo / name).write_text(name)
    checkpointer = Checkpointer(repo, "budget")
    checkpointer.take(0)
    kept = checkpointer.unrestorable()
    assert list(kept) == ["c.local"] and "budget" in kept["c.local"]
    for name in ("a.local", "b.local"):
        (repo / name).unlink()
    checkpointer.take(1)
    assert sorted(restore(repo, "budget", 0).written) == ["a.local", "b.local"]
    assert all((repo / name).read_text() == name for name in ("a.local", "b.local", "c.local"))
