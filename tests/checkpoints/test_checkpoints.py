"""Shadow-git checkpoints on real temporary repositories.

Every test that touches a repository snapshots what belongs to the user (HEAD, branches and
other refs, the index file, the stash, reflogs, config, ignored files) before, and asserts it is
byte-for-byte the same after.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitbot.checkpoints import (
    DEFAULT_SIZE_CAP,
    Checkpointer,
    CheckpointError,
    LockHeld,
    OutsideChanges,
    RunLock,
    UnknownRun,
    UnknownStep,
    diff,
    list_checkpoints,
    restore,
)
from gitbot.errors import NotAGitRepository
from gitbot.record import RunRecord, load_events
from tests.conftest import git, make_repo

IGNORED = ("debug.log", "build/out.bin")
NON_UTF8 = os.fsdecode(b"caf\xe9.txt")  # a Latin-1 name: not valid UTF-8


@pytest.fixture(autouse=True)
def _quiet_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The test's own git calls must not depend on the machine's ~/.gitconfig.
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def make_user_repo(root: Path) -> Path:
    """A committed repository with a second branch, a stash entry and ignored files."""
    repo = make_repo(root / "repo", {
        ".gitignore": "*.log\nbuild/\n",
        "src/app.py": "print('v1')\n",
        "README.md": "hello\n",
        "poetry.lock": "lock v1\n",  # Cline's fixed list excluded *.lock; nothing here may
        "data/table.csv": "a,b\n1,2\n",
    })
    git(repo, "branch", "feature")
    (repo / "README.md").write_text("stashed edit\n")
    git(repo, "stash", "-q")
    (repo / "debug.log").write_text("ignored log\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_bytes(b"\x00\x01ignored")
    return repo


def user_state(repo: Path, ignored: tuple[str, ...] = IGNORED) -> dict[str, object]:
    """Everything of the user's that checkpoints must never change (read without writing anything)."""
    git_dir = repo / ".git"

    def read(path: Path) -> bytes | None:
        return path.read_bytes() if path.is_file() else None

    head = subprocess.run(["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=False)
    logs = git_dir / "logs"
    index = read(git_dir / "index")
    return {
        "HEAD": head.stdout.strip() or None,
        "HEAD file": read(git_dir / "HEAD"),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "packed-refs": read(git_dir / "packed-refs"),
        "index sha256": hashlib.sha256(index).hexdigest() if index is not None else None,
        "stash": subprocess.run(["git", "stash", "list"], cwd=repo, capture_output=True, text=True, check=True).stdout,
        "reflogs": {str(p.relative_to(logs)): p.read_bytes() for p in sorted(logs.rglob("*")) if p.is_file()}
        if logs.is_dir() else {},
        "config": read(git_dir / "config"),
        "ignored": {name: read(repo / name) for name in ignored},
    }


def tree_files(repo: Path, commit: str) -> dict[str, str]:
    """path -> mode of every entry in a checkpoint commit (read from the shadow)."""
    shadow = repo / ".git" / "gitbot" / "shadow"
    out = subprocess.run(["git", f"--git-dir={shadow}", "ls-tree", "-r", "-z", commit], capture_output=True,
                         check=True).stdout
    entries = {}
    for record in out.split(b"\0"):
        if record:
            meta, _, path = record.partition(b"\t")
            entries[os.fsdecode(path)] = meta.split(b" ")[0].decode()
    return entries


def work_files(repo: Path) -> dict[str, bytes]:
    """Every file and symlink outside .git, with content (link target for symlinks)."""
    files = {}
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            full = Path(dirpath) / name
            rel = os.path.relpath(full, repo)
            files[rel] = os.readlink(full).encode() if full.is_symlink() else full.read_bytes()
    return files


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_user_repo(tmp_path)


# -- taking checkpoints ----------------------------------------------------------------------


def test_each_step_is_a_ref_and_an_unchanged_tree_reuses_the_commit(repo: Path) -> None:
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    first = cp.take(0)
    (repo / "src" / "app.py").write_text("print('v2')\n")
    second = cp.take(1, touched=["src/app.py"])
    third = cp.take(2)  # nothing changed since step 1

    assert second.files_changed == ["src/app.py"] and second.new_commit
    assert third.commit == second.commit and not third.new_commit and third.files_changed == []
    shadow = repo / ".git" / "gitbot" / "shadow"
    refs = subprocess.run(["git", f"--git-dir={shadow}", "for-each-ref", "--format=%(refname) %(objectname)",
                           "refs/gitbot/run-a/"], capture_output=True, text=True, check=True).stdout.split("\n")
    assert f"refs/gitbot/run-a/0 {first.commit}" in refs
    assert f"refs/gitbot/run-a/2 {second.commit}" in refs
    captured = tree_files(repo, second.commit)
    # No fixed exclusion list: lockfiles and CSVs are captured; .gitignore decides the rest.
    assert {"poetry.lock", "data/table.csv", "src/app.py", ".gitignore"} <= set(captured)
    assert "debug.log" not in captured and not any(p.startswith("build/") for p in captured)
    # The shadow is a well-formed repository: every checkpoint commit, tree and blob is reachable.
    fsck = subprocess.run(["git", f"--git-dir={shadow}", "fsck", "--strict", "--no-dangling"],
                          capture_output=True, text=True, check=False)
    assert fsck.returncode == 0 and fsck.stderr == "", fsck.stderr
    log = subprocess.run(["git", f"--git-dir={shadow}", "log", "--format=%s", "refs/gitbot/run-a/2"],
                         capture_output=True, text=True, check=True).stdout
    assert log == "gitbot checkpoint: run run-a step 1\ngitbot checkpoint: run run-a step 0\n"
    assert user_state(repo) == before


def test_first_checkpoint_hashes_nothing_the_user_already_has(repo: Path) -> None:
    before = user_state(repo)
    Checkpointer(repo, "run-a").take(0)
    shadow = repo / ".git" / "gitbot" / "shadow"
    # The ignored files (debug.log, build/) are captured apart, once per run: their objects are the shadow's own.
    ignored = set(subprocess.run(["git", f"--git-dir={shadow}", "rev-list", "--objects", "refs/gitbot/run-a/ignored"],
                                 capture_output=True, text=True, check=True).stdout.split())
    loose = [p for p in (shadow / "objects").glob("??/*") if p.parent.name + p.name not in ignored]
    kinds = [subprocess.run(["git", f"--git-dir={shadow}", "cat-file", "-t", p.parent.name + p.name],
                            capture_output=True, text=True, check=True).stdout.strip() for p in loose]
    # The seeded index and the alternates mean the tree's blobs come from the user's store.
    assert "blob" not in kinds and kinds.count("commit") == 1
    assert (shadow / "objects" / "info" / "alternates").read_text().strip() == str(repo / ".git" / "objects")
    assert user_state(repo) == before


def test_touched_fast_path_captures_what_a_full_scan_would(repo: Path) -> None:
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / "src" / "app.py").write_text("print('v2')\n")
    (repo / "src" / "new.py").write_text("x = 1\n")
    (repo / "README.md").unlink()
    (repo / "trace.log").write_text("ignored output\n")  # a file tool may write an ignored file
    fast = cp.take(1, touched=["src/app.py", str(repo / "src" / "new.py"), "README.md", "trace.log"])
    scan = cp.take(2)  # a full scan now must find nothing the fast path missed
    assert scan.commit == fast.commit and not scan.new_commit
    assert sorted(fast.files_changed) == ["README.md", "src/app.py", "src/new.py"]
    assert "trace.log" not in tree_files(repo, fast.commit)
    with pytest.raises(ValueError, match="outside the repository"):
        cp.take(3, touched=["../elsewhere.txt"])
    assert (repo / "trace.log").read_text() == "ignored output\n"
    assert user_state(repo) == before


def test_a_runs_steps_are_read_from_its_loose_refs_and_from_packed_ones(repo: Path) -> None:
    cp = Checkpointer(repo, "run-a")
    taken = {0: cp.take(0).commit}
    (repo / "src" / "app.py").write_text("print('v2')\n")
    taken[1] = cp.take(1).commit
    taken[12] = cp.take(12, touched=["src/app.py"]).commit
    Checkpointer(repo, "run-ab").take(0)  # a run whose name starts like it must not mix in
    shadow = repo / ".git" / "gitbot" / "shadow"
    listed = subprocess.run(["git", f"--git-dir={shadow}", "for-each-ref", "--format=%(refname) %(objectname)",
                             "refs/gitbot/run-a/"], capture_output=True, text=True, check=True).stdout
    steps = {ref.rsplit("/", 1)[1]: oid for ref, oid in (line.split() for line in listed.splitlines())}
    assert steps.pop("ignored")  # the run's ignored files, captured at its start (not a step)
    assert {int(step): oid for step, oid in steps.items()} == taken
    assert cp.shadow.run_steps("run-a") == taken
    assert cp.shadow.run_steps("run-none") == {}
    subprocess.run(["git", f"--git-dir={shadow}", "pack-refs", "--all"], check=True)
    assert not (shadow / "refs" / "gitbot" / "run-a").exists() or not list((shadow / "refs/gitbot/run-a").iterdir())
    assert Checkpointer(repo, "run-a").shadow.run_steps("run-a") == taken
    assert Checkpointer(repo, "run-a").last_step == 12


def test_the_private_index_keeps_what_status_learnt(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A full scan is cheap only because status writes its refreshed stat data and untracked cache
    # into the private index; an environment that forbids optional locks would throw both away.
    monkeypatch.setenv("GIT_OPTIONAL_LOCKS", "0")  # as the user's own environment might
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / "new.txt").write_text("untracked\n")
    cp.take(1)
    assert b"UNTR" in cp.index.read_bytes()  # the untracked cache extension
    assert cp.shadow.env(cp.index).get("GIT_OPTIONAL_LOCKS") is None


def test_take_rejects_bad_steps_and_bad_arguments(repo: Path) -> None:
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    cp.take(3)
    with pytest.raises(ValueError, match="comes before"):
        cp.take(2)
    with pytest.raises(ValueError, match="non-negative"):
        cp.take(-1)
    with pytest.raises(ValueError, match="size_cap_bytes"):
        Checkpointer(repo, "run-b", size_cap_bytes=-1)
    with pytest.raises(UnknownRun, match="not a valid run id"):
        Checkpointer(repo, "../escape")
    with pytest.raises(NotAGitRepository):
        Checkpointer(repo.parent, "run-a")


def test_slow_checkpoints_degrade_to_per_response_and_say_so(repo: Path) -> None:
    cp = Checkpointer(repo, "run-a", slow_median_seconds=0.0)  # every checkpoint counts as slow
    cp.take(0)
    assert cp.should_checkpoint_step()
    for step in (1, 2):
        cp.take(step)
        assert cp.should_checkpoint_step(), "one or two samples must not decide"
    cp.take(3)
    stats = cp.stats()
    assert not cp.should_checkpoint_step()
    assert stats["mode"] == "per_response" and stats["count"] == 4 and stats["degraded_at_step"] == 3
    assert "median checkpoint time" in stats["degraded_reason"] and stats["first_seconds"] is not None
    fresh = Checkpointer(repo, "run-b")
    fresh.take(0)
    assert fresh.stats()["mode"] == "per_step" and fresh.stats()["degraded_reason"] is None


def test_isolated_from_user_hooks_config_and_inherited_git_variables(repo: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "hook-ran"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("reference-transaction", "post-commit", "pre-commit", "post-index-change"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        hook.chmod(0o755)
        (repo / ".git" / "hooks" / name).write_bytes(hook.read_bytes())
        (repo / ".git" / "hooks" / name).chmod(0o755)
    global_ignore = tmp_path / "global-ignore"
    global_ignore.write_text("secret.env\n")
    (tmp_path / "home" / ".gitconfig").write_text(
        f"[core]\n\thooksPath = {hooks}\n\texcludesFile = {global_ignore}\n[user]\n\tname = Someone Else\n")
    (repo / "secret.env").write_text("TOKEN=1\n")
    before = user_state(repo, (*IGNORED, "secret.env"))
    # As inside a git hook: these must not redirect the shadow at the user's index or elsewhere.
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path))
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / "src" / "app.py").write_text("print('v2')\n")
    last = cp.take(1)
    restore(repo, "run-a", 0)
    for name in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"):
        monkeypatch.delenv(name)
    assert not marker.exists(), marker.read_text()
    assert "secret.env" not in tree_files(repo, last.commit)  # the user's global excludes are honoured
    author = subprocess.run(["git", f"--git-dir={repo / '.git/gitbot/shadow'}", "log", "-1", "--format=%an <%ae>",
                             last.commit], capture_output=True, text=True, check=True).stdout.strip()
    assert author == "gitbot checkpoint <checkpoint@gitbot.invalid>"
    assert user_state(repo, (*IGNORED, "secret.env")) == before


def test_a_private_index_left_broken_by_a_crash_is_rebuilt(repo: Path, caplog: pytest.LogCaptureFixture) -> None:
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    # The index's background refresh is done first: a refresh still running would commit its own .lock
    # over the planted one (a race the tests lost under load, with one re-seeding instead of two).
    cp.settle()
    shadow = repo / ".git" / "gitbot" / "shadow"
    (shadow / "indexes" / "run-a.lock").write_text("")  # git was killed while writing the index
    (repo / "src" / "app.py").write_text("print('v2')\n")
    assert cp.take(1).files_changed == ["src/app.py"]
    for shared in shadow.glob("sharedindex.*"):  # the index's shared part expired
        shared.unlink()
    (repo / "notes.txt").write_text("new\n")
    step2 = cp.take(2, touched=["notes.txt"])
    assert step2.files_changed == ["notes.txt"]
    assert set(tree_files(repo, step2.commit)) >= {"notes.txt", "src/app.py", "poetry.lock"}
    assert [r.message.count("re-seeding") for r in caplog.records] == [1, 1]
    assert user_state(repo) == before


def test_linked_worktree_gets_its_own_shadow(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "feature")
    worktree = tmp_path / "wt"
    before_main = user_state(repo)
    worktree_head = git(worktree, "rev-parse", "HEAD")
    cp = Checkpointer(worktree, "run-a")
    cp.take(0)
    (worktree / "src" / "app.py").write_text("print('in the worktree')\n")
    cp.take(1)
    restore(worktree, "run-a", 0)
    assert (worktree / "src" / "app.py").read_text() == "print('v1')\n"
    assert (repo / ".git" / "worktrees" / "wt" / "gitbot" / "shadow").is_dir()
    assert not (repo / ".git" / "gitbot").exists()
    assert git(worktree, "rev-parse", "HEAD") == worktree_head
    assert user_state(repo) == before_main


# -- what is not captured ----------------------------------------------------------------------


def test_large_files_are_listed_not_captured_and_never_touched_by_restore(repo: Path) -> None:
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a", size_cap_bytes=1000)
    cp.take(0)
    (repo / "big.bin").write_bytes(b"x" * 5000)
    (repo / "poetry.lock").write_text("lock v2\n" * 200)  # a tracked file grows over the cap
    step1 = cp.take(1)
    assert step1.not_captured == ["big.bin", "poetry.lock"]
    assert "over the 1000-byte cap" in step1.not_captured_reasons["big.bin"]
    assert "big.bin" not in tree_files(repo, step1.commit) and "poetry.lock" not in tree_files(repo, step1.commit)
    (repo / "src" / "app.py").write_text("print('v2')\n")
    step2 = cp.take(2, touched=["src/app.py", "big.bin"])
    assert step2.not_captured == ["big.bin", "poetry.lock"]
    assert "# not captured at step 2: big.bin" in diff(repo, "run-a", 0, 2)

    report = restore(repo, "run-a", 0)
    assert "no checkpoint holds it" in report.skipped["big.bin"]
    assert "current content is not in any checkpoint" in report.skipped["poetry.lock"]
    assert (repo / "big.bin").read_bytes() == b"x" * 5000  # its content is in no checkpoint: left alone
    assert (repo / "poetry.lock").read_text() == "lock v2\n" * 200
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"
    assert user_state(repo) == before


def test_nested_repository_and_submodule_are_recorded_by_reference(repo: Path, tmp_path: Path) -> None:
    library = make_repo(tmp_path / "library", {"lib.py": "VERSION = 1\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "sub")
    git(repo, "commit", "-q", "-m", "add submodule")
    nested = make_repo(repo / "vendor" / "tool", {"tool.py": "print('tool')\n"})  # a plain nested repo

    def nested_git() -> dict[str, bytes]:
        return {str(p): p.read_bytes() for p in sorted((nested / ".git").rglob("*")) if p.is_file()}

    nested_git_before = nested_git()
    submodule_gitfile = (repo / "sub" / ".git").read_bytes()
    before = user_state(repo)

    cp = Checkpointer(repo, "run-a")
    step0 = cp.take(0)
    nested_head = git(nested, "rev-parse", "HEAD").strip()
    entries = tree_files(repo, step0.commit)
    assert entries["sub"] == "160000" and entries["vendor/tool"] == "160000"
    assert not any(p.startswith(("sub/", "vendor/tool/")) for p in entries)
    assert set(step0.not_captured) == {"sub", "vendor/tool"}
    assert nested_head in step0.not_captured_reasons["vendor/tool"]

    (nested / "tool.py").write_text("print('tool v2')\n")  # inside the nested repo: not captured
    assert cp.take(1).files_changed == []
    assert nested_git() == nested_git_before
    git(nested, "commit", "-q", "-am", "v2")
    nested_git_before = nested_git()
    step2 = cp.take(2)  # its HEAD moved: the reference changes
    assert step2.files_changed == ["vendor/tool"]
    assert git(nested, "rev-parse", "HEAD").strip() in step2.not_captured_reasons["vendor/tool"]

    report = restore(repo, "run-a", 0)
    assert "vendor/tool" in report.skipped and report.failed == []
    assert (nested / "tool.py").read_text() == "print('tool v2')\n"
    assert (nested / ".git").is_dir() and (repo / "sub" / ".git").read_bytes() == submodule_gitfile
    assert nested_git() == nested_git_before  # never renamed, moved or written
    assert user_state(repo) == before


def test_repository_without_commits(tmp_path: Path) -> None:
    for with_index in (False, True):
        repo = make_repo(tmp_path / f"fresh-{with_index}")
        (repo / "notes.txt").write_text("draft\n")
        if with_index:
            git(repo, "add", "notes.txt")  # an index, but still no HEAD
        before = user_state(repo, ())
        cp = Checkpointer(repo, "run-a")
        step0 = cp.take(0)
        assert tree_files(repo, step0.commit) == {"notes.txt": "100644"}
        (repo / "notes.txt").write_text("final\n")
        (repo / "more.txt").write_text("more\n")
        cp.take(1)
        report = restore(repo, "run-a", 0)
        assert report.removed == ["more.txt"] and report.written == ["notes.txt"]
        assert work_files(repo) == {"notes.txt": b"draft\n"}
        assert user_state(repo, ()) == before


# -- restore ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_restore_undoes_edits_deletions_and_creations_and_can_itself_be_undone(repo: Path) -> None:
    before = user_state(repo)
    record = RunRecord(repo, "run-a")
    cp = Checkpointer(repo, "run-a")
    record.event("checkpoint", step=0, commit=cp.take(0).commit, seconds=0.1)
    start = work_files(repo)
    (repo / "src" / "app.py").write_text("print('v2')\n")
    (repo / "data" / "table.csv").unlink()
    (repo / "pkg" / "deep").mkdir(parents=True)
    (repo / "pkg" / "deep" / "mod.py").write_text("y = 2\n")
    (repo / "new.log").write_text("created during the run, ignored\n")
    step1 = cp.take(1)
    record.event("tool_end", step=1, tool="run_command", target="make", **step1.to_event())
    record.close()
    agent_state = work_files(repo)

    report = restore(repo, "run-a", 0)
    assert sorted(report.written) == ["data/table.csv", "src/app.py"] and report.removed == ["pkg/deep/mod.py"]
    assert report.before_step == 2 and report.after_step == 3 and report.failed == []
    assert work_files(repo) == {**start, "new.log": b"created during the run, ignored\n"}  # ignored: untouched
    assert not (repo / "pkg").exists()  # directories left empty are removed, as git does
    events = [e for e in load_events(repo / ".git" / "gitbot" / "runs" / "run-a") if e["event"] == "checkpoint"]
    assert [(e["step"], e.get("reason")) for e in events] == [(0, None), (2, "before restore"), (3, "after restore")]
    assert events[1]["restoring_to"] == 0

    undo = restore(repo, "run-a", report.before_step)
    assert work_files(repo) == agent_state and undo.failed == []
    assert user_state(repo) == before


@pytest.mark.slow
def test_restore_refuses_changes_made_outside_the_run_unless_forced(repo: Path) -> None:
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / "src" / "app.py").write_text("print('agent')\n")
    cp.take(1)
    (repo / "README.md").write_text("the user's own edit\n")  # after the run's last checkpoint
    (repo / "user notes.txt").write_text("mine\n")
    with pytest.raises(OutsideChanges) as refused:
        restore(repo, "run-a", 0)
    assert refused.value.paths == ["README.md", "user notes.txt"]
    assert "README.md" in str(refused.value) and "--force" in str(refused.value)
    assert (repo / "README.md").read_text() == "the user's own edit\n"  # nothing was touched

    report = restore(repo, "run-a", 0, force=True)
    assert report.outside_changes == ["README.md", "user notes.txt"]
    assert (repo / "README.md").read_text() == "hello\n" and not (repo / "user notes.txt").exists()
    restore(repo, "run-a", report.before_step)  # forced restores are undoable too
    assert (repo / "user notes.txt").read_text() == "mine\n"
    (repo / "README.md").write_text("hello\n")
    (repo / "user notes.txt").unlink()
    assert user_state(repo) == before


@pytest.mark.slow
def test_file_replaced_by_directory_and_directory_by_file(repo: Path) -> None:
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    step0 = cp.take(0)
    (repo / "README.md").unlink()
    (repo / "README.md").mkdir()
    (repo / "README.md" / "index.md").write_text("now a directory\n")
    shutil.rmtree(repo / "data")
    (repo / "data").write_text("now a file\n")
    step1 = cp.take(1)
    assert tree_files(repo, step1.commit).keys() >= {"README.md/index.md", "data"}
    assert "README.md" not in tree_files(repo, step1.commit)

    restore(repo, "run-a", 0)
    assert (repo / "README.md").read_text() == "hello\n"
    assert (repo / "data" / "table.csv").read_text() == "a,b\n1,2\n"
    restore(repo, "run-a", 1)
    assert (repo / "README.md" / "index.md").read_text() == "now a directory\n"
    assert (repo / "data").read_text() == "now a file\n"
    assert tree_files(repo, step0.commit)["README.md"] == "100644"
    restore(repo, "run-a", 0)
    assert user_state(repo) == before


def test_restore_does_not_delete_what_the_target_steps_rules_ignore(repo: Path) -> None:
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / ".gitignore").write_text("build/\n")  # the agent stops ignoring *.log ...
    step1 = cp.take(1)
    assert "debug.log" in tree_files(repo, step1.commit)  # ... so the user's log gets captured
    report = restore(repo, "run-a", 0)
    assert (repo / ".gitignore").read_text() == "*.log\nbuild/\n"
    assert "debug.log" in report.skipped and "ignored by step 0" in report.skipped["debug.log"]
    assert user_state(repo) == before  # debug.log still there, unchanged


def test_restore_leaves_a_directory_holding_ignored_files(repo: Path) -> None:
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / "README.md").unlink()
    (repo / "README.md").mkdir()
    (repo / "README.md" / "page.md").write_text("x\n")
    (repo / "README.md" / "cache.log").write_text("ignored, never captured\n")
    cp.take(1)
    report = restore(repo, "run-a", 0)
    assert "README.md" in report.skipped and "ignored files" in report.skipped["README.md"]
    assert (repo / "README.md" / "cache.log").read_text() == "ignored, never captured\n"
    assert not (repo / "README.md" / "page.md").exists() and report.removed == ["README.md/page.md"]
    shutil.rmtree(repo / "README.md")
    (repo / "README.md").write_text("hello\n")
    assert user_state(repo) == before


def test_file_names_with_spaces_newlines_and_undecodable_bytes(repo: Path) -> None:
    before = user_state(repo)
    names = ["with space.txt", "new\nline.txt", NON_UTF8, ":colon*star?.txt", "dir with space/inner file.md"]
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    for i, name in enumerate(names):
        (repo / name).parent.mkdir(exist_ok=True)
        (repo / name).write_bytes(b"v1 %d\n" % i)
    step1 = cp.take(1)
    assert sorted(step1.files_changed) == sorted(names)
    json.dumps(step1.to_event(), ensure_ascii=False).encode("utf-8")  # record-safe despite the Latin-1 name
    for i, name in enumerate(names):
        (repo / name).write_bytes(b"v2 %d\n" % i)
    step2 = cp.take(2, touched=names)
    assert sorted(step2.files_changed) == sorted(names)
    assert "+v2 0" in diff(repo, "run-a", 1, 2)

    restore(repo, "run-a", 1)
    assert [(repo / n).read_bytes() for n in names] == [b"v1 %d\n" % i for i in range(len(names))]
    restore(repo, "run-a", 0)
    assert not any(os.path.lexists(repo / n) for n in names) and not (repo / "dir with space").exists()
    assert user_state(repo) == before


def test_read_only_file_is_captured_and_restored(repo: Path) -> None:
    before = user_state(repo)
    target = repo / "data" / "table.csv"
    target.chmod(0o444)
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    target.chmod(0o644)
    target.write_text("rewritten\n")
    target.chmod(0o444)
    step1 = cp.take(1)
    assert step1.files_changed == ["data/table.csv"]
    report = restore(repo, "run-a", 0)
    assert report.written == ["data/table.csv"] and report.failed == []
    assert target.read_text() == "a,b\n1,2\n"
    assert user_state(repo) == before


def test_binary_files_are_summarised_in_diff(repo: Path) -> None:
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (repo / "src" / "app.py").write_text("print('v2')\n")
    cp.take(1)
    text = diff(repo, "run-a")
    assert "Binary files /dev/null and b/logo.png differ" in text
    assert "-print('v1')\n+print('v2')" in text
    assert text.startswith("# gitbot checkpoints diff: run run-a, step 0")


# -- bad input and the lock --------------------------------------------------------------------


def test_unknown_run_and_steps_out_of_range(repo: Path) -> None:
    before = user_state(repo)
    with pytest.raises(UnknownRun, match="no gitbot runs"):
        list_checkpoints(repo)
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    cp.take(1)
    with pytest.raises(UnknownRun, match="unknown run id 'run-zzz'.*run-a"):
        restore(repo, "run-zzz", 0)
    with pytest.raises(UnknownRun):
        diff(repo, "bad/../id")
    for step in (2, -1, 99):
        with pytest.raises(UnknownStep, match="out of range.*0-1"):
            restore(repo, "run-a", step)
    with pytest.raises(UnknownStep):
        diff(repo, "run-a", 0, 7)
    assert [row["step"] for row in list_checkpoints(repo)] == [0, 1]  # the latest run by default
    assert user_state(repo) == before


def _hold_lock_in_child(repo: Path) -> subprocess.Popen[str]:
    code = ("import sys; from gitbot.checkpoints import RunLock; lock = RunLock(sys.argv[1], run_id='other-run');"
            "lock.acquire(); print('held', flush=True); sys.stdin.read()")
    child = subprocess.Popen([sys.executable, "-c", code, str(repo)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=Path(__file__).resolve().parents[2])
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child


@pytest.mark.slow
def test_restore_refuses_while_a_live_process_holds_the_lock_and_clears_a_stale_one(repo: Path) -> None:
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / "src" / "app.py").write_text("print('v2')\n")
    cp.take(1)
    child = _hold_lock_in_child(repo)
    try:
        with pytest.raises(LockHeld, match=rf"pid {child.pid} \(run other-run\)"):
            restore(repo, "run-a", 0)
        assert (repo / "src" / "app.py").read_text() == "print('v2')\n"
    finally:
        child.send_signal(signal.SIGKILL)  # dies holding it: the lock file stays behind, stale
        child.wait()
    lock_file = repo / ".git" / "gitbot" / "run.lock"
    assert json.loads(lock_file.read_text())["pid"] == child.pid
    report = restore(repo, "run-a", 0)
    assert report.stale_lock is not None and report.stale_lock["pid"] == child.pid
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n" and not lock_file.exists()

    # A lock file naming a pid that no longer exists (written by hand, no flock held) is stale too.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    lock_file.write_text(json.dumps({"pid": int(dead.stdout), "run_id": "crashed"}))
    with RunLock(repo, run_id="run-b") as lock:
        assert lock.stale == {"pid": int(dead.stdout), "run_id": "crashed"}
        assert json.loads(lock_file.read_text())["pid"] == os.getpid()
        # The lock's owner (resume) may restore while holding it.
        restore(repo, "run-a", 1)
        with pytest.raises(LockHeld):
            RunLock(repo).acquire()
    assert not lock_file.exists()
    assert user_state(repo) == before


def test_list_joins_the_run_record(repo: Path) -> None:
    record = RunRecord(repo, "run-a")
    cp = Checkpointer(repo, "run-a")
    record.event("checkpoint", step=0, commit=cp.take(0).commit, seconds=0.01)
    (repo / "src" / "app.py").write_text("print('v2')\n")
    step1 = cp.take(1, touched=["src/app.py"])
    record.event("tool_end", step=1, tool="edit_file", target="src/app.py", **step1.to_event())
    record.event("tool_end", step=2, tool="read_file", target="README.md", checkpoint=None)  # per-response mode
    record.close()
    rows = list_checkpoints(repo, "run-a")
    assert [(r["step"], r["tool"], r["target"], r["files_changed"]) for r in rows] == [
        (0, "(start)", None, []), (1, "edit_file", "src/app.py", ["src/app.py"]), (2, "read_file", "README.md", [])]
    assert rows[1]["checkpoint"] == step1.commit and rows[2]["checkpoint"] is None
    with pytest.raises(UnknownStep, match="no checkpoint at step 2|out of range"):
        restore(repo, "run-a", 2)


# -- review findings: what the seeded index must not be trusted for, and restore's limits --------------


def shadow_show(repo: Path, spec: str) -> bytes:
    shadow = repo / ".git" / "gitbot" / "shadow"
    return subprocess.run(["git", f"--git-dir={shadow}", "show", spec], capture_output=True, check=True).stdout


@pytest.mark.slow
def test_a_user_edit_in_the_same_second_as_their_index_write_is_captured(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "racy")
    for attempt in range(5):
        time.sleep(1.02 - time.time() % 1)  # the start of a second
        second = int(time.time())
        (repo / "a.txt").write_text(f"version-1 {attempt}\n")
        git(repo, "add", "a.txt")
        git(repo, "commit", "-q", "-m", f"c{attempt}")  # the index is written in this second ...
        (repo / "a.txt").write_text(f"version-2 {attempt}\n")  # ... and so is the edit: same size, same inode
        if int(time.time()) == second:
            break
    time.sleep(1.1)  # the checkpoint comes later (a copy of the index made now is newer than the edit)
    before = user_state(repo, ())
    cp = Checkpointer(repo, "run-a")
    step0 = cp.take(0)
    assert shadow_show(repo, f"{step0.commit}:a.txt") == f"version-2 {attempt}\n".encode()
    (repo / "a.txt").write_text("the agent's edit\n")
    cp.take(1)
    report = restore(repo, "run-a", 0)
    assert (repo / "a.txt").read_text() == f"version-2 {attempt}\n" and report.failed == []
    assert user_state(repo, ()) == before


@pytest.mark.slow
def test_restore_never_overwrites_a_file_no_checkpoint_holds_unless_forced_and_then_keeps_a_copy(
        repo: Path) -> None:
    (repo / "settings.local").write_text("template\n")
    git(repo, "add", "settings.local")
    git(repo, "commit", "-q", "-m", "settings template")
    before = user_state(repo)

    def run(run_id: str) -> None:
        cp = Checkpointer(repo, run_id)
        cp.take(0)
        # The agent stops tracking the file and ignores it; then the user types their real settings.
        (repo / "settings.local").unlink()
        (repo / ".gitignore").write_text("*.log\nbuild/\nsettings.local\n")
        cp.take(1)
        (repo / "settings.local").write_text("the user's real settings\n")  # ignored: in no checkpoint

    run("run-a")
    kept = restore(repo, "run-a", 0)
    assert "settings.local" in kept.skipped and "--force" in kept.skipped["settings.local"]
    assert (repo / "settings.local").read_text() == "the user's real settings\n"
    assert (repo / ".gitignore").read_text() == "*.log\nbuild/\n" and kept.backed_up == {}

    (repo / "settings.local").write_text("template\n")
    run("run-b")
    forced = restore(repo, "run-b", 0, force=True)
    assert (repo / "settings.local").read_text() == "template\n" and "settings.local" in forced.written
    backup = Path(forced.backed_up["settings.local"])
    assert backup.is_relative_to(repo / ".git" / "gitbot" / "restore-backup")
    assert backup.read_text() == "the user's real settings\n"
    assert str(backup) in forced.summary()
    assert user_state(repo) == before


@pytest.mark.slow
def test_files_with_a_filter_attribute_are_captured_as_on_disk_not_in_clean_form(repo: Path) -> None:
    # A clean/smudge filter standing in for git-lfs: the repository stores another form than the file.
    git(repo, "config", "filter.fake.clean", "tr a-z A-Z")
    git(repo, "config", "filter.fake.smudge", "cat")
    (repo / ".gitattributes").write_text("*.bin filter=fake\n")
    (repo / "model.bin").write_text("real weights v1\n")
    git(repo, "add", ".gitattributes", "model.bin")
    git(repo, "commit", "-q", "-m", "model")
    assert git(repo, "show", "HEAD:model.bin") == "REAL WEIGHTS V1\n"
    time.sleep(1.1)  # not racy: the seeded stat data says the file is clean
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    step0 = cp.take(0)
    assert shadow_show(repo, f"{step0.commit}:model.bin") == b"real weights v1\n"
    (repo / "model.bin").write_text("retrained weights\n")
    assert cp.take(1).files_changed == ["model.bin"]
    restore(repo, "run-a", 0)
    assert (repo / "model.bin").read_text() == "real weights v1\n"
    assert user_state(repo) == before


@pytest.mark.slow
def test_a_filtered_file_whose_stat_data_git_trusts_is_still_captured_as_on_disk(repo: Path) -> None:
    git(repo, "config", "filter.fake.clean", "tr a-z A-Z")
    git(repo, "config", "filter.fake.smudge", "cat")
    (repo / ".gitattributes").write_text("*.bin filter=fake\n")
    (repo / "model.bin").write_text("real weights v1\n")
    time.sleep(1.1)  # the index is written a second after the file: its stat data is not racy, so
    git(repo, "add", ".gitattributes", "model.bin")  # no status re-reads the file; only the re-hash does
    git(repo, "commit", "-q", "-m", "model")
    step0 = Checkpointer(repo, "run-a").take(0)
    assert shadow_show(repo, f"{step0.commit}:model.bin") == b"real weights v1\n"


def test_staged_content_survives_the_users_gc(repo: Path) -> None:
    (repo / "src" / "app.py").write_text("print('staged, never committed')\n")
    git(repo, "add", "src/app.py")  # the blob is only in the user's index
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / "src" / "app.py").write_text("print('agent')\n")
    cp.take(1)
    git(repo, "reset", "-q")  # the user unstages it and cleans up their object store
    git(repo, "gc", "-q", "--prune=now")
    before = user_state(repo)
    assert "-print('staged, never committed')" in diff(repo, "run-a", 0, 1)
    report = restore(repo, "run-a", 0)
    assert (repo / "src" / "app.py").read_text() == "print('staged, never committed')\n" and report.failed == []
    assert user_state(repo) == before


def test_restore_changes_nothing_when_an_object_it_needs_is_missing(repo: Path) -> None:
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / "gen.txt").write_text("generated at step 1\n")
    cp.take(1)
    (repo / "gen.txt").write_text("generated at step 2\n")
    (repo / "src" / "app.py").write_text("print('v2')\n")
    cp.take(2)
    blob = subprocess.run(["git", "hash-object", "--stdin"], input=b"generated at step 1\n", capture_output=True,
                          check=True).stdout.decode().strip()
    loose = repo / ".git" / "gitbot" / "shadow" / "objects" / blob[:2] / blob[2:]
    assert loose.is_file()
    loose.unlink()  # as if pruned
    refs_before = list_checkpoints(repo, "run-a")
    with pytest.raises(CheckpointError, match=r"missing .*gen\.txt.*Nothing was changed"):
        restore(repo, "run-a", 1)
    assert (repo / "gen.txt").read_text() == "generated at step 2\n"
    assert (repo / "src" / "app.py").read_text() == "print('v2')\n"
    assert list_checkpoints(repo, "run-a") == refs_before  # not even a "before restore" checkpoint
    (repo / "gen.txt").unlink()
    (repo / "src" / "app.py").write_text("print('v1')\n")
    assert user_state(repo) == before


@pytest.mark.slow
def test_a_directory_replaced_by_a_symlink_is_never_followed(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "table.csv").write_text("OUTSIDE DATA\n")
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    shutil.rmtree(repo / "data")
    os.symlink(outside, repo / "data")  # a command replaced the directory by a symlink
    step1 = cp.take(1)
    assert tree_files(repo, step1.commit).get("data") == "120000"
    assert "data/table.csv" not in tree_files(repo, step1.commit)
    assert sorted(step1.files_changed) == ["data", "data/table.csv"]
    assert cp.take(2, touched=["data/table.csv"]).commit == step1.commit  # the fast path does not follow it
    report = restore(repo, "run-a", 0)
    assert report.failed == [] and not (repo / "data").is_symlink()
    assert (repo / "data" / "table.csv").read_text() == "a,b\n1,2\n"
    assert (outside / "table.csv").read_text() == "OUTSIDE DATA\n"
    restore(repo, "run-a", 1)
    assert os.readlink(repo / "data") == str(outside) and (outside / "table.csv").read_text() == "OUTSIDE DATA\n"
    restore(repo, "run-a", 0)
    assert user_state(repo) == before


def test_skip_worktree_entries_that_exist_are_scanned(repo: Path) -> None:
    git(repo, "update-index", "--skip-worktree", "poetry.lock")
    (repo / "poetry.lock").write_text("my local lock, hidden from git status\n")
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a")
    step0 = cp.take(0)
    assert shadow_show(repo, f"{step0.commit}:poetry.lock") == b"my local lock, hidden from git status\n"
    (repo / "poetry.lock").write_text("the agent's lock\n")
    assert cp.take(1).files_changed == ["poetry.lock"]
    restore(repo, "run-a", 0)
    assert (repo / "poetry.lock").read_text() == "my local lock, hidden from git status\n"
    assert "S poetry.lock" in git(repo, "ls-files", "-v", "poetry.lock")
    assert user_state(repo) == before


def test_assume_unchanged_entries_are_scanned_even_in_an_otherwise_clean_checkout(repo: Path) -> None:
    # A clean checkout otherwise: status sees nothing, so only the seeded index's bits show the edit.
    git(repo, "update-index", "--assume-unchanged", "poetry.lock")
    (repo / "poetry.lock").write_text("edited behind git's back\n")
    assert git(repo, "status", "--porcelain") == ""
    before = user_state(repo)
    step0 = Checkpointer(repo, "run-a").take(0)
    assert shadow_show(repo, f"{step0.commit}:poetry.lock") == b"edited behind git's back\n"
    assert "h poetry.lock" in git(repo, "ls-files", "-v", "poetry.lock")
    assert user_state(repo) == before


def test_a_clean_checkout_is_checkpointed_as_heads_tree(repo: Path) -> None:
    assert git(repo, "status", "--porcelain") == ""
    step0 = Checkpointer(repo, "run-a").take(0)
    shadow = repo / ".git" / "gitbot" / "shadow"
    tree = subprocess.run(["git", f"--git-dir={shadow}", "rev-parse", f"{step0.commit}^{{tree}}"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert tree == git(repo, "rev-parse", "HEAD^{tree}").strip()
    (repo / "src" / "app.py").write_text("print('v2')\n")
    step1 = Checkpointer(repo, "run-b").take(0)  # a dirty one is written from the index
    assert shadow_show(repo, f"{step1.commit}:src/app.py") == b"print('v2')\n"


def test_steps_without_a_checkpoint_in_per_response_mode_are_refused_not_stood_in_for(repo: Path) -> None:
    before = user_state(repo)
    cp = Checkpointer(repo, "run-a", slow_median_seconds=0.0)
    for step in range(4):
        cp.take(step)
    assert not cp.should_checkpoint_step()
    # One model response, as the loop runs it in per-response mode: no checkpoint until its end.
    (repo / "new.py").write_text("written at step 4\n")  # step 4: a write tool
    # step 5: a read-only tool, not marked
    (repo / "b.txt").write_text("written at step 6\n")
    last = cp.take(6)  # the end of the response
    for step in (4, 5):
        with pytest.raises(UnknownStep, match=f"no checkpoint at step {step} .*once per model response"):
            restore(repo, "run-a", step)
        with pytest.raises(UnknownStep, match="once per model response"):
            diff(repo, "run-a", 0, step)
    assert (repo / "new.py").exists() and (repo / "b.txt").exists()
    # mark() in this mode must not point a step at a checkpoint that misses the response's writes.
    (repo / "late.py").write_text("written by an earlier step of the response\n")
    marked = cp.mark(7)
    assert "late.py" in tree_files(repo, marked.commit) and marked.commit != last.commit
    assert not Checkpointer(repo, "run-a").should_checkpoint_step()  # a resumed run stays per response
    restore(repo, "run-a", 3)
    assert not (repo / "new.py").exists()
    assert user_state(repo) == before


def test_in_per_step_mode_a_step_without_a_ref_stands_for_the_checkpoint_before_it(repo: Path) -> None:
    before = user_state(repo)
    record = RunRecord(repo, "run-a")
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / "src" / "app.py").write_text("print('v2')\n")
    step1 = cp.take(1)
    record.event("tool_end", step=2, tool="read_file", target="README.md")  # no checkpoint of its own
    record.event("tool_end", step=3, tool="run_command", target="x", checkpoint=None)  # says it has none
    (repo / "notes.md").write_text("step 4\n")
    cp.take(4)
    record.close()
    rows = {r["step"]: r for r in list_checkpoints(repo, "run-a")}
    assert rows[2]["checkpoint"] == step1.commit and rows[2]["checkpoint_step"] == 1
    assert rows[3]["checkpoint"] is None
    assert "+print('v2')" in diff(repo, "run-a", 0, 2)
    with pytest.raises(UnknownStep, match="no checkpoint at step 3"):
        restore(repo, "run-a", 3)
    report = restore(repo, "run-a", 2)
    assert report.commit == step1.commit and not (repo / "notes.md").exists()
    assert (repo / "src" / "app.py").read_text() == "print('v2')\n"
    restore(repo, "run-a", 0)
    assert user_state(repo) == before


def test_size_cap_from_the_environment(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("2K", 2048), ("1000", 1000), ("10m", 10 * 1024 * 1024), ("1G", 1024 ** 3),
                            ("", DEFAULT_SIZE_CAP)):
        monkeypatch.setenv("GITBOT_CHECKPOINT_SIZE_CAP", value)
        assert Checkpointer(repo, "run-a").size_cap_bytes == expected
    for bad in ("ten", "-5", "1.5M", "5T"):
        monkeypatch.setenv("GITBOT_CHECKPOINT_SIZE_CAP", bad)
        with pytest.raises(ValueError, match="GITBOT_CHECKPOINT_SIZE_CAP"):
            Checkpointer(repo, "run-a")
    monkeypatch.setenv("GITBOT_CHECKPOINT_SIZE_CAP", "bad, but an explicit cap wins")
    assert Checkpointer(repo, "run-a", size_cap_bytes=5).size_cap_bytes == 5
    monkeypatch.setenv("GITBOT_CHECKPOINT_SIZE_CAP", "2K")
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    (repo / "big.bin").write_bytes(b"x" * 3000)
    step1 = cp.take(1)
    assert "over the 2048-byte cap" in step1.not_captured_reasons["big.bin"]


def test_a_step_that_changed_nothing_reuses_the_last_tree_without_writing_one(tmp_path: Path, monkeypatch):
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n", "b/c.txt": "c\n"})
    cp = Checkpointer(repo, "run-same")
    first = cp.take(0)
    (repo / "a.txt").write_text("two\n")
    second = cp.take(1)
    assert second.files_changed == ["a.txt"]
    written = []
    real_git = cp.shadow.git
    monkeypatch.setattr(cp.shadow, "git", lambda *args, **kw: written.append(args[0]) or real_git(*args, **kw))
    third = cp.take(2)  # a command that changed nothing
    assert (third.commit, third.new_commit, third.files_changed) == (second.commit, False, [])
    assert "write-tree" not in written
    # Someone else puts the shadow's HEAD, the index and the work tree back at step 0 (not this
    # checkpointer): status finds nothing, but the tree is step 0's, not this run's last one.
    step0_tree = cp.shadow.out("rev-parse", f"{first.commit}^{{tree}}")
    real_git("read-tree", step0_tree, index=cp.index)
    (repo / "a.txt").write_text("one\n")
    real_git("update-index", "--refresh", index=cp.index, ok=(0, 1))
    cp.shadow.set_refs({"HEAD": first.commit})
    fourth = cp.take(3)
    assert cp.shadow.out("rev-parse", f"{fourth.commit}^{{tree}}") == step0_tree


def test_the_first_scan_leaves_the_index_to_a_background_refresh_that_later_steps_wait_for(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n", "src/b.py": "b\n"})
    (repo / "new.txt").write_text("untracked\n")
    cp = Checkpointer(repo, "run-refresh")
    first = cp.take(0)
    assert cp._refresher is not None  # writing the untracked cache, while the first request is out
    cp.settle()
    assert b"UNTR" in cp.index.read_bytes()  # the untracked cache the next scans use
    (repo / "src" / "c.py").write_text("c\n")
    second = cp.take(1)  # waits for the refresh, then scans
    assert cp._refresher is None
    assert sorted(second.files_changed) == ["src/c.py"]
    assert "new.txt" in cp.shadow.out("ls-tree", "-r", "--name-only", first.commit).split()
    assert not Path(f"{cp.index}.lock").exists()


def test_a_process_that_ends_right_after_its_first_checkpoint_leaves_no_git_behind(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    script = ("import sys; from gitbot.checkpoints import Checkpointer; "
              "cp = Checkpointer(sys.argv[1], 'run-exit'); cp.take(0); print(cp._refresher is not None)")
    proc = subprocess.run([sys.executable, "-c", script, str(repo)], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2], check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr
    index = repo / ".git" / "gitbot" / "shadow" / "indexes" / "run-exit"
    assert index.is_file() and not Path(f"{index}.lock").exists()
    assert Checkpointer(repo, "run-exit").take(1).new_commit is False


def own_children() -> set[int]:
    # Running or exited-but-unreaped children of this process (other tests may leave their own).
    me = os.getpid()
    with open(f"/proc/{me}/task/{me}/children") as listing:
        return {int(pid) for pid in listing.read().split()}


def test_no_git_writes_the_index_once_the_run_lock_is_released(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    before = own_children()
    with RunLock(repo):
        cp = Checkpointer(repo, "run-locked")
        cp.take(0)  # starts the background refresh of a freshly seeded index
    # Another gitbot may take the lock now and re-seed this index (removing a .lock it finds).
    assert own_children() <= before
    assert not Path(f"{cp.index}.lock").exists()


def test_a_checkpointer_whose_refresh_was_finished_by_the_lock_can_still_be_used(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    with RunLock(repo):
        cp = Checkpointer(repo, "run-after")
        cp.take(0)
    # The lock's release waited for the refresh; this checkpointer still holds it, already finished.
    (repo / "a.txt").write_text("two\n")
    assert cp.take(1).files_changed == ["a.txt"]


def test_a_restore_that_reseeded_the_index_leaves_no_git_running_after_it_returns(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    cp = Checkpointer(repo, "run-r")
    cp.take(0)
    (repo / "a.txt").write_text("two\n")
    cp.take(1)
    cp.settle()
    cp.index.unlink()  # pruned as a day old, say: restore re-seeds it
    before = own_children()
    restore(repo, "run-r", 0)
    assert (repo / "a.txt").read_text() == "one\n"
    assert own_children() <= before  # resume builds its next Checkpointer on this index at once


def test_git_metadata_below_the_root_is_never_stored(repo: Path) -> None:
    # Issue 20: a git directory the agent wrote (the target of a rewritten gitfile) was stored as ordinary
    # files, so a restore or a commit could plant it again.
    checkpointer = Checkpointer(repo, "gitmeta")
    checkpointer.take(0)
    for rel, text in {"evil/HEAD": "ref: refs/heads/main\n", "evil/config": "[core]\n\tfsmonitor = ./hook\n",
                      "evil/objects/info/x": "", "evil/refs/heads/x": "", "wt/HEAD": "ref: x\n",
                      "wt/commondir": "../evil\n", "plain/HEAD": "not a git directory\n"}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    scanned = checkpointer.take(1)
    (repo / "evil" / "hooks").mkdir()
    (repo / "evil" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    touched = checkpointer.take(2, touched=["evil/hooks/pre-commit", "evil/config"])  # a file tool's fast path
    for checkpoint in (scanned, touched):
        stored = tree_files(repo, checkpoint.commit)
        assert not [p for p in stored if p.startswith(("evil/", "wt/"))], stored
        assert "plain/HEAD" in stored  # a file named HEAD alone does not make a git directory
    assert "evil/config" in scanned.not_captured and "wt/commondir" in scanned.not_captured
    assert "evil/hooks/pre-commit" in touched.not_captured
