"""`gitbot checkpoints list|diff|restore` as a real subprocess, on run records written as the loop writes them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from gitbot.checkpoints import Checkpointer
from gitbot.record import RunRecord, load_events
from tests.checkpoints.test_checkpoints import _hold_lock_in_child, make_user_repo, user_state
from tests.conftest import run_gitbot


@pytest.fixture(autouse=True)
def _quiet_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def record_run(repo: Path, run_id: str) -> list[str]:
    """A three-step run recorded the way the agent loop records it; returns the checkpoint commits."""
    record = RunRecord(repo, run_id)
    cp = Checkpointer(repo, run_id)
    step0 = cp.take(0)
    record.event("checkpoint", step=0, commit=step0.commit, seconds=step0.seconds)
    (repo / "src" / "app.py").write_text("print('v2')\n")
    step1 = cp.take(1, touched=["src/app.py"])
    record.event("tool_end", step=1, tool="replace_in_file", target="src/app.py", outcome="ok", **step1.to_event())
    (repo / "notes.md").write_text("written by a command\n")
    (repo / "data" / "table.csv").unlink()
    step2 = cp.take(2)
    record.event("tool_end", step=2, tool="execute_command", target="python gen.py", outcome="ok", **step2.to_event())
    record.close()
    return [step0.commit, step1.commit, step2.commit]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_user_repo(tmp_path)


@pytest.mark.slow
def test_list_shows_the_latest_run_as_a_table_and_as_json(repo: Path) -> None:
    record_run(repo, "20260101-000000-aaaaaa")
    (repo / "src" / "app.py").write_text("print('v1')\n")  # the user undoes it by hand before the next run
    (repo / "data" / "table.csv").write_text("a,b\n1,2\n")
    (repo / "notes.md").unlink()
    commits = record_run(repo, "20260102-000000-bbbbbb")  # the latest
    before = user_state(repo)

    table = run_gitbot(["checkpoints", "list", "--repo", str(repo)])
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0] == "run 20260102-000000-bbbbbb: 3 checkpoint(s)"
    assert lines[1].split() == ["STEP", "TOOL", "TARGET", "FILES", "CHANGED", "CHECKPOINT"]
    assert lines[3].split() == ["1", "replace_in_file", "src/app.py", "1:", "src/app.py", commits[1][:12]]
    assert "execute_command" in lines[4] and "2: data/table.csv, notes.md" in lines[4]

    as_json = run_gitbot(["checkpoints", "list", "20260101-000000-aaaaaa", "--json"], cwd=repo)
    assert as_json.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)
    assert [(r["step"], r["tool"], r["files_changed"]) for r in rows] == [
        (0, "(start)", []), (1, "replace_in_file", ["src/app.py"]),
        (2, "execute_command", ["data/table.csv", "notes.md"])]
    assert all(len(r["checkpoint"]) == 40 for r in rows)
    assert user_state(repo) == before


@pytest.mark.slow
def test_diff_between_steps(repo: Path) -> None:
    commits = record_run(repo, "run-a")
    before = user_state(repo)
    whole = run_gitbot(["checkpoints", "diff", "run-a", "--repo", str(repo)])
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout.startswith(f"# gitbot checkpoints diff: run run-a, step 0 ({commits[0][:12]}) -> step 2")
    assert "+print('v2')" in whole.stdout and "deleted file mode 100644" in whole.stdout
    one_step = run_gitbot(["checkpoints", "diff", "run-a", "1", "2", "--repo", str(repo)])
    assert "print('v2')" not in one_step.stdout and "+written by a command" in one_step.stdout
    assert user_state(repo) == before


@pytest.mark.slow
def test_restore_and_undo(repo: Path) -> None:
    record_run(repo, "run-a")
    before = user_state(repo)
    done = run_gitbot(["checkpoints", "restore", "run-a", "0", "--repo", str(repo)])
    assert done.returncode == 0, done.stderr
    assert "2 file(s) written, 1 removed" in done.stdout
    assert "undo with: gitbot checkpoints restore run-a 3" in done.stdout
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n" and not (repo / "notes.md").exists()
    events = list(load_events(repo / ".git" / "gitbot" / "runs" / "run-a"))
    assert [e.get("reason") for e in events if e["event"] == "checkpoint"] == [None, "before restore", "after restore"]

    listed = json.loads(run_gitbot(["checkpoints", "list", "run-a", "--json", "--repo", str(repo)]).stdout)
    assert [(r["step"], r["tool"], r["reason"]) for r in listed][3:] == [
        (3, "(restore)", "before restore"), (4, "(restore)", "after restore")]

    undo = run_gitbot(["checkpoints", "restore", "run-a", "3", "--json", "--repo", str(repo)])
    assert undo.returncode == 0, undo.stderr
    assert json.loads(undo.stdout)["removed"] == ["data/table.csv"]
    assert (repo / "notes.md").read_text() == "written by a command\n"
    assert user_state(repo) == before


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["list", "no-such-run"], "unknown run id 'no-such-run'; known runs: run-a"),
    (["diff", "no-such-run"], "unknown run id 'no-such-run'"),
    (["restore", "no-such-run", "0"], "unknown run id 'no-such-run'"),
    (["restore", "run-a", "7"], "step 7 is out of range for run run-a: steps with checkpoints are 0-2"),
    (["restore", "run-a", "-1"], "step -1 is out of range"),
    (["diff", "run-a", "0", "9"], "step 9 is out of range"),
    (["restore", "../../etc", "0"], "not a valid run id"),
])
def test_bad_input_exits_2_with_a_message(repo: Path, args: list[str], message: str) -> None:
    record_run(repo, "run-a")
    before = user_state(repo)
    work = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    proc = run_gitbot(["checkpoints", *args, "--repo", str(repo)])
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts} == work
    assert user_state(repo) == before


@pytest.mark.slow
def test_not_a_repository_and_no_runs(tmp_path: Path, repo: Path) -> None:
    (tmp_path / "plain").mkdir()
    proc = run_gitbot(["checkpoints", "list", "--repo", str(tmp_path / "plain")])
    assert proc.returncode == 2 and "is not inside a git work tree" in proc.stderr
    before = user_state(repo)
    proc = run_gitbot(["checkpoints", "list", "--repo", str(repo)])
    assert proc.returncode == 2 and "no gitbot runs recorded" in proc.stderr
    assert not (repo / ".git" / "gitbot").exists()  # reading never creates the shadow
    assert user_state(repo) == before


@pytest.mark.slow
def test_restore_refuses_outside_changes_and_a_live_lock_and_clears_a_stale_one(repo: Path) -> None:
    record_run(repo, "run-a")
    (repo / "README.md").write_text("edited by the user after the run\n")
    before = user_state(repo)
    refused = run_gitbot(["checkpoints", "restore", "run-a", "0", "--repo", str(repo)])
    assert refused.returncode == 2 and "changed outside the run" in refused.stderr
    assert "  README.md" in refused.stderr and "--force" in refused.stderr
    assert (repo / "README.md").read_text() == "edited by the user after the run\n"

    child = _hold_lock_in_child(repo)
    try:
        locked = run_gitbot(["checkpoints", "restore", "run-a", "0", "--force", "--repo", str(repo)])
        assert locked.returncode == 2, locked.stderr
        assert "holds the repository lock" in locked.stderr and f"pid {child.pid}" in locked.stderr
        assert (repo / "src" / "app.py").read_text() == "print('v2')\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()

    forced = run_gitbot(["checkpoints", "restore", "run-a", "0", "--force", "--repo", str(repo)])
    assert forced.returncode == 0, forced.stderr
    assert f"cleared a stale lock left by pid {child.pid} (run other-run)" in forced.stderr
    assert "1 change(s) made outside the run were overwritten" in forced.stdout
    assert (repo / "README.md").read_text() == "hello\n"
    assert not (repo / ".git" / "gitbot" / "run.lock").exists()
    assert user_state(repo) == before


@pytest.mark.slow
def test_file_names_that_are_not_utf8_print_safely(repo: Path) -> None:
    cp = Checkpointer(repo, "run-a")
    cp.take(0)
    odd = os.fsdecode(b"caf\xe9\nmenu.txt")
    (repo / odd).write_text("x\n")
    cp.take(1)
    before = user_state(repo)
    table = run_gitbot(["checkpoints", "list", "run-a", "--repo", str(repo)])
    assert table.returncode == 0, table.stderr
    assert "caf\\xe9\\nmenu.txt" in table.stdout and len(table.stdout.splitlines()) == 4
    rows = json.loads(run_gitbot(["checkpoints", "list", "run-a", "--json", "--repo", str(repo)]).stdout)
    assert rows[1]["files_changed"] == ["caf\\xe9\nmenu.txt"]
    shown = subprocess.run(["git", "--git-dir", str(repo / ".git" / "gitbot" / "shadow"), "show", "--stat",
                            rows[1]["checkpoint"]], capture_output=True, check=True).stdout
    assert b"menu.txt" in shown
    assert user_state(repo) == before


def user_objects(repo: Path) -> dict[str, int]:
    """The user's own object store (the shadow lives under .git/gitbot, not in it)."""
    objects = repo / ".git" / "objects"
    return {str(p.relative_to(objects)): p.stat().st_size for p in objects.rglob("*") if p.is_file()}


def shadow_has(repo: Path, oid: str) -> bool:
    shadow = repo / ".git" / "gitbot" / "shadow"
    return subprocess.run(["git", f"--git-dir={shadow}", "cat-file", "-e", oid], capture_output=True,
                          check=False).returncode == 0


def three_runs(repo: Path) -> tuple[list[str], str]:
    """Three recorded runs, oldest first; the oldest wrote a file whose content only it has."""
    runs = ["20260101-000000-aaaaaa", "20260102-000000-bbbbbb", "20260103-000000-cccccc"]
    cp = Checkpointer(repo, runs[0])
    cp.take(0)
    (repo / "only-in-run-1.txt").write_text("content that only the oldest run ever had\n")
    cp.take(1)
    (repo / "only-in-run-1.txt").unlink()
    for run_id in runs[1:]:
        record_run(repo, run_id)
        (repo / "src" / "app.py").write_text("print('v1')\n")  # the user undoes it by hand
        (repo / "data" / "table.csv").write_text("a,b\n1,2\n")
        (repo / "notes.md").unlink()
    blob = subprocess.run(["git", "hash-object", "--stdin"], input=b"content that only the oldest run ever had\n",
                          capture_output=True, check=True).stdout.decode().strip()
    return runs, blob


@pytest.mark.slow
def test_prune_keeps_the_newest_runs_and_gcs_only_the_shadow(repo: Path) -> None:
    runs, blob = three_runs(repo)
    before = user_state(repo)
    objects = user_objects(repo)
    shadow = repo / ".git" / "gitbot" / "shadow"
    assert shadow_has(repo, blob)

    dry = run_gitbot(["checkpoints", "prune", "--keep", "1", "--dry-run", "--repo", str(repo)])
    assert dry.returncode == 0, dry.stderr
    assert "Would delete 2 run(s)" in dry.stdout and shadow_has(repo, blob)
    assert (shadow / "refs" / "gitbot" / runs[0]).is_dir()
    nothing = run_gitbot(["checkpoints", "prune", "--keep", "0", "--older-than", "1", "--repo", str(repo)])
    assert nothing.returncode == 0 and "Nothing to prune: 3 run(s)" in nothing.stdout  # all are recent

    done = run_gitbot(["checkpoints", "prune", "--keep", "1", "--json", "--repo", str(repo)])
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["pruned"] == runs[:2] and report["kept"] == runs[2:]
    assert report["refs_deleted"] == (2 + 1) + (3 + 1) and report["bytes_freed"] > 0  # steps, and ignored files
    assert not shadow_has(repo, blob)  # the objects only deleted runs used are gone
    refs = subprocess.run(["git", f"--git-dir={shadow}", "for-each-ref", "--format=%(refname)"], capture_output=True,
                          text=True, check=True).stdout.split()
    assert refs and all(ref.startswith(f"refs/gitbot/{runs[2]}/") for ref in refs)
    assert not any((shadow / "indexes").glob(f"{runs[0]}*")) and not any((shadow / "indexes").glob(f"{runs[1]}*"))
    assert sorted(p.name for p in (repo / ".git" / "gitbot" / "runs").iterdir()) == runs[2:]
    fsck = subprocess.run(["git", f"--git-dir={shadow}", "fsck", "--no-dangling"], capture_output=True, text=True,
                          check=False)
    assert fsck.returncode == 0, fsck.stderr
    gone = run_gitbot(["checkpoints", "list", runs[0], "--repo", str(repo)])
    assert gone.returncode == 2 and "unknown run id" in gone.stderr
    assert user_objects(repo) == objects  # gc never ran in the user's repository
    assert user_state(repo) == before

    # The kept run still restores and diffs.
    restored = run_gitbot(["checkpoints", "restore", runs[2], "2", "--force", "--repo", str(repo)])
    assert restored.returncode == 0, restored.stderr
    assert (repo / "notes.md").read_text() == "written by a command\n"
    human = run_gitbot(["checkpoints", "prune", "--keep", "0", "--repo", str(repo)])
    assert human.returncode == 0 and "Deleted 1 run(s)" in human.stdout and "Freed" in human.stdout
    assert not (shadow / "refs" / "gitbot").exists() or not any((shadow / "refs" / "gitbot").iterdir())


@pytest.mark.slow
def test_prune_refuses_while_a_run_holds_the_lock_and_rejects_bad_options(repo: Path) -> None:
    runs, blob = three_runs(repo)
    before = user_state(repo)
    child = _hold_lock_in_child(repo)
    try:
        locked = run_gitbot(["checkpoints", "prune", "--keep", "0", "--repo", str(repo)])
        assert locked.returncode == 2 and "holds the repository lock" in locked.stderr, locked.stderr
        assert shadow_has(repo, blob) and (repo / ".git" / "gitbot" / "runs" / runs[1]).is_dir()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    for bad in (["--keep", "-1"], ["--keep", "x"], ["--older-than", "-2"], ["--older-than", "soon"]):
        proc = run_gitbot(["checkpoints", "prune", *bad, "--repo", str(repo)])
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert shadow_has(repo, blob)
    assert user_state(repo) == before
