"""delete_file: one file, under the edit rules, only what a checkpoint can bring back; real git."""

from __future__ import annotations

import os

import pytest

from gitbot.checkpoints import Checkpointer, restore
from gitbot.tools.base import ToolDenied, ToolError
from gitbot.tools.delete import delete_file
from tests.tools.conftest import write


def test_deletes_a_scratch_file_and_names_it_for_the_checkpoint(ctx, repo):
    write(repo, "scratch/repro.py", "print(1)\n")
    result = delete_file(ctx, {"path": "scratch/repro.py"})
    assert not (repo / "scratch" / "repro.py").exists()
    assert result.text == "Deleted scratch/repro.py." and result.touched == ("scratch/repro.py",)


def test_a_tracked_file_deleted_comes_back_from_its_checkpoint(ctx, repo):
    checkpoints = Checkpointer(repo, "run-delete")
    checkpoints.take(0)
    delete_file(ctx, {"path": "src/app.py"})
    checkpoints.take(1, touched=["src/app.py"])
    restore(repo, "run-delete", 0)
    assert (repo / "src" / "app.py").read_text() == "def main():\n    return 1\n"


@pytest.mark.parametrize("path, error, message", [
    (".gitbot/policy.toml", ToolDenied, "edit_deny"),
    (".env", ToolDenied, "read_deny"),
    (".git/config", ToolError, ".git"),
    ("../outside.txt", ToolError, "outside the repository"),
    ("src", ToolError, "is a directory"),
    ("missing.py", ToolError, "missing.py"),
    ("build/out.o", ToolError, "ignored by git"),
])
def test_what_it_refuses_is_left_in_place(ctx, repo, path, error, message):
    for name in (".gitbot/policy.toml", ".env", "build/out.o"):
        write(repo, name, "keep\n")
    write(repo, ".gitignore", "build/\n.env\n")
    with pytest.raises(error, match=message):
        delete_file(ctx, {"path": path})
    for name in (".gitbot/policy.toml", ".env", "build/out.o", "src/app.py"):
        assert (repo / name).read_text() in ("keep\n", "def main():\n    return 1\n")


def test_a_symlink_is_deleted_as_a_link(ctx, repo):
    os.symlink("src/app.py", repo / "link.py")
    delete_file(ctx, {"path": "link.py"})
    assert not os.path.lexists(repo / "link.py") and (repo / "src" / "app.py").exists()


def test_a_file_in_a_nested_repository_is_refused(ctx, repo):
    # Checkpoints record a nested repository by its HEAD: its uncommitted files could not come back.
    write(repo, "vendor/lib/work.py", "uncommitted\n")
    os.mkdir(repo / "vendor" / "lib" / ".git")
    with pytest.raises(ToolError, match="nested git repository"):
        delete_file(ctx, {"path": "vendor/lib/work.py"})
    assert (repo / "vendor" / "lib" / "work.py").exists()


def test_a_file_over_the_checkpoint_size_cap_is_refused(ctx, repo, monkeypatch):
    monkeypatch.setenv("GITBOT_CHECKPOINT_SIZE_CAP", "1K")
    (repo / "big.bin").write_bytes(b"B" * 4096)
    with pytest.raises(ToolError, match="cap"):
        delete_file(ctx, {"path": "big.bin"})
    assert (repo / "big.bin").exists()


def test_a_link_reached_through_a_directory_link_out_of_the_repository_stays(ctx, repo, tmp_path):
    # dirlink -> outside, outside/victim -> repo/src/app.py: the path resolves into the repository, but the
    # name it would unlink is outside it.
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(repo / "src" / "app.py", outside / "victim")
    os.symlink(outside, repo / "dirlink")
    with pytest.raises(ToolError, match="leads out of it"):
        delete_file(ctx, {"path": "dirlink/victim"})
    assert os.path.lexists(outside / "victim") and (repo / "src" / "app.py").exists()
