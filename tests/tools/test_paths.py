"""resolve(): every way a path argument can reach outside the repository or into .git is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitbot.policy import Decision, Policy
from gitbot.secrets import Secrets
from gitbot.tools.base import ToolContext, ToolDenied, ToolError
from gitbot.tools.paths import GIT_DIR_NAME, resolve
from tests.tools.conftest import git, write


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the repository, with a file the tools must never reach."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("outside the repository\n")
    return directory


def refused(ctx: ToolContext, path, **kwargs) -> str:
    """The message of a plain refusal (a ToolError, not a policy denial)."""
    with pytest.raises(ToolError) as caught:
        resolve(ctx, path, **kwargs)
    assert not isinstance(caught.value, ToolDenied), caught.value
    return str(caught.value)


def denied(ctx: ToolContext, path, **kwargs) -> str:
    with pytest.raises(ToolDenied) as caught:
        resolve(ctx, path, **kwargs)
    return str(caught.value)


# --- ordinary paths ----------------------------------------------------------------------------

def test_git_dir_name_constant():
    assert GIT_DIR_NAME == ".git"


def test_relative_path_gives_absolute_and_repo_relative(ctx, repo):
    absolute, relpath = resolve(ctx, "src/app.py")
    assert absolute == repo.resolve() / "src" / "app.py"
    assert absolute.is_absolute()
    assert relpath == "src/app.py"


def test_root_is_dot(ctx, repo):
    assert resolve(ctx, ".") == (repo.resolve(), ".")
    assert resolve(ctx, "./") == (repo.resolve(), ".")


@pytest.mark.parametrize("written", ["./src/app.py", "src//app.py", "src/./app.py", " src/app.py ", "src/x/../app.py"])
def test_paths_are_normalized(ctx, written):
    assert resolve(ctx, written)[1] == "src/app.py"


def test_dotdot_that_stays_inside_is_accepted(ctx):
    assert resolve(ctx, "src/../README.md")[1] == "README.md"


def test_missing_file_is_fine_without_must_exist(ctx, repo):
    absolute, relpath = resolve(ctx, "new/dir/file.py", for_edit=True)
    assert relpath == "new/dir/file.py"
    assert absolute == repo.resolve() / "new" / "dir" / "file.py"
    assert not (repo / "new").exists()


def test_git_named_siblings_are_not_mistaken_for_git_dir(ctx, repo):
    write(repo, ".gitignore", "*.log\n")
    write(repo, ".github/CODEOWNERS", "* @someone\n")
    write(repo, "docs/my.git/notes.txt", "x\n")
    assert resolve(ctx, ".gitignore", must_exist=True)[1] == ".gitignore"
    assert resolve(ctx, ".github/CODEOWNERS", must_exist=True)[1] == ".github/CODEOWNERS"
    assert resolve(ctx, "docs/my.git/notes.txt", must_exist=True)[1] == "docs/my.git/notes.txt"


# --- malformed input ---------------------------------------------------------------------------

@pytest.mark.parametrize("value", [None, 3, ["src/app.py"], {"path": "x"}, b"src/app.py"])
def test_non_string_is_refused(ctx, value):
    assert "string" in refused(ctx, value)


@pytest.mark.parametrize("value", ["", "   ", "\n"])
def test_empty_path_is_refused(ctx, value):
    assert "empty" in refused(ctx, value)


def test_nul_character_is_refused(ctx):
    assert "NUL" in refused(ctx, "src/app.py\0.txt")


# --- escapes -----------------------------------------------------------------------------------

@pytest.mark.parametrize("written", ["..", "../outside/secret.txt", "src/../../outside/secret.txt",
                                     "src/../..", "./../repo/README.md"])
def test_dotdot_escape_is_refused(ctx, outside, written):
    message = refused(ctx, written)
    assert "outside the repository" in message


@pytest.mark.parametrize("for_edit", [False, True])
def test_dotdot_escape_refused_for_edit_too(ctx, outside, for_edit):
    refused(ctx, "../outside/new.txt", for_edit=for_edit)
    assert not (outside / "new.txt").exists()


def test_absolute_path_outside_is_refused(ctx, outside):
    message = refused(ctx, str(outside / "secret.txt"), must_exist=True)
    assert "outside the repository" in message
    assert "absolute" in message


def test_absolute_system_path_is_refused(ctx):
    assert "outside the repository" in refused(ctx, "/etc/passwd")


def test_absolute_path_with_repo_name_as_prefix_is_refused(ctx, repo):
    evil = repo.parent / (repo.name + "-evil")
    evil.mkdir()
    (evil / "x.txt").write_text("x\n")
    refused(ctx, str(evil / "x.txt"))


def test_absolute_path_inside_is_accepted(ctx, repo):
    absolute, relpath = resolve(ctx, str(repo / "src" / "app.py"), must_exist=True)
    assert relpath == "src/app.py"
    assert absolute == repo.resolve() / "src" / "app.py"


def test_absolute_path_of_the_root_is_the_root(ctx, repo):
    assert resolve(ctx, str(repo))[1] == "."


def test_absolute_path_through_a_symlinked_checkout(tmp_path, repo):
    alias = tmp_path / "alias"
    alias.symlink_to(repo, target_is_directory=True)
    ctx = ToolContext(repo=alias, policy=Policy(repo=alias), secrets=Secrets())
    assert resolve(ctx, str(alias / "README.md"), must_exist=True)[1] == "README.md"
    assert resolve(ctx, str(repo.resolve() / "README.md"), must_exist=True)[1] == "README.md"


def test_absolute_dotdot_escape_is_refused(ctx, repo, outside):
    refused(ctx, str(repo) + "/../outside/secret.txt")


def test_symlink_to_outside_file_is_refused(ctx, repo, outside):
    (repo / "link.txt").symlink_to(outside / "secret.txt")
    message = refused(ctx, "link.txt", must_exist=True)
    assert "symlink" in message and "outside the repository" in message


def test_symlink_to_outside_file_is_refused_for_edit(ctx, repo, outside):
    (repo / "link.txt").symlink_to(outside / "secret.txt")
    refused(ctx, "link.txt", for_edit=True)


def test_symlinked_directory_escape_is_refused(ctx, repo, outside):
    (repo / "ext").symlink_to(outside, target_is_directory=True)
    assert "symlink" in refused(ctx, "ext/secret.txt")
    refused(ctx, "ext")
    # A file that does not exist yet, below the escaping directory: creating it would write outside.
    refused(ctx, "ext/new.txt", for_edit=True)


def test_nested_symlinked_directory_escape_is_refused(ctx, repo, outside):
    (repo / "src" / "vendor").symlink_to(outside, target_is_directory=True)
    refused(ctx, "src/vendor/deeper/new.txt", for_edit=True)


def test_dangling_symlink_to_outside_is_refused(ctx, repo, tmp_path):
    (repo / "dangling").symlink_to(tmp_path / "does-not-exist.txt")
    refused(ctx, "dangling", for_edit=True)


def test_symlink_inside_repo_resolves_to_its_target(ctx, repo):
    (repo / "alias.py").symlink_to("src/app.py")
    absolute, relpath = resolve(ctx, "alias.py", must_exist=True)
    assert relpath == "src/app.py"
    assert absolute == repo.resolve() / "src" / "app.py"


def test_symlinked_directory_inside_repo_resolves(ctx, repo):
    (repo / "lnk").symlink_to("src", target_is_directory=True)
    assert resolve(ctx, "lnk/app.py", must_exist=True)[1] == "src/app.py"


def test_symlink_then_dotdot_follows_the_real_directory(ctx, repo, outside):
    # `ext/..` is the parent of the link's target (outside), not the repository root.
    (repo / "ext").symlink_to(outside / "..", target_is_directory=True)
    refused(ctx, "ext/outside/secret.txt")


def test_symlink_loop_is_a_tool_error_not_a_crash(ctx, repo):
    (repo / "loop_a").symlink_to("loop_b")
    (repo / "loop_b").symlink_to("loop_a")
    try:
        resolve(ctx, "loop_a", must_exist=True)
    except ToolError:
        pass


# --- .git --------------------------------------------------------------------------------------

@pytest.mark.parametrize("written", [".git", ".git/", ".git/config", ".git/hooks/pre-commit", ".GIT/config",
                                     ".Git/HEAD", "src/../.git/config", "./.git/objects"])
def test_git_dir_is_refused(ctx, written):
    assert ".git" in refused(ctx, written)


@pytest.mark.parametrize("for_edit", [False, True])
def test_git_dir_refused_for_read_and_edit(ctx, repo, for_edit):
    before = (repo / ".git" / "config").read_bytes()
    refused(ctx, ".git/config", for_edit=for_edit)
    assert (repo / ".git" / "config").read_bytes() == before


def test_nested_repository_git_dir_is_refused(ctx, repo):
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    refused(ctx, "vendor/lib/.git/config")
    refused(ctx, "vendor/lib/.git/hooks/post-checkout", for_edit=True)
    assert resolve(ctx, "vendor/lib", must_exist=True)[1] == "vendor/lib"


def test_absolute_path_into_git_dir_is_refused(ctx, repo):
    refused(ctx, str(repo / ".git" / "config"))


def test_symlink_into_git_dir_is_refused(ctx, repo):
    (repo / "gitlink").symlink_to(".git", target_is_directory=True)
    (repo / "hooklink").symlink_to(".git/config")
    assert ".git" in refused(ctx, "gitlink/config")
    assert ".git" in refused(ctx, "hooklink", for_edit=True)


# --- the policy --------------------------------------------------------------------------------

def test_read_denied_by_policy_raises_tool_denied(ctx, repo):
    write(repo, ".env", "TOKEN=abc\n")
    message = denied(ctx, ".env", must_exist=True)
    assert "read_deny" in message and ".env" in message


def test_edit_denied_by_policy_raises_tool_denied(ctx, repo):
    write(repo, ".github/workflows/ci.yml", "on: push\n")
    assert resolve(ctx, ".github/workflows/ci.yml", must_exist=True)[1] == ".github/workflows/ci.yml"
    message = denied(ctx, ".github/workflows/ci.yml", for_edit=True)
    assert "edit_deny" in message


def test_repository_root_cannot_be_edited(ctx):
    denied(ctx, ".", for_edit=True)


def test_symlink_to_denied_file_is_judged_by_its_target(ctx, repo):
    write(repo, ".env", "TOKEN=abc\n")
    (repo / "innocent.txt").symlink_to(".env")
    denied(ctx, "innocent.txt", must_exist=True)


def test_symlink_named_like_a_denied_file_is_denied_too(ctx, repo):
    (repo / ".env").symlink_to("README.md")
    denied(ctx, ".env")


def test_editing_an_existing_unreadable_file_is_denied(ctx, repo):
    # replace_in_file shows the file's lines back, so an edit must not become a way to read it.
    write(repo, ".env", "TOKEN=abc\n")
    denied(ctx, ".env", for_edit=True)


def test_creating_a_new_unreadable_file_is_allowed(ctx, repo):
    assert resolve(ctx, "config/.env.example", for_edit=True)[1] == "config/.env.example"


class RecordingPolicy:
    """A policy that records which check ran on which path and refuses what it is told to."""

    def __init__(self, refuse: str = ""):
        self.calls: list[tuple[str, str]] = []
        self.refuse = refuse

    def _decide(self, kind: str, relpath: str) -> Decision:
        self.calls.append((kind, relpath))
        if relpath == self.refuse:
            return Decision(False, f"custom rule says no to {relpath}")
        return Decision(True, "fine")

    def check_read(self, relpath: str) -> Decision:
        return self._decide("read", relpath)

    def check_edit(self, relpath: str) -> Decision:
        return self._decide("edit", relpath)


def test_read_asks_check_read_with_the_relative_path(repo):
    policy = RecordingPolicy()
    resolve(ToolContext(repo, policy, Secrets()), str(repo / "src" / "app.py"))
    assert policy.calls == [("read", "src/app.py")]


def test_edit_asks_check_edit(repo):
    policy = RecordingPolicy()
    resolve(ToolContext(repo, policy, Secrets()), "new.py", for_edit=True)
    assert policy.calls == [("edit", "new.py")]


def test_denial_carries_the_policy_reason(repo):
    policy = RecordingPolicy(refuse="src/app.py")
    with pytest.raises(ToolDenied, match="custom rule says no to src/app.py"):
        resolve(ToolContext(repo, policy, Secrets()), "src/app.py", for_edit=True)


def test_policy_sees_the_real_path_of_a_symlink(repo):
    (repo / "alias.py").symlink_to("src/app.py")
    policy = RecordingPolicy(refuse="src/app.py")
    with pytest.raises(ToolDenied):
        resolve(ToolContext(repo, policy, Secrets()), "alias.py")
    assert ("read", "src/app.py") in policy.calls


def test_escape_is_refused_before_the_policy_is_asked(repo, outside):
    policy = RecordingPolicy()
    ctx = ToolContext(repo, policy, Secrets())
    refused(ctx, "../outside/secret.txt")
    refused(ctx, ".git/config")
    assert policy.calls == []


# --- must_exist --------------------------------------------------------------------------------

def test_must_exist_missing_is_a_tool_error(ctx):
    message = refused(ctx, "nothing_here.py", must_exist=True)
    assert "does not exist" in message


def test_missing_file_suggests_a_close_sibling(ctx):
    message = refused(ctx, "src/ap.py", must_exist=True)
    assert "Did you mean" in message and "src/app.py" in message


def test_missing_file_suggests_same_name_elsewhere(ctx, repo):
    write(repo, "lib/helpers/util.py", "x = 1\n")
    git(repo, "add", "-A")
    message = refused(ctx, "src/util.py", must_exist=True)
    assert "lib/helpers/util.py" in message


def test_missing_directory_is_named(ctx):
    message = refused(ctx, "source/app.py", must_exist=True)
    assert "source/" in message
    assert "src/app.py" in message


def test_untracked_but_not_ignored_files_are_suggested(ctx, repo):
    write(repo, "notes/todo_list.md", "- a\n")
    assert "notes/todo_list.md" in refused(ctx, "notes/todo_lst.md", must_exist=True)


def test_no_suggestion_points_to_list_files(ctx):
    message = refused(ctx, "zzzzqqqq/xxxxxx.bin", must_exist=True)
    assert "Did you mean" not in message
    assert "list_files" in message


def test_suggestions_never_name_unreadable_files(ctx, repo):
    write(repo, ".env", "TOKEN=abc\n")
    message = refused(ctx, ".envv", must_exist=True)
    assert ".env" not in message.replace(".envv", "")


def test_suggestions_never_name_git_dir(ctx, repo):
    message = refused(ctx, ".gti", must_exist=True)
    assert ".git" not in message


def test_must_exist_accepts_directories(ctx):
    assert resolve(ctx, "src", must_exist=True)[1] == "src"


def test_dangling_symlink_inside_counts_as_missing(ctx, repo):
    (repo / "gone").symlink_to("was_here.txt")
    assert "does not exist" in refused(ctx, "gone", must_exist=True)


def test_works_outside_git(tmp_path):
    plain = tmp_path / "plain"
    write(plain, "a/b.txt", "x\n")
    ctx = ToolContext(plain, Policy(repo=plain), Secrets())
    assert resolve(ctx, "a/b.txt", must_exist=True)[1] == "a/b.txt"
    assert "a/b.txt" in refused(ctx, "a/c.txt", must_exist=True)


def test_policy_without_repository(repo, outside):
    ctx = ToolContext(repo, Policy(), Secrets())
    assert resolve(ctx, str(repo / "README.md"))[1] == "README.md"
    refused(ctx, "../outside/secret.txt")
    write(repo, ".env", "TOKEN=abc\n")
    (repo / "innocent.txt").symlink_to(".env")
    denied(ctx, "innocent.txt")


def test_relative_repo_path_in_context(repo, monkeypatch):
    monkeypatch.chdir(repo.parent)
    ctx = ToolContext(Path(repo.name), Policy(repo=Path(repo.name)), Secrets())
    absolute, relpath = resolve(ctx, "src/app.py")
    assert relpath == "src/app.py" and absolute.is_absolute() and absolute.exists()


def test_resolved_path_is_inside_repo_even_for_odd_names(ctx, repo):
    name = "weird name ü [1].txt"
    write(repo, name, "x\n")
    absolute, relpath = resolve(ctx, name, must_exist=True)
    assert relpath == name and absolute.exists()
    assert os.path.commonpath([absolute, repo.resolve()]) == str(repo.resolve())
