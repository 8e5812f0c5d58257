"""list_files: .gitignore respected, directories marked, recursion on request, a cap with a count."""

from __future__ import annotations

import pytest

from gitbot.policy import Policy
from gitbot.secrets import Secrets
from gitbot.tools.base import ToolContext, ToolError
from gitbot.tools.files import LIST_CAP, LIST_FILES, list_files
from tests.tools.conftest import git, write


def entries(output: str) -> list[str]:
    """The listed entries: every line after the header that is not a note in parentheses."""
    return [line for line in output.splitlines()[1:] if line and not line.startswith("(")]


def listing(ctx, path: str = ".", recursive: bool | str = False) -> list[str]:
    return entries(list_files(ctx, {"path": path, "recursive": recursive}))


def error(ctx, **args) -> str:
    with pytest.raises(ToolError) as caught:
        list_files(ctx, args)
    return str(caught.value)


@pytest.fixture
def tree(repo):
    write(repo, "src/pkg/mod.py", "x = 1\n")
    write(repo, "docs/guide.md", "# guide\n")
    write(repo, ".gitignore", "build/\n*.log\n")
    write(repo, "build/out.bin", "compiled\n")
    write(repo, "debug.log", "noise\n")
    write(repo, "src/trace.log", "noise\n")
    return repo


def test_top_level_lists_files_and_directories(ctx, tree):
    assert listing(ctx) == [".gitignore", "README.md", "docs/", "src/"]


def test_directories_end_with_a_slash_and_files_do_not(ctx, tree):
    for entry in listing(ctx, recursive=True):
        assert entry.endswith("/") == (tree / entry.rstrip("/")).is_dir(), entry


def test_recursive_lists_everything_below(ctx, tree):
    assert listing(ctx, recursive=True) == [".gitignore", "README.md", "docs/", "docs/guide.md", "src/",
                                            "src/app.py", "src/pkg/", "src/pkg/mod.py"]


def test_non_recursive_does_not_descend(ctx, tree):
    assert "src/app.py" not in listing(ctx)


def test_gitignore_is_respected(ctx, tree):
    for mode in (False, True):
        listed = listing(ctx, recursive=mode)
        assert not any(entry.startswith("build") or entry.endswith(".log") for entry in listed), listed


def test_header_says_what_was_listed(ctx, tree):
    header = list_files(ctx, {"path": ".", "recursive": False}).splitlines()[0]
    assert header.startswith("4 entries")
    assert ".gitignore respected" in header
    assert "recursive=true" in header


def test_git_dir_is_never_listed(ctx, tree):
    for mode in (False, True):
        assert not any(".git/" in "/" + entry for entry in listing(ctx, recursive=mode))


def test_nested_repository_internals_are_not_listed(ctx, repo):
    nested = repo / "vendor" / "lib"
    write(nested, "lib.py", "y = 2\n")
    git(nested, "init", "-q")
    listed = listing(ctx, recursive=True)
    assert "vendor/" in listed
    assert not any("/.git" in "/" + entry for entry in listed)


def test_subdirectory_entries_are_repository_relative(ctx, tree):
    assert listing(ctx, "src") == ["src/app.py", "src/pkg/"]
    assert listing(ctx, "src/", recursive=True) == ["src/app.py", "src/pkg/", "src/pkg/mod.py"]


def test_untracked_files_are_listed(ctx, repo):
    write(repo, "fresh.txt", "new\n")
    assert "fresh.txt" in listing(ctx)


def test_deleted_tracked_files_are_not_listed(ctx, repo):
    (repo / "README.md").unlink()
    assert "README.md" not in listing(ctx)


def test_recursive_flag_as_string(ctx, tree):
    assert "src/pkg/mod.py" in listing(ctx, recursive="true")


def test_bad_recursive_flag(ctx):
    assert "recursive" in error(ctx, path=".", recursive="sometimes")


def test_cap_of_200_with_a_count(ctx, repo):
    for number in range(250):
        write(repo, f"many/file_{number:03}.txt", "x\n")
    output = list_files(ctx, {"path": "many"})
    assert LIST_CAP == 200
    assert len(entries(output)) == 200
    assert output.splitlines()[0].startswith("250 entries")
    assert "(50 more entries not shown" in output


def test_exactly_the_cap_has_no_overflow_note(ctx, repo):
    for number in range(200):
        write(repo, f"many/file_{number:03}.txt", "x\n")
    output = list_files(ctx, {"path": "many"})
    assert len(entries(output)) == 200 and "not shown" not in output


def test_directory_with_only_ignored_content(ctx, tree):
    output = list_files(ctx, {"path": "build"})
    assert "No files" in output


def test_file_instead_of_directory_suggests_read_file(ctx):
    assert "read_file" in error(ctx, path="README.md")


def test_missing_directory(ctx):
    message = error(ctx, path="srcs")
    assert "does not exist" in message and "src" in message


def test_path_is_required(ctx):
    assert "path" in error(ctx)


def test_dotdot_escape_is_refused(ctx):
    assert "outside" in error(ctx, path="..")


def test_absolute_path_outside_is_refused(ctx, tmp_path):
    assert "outside" in error(ctx, path=str(tmp_path))


def test_symlinked_directory_escape_is_refused(ctx, repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private.txt").write_text("x\n")
    (repo / "ext").symlink_to(outside, target_is_directory=True)
    message = error(ctx, path="ext")
    assert "outside" in message and "private.txt" not in message


def test_git_dir_cannot_be_listed(ctx):
    assert ".git" in error(ctx, path=".git")
    assert ".git" in error(ctx, path=".git/refs")


def test_outer_git_environment_does_not_leak_in(ctx, tree, tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert listing(ctx) == [".gitignore", "README.md", "docs/", "src/"]


def test_outside_git_everything_is_listed(tmp_path):
    plain = tmp_path / "plain"
    write(plain, "a.txt", "x\n")
    write(plain, "sub/b.log", "x\n")
    write(plain, ".gitignore", "*.log\n")
    (plain / "empty").mkdir()
    ctx = ToolContext(plain, Policy(repo=plain), Secrets())
    output = list_files(ctx, {"path": ".", "recursive": True})
    assert "nothing is ignored" in output
    assert set(entries(output)) == {".gitignore", "a.txt", "empty/", "sub/", "sub/b.log"}


def test_schema_and_description():
    definition = LIST_FILES.definition()
    assert definition["input_schema"]["required"] == ["path"]
    assert set(definition["input_schema"]["properties"]) == {"path", "recursive"}
    assert not LIST_FILES.changes_files
    assert "200" in definition["description"] and ".gitignore" in definition["description"]


def test_one_entry_is_singular(ctx, repo):
    write(repo, "only/one.txt", "x\n")
    header = list_files(ctx, {"path": "only", "recursive": False}).splitlines()[0]
    assert header.startswith("1 entry in only/ (")
