"""read_file: a numbered window of at most 100 lines, markers, ranges, an outline, and refusals."""

from __future__ import annotations

import os
import re

import pytest

from gitbot.tools.base import ToolDenied, ToolError
from gitbot.tools.files import MAX_FILE_BYTES, MAX_LINE_CHARS, READ_FILE, WINDOW_LINES, read_file
from tests.tools.conftest import write

NUMBERED = re.compile(r"^\s*(\d+) \| ", re.MULTILINE)


def numbers(output: str) -> list[int]:
    return [int(n) for n in NUMBERED.findall(output)]


def lines_file(repo, count: int, name: str = "data.txt") -> str:
    write(repo, name, "".join(f"line {n}\n" for n in range(1, count + 1)))
    return name


def error(ctx, **args) -> str:
    with pytest.raises(ToolError) as caught:
        read_file(ctx, args)
    return str(caught.value)


# --- the window --------------------------------------------------------------------------------

def test_small_file_is_shown_whole_with_numbers(ctx):
    output = read_file(ctx, {"path": "src/app.py"})
    assert "1 | def main():" in output
    assert "2 |     return 1" in output
    assert numbers(output) == [1, 2]
    assert "more lines" not in output


def test_header_names_the_path_and_total(ctx, repo):
    lines_file(repo, 250)
    header = read_file(ctx, {"path": "data.txt"}).splitlines()[0]
    assert "data.txt" in header and "250 lines" in header


def test_default_window_is_100_lines(ctx, repo):
    lines_file(repo, 250)
    output = read_file(ctx, {"path": "data.txt"})
    assert WINDOW_LINES == 100
    assert numbers(output) == list(range(1, 101))
    assert "line 101" not in output


def test_below_marker_counts_the_rest(ctx, repo):
    lines_file(repo, 250)
    output = read_file(ctx, {"path": "data.txt"})
    assert "(150 more lines below)" in output
    assert "above)" not in output


def test_middle_window_has_both_markers(ctx, repo):
    lines_file(repo, 250)
    output = read_file(ctx, {"path": "data.txt", "start_line": 101})
    assert numbers(output) == list(range(101, 201))
    assert "(100 more lines above)" in output
    assert "(50 more lines below)" in output


def test_last_window_has_no_below_marker(ctx, repo):
    lines_file(repo, 250)
    output = read_file(ctx, {"path": "data.txt", "start_line": 240})
    assert numbers(output) == list(range(240, 251))
    assert "(239 more lines above)" in output
    assert "below)" not in output


def test_explicit_range_is_inclusive(ctx, repo):
    lines_file(repo, 50)
    output = read_file(ctx, {"path": "data.txt", "start_line": 10, "end_line": 20})
    assert numbers(output) == list(range(10, 21))
    assert "10 | line 10" in output and "20 | line 20" in output
    assert "(9 more lines above)" in output and "(30 more lines below)" in output


def test_single_line_range(ctx, repo):
    lines_file(repo, 50)
    output = read_file(ctx, {"path": "data.txt", "start_line": 7, "end_line": 7})
    assert numbers(output) == [7]


def test_one_line_above_and_below_is_singular(ctx, repo):
    lines_file(repo, 3)
    output = read_file(ctx, {"path": "data.txt", "start_line": 2, "end_line": 2})
    assert "(1 more line above)" in output and "(1 more line below)" in output
    message = error(ctx, path="data.txt", start_line=5)
    assert "(data.txt has 3 lines)" in message
    lines_file(repo, 1)
    assert "(data.txt has 1 line)" in error(ctx, path="data.txt", start_line=2)


def test_end_line_alone_starts_at_one(ctx, repo):
    lines_file(repo, 50)
    assert numbers(read_file(ctx, {"path": "data.txt", "end_line": 5})) == [1, 2, 3, 4, 5]


def test_numbers_are_right_aligned(ctx, repo):
    lines_file(repo, 120)
    output = read_file(ctx, {"path": "data.txt", "start_line": 95, "end_line": 105})
    assert " 99 | line 99" in output
    assert "100 | line 100" in output


def test_numbered_text_is_the_file_text(ctx, repo):
    write(repo, "code.py", "if x:\n\tpass  \n")
    output = read_file(ctx, {"path": "code.py"})
    assert "1 | if x:" in output
    assert "2 | \tpass  " in output


def test_line_numbers_as_strings_are_accepted(ctx, repo):
    lines_file(repo, 30)
    assert numbers(read_file(ctx, {"path": "data.txt", "start_line": "3", "end_line": "4"})) == [3, 4]


# --- out of range ------------------------------------------------------------------------------

def test_start_past_the_end_is_an_error_with_the_total(ctx, repo):
    lines_file(repo, 30)
    message = error(ctx, path="data.txt", start_line=31)
    assert "past the end" in message and "30 lines" in message


def test_end_past_the_end_shows_what_exists_with_a_note(ctx, repo):
    lines_file(repo, 30)
    output = read_file(ctx, {"path": "data.txt", "start_line": 25, "end_line": 90})
    assert numbers(output) == list(range(25, 31))
    assert "past the end" in output


def test_end_before_start_is_an_error(ctx, repo):
    lines_file(repo, 30)
    assert "before start_line" in error(ctx, path="data.txt", start_line=10, end_line=5)


@pytest.mark.parametrize("value", [0, -3, "-1"])
def test_non_positive_line_numbers_are_errors(ctx, repo, value):
    lines_file(repo, 30)
    assert "1" in error(ctx, path="data.txt", start_line=value)


@pytest.mark.parametrize("value", [1.5, "ten", True, [1]])
def test_non_integer_line_numbers_are_errors(ctx, repo, value):
    lines_file(repo, 30)
    assert "line number" in error(ctx, path="data.txt", end_line=value)


def test_range_longer_than_100_is_clipped(ctx, repo):
    lines_file(repo, 300)
    output = read_file(ctx, {"path": "data.txt", "start_line": 1, "end_line": 250})
    assert numbers(output) == list(range(1, 101))
    assert "showing at most 100" in output
    assert "start_line=101" in output
    assert "(200 more lines below)" in output


def test_clipped_range_from_the_middle(ctx, repo):
    lines_file(repo, 300)
    output = read_file(ctx, {"path": "data.txt", "start_line": 50, "end_line": 300})
    assert numbers(output) == list(range(50, 150))
    assert "start_line=150" in output


# --- outline of large files --------------------------------------------------------------------

LARGE_PYTHON = ("import os\n\n\n" + "".join(f"CONSTANT_{n} = {n}\n" for n in range(150))
                + "\n\nclass LateClass:\n    def late_method(self):\n        return os.sep\n"
                + "\n\ndef late_function():\n    return 1\n")


def test_large_file_gets_an_outline_of_definitions(ctx, repo):
    write(repo, "big.py", LARGE_PYTHON)
    output = read_file(ctx, {"path": "big.py"})
    lines = LARGE_PYTHON.splitlines()
    late_function_line = lines.index("def late_function():") + 1
    late_class_line = lines.index("class LateClass:") + 1
    assert late_function_line > 100
    assert "Definitions" in output
    assert re.search(rf"\b{late_function_line}: function late_function\b", output)
    assert re.search(rf"\b{late_class_line}: class LateClass\b", output)
    assert "late_method" in output
    assert numbers(output)[-1] == 100  # the outline does not add numbered lines


def test_no_outline_when_a_range_is_given(ctx, repo):
    write(repo, "big.py", LARGE_PYTHON)
    output = read_file(ctx, {"path": "big.py", "start_line": 1, "end_line": 10})
    assert "late_function" not in output


def test_no_outline_for_a_small_file(ctx, repo):
    write(repo, "small.py", "def one():\n    return 1\n")
    assert "Definitions" not in read_file(ctx, {"path": "small.py"})


def test_large_file_in_unknown_language_still_reads(ctx, repo):
    lines_file(repo, 150, "notes.unknownext")
    output = read_file(ctx, {"path": "notes.unknownext"})
    assert numbers(output) == list(range(1, 101))


# --- what is not readable text -----------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"


def test_png_is_refused_naming_the_format(ctx, repo):
    write(repo, "logo.png", PNG)
    message = error(ctx, path="logo.png")
    assert "PNG image" in message
    assert "not a text file" in message


def test_nul_bytes_are_refused_as_binary(ctx, repo):
    write(repo, "blob.dat", b"abc\x00def\x01\x02")
    assert "binary" in error(ctx, path="blob.dat")


def test_elf_binary_is_named(ctx, repo):
    write(repo, "tool", b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 40)
    assert "ELF" in error(ctx, path="tool")


def test_latin1_is_refused_as_not_utf8(ctx, repo):
    write(repo, "old.txt", "café crème\n".encode("latin-1"))
    message = error(ctx, path="old.txt")
    assert "not valid UTF-8" in message
    assert "byte 3" in message


def test_utf16_is_refused_by_name(ctx, repo):
    write(repo, "wide.txt", "hello\n".encode("utf-16"))
    assert "UTF-16" in error(ctx, path="wide.txt")


def test_text_starting_like_a_signature_is_still_text(ctx, repo):
    write(repo, "notes.md", "MZ is how DOS executables start.\n%PDF- too.\n")
    assert "1 | MZ is how" in read_file(ctx, {"path": "notes.md"})


def test_utf8_text_with_non_ascii_reads(ctx, repo):
    write(repo, "intl.txt", "naïve — 日本語\n")
    assert "1 | naïve — 日本語" in read_file(ctx, {"path": "intl.txt"})


def test_too_large_file_is_refused(ctx, repo):
    write(repo, "huge.txt", b"x" * (MAX_FILE_BYTES + 1))
    message = error(ctx, path="huge.txt")
    assert "too large" in message and "search_files" in message


# --- long lines, empty files, line endings -----------------------------------------------------

def test_long_lines_are_clipped(ctx, repo):
    write(repo, "min.js", "a" * 5000 + "\nshort\n")
    output = read_file(ctx, {"path": "min.js"})
    first = next(line for line in output.splitlines() if line.startswith("1 | "))
    assert "a" * MAX_LINE_CHARS in first
    assert "a" * (MAX_LINE_CHARS + 1) not in first
    assert "4,500 more characters" in first
    assert "2 | short" in output


def test_line_of_exactly_the_limit_is_not_clipped(ctx, repo):
    write(repo, "edge.txt", "b" * MAX_LINE_CHARS + "\n")
    assert "clipped" not in read_file(ctx, {"path": "edge.txt"})


def test_empty_file(ctx, repo):
    write(repo, "empty.txt", "")
    output = read_file(ctx, {"path": "empty.txt"})
    assert "empty" in output and "0 lines" in output


def test_crlf_lines_show_without_carriage_returns(ctx, repo):
    write(repo, "win.txt", "one\r\ntwo\r\n")
    output = read_file(ctx, {"path": "win.txt"})
    assert "\r" not in output
    assert numbers(output) == [1, 2]


def test_bom_is_not_shown(ctx, repo):
    write(repo, "bom.txt", "\ufefffirst\nsecond\n")
    output = read_file(ctx, {"path": "bom.txt"})
    assert "\ufeff" not in output
    assert "1 | first" in output


def test_last_line_without_newline_is_shown(ctx, repo):
    write(repo, "tail.txt", "a\nb")
    output = read_file(ctx, {"path": "tail.txt"})
    assert numbers(output) == [1, 2] and "2 | b" in output


def test_blank_lines_are_counted(ctx, repo):
    write(repo, "gaps.txt", "a\n\n\nb\n")
    output = read_file(ctx, {"path": "gaps.txt"})
    assert numbers(output) == [1, 2, 3, 4]
    assert "4 lines" in output


# --- refusals through the path rules -----------------------------------------------------------

def test_directory_suggests_list_files(ctx):
    message = error(ctx, path="src")
    assert "directory" in message and "list_files" in message


def test_missing_file_suggests_close_names(ctx):
    message = error(ctx, path="src/apps.py")
    assert "does not exist" in message and "src/app.py" in message


def test_outside_is_refused(ctx, tmp_path):
    (tmp_path / "secret.txt").write_text("s\n")
    assert "outside" in error(ctx, path="../secret.txt")


def test_git_config_is_refused(ctx):
    assert ".git" in error(ctx, path=".git/config")


def test_policy_denied_file_is_tool_denied(ctx, repo):
    write(repo, "deploy/server.pem", "-----BEGIN PRIVATE KEY-----\n")
    with pytest.raises(ToolDenied):
        read_file(ctx, {"path": "deploy/server.pem"})


def test_symlink_header_names_the_real_file(ctx, repo):
    (repo / "alias.py").symlink_to("src/app.py")
    assert read_file(ctx, {"path": "alias.py"}).splitlines()[0].startswith("File: src/app.py")


def test_fifo_is_refused_without_blocking(ctx, repo):
    os.mkfifo(repo / "pipe")
    assert "regular file" in error(ctx, path="pipe")


def test_missing_path_argument(ctx):
    with pytest.raises(ToolError, match="path"):
        read_file(ctx, {})


def test_schema_and_description(ctx):
    definition = READ_FILE.definition()
    assert definition["input_schema"]["required"] == ["path"]
    assert set(definition["input_schema"]["properties"]) == {"path", "start_line", "end_line"}
    description = definition["description"]
    assert "100" in description and "start_line" in description and "end_line" in description
    assert not READ_FILE.changes_files


def test_a_hard_link_to_a_read_denied_file_is_not_read(tmp_path):
    # Issue 20: read_deny judges names; another name of the same file showed its content.
    from gitbot.policy import Policy
    from gitbot.secrets import Secrets
    from gitbot.tools.base import ToolContext
    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "linked", {"app.py": "print('app')\n"})
    (repo / ".env").write_text("DB_PASSWORD=hunter2-linked\n")
    os.link(repo / ".env", repo / "notes.txt")
    ctx = ToolContext(repo, Policy(repo=repo, read_deny=(".env",), sandbox_mode="off"), Secrets())
    with pytest.raises(ToolDenied, match="hard link"):
        read_file(ctx, {"path": "notes.txt"})
    assert "print" in str(read_file(ctx, {"path": "app.py"}))
