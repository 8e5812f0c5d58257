"""listing.git_entries against the listing it replaced, on trees built to hit every special case.

The old implementation (one `git ls-files --cached --others`, an lexists per name, an is_dir per
entry) is kept here verbatim as the oracle: the fast one must list exactly the same entries.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from gitbot.tools import listing
from gitbot.tools.listing import git_entries
from tests.tools.conftest import git, write

pytestmark = pytest.mark.slow  # several git processes per test


def old_entries(directory: Path, recursive: bool) -> set[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    completed = subprocess.run(["git", "-c", "core.quotepath=off", "ls-files", "-z", "--cached", "--others",
                                "--exclude-standard", "--", "."], cwd=directory, capture_output=True,
                               env=environment, check=True)
    names = completed.stdout.decode("utf-8", "surrogateescape").split("\0")
    files = sorted({name for name in names if name and os.path.lexists(directory / name)})
    entries: set[str] = set()
    for name in files:
        parts = name.rstrip("/").split("/")
        if not recursive:
            below = len(parts) > 1 or name.endswith("/")
            entries.add(parts[0] + "/" if below else _old_mark(directory, parts[0]))
            continue
        for depth in range(1, len(parts)):
            entries.add("/".join(parts[:depth]) + "/")
        entries.add(name if name.endswith("/") else _old_mark(directory, name))
    return entries


def _old_mark(directory: Path, name: str) -> str:
    full = directory / name
    return name + "/" if full.is_dir() and not full.is_symlink() else name


def assert_same(root: Path, *directories: str) -> None:
    for relative in directories or (".",):
        directory = root / relative
        for recursive in (False, True):
            assert git_entries(directory, recursive) == sorted(old_entries(directory, recursive)), (relative, recursive)


@pytest.fixture
def tricky(repo: Path) -> Path:
    """Tracked, untracked, ignored and odd names, committed; the tests then change the work tree."""
    write(repo, ".gitignore", "build/\n*.log\n/ignored-top\n")
    for name in ("src/pkg/a.py", "src/pkg/b.py", "src/only/gone.py", "docs/guide.md", "docs/api/ref.md",
                 "weird/star*.txt", "weird/[brackets].md", "weird/:colon", "weird/sp ace.txt",
                 "weird/ünïcode.txt", "tree/deep/er/still/file.c", "toplevel.txt", "will-be-dir",
                 "linked/real.txt"):
        write(repo, name, f"{name}\n")
    write(repo, "forced.log", "tracked although ignored\n")
    git(repo, "add", "-A")
    git(repo, "add", "-f", "forced.log")
    git(repo, "commit", "-q", "-m", "tricky")
    return repo


def test_a_clean_tree(tricky):
    assert_same(tricky, ".", "src", "weird", "tree/deep")


def test_untracked_ignored_and_nested_repositories(tricky):
    write(tricky, "new.txt", "untracked\n")
    write(tricky, "src/pkg/new.py", "untracked\n")
    write(tricky, "fresh/dir/file.txt", "untracked directory\n")
    write(tricky, "onlyignored/x.log", "ignored\n")
    write(tricky, "build/out.o", "ignored\n")
    write(tricky, "ignored-top", "ignored file at the top\n")
    (tricky / "emptydir").mkdir()
    write(tricky, "vendor/lib/lib.py", "nested\n")
    git(tricky / "vendor" / "lib", "init", "-q")
    write(tricky, "deepnest/a/b/n.py", "nested deeper\n")
    git(tricky / "deepnest" / "a" / "b", "init", "-q")
    write(tricky, "docs/api/untracked.md", "x\n")
    assert_same(tricky, ".", "src", "docs", "fresh", "onlyignored", "vendor", "deepnest")


def test_deleted_files_and_directories(tricky):
    (tricky / "src" / "only" / "gone.py").unlink()
    (tricky / "docs" / "api" / "ref.md").unlink()
    (tricky / "docs" / "api").rmdir()
    (tricky / "toplevel.txt").unlink()
    assert_same(tricky, ".", "src", "docs")


def test_a_directory_whose_tracked_files_are_gone_but_untracked_ones_remain(tricky):
    for name in ("tree/deep/er/still/file.c",):
        (tricky / name).unlink()
    write(tricky, "tree/other.txt", "untracked\n")
    write(tricky, "src/only/ignored.log", "ignored\n")
    (tricky / "src" / "only" / "gone.py").unlink()
    assert_same(tricky, ".", "tree", "src")


def test_a_file_that_became_a_directory_and_a_directory_that_became_a_symlink(tricky):
    (tricky / "will-be-dir").unlink()
    write(tricky, "will-be-dir/inside.txt", "now a directory\n")
    target = tricky.parent / "elsewhere"
    target.mkdir()
    (target / "real.txt").write_text("outside\n")
    (tricky / "linked" / "real.txt").unlink()
    (tricky / "linked").rmdir()
    (tricky / "linked").symlink_to(target, target_is_directory=True)
    (tricky / "dirlink").symlink_to(tricky / "src", target_is_directory=True)
    assert_same(tricky, ".")


def test_submodules_are_listed_as_directories(tricky, tmp_path):
    upstream = tmp_path / "upstream"
    write(upstream, "lib.py", "x = 1\n")
    git(upstream, "init", "-q")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "lib")
    git(tricky, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(upstream), "third/party")
    git(tricky, "commit", "-q", "-m", "submodule")
    assert "third/party/" in git_entries(tricky, True)
    assert_same(tricky, ".", "third")


def test_unmerged_paths_are_listed_once(tricky):
    git(tricky, "checkout", "-q", "-b", "other")
    write(tricky, "toplevel.txt", "other side\n")
    git(tricky, "commit", "-q", "-am", "other")
    git(tricky, "checkout", "-q", "-")
    write(tricky, "toplevel.txt", "this side\n")
    git(tricky, "commit", "-q", "-am", "this")
    subprocess.run(["git", "merge", "-q", "other"], cwd=tricky, capture_output=True, check=False)
    assert "toplevel.txt" in git_entries(tricky, True)
    assert_same(tricky, ".")


def test_undecodable_names(tricky):
    raw = os.fsencode(tricky) + b"/bad-\xff-name.txt"
    with open(raw, "wb") as stream:
        stream.write(b"x\n")
    assert_same(tricky, ".")


def test_many_unexplained_top_level_names_fall_back_to_one_walk(repo, monkeypatch):
    monkeypatch.setattr(listing, "MAX_NAMED_CANDIDATES", 3)
    for number in range(listing.MAX_NAMED_CANDIDATES + 2):
        write(repo, f"n{number}.txt", "x\n")
    write(repo, "ignored.log", "x\n")
    write(repo, ".gitignore", "*.log\n")
    assert_same(repo, ".")


def recursive_reads(directory: Path) -> tuple[list[str], int]:
    before = listing.STATS.directories_read
    entries = git_entries(directory, True)
    return entries, listing.STATS.directories_read - before


def test_unchanged_directories_are_not_read_again(tricky, monkeypatch):
    monkeypatch.setattr(listing, "RACY_NS", 0)  # the tree was written just now; trust its stat anyway
    first, read = recursive_reads(tricky)
    assert read > 5
    assert recursive_reads(tricky) == (first, 0)
    time.sleep(0.05)  # past the file system's clock tick, so the change moves the directory's mtime
    (tricky / "src" / "pkg" / "a.py").unlink()
    entries, read = recursive_reads(tricky)
    assert read == 1
    assert entries == sorted(old_entries(tricky, True))


def test_remembered_directories_see_later_changes(tricky, monkeypatch, tmp_path):
    monkeypatch.setattr(listing, "RACY_NS", 0)
    git_entries(tricky, True)
    time.sleep(0.05)
    (tricky / "will-be-dir").unlink()
    (tricky / "will-be-dir").mkdir()
    (tricky / "src" / "only" / "gone.py").unlink()
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere, "pkg/a.py", "a\n")
    (tricky / "src").rename(tmp_path / "old-src")
    (tricky / "src").symlink_to(elsewhere, target_is_directory=True)  # a parent swapped for a symlink
    assert git_entries(tricky, True) == sorted(old_entries(tricky, True))


def test_directories_changed_just_before_they_were_read_are_read_again(tricky):
    _, read = recursive_reads(tricky)
    assert recursive_reads(tricky)[1] == read  # all written within the last second: not trusted yet


def test_outside_git_there_is_no_listing(tmp_path):
    plain = tmp_path / "plain"
    write(plain, "a.txt", "x\n")
    assert git_entries(plain, True) is None
    assert git_entries(plain, False) is None
