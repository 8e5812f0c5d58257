"""The checkpoint after a command looks only at what inotify says changed (checkpoints/watch.py), and must
capture exactly what a scan of the whole tree captures; where inotify cannot tell, it scans in full."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gitbot.checkpoints import Checkpointer
from gitbot.checkpoints.watch import TreeWatcher
from tests.conftest import make_repo


@pytest.fixture(autouse=True)
def _quiet_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@contextmanager
def watching(path: Path) -> Iterator[TreeWatcher]:
    watcher = TreeWatcher.start(path)
    assert watcher is not None and watcher.wait_ready(), watcher and watcher.stopped
    try:
        assert watcher.changes() is None  # the first answer: the scan that follows is the baseline
        yield watcher
    finally:
        watcher.close()


def covered(answer: list[str], path: str) -> bool:
    return any(path == named or path.startswith(named + "/") for named in answer)


# -- what the watcher says ---------------------------------------------------------------------------------

def test_every_kind_of_change_is_named_and_nothing_else(tmp_path: Path):
    tree = tmp_path / "tree"
    for name in ("a/b/f.txt", "a/g.txt", "keep/k.txt", "old/o.txt", "mode.sh", "gone.txt"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(name)
    with watching(tree) as watcher:
        (tree / "a/b/f.txt").write_text("changed")                 # a write
        (tree / "a/made.txt").write_text("made")                   # a file made
        (tree / "a/g.txt").rename(tree / "a/b/g.txt")              # a file renamed
        (tree / "mode.sh").chmod(0o755)                             # the executable bit
        (tree / "gone.txt").unlink()
        os.symlink("a/b/g.txt", tree / "link")
        answer = watcher.changes()
        assert answer is not None
        for path in ("a/b/f.txt", "a/made.txt", "a/g.txt", "a/b/g.txt", "mode.sh", "gone.txt", "link"):
            assert covered(answer, path), (path, answer)
        assert not any(covered(answer, path) for path in ("a", "a/b", "keep/k.txt", "old/o.txt")), answer
        # A directory made or moved: what happened inside before it was watched (or after, under its old
        # watch) is not known, so the answer is unknown once (see the hard link tests below).
        (tree / "new/deeper/still").mkdir(parents=True)
        (tree / "new/deeper/still/n.txt").write_text("n")
        assert watcher.changes() is None
        (tree / "old").rename(tree / "moved")
        assert watcher.changes() is None
        # They are watched from then on, and nothing is named twice.
        (tree / "moved/o.txt").write_text("again")
        (tree / "new/deeper/still/n.txt").write_text("again")
        assert watcher.changes() == ["moved/o.txt", "new/deeper/still/n.txt"]
        assert watcher.changes() == []


def test_a_path_that_was_there_is_named_and_one_made_and_removed_since_the_last_look_means_unknown(tmp_path: Path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "was-there.txt").write_text("x")
    with watching(tree) as watcher:
        # It was there at the last look, so it changed.
        (tree / "was-there.txt").unlink()
        (tree / "stays.txt").write_text("new")
        assert watcher.changes() == ["stays.txt", "was-there.txt"]
        # Anything else made and removed may have been another link to an old file, written through.
        (tree / "temporary.txt").write_text("t")
        (tree / "temporary.txt").unlink()
        assert watcher.changes() is None
        assert not watcher.stopped


def test_a_rules_file_change_means_a_whole_scan_once(tmp_path: Path):
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    with watching(tree) as watcher:
        (tree / "sub/.gitignore").write_text("*.log\n")
        assert watcher.changes() is None
        (tree / "x.txt").write_text("x")
        assert watcher.changes() == ["x.txt"]


@pytest.mark.parametrize("case", ["nested repository", "hard link", "repository moved"])
def test_what_inotify_cannot_see_stops_the_watcher(tmp_path: Path, case: str):
    tree = tmp_path / "tree"
    (tree / "dir").mkdir(parents=True)
    (tree / "dir/f.txt").write_text("f")
    with watching(tree) as watcher:
        if case == "nested repository":
            subprocess.run(["git", "init", "-q", str(tree / "dir/inner")], check=True)
        elif case == "hard link":
            # Written through the other name, this file would change without an event of its own.
            os.link(tree / "dir/f.txt", tree / "other-name.txt")
        else:
            tree.rename(tmp_path / "elsewhere")
        assert watcher.changes() is None
        assert watcher.stopped
        assert watcher.changes() is None


def test_a_full_event_queue_stops_the_watcher(tmp_path: Path):
    tree = tmp_path / "tree"
    (tree / "many").mkdir(parents=True)
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    with watching(tree) as watcher:
        for number in range(queued // 2 + 10):  # each file: created, then closed after writing
            with open(tree / "many" / f"{number}.txt", "w") as handle:
                handle.write("x")
        assert watcher.changes() is None
        assert "overflow" in watcher.stopped


def test_a_tree_with_a_submodule_is_never_watched(tmp_path: Path):
    tree = tmp_path / "tree"
    (tree / "vendor/lib").mkdir(parents=True)
    (tree / "vendor/lib/.git").write_text("gitdir: ../../.git/modules/lib\n")
    watcher = TreeWatcher.start(tree)
    try:
        assert not watcher.wait_ready()
        assert "nested repository" in watcher.stopped
        assert watcher.changes() is None
    finally:
        watcher.close()


class TwinRuns:
    """The same run twice on one repository: one watched, one that scans the whole tree every time (a file
    once captured stays in a run's index even when a later .gitignore covers it, so a fresh scan is not
    the reference)."""

    def __init__(self, repo: Path):
        self.watched, self.scanning = Checkpointer(repo, "watched"), Checkpointer(repo, "scanning")

    def take(self, step: int, why: object = "") -> None:
        self.watched.take(step)
        self.scanning.take(step)
        assert self.watched.last_tree == self.scanning.last_tree, f"step {step} {why}"


@contextmanager
def twin_runs(repo: Path) -> Iterator[TwinRuns]:
    """Both runs' first checkpoints taken, the watcher ready (the next checkpoint is its baseline)."""
    runs = TwinRuns(repo)
    runs.take(0)
    runs.watched.watch()
    try:
        assert runs.watched._watcher.wait_ready()
        yield runs
    finally:
        runs.watched.stop_watching()


# -- what the checkpoints capture --------------------------------------------------------------------------

def operations(repo: Path, rng: random.Random):
    """Random changes of every kind a command makes, through real processes and through Python."""
    files = [p for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts]
    dirs = [p for p in repo.rglob("*") if p.is_dir() and ".git" not in p.parts]
    target = rng.choice(files) if files else repo / "seed.txt"
    place = rng.choice(dirs) if dirs else repo
    name = f"n{rng.randrange(10**6)}"
    choices = [
        lambda: target.write_text(f"edited {rng.random()}\n"),
        lambda: subprocess.run(["sh", "-c", f"printf more >> '{target}'"], check=True),
        lambda: (place / f"{name}.txt").write_text("new\n"),
        lambda: subprocess.run(["mkdir", "-p", str(place / name / "x")], check=True) and
        (place / name / "x" / "deep.txt").write_text("deep\n"),
        lambda: target.unlink(),
        lambda: target.chmod(0o755),
        lambda: os.utime(target, None),
        lambda: target.rename(place / f"{name}.moved"),
        lambda: place != repo and place.rename(place.with_name(place.name + "-renamed")),
        lambda: place != repo and shutil.rmtree(place),
        lambda: (repo / "build").mkdir(exist_ok=True) or (repo / "build" / f"{name}.o").write_text("ignored"),
        lambda: os.path.lexists(repo / f"{name}.lnk") or os.symlink(os.path.relpath(target, repo), repo / f"{name}.lnk"),
        lambda: (repo / ".gitignore").write_text(rng.choice(["build/\n", "build/\n*.moved\n", ""])),
    ]
    rng.choice(choices)()


@pytest.mark.parametrize("seed", range(6))
def test_checkpoints_from_the_changes_capture_what_a_whole_scan_captures(tmp_path: Path, seed: int):
    repo = make_repo(tmp_path / "repo", {
        ".gitignore": "build/\n", "src/app.py": "print(1)\n", "src/lib/util.py": "x = 1\n",
        "docs/guide.md": "# guide\n", "README.md": "hello\n", "tests/test_app.py": "def test(): pass\n",
    })
    rng = random.Random(seed)
    # The same run twice: one scans the whole tree every time (a file once captured stays in its index even
    # when a later .gitignore covers it, so a fresh scan is not the reference).
    with twin_runs(repo) as runs:
        for step in range(1, 16):
            for _ in range(rng.randrange(1, 4)):
                operations(repo, rng)
            runs.take(step, f"step {step}")
        assert runs.watched.stats()["from_changes"] >= 3  # many looked only at what changed


def link_games(repo: Path, case: str) -> None:
    """Change old.txt through another hard link, and leave no file with two links behind."""
    if case == "made, written through, removed":
        os.link(repo / "old.txt", repo / "other")
        with open(repo / "other", "a") as handle:
            handle.write("through the link\n")
        (repo / "other").unlink()
    elif case == "in a new directory":
        (repo / "new").mkdir()
        os.link(repo / "old.txt", repo / "new/other")
        subprocess.run(["sh", "-c", f"echo through the link >> '{repo}/new/other' && rm '{repo}/new/other'"],
                       check=True)
    elif case == "under a moved directory":
        (repo / "dir").rename(repo / "moved")
        os.link(repo / "old.txt", repo / "moved/other")
        (repo / "moved/other").write_text("through the link\n")  # truncates old.txt too
        (repo / "moved/other").unlink()
    elif case == "renamed over":
        os.link(repo / "old.txt", repo / "other")
        with open(repo / "other", "a") as handle:
            handle.write("through the link\n")
        (repo / "dir/d.txt").rename(repo / "other")
    elif case == "exchanged with an old file, which is removed":
        # renameat2(RENAME_EXCHANGE): both names stay bound; the events are from other, to y.txt, from
        # y.txt, to other, as for `mv other y.txt && mv y.txt other`, but y.txt now is the link.
        os.link(repo / "old.txt", repo / "other")
        with open(repo / "other", "a") as handle:
            handle.write("through the link\n")
        exchange(repo / "other", repo / "y.txt")
        (repo / "y.txt").unlink()
    elif case == "renamed, then removed":
        os.link(repo / "old.txt", repo / "other")
        with open(repo / "other", "a") as handle:
            handle.write("through the link\n")
        (repo / "other").rename(repo / "dir/again")
        (repo / "dir/again").unlink()
    else:  # made before the baseline (while the first command ran), written through and removed after it
        with open(repo / "dir/other", "a") as handle:
            handle.write("through the link\n")
        (repo / "dir/other").unlink()


def exchange(first: Path, second: Path) -> None:
    """Swap two names in one step (renameat2 with RENAME_EXCHANGE, which Python does not wrap)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, rename_exchange = -100, 2
    if libc.renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


@pytest.mark.parametrize("case", ["made, written through, removed", "in a new directory", "under a moved directory",
                                  "renamed over", "renamed, then removed", "exchanged with an old file, which is removed",
                                  "made before the baseline"])
def test_a_file_changed_through_a_hard_link_gone_again_is_captured(tmp_path: Path, case: str):
    repo = make_repo(tmp_path / "repo", {"old.txt": "old\n", "dir/d.txt": "d\n", "y.txt": "y\n"})
    with twin_runs(repo) as runs:
        if case == "made before the baseline":
            os.link(repo / "old.txt", repo / "dir/other")
        runs.take(1)  # the baseline
        link_games(repo, case)
        runs.take(2)
        assert (repo / "old.txt").read_text() != "old\n"


def test_a_tree_with_hard_links_is_never_watched(tmp_path: Path):
    # Written through one name and the other removed, the file would change without an event naming it.
    tree = tmp_path / "tree"
    (tree / "dir").mkdir(parents=True)
    (tree / "a.txt").write_text("a")
    os.link(tree / "a.txt", tree / "dir/b.txt")
    watcher = TreeWatcher.start(tree)
    try:
        assert not watcher.wait_ready()
        assert "hard links" in watcher.stopped
    finally:
        watcher.close()


@pytest.mark.slow
def test_a_sandboxed_command_that_writes_through_a_hard_link_it_removes_is_captured(tmp_path: Path):
    from gitbot.policy import Policy
    from gitbot.sandbox.runner import Runner

    repo = make_repo(tmp_path / "repo", {"old.txt": "old\n"})
    runner = Runner(Policy(repo=repo, sandbox_mode="required"), repo)
    with twin_runs(repo) as runs:
        for step, command in enumerate(["echo made > made.txt", "echo again >> made.txt",
                                        "ln old.txt x && echo through the link >> x && rm x"], start=1):
            assert runner.run_shell(command, 30).exit_code == 0
            runs.take(step, command)
        assert runs.watched.stats()["from_changes"] == 1  # the second command's (the first is the baseline)


def test_the_files_changed_of_a_checkpoint_from_the_changes(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "dir/b.txt": "b\n"})
    checkpointer = Checkpointer(repo, "watched")
    checkpointer.take(0)
    checkpointer.watch()
    try:
        checkpointer._watcher.wait_ready()
        checkpointer.take(1)  # the baseline
        (repo / "dir/b.txt").write_text("changed\n")
        (repo / "c.txt").write_text("c\n")
        taken = checkpointer.take(2)
        assert taken.files_changed == ["c.txt", "dir/b.txt"]
        assert checkpointer.take(3).files_changed == []
        assert checkpointer.stats()["from_changes"] == 2
    finally:
        checkpointer.stop_watching()


def test_a_directory_swapped_for_a_link_before_its_event_is_read_is_never_entered(tmp_path: Path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    (outside / "sub").mkdir(parents=True)
    with watching(tree) as watcher:
        (tree / "d").mkdir()  # its event is read only at the next look, when it is a link to elsewhere
        (tree / "d").rmdir()
        os.symlink(outside, tree / "d")
        assert watcher.changes() is None  # a directory was made: what happened inside it is not known
        (outside / "sub" / "elsewhere.txt").write_text("not the tree's")
        assert watcher.changes() == []
        assert watcher.stopped is None


def test_changed_paths_too_long_for_one_command_line_mean_a_whole_scan(tmp_path: Path):
    # Under MAX_PATHS, but 1,500 paths of ~1,500 bytes are more than a command line holds (ARG_MAX, 2 MB):
    # handed to git status as pathspecs, they would not even start it.
    deep = "/".join(["d" * 200] * 6)
    repo = make_repo(tmp_path / "repo", {f"{deep}/keep.txt": "k\n"})
    with twin_runs(repo) as runs:
        runs.watched.take(1)  # the baseline
        for number in range(1500):
            (repo / deep / f"{number:0>250}").write_text("x")
        runs.take(2)


def test_a_protected_symlink_replaced_and_written_through_is_seen(tmp_path: Path):
    # AGENTS.md as a symlink (to CLAUDE.md, say) gets no read-only bind (it would follow the link), so a command
    # can remove it and put a link to another file there, write through it and remove that again.
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "old.txt").write_text("old\n")
    (tree / "CLAUDE.md").write_text("c\n")
    os.symlink("CLAUDE.md", tree / "AGENTS.md")
    with watching(tree) as watcher:
        (tree / "AGENTS.md").unlink()
        os.link(tree / "old.txt", tree / "AGENTS.md")
        with open(tree / "AGENTS.md", "a") as handle:
            handle.write("through the link\n")
        (tree / "AGENTS.md").unlink()
        os.symlink("CLAUDE.md", tree / "AGENTS.md")
        answer = watcher.changes()
        assert answer is None or covered(answer, "old.txt"), answer


@pytest.mark.slow
def test_a_sandboxed_command_that_replaces_a_symlinked_protected_file_is_captured(tmp_path: Path):
    from gitbot.policy import Policy
    from gitbot.sandbox.runner import Runner

    repo = make_repo(tmp_path / "repo", {"old.txt": "old\n", "CLAUDE.md": "c\n"})
    os.symlink("CLAUDE.md", repo / "AGENTS.md")
    subprocess.run(["git", "-C", str(repo), "add", "AGENTS.md"], check=True)
    runner = Runner(Policy(repo=repo, sandbox_mode="required"), repo)
    with twin_runs(repo) as runs:
        replace = "rm AGENTS.md && ln old.txt AGENTS.md && echo through >> AGENTS.md && rm AGENTS.md && ln -s CLAUDE.md AGENTS.md"
        for step, command in enumerate(["true", replace], start=1):
            assert runner.run_shell(command, 30).exit_code == 0
            runs.take(step, command)
        assert (repo / "old.txt").read_text() == "old\nthrough\n"


def test_a_repository_that_ignores_case_is_scanned_whole(tmp_path: Path):
    # core.ignorecase (kept by a repository copied from macOS or Windows) makes git match index entries and
    # untracked files without regard to case, but a pathspec with it: a.txt, hidden by the entry A.txt,
    # shows once A.txt is gone, and a status limited to A.txt never looks at it.
    repo = make_repo(tmp_path / "repo", {"A.txt": "A\n", "keep.txt": "k\n"})
    subprocess.run(["git", "-C", str(repo), "config", "core.ignorecase", "true"], check=True)
    (repo / "a.txt").write_text("lower case\n")
    checkpointer, scanning = Checkpointer(repo, "watched"), Checkpointer(repo, "scanning")
    checkpointer.take(0)
    scanning.take(0)
    checkpointer.watch()
    try:
        assert checkpointer._watcher is None or checkpointer._watcher.wait_ready()
        checkpointer.take(1)  # the baseline
        scanning.take(1)
        (repo / "A.txt").unlink()
        for step in (2, 3):
            checkpointer.take(step)
            scanning.take(step)
            assert checkpointer.last_tree == scanning.last_tree, step
    finally:
        checkpointer.stop_watching()


@pytest.mark.parametrize("spelling", ["as it is", "through a link"])
def test_a_global_excludes_file_in_the_tree_means_a_whole_scan_when_it_changes(tmp_path: Path, spelling: str):
    # A home directory kept in git holds ~/.config/git/ignore; a command that edits it un-ignores files that
    # did not change themselves.
    repo = make_repo(tmp_path / "repo", {"keep.txt": "k\n", "conf/excludes": "*.log\n"})
    setting = repo / "conf/excludes" if spelling == "as it is" else tmp_path / "excludes-link"
    if spelling != "as it is":
        os.symlink(repo / "conf/excludes", setting)
    subprocess.run(["git", "-C", str(repo), "config", "core.excludesFile", str(setting)], check=True)
    (repo / "a.log").write_text("log\n")
    with twin_runs(repo) as runs:
        runs.take(1)  # the baseline
        (repo / "conf/excludes").write_text("")
        runs.take(2)
        assert "a.log" in subprocess.run(["git", "--git-dir", str(runs.scanning.shadow.dir), "ls-tree", "--name-only",
                                          runs.scanning.last_tree], capture_output=True, text=True, check=True).stdout


def test_a_file_made_by_a_file_tool_then_renamed_by_a_command_is_not_kept(tmp_path: Path):
    # The file tool's checkpoint (the `touched` fast path) captures x.txt without reading the watcher's events;
    # read with the command's, x.txt's creation must not pass for a file absent at the last scan.
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    with twin_runs(repo) as runs:
        runs.take(1)  # the baseline
        (repo / "x.txt").write_text("a file tool wrote this\n")
        runs.watched.take(2, touched=["x.txt"])
        runs.scanning.take(2)
        assert runs.watched.last_tree == runs.scanning.last_tree
        (repo / "x.txt").rename(repo / "y.txt")
        runs.take(3, "mv x.txt y.txt")
