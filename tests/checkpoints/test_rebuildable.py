"""`[sandbox] rebuildable`: an ignored build directory too big for a run's start to capture stays
writable (a build works in the sandbox) and is said not to be restored; everything else that cannot
be captured stays read-only, and every captured file still comes back after a wipe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitbot.checkpoints import Checkpointer, restore
from gitbot.policy import Policy, PolicyError
from gitbot.policy.config import parse_policy
from gitbot.policy.rebuildable import rebuildable_directory
from gitbot.sandbox.runner import Runner
from tests.checkpoints.test_data_loss import user_files
from tests.conftest import make_repo

DIRECTORY_CAP = 20  # files in an ignored directory captured whole (smaller than gitbot's: a faster test)
# `[sandbox] rebuildable` is empty by default (opt-in): these tests opt in.
BUILD_DIRECTORIES = ("**/target", "**/build", "**/node_modules", "**/*.egg-info")


def opted_in() -> Policy:
    return Policy(sandbox_rebuildable=BUILD_DIRECTORIES)


def a_project_with_build_output(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {
        "src/main.rs": "fn main() {}\n", "Makefile": "all:\n",
        ".gitignore": "target/\nmodels/\nbuild/\nconfig.local.toml\n.env\n"})
    (repo / "config.local.toml").write_text("token_file = '~/t'\n")  # ignored, small: captured
    (repo / ".env").write_text("TOKEN=the-users-secret\n")  # read_deny: never rebuildable
    for n in range(DIRECTORY_CAP + 1):  # ignored, over the cap, rebuildable
        (repo / "target" / "debug" / "deps").mkdir(parents=True, exist_ok=True)
        (repo / "target" / "debug" / "deps" / f"lib{n}.rlib").write_bytes(os.urandom(64))
    for n in range(DIRECTORY_CAP + 1):  # ignored, over the cap, NOT rebuildable: the user's data
        (repo / "models").mkdir(exist_ok=True)
        (repo / "models" / f"weights{n}.bin").write_bytes(os.urandom(64))
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_bytes(b"small: captured whole")
    return repo


def test_the_matcher_names_the_directory_a_path_lies_in_and_never_a_file_by_its_own_name():
    directory = rebuildable_directory(BUILD_DIRECTORIES)
    ignored = {"target", "crates/x/target", "pkg/node_modules", "src/x.egg-info", "models", "out"}
    assert directory("target", True, ignored) == "target"
    assert directory("crates/x/target/debug/app", False, ignored) == "crates/x/target"
    assert directory("pkg/node_modules", True, ignored) == "pkg/node_modules"
    assert directory("src/x.egg-info", True, ignored) == "src/x.egg-info"
    assert directory("target", False, ignored) is None  # an ignored file named `target` is not a directory
    assert directory("models", True, ignored) is None and directory("models/build.bin", False, ignored) is None
    assert rebuildable_directory(())("target", True, ignored) is None
    # Only a directory git ignores whole: not a tracked build/ holding an ignored file or directory.
    assert directory("build/local.sqlite", False, ignored) is None
    assert directory("build/gen", True, {"build/gen"}) is None
    assert directory("out/build/gen", True, ignored) == "out/build"  # inside an ignored directory


def test_the_policy_file_sets_it_and_it_is_empty_by_default(tmp_path: Path):
    assert parse_policy('[sandbox]\nrebuildable = ["out/**"]\n', source="p").sandbox_rebuildable == ("out/**",)
    assert parse_policy('[sandbox]\nrebuildable = []\n', source="p").sandbox_rebuildable == ()
    assert parse_policy("", source="p").sandbox_rebuildable == ()  # opt-in: nothing by default
    with pytest.raises(PolicyError, match="rebuildable"):
        parse_policy('[sandbox]\nrebuildable = "target"\n', source="p")


def test_the_start_names_big_build_output_rebuildable_and_keeps_the_rest_read_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("gitbot.checkpoints.ignored.DIRECTORY_FILES_CAP", DIRECTORY_CAP)
    repo = a_project_with_build_output(tmp_path)
    policy = opted_in()
    checkpointer = Checkpointer(repo, "classes", read_deny=policy.read_deny, rebuildable=policy.sandbox_rebuildable)
    checkpointer.take(0)
    assert list(checkpointer.rebuildable()) == ["target"]
    assert "rebuildable" in checkpointer.rebuildable()["target"]
    assert sorted(checkpointer.unrestorable()) == [".env", "models"]
    # Without the setting the same directory is kept read-only, as before.
    plain = Checkpointer(repo, "plain", read_deny=policy.read_deny)
    plain.take(0)
    assert sorted(plain.unrestorable()) == [".env", "models", "target"] and plain.rebuildable() == {}


def test_the_users_ignored_files_get_the_capture_budget_before_build_output(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("gitbot.checkpoints.ignored.IGNORED_FILES_CAP", 3)
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", ".gitignore": "build/\ndata/\n"})
    for directory, count in (("build", 3), ("data", 2)):  # build/ is listed first, and would take it all
        (repo / directory).mkdir()
        for n in range(count):
            (repo / directory / f"f{n}").write_text(f"{directory} {n}\n")
    policy = opted_in()
    checkpointer = Checkpointer(repo, "budget", read_deny=policy.read_deny, rebuildable=policy.sandbox_rebuildable)
    checkpointer.take(0)
    assert checkpointer.unrestorable() == {} and list(checkpointer.rebuildable()) == ["build"]
    plain = Checkpointer(repo, "plain", read_deny=policy.read_deny)
    plain.take(0)
    assert list(plain.unrestorable()) == ["data"]  # without the setting, first come first served


@pytest.mark.slow
def test_a_build_writes_its_directory_while_a_wipe_still_loses_nothing_restorable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("gitbot.checkpoints.ignored.DIRECTORY_FILES_CAP", DIRECTORY_CAP)
    repo = a_project_with_build_output(tmp_path)
    policy = opted_in()
    runner = Runner(policy, repo)
    assert runner.sandboxed, "bubblewrap must work here"
    checkpointer = Checkpointer(repo, "build", read_deny=policy.read_deny, rebuildable=policy.sandbox_rebuildable)
    checkpointer.take(0)
    runner.keep_read_only(checkpointer.unrestorable())
    before = user_files(repo)

    build = runner.run_shell("mkdir -p target/debug && printf built > target/debug/app && "
                             "rm target/debug/deps/lib0.rlib && printf again > build/out.o", timeout=60)
    assert build.exit_code == 0, build.output
    assert (repo / "target" / "debug" / "app").read_bytes() == b"built"
    data = runner.run_shell("printf lost > models/weights0.bin || echo refused; rm -rf models || echo refused",
                            timeout=60)
    assert data.output.count("refused") == 2, data.output
    assert (repo / "models" / "weights0.bin").read_bytes() == before["models/weights0.bin"]
    assert not runner.policy.file_rules.check_edit("models/weights0.bin").allowed
    assert runner.policy.file_rules.check_edit("target/debug/app").allowed

    wipe = runner.run_shell("rm -rf ./* .[!.]*", timeout=60)
    assert not (repo / "src").exists() and not (repo / "target").exists(), wipe.output
    checkpointer.take(1)
    report = restore(repo, "build", 0)

    after = user_files(repo)
    rebuilt = {path for path in before if path.startswith("target/")}
    assert {p: c for p, c in before.items() if p not in rebuilt} == after, report.summary()
    assert "not restored" in report.skipped["target"]


def test_the_check_commands_program_in_a_rebuildable_directory_is_named_to_keep_read_only(tmp_path: Path):
    from gitbot.policy.rebuildable import program_directory_in

    rebuilt = ["node_modules", "target"]
    assert program_directory_in("node_modules/.bin/runtests -q", tmp_path, rebuilt) == "node_modules/.bin"
    assert program_directory_in("./target/debug/check", tmp_path, rebuilt) == "target/debug"
    assert program_directory_in("scripts/test.sh", tmp_path, rebuilt) is None  # tracked: diffed, restored
    assert program_directory_in("pytest -q", tmp_path, rebuilt) is None
    assert program_directory_in("../elsewhere/bin/x", tmp_path, rebuilt) is None
    assert program_directory_in("node_modules/.bin/x", tmp_path, []) is None
