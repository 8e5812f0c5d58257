"""write_to_file: creates and overwrites, keeps line endings, and goes through the syntax guardrail."""

from __future__ import annotations

import os
import stat

import pytest

from gitbot.tools.base import ToolDenied, ToolError, ToolResult
from gitbot.tools.files import WRITE_TO_FILE, write_to_file
from tests.tools.conftest import write


def rejected(ctx, path: str, content: str) -> str:
    with pytest.raises(ToolError) as caught:
        write_to_file(ctx, {"path": path, "content": content})
    return str(caught.value)


# --- creating and overwriting ------------------------------------------------------------------

def test_creates_a_file_with_its_parent_directories(ctx, repo):
    result = write_to_file(ctx, {"path": "pkg/sub/new.txt", "content": "hello\nworld\n"})
    assert isinstance(result, ToolResult)
    assert (repo / "pkg" / "sub" / "new.txt").read_bytes() == b"hello\nworld\n"
    assert "Created pkg/sub/new.txt" in result.text and "2 lines" in result.text
    assert result.touched == ("pkg/sub/new.txt",)


def test_new_file_gets_exactly_the_content(ctx, repo):
    write_to_file(ctx, {"path": "no_newline.txt", "content": "last line"})
    assert (repo / "no_newline.txt").read_bytes() == b"last line"


def test_empty_content_creates_an_empty_file(ctx, repo):
    write_to_file(ctx, {"path": "empty.txt", "content": ""})
    assert (repo / "empty.txt").read_bytes() == b""


def test_overwrites_an_existing_file(ctx, repo):
    result = write_to_file(ctx, {"path": "src/app.py", "content": "def main():\n    return 2\n\n\nmain()\n"})
    assert (repo / "src" / "app.py").read_text() == "def main():\n    return 2\n\n\nmain()\n"
    assert "Overwrote src/app.py" in result.text
    assert "5 lines" in result.text and "it had 2" in result.text
    assert result.touched == ("src/app.py",)


def test_same_content_changes_nothing(ctx, repo):
    before = os.stat(repo / "README.md").st_mtime_ns
    result = write_to_file(ctx, {"path": "README.md", "content": "# sample\n"})
    assert "nothing changed" in result.text
    assert os.stat(repo / "README.md").st_mtime_ns == before


def test_absolute_path_inside_is_accepted(ctx, repo):
    write_to_file(ctx, {"path": str(repo / "abs.txt"), "content": "x\n"})
    assert (repo / "abs.txt").read_text() == "x\n"


def test_unicode_content_is_written_as_utf8(ctx, repo):
    write_to_file(ctx, {"path": "intl.txt", "content": "naïve 日本語\n"})
    assert (repo / "intl.txt").read_bytes() == "naïve 日本語\n".encode()


def test_file_mode_is_kept(ctx, repo):
    script = write(repo, "run.sh", "#!/bin/sh\necho one\n")
    script.chmod(0o755)
    write_to_file(ctx, {"path": "run.sh", "content": "#!/bin/sh\necho two\n"})
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert script.read_text() == "#!/bin/sh\necho two\n"


def test_no_temporary_files_are_left_behind(ctx, repo):
    write_to_file(ctx, {"path": "src/app.py", "content": "def main():\n    return 3\n"})
    assert sorted(os.listdir(repo / "src")) == ["app.py"]


def test_binary_file_can_be_replaced_by_text(ctx, repo):
    write(repo, "data.bin", b"\x00\x01\x02")
    result = write_to_file(ctx, {"path": "data.bin", "content": "now text\n"})
    assert "not a text file before" in result.text
    assert (repo / "data.bin").read_bytes() == b"now text\n"


def test_writing_through_an_inner_symlink_updates_the_target(ctx, repo):
    (repo / "alias.txt").symlink_to("README.md")
    result = write_to_file(ctx, {"path": "alias.txt", "content": "# changed\n"})
    assert (repo / "alias.txt").is_symlink()
    assert (repo / "README.md").read_text() == "# changed\n"
    assert result.touched == ("README.md",)


# --- line endings ------------------------------------------------------------------------------

def test_crlf_file_stays_crlf(ctx, repo):
    write(repo, "win.txt", "one\r\ntwo\r\n")
    result = write_to_file(ctx, {"path": "win.txt", "content": "one\ntwo\nthree\n"})
    assert (repo / "win.txt").read_bytes() == b"one\r\ntwo\r\nthree\r\n"
    assert "CRLF" in result.text


def test_crlf_content_into_crlf_file_is_not_doubled(ctx, repo):
    write(repo, "win.txt", "one\r\ntwo\r\n")
    write_to_file(ctx, {"path": "win.txt", "content": "uno\r\ndos\r\n"})
    assert (repo / "win.txt").read_bytes() == b"uno\r\ndos\r\n"


def test_lf_file_stays_lf(ctx, repo):
    write(repo, "unix.txt", "one\ntwo\n")
    write_to_file(ctx, {"path": "unix.txt", "content": "a\r\nb\r\n"})
    assert (repo / "unix.txt").read_bytes() == b"a\nb\n"


def test_mostly_crlf_file_becomes_crlf(ctx, repo):
    write(repo, "mixed.txt", "a\r\nb\r\nc\r\nd\n")
    write_to_file(ctx, {"path": "mixed.txt", "content": "w\nx\ny\n"})
    assert (repo / "mixed.txt").read_bytes() == b"w\r\nx\r\ny\r\n"


def test_utf8_bom_is_kept(ctx, repo):
    write(repo, "bom.txt", "\ufefffirst\n")
    write_to_file(ctx, {"path": "bom.txt", "content": "second\n"})
    assert (repo / "bom.txt").read_bytes() == b"\xef\xbb\xbfsecond\n"


# --- the guardrail -----------------------------------------------------------------------------

def test_python_syntax_error_is_rejected_and_file_untouched(ctx, repo):
    before = (repo / "src" / "app.py").read_bytes()
    message = rejected(ctx, "src/app.py", "def main(:\n    return 1\n")
    assert "NOT applied" in message
    assert "line 1" in message
    assert "src/app.py is unchanged" in message
    assert (repo / "src" / "app.py").read_bytes() == before


def test_rejection_shows_the_would_be_lines_with_the_error_marked(ctx, repo):
    content = "def main():\n    x = 1\n    if x\n        return x\n"
    message = rejected(ctx, "src/app.py", content)
    assert ">3 |     if x" in message
    assert "2 |     x = 1" in message


def test_rejected_new_file_is_not_created(ctx, repo):
    message = rejected(ctx, "newpkg/broken.py", "def f(:\n    pass\n")
    assert "was not created" in message
    assert not (repo / "newpkg" / "broken.py").exists()
    assert not (repo / "newpkg").exists()


def test_python_undefined_name_is_rejected(ctx, repo):
    before = (repo / "src" / "app.py").read_bytes()
    message = rejected(ctx, "src/app.py", "def main():\n    return undefined_thing\n")
    assert "F821" in message
    assert (repo / "src" / "app.py").read_bytes() == before


def test_javascript_syntax_error_is_caught_by_tree_sitter(ctx, repo):
    write(repo, "web/app.js", "function add(a, b) {\n  return a + b;\n}\n")
    before = (repo / "web" / "app.js").read_bytes()
    message = rejected(ctx, "web/app.js", "function add(a, b {\n  return a + b;\n}\n")
    assert "tree-sitter" in message and "javascript" in message
    assert (repo / "web" / "app.js").read_bytes() == before


def test_go_syntax_error_is_caught_by_tree_sitter(ctx, repo):
    write(repo, "main.go", "package main\n\nfunc main() {\n}\n")
    before = (repo / "main.go").read_bytes()
    message = rejected(ctx, "main.go", "package main\n\nfunc main( {\n}\n")
    assert "go" in message and "NOT applied" in message
    assert (repo / "main.go").read_bytes() == before


def test_valid_javascript_is_written(ctx, repo):
    write_to_file(ctx, {"path": "web/ok.js", "content": "export const x = () => 1;\n"})
    assert (repo / "web" / "ok.js").exists()


def test_file_that_already_had_a_syntax_error_can_be_edited(ctx, repo):
    write(repo, "broken.py", "def f(:\n    pass\n\nX = 1\n")
    result = write_to_file(ctx, {"path": "broken.py", "content": "def f(:\n    pass\n\nX = 2\n"})
    assert (repo / "broken.py").read_text().endswith("X = 2\n")
    assert "Overwrote" in result.text


def test_fixing_a_syntax_error_is_accepted(ctx, repo):
    write(repo, "broken.py", "def f(:\n    pass\n")
    write_to_file(ctx, {"path": "broken.py", "content": "def f():\n    pass\n"})
    assert (repo / "broken.py").read_text() == "def f():\n    pass\n"


def test_a_new_syntax_error_in_an_already_broken_file_is_rejected(ctx, repo):
    old_error = "function f() {\n  return (1;\n}\n\n"
    write(repo, "js/broken.js", old_error + "function g() {\n  return 2;\n}\n")
    before = (repo / "js" / "broken.js").read_bytes()
    message = rejected(ctx, "js/broken.js", old_error + "function g() {\n  return [2;\n}\n")
    assert "line 6" in message
    assert (repo / "js" / "broken.js").read_bytes() == before


def test_a_new_python_error_in_an_already_broken_file_is_rejected(ctx, repo):
    old_error = "def f(:\n    pass\n\n\n"
    write(repo, "broken.py", old_error + "def g():\n    return 1\n")
    before = (repo / "broken.py").read_bytes()
    rejected(ctx, "broken.py", old_error + "def g():\n    return (1\n")
    assert (repo / "broken.py").read_bytes() == before


def test_new_unused_import_is_a_warning_not_a_rejection(ctx, repo):
    result = write_to_file(ctx, {"path": "src/app.py", "content": "import os\n\n\ndef main():\n    return 1\n"})
    assert "import os" in (repo / "src" / "app.py").read_text()
    assert "F401" in result.text
    assert "not blocking" in result.text


def test_existing_lint_is_not_repeated_as_a_warning(ctx, repo):
    write(repo, "lint.py", "import os\n\nX = 1\n")
    result = write_to_file(ctx, {"path": "lint.py", "content": "import os\n\nX = 2\n"})
    assert "F401" not in result.text


def test_files_without_a_checker_are_written_as_given(ctx, repo):
    write_to_file(ctx, {"path": "notes.txt", "content": "def f(:\n"})
    assert (repo / "notes.txt").read_text() == "def f(:\n"


# --- refusals ----------------------------------------------------------------------------------

def test_directory_is_refused(ctx):
    assert "directory" in rejected(ctx, "src", "x")


def test_dotdot_escape_writes_nothing_outside(ctx, repo, tmp_path):
    rejected(ctx, "../escaped.txt", "x\n")
    assert not (tmp_path / "escaped.txt").exists()


def test_symlinked_directory_escape_writes_nothing_outside(ctx, repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "ext").symlink_to(outside, target_is_directory=True)
    assert "outside the repository" in rejected(ctx, "ext/new.txt", "x\n")
    assert list(outside.iterdir()) == []


def test_symlinked_file_escape_leaves_the_target_alone(ctx, repo, tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("original\n")
    (repo / "victim.txt").symlink_to(target)
    rejected(ctx, "victim.txt", "overwritten\n")
    assert target.read_text() == "original\n"


def test_git_dir_is_refused(ctx, repo):
    rejected(ctx, ".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n")
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


def test_policy_protected_file_is_denied_and_not_created(ctx, repo):
    with pytest.raises(ToolDenied):
        write_to_file(ctx, {"path": ".github/workflows/ci.yml", "content": "on: push\n"})
    assert not (repo / ".github").exists()


@pytest.mark.parametrize("args, fragment", [({"path": "a.txt"}, "content"), ({"content": "x"}, "path"),
                                            ({"path": "a.txt", "content": 5}, "content"),
                                            ({"path": "", "content": "x"}, "path")])
def test_bad_arguments(ctx, args, fragment):
    with pytest.raises(ToolError, match=fragment):
        write_to_file(ctx, args)


def test_lone_surrogate_is_refused(ctx, repo):
    assert "UTF-8" in rejected(ctx, "bad.txt", "a\udc80b")
    assert not (repo / "bad.txt").exists()


def test_schema_and_description():
    definition = WRITE_TO_FILE.definition()
    assert definition["input_schema"]["required"] == ["path", "content"]
    assert WRITE_TO_FILE.changes_files
    assert "guardrail" in definition["description"].lower()


def test_a_file_cannot_stand_where_a_protected_directory_belongs(ctx, repo):
    # Issue 20: `.github` written as a file left the sandbox no place to mount .github/workflows read-only,
    # and no command could start after it.
    for path in (".github", ".GitHub", ".gitbot", ".github/workflows"):
        with pytest.raises(ToolDenied, match="protected|edit_deny"):
            write_to_file(ctx, {"path": path, "content": "x\n"})
        assert not (repo / path.split("/")[0]).exists()
    write_to_file(ctx, {"path": ".github/CODEOWNERS", "content": "* @me\n"})  # beside it is fine
    assert (repo / ".github" / "CODEOWNERS").is_file()


def test_the_file_tools_cannot_build_a_git_directory(ctx, repo):
    # Issue 20: a directory shaped like a git directory is one git run inside it reads (and runs its
    # config's programs from); commands that make one are undone, and the file tools refuse.
    write_to_file(ctx, {"path": "evil/HEAD", "content": "ref: refs/heads/main\n"})
    write_to_file(ctx, {"path": "evil/objects/info/packs", "content": "\n"})
    with pytest.raises(ToolDenied, match="git directory"):
        write_to_file(ctx, {"path": "evil/refs/heads/main", "content": "0" * 40 + "\n"})
    (repo / "wt").mkdir()
    (repo / "wt" / "commondir").write_text("../evil\n")  # a worktree's git directory needs no objects/
    with pytest.raises(ToolDenied, match="git directory"):
        write_to_file(ctx, {"path": "wt/HEAD", "content": "x\n"})
    assert not (repo / "evil" / "refs").exists()
    write_to_file(ctx, {"path": "docs/HEAD", "content": "a file named HEAD alone is fine\n"})


def test_a_gitmodules_setting_that_runs_a_program_is_never_written(ctx, repo):
    for setting in ("update = !sh pwn.sh", "url = ext::sh -c touch% pwned", "url = --upload-pack=touch pwned"):
        text = f'[submodule "lib"]\n\tpath = lib\n\t{setting}\n'
        message = rejected(ctx, ".gitmodules", text)
        assert "run a program" in message and not (repo / ".gitmodules").exists()
    write_to_file(ctx, {"path": ".gitmodules", "content": '[submodule "lib"]\n\tpath = lib\n\turl = ../lib\n'})
    assert (repo / ".gitmodules").is_file()
