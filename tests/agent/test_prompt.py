"""The first message's environment block: the repository's top level as list_files(".") shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitbot.agent.prompt import top_level_listing
from gitbot.tools import listing
from tests.conftest import make_repo

pytestmark = pytest.mark.slow  # runs git


def test_the_top_level_is_what_git_sees_there_without_walking_the_tree(tmp_path: Path, monkeypatch):
    repo = make_repo(tmp_path / "repo", {".gitignore": "build/\n*.log\n", "README.md": "x\n", "src/pkg/a.py": "a\n",
                                         "gone.txt": "soon deleted\n", "docs/guide.md": "g\n"})
    (repo / "gone.txt").unlink()  # tracked, deleted: nothing to show
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_text("ignored\n")
    (repo / "logs").mkdir()
    (repo / "logs" / "run.log").write_text("only ignored files\n")
    (repo / "notes.md").write_text("untracked\n")
    (repo / "new").mkdir()
    (repo / "new" / "deep").mkdir()
    (repo / "new" / "deep" / "file.txt").write_text("untracked, nested\n")
    ran = []
    real_run_git = listing._run_git
    monkeypatch.setattr(listing, "_run_git", lambda directory, args: ran.append(args) or real_run_git(directory, args))
    assert top_level_listing(repo).splitlines() == ["  .gitignore", "  README.md", "  docs/", "  new/", "  notes.md",
                                                    "  src/"]
    # git walked no directory of the tree: the untracked side was asked about the unexplained names only.
    assert all("--directory" in args or args == ["--cached"] for args in ran), ran
