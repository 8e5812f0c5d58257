"""The edit guardrail on its own: new syntax errors are fatal, old ones are not, lint is a warning."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gitbot.tools import guardrail
from gitbot.tools.guardrail import SYNTAX, TREE_SITTER, Finding, check_edit, introduced


@pytest.fixture
def where(tmp_path: Path) -> Path:
    return tmp_path


# --- Python ------------------------------------------------------------------------------------

def test_valid_python_passes(where):
    report = check_edit(where / "a.py", "x = 1\n", "x = 2\n")
    assert not report.rejected and report.errors == [] and report.warnings == []
    assert "ruff" in report.checker


def test_new_python_syntax_error_is_rejected_with_its_line(where):
    report = check_edit(where / "a.py", "def f():\n    return 1\n", "def f():\n    return (1\n\nx = 2\n")
    assert report.rejected
    assert report.errors[0].code == SYNTAX
    assert report.errors[0].line in (2, 3, 4, 5)


def test_new_file_with_syntax_error_is_rejected(where):
    assert check_edit(where / "new.py", None, "class :\n").rejected


def test_old_python_syntax_error_does_not_block(where):
    broken = "def f(:\n    pass\n"
    assert not check_edit(where / "a.py", broken + "x = 1\n", broken + "x = 2\n").rejected


def test_old_error_moved_by_inserted_lines_is_not_new(where):
    broken = "def f(:\n    pass\n"
    report = check_edit(where / "a.py", "x = 1\n" + broken, "x = 1\ny = 2\nz = 3\n" + broken)
    assert not report.rejected


def test_new_error_in_an_already_broken_file_is_rejected(where):
    before = "def f(:\n    pass\n\n\ndef g():\n    return 1\n"
    after = "def f(:\n    pass\n\n\ndef g():\n    return [1\n"
    assert check_edit(where / "a.py", before, after).rejected


def test_new_undefined_name_is_fatal(where):
    report = check_edit(where / "a.py", "def f():\n    return 1\n", "def f():\n    return missing_name\n")
    assert report.rejected
    assert report.errors[0].code == "F821" and report.errors[0].line == 2


def test_existing_undefined_name_does_not_block(where):
    before = "def f():\n    return missing_name\n"
    assert not check_edit(where / "a.py", before, before + "\n\nX = 1\n").rejected


def test_new_unused_import_is_a_warning(where):
    report = check_edit(where / "a.py", "x = 1\n", "import os\n\nx = 1\n")
    assert not report.rejected
    assert [w.code for w in report.warnings] == ["F401"]
    assert report.warnings[0].line == 1


def test_existing_unused_import_is_not_a_warning(where):
    report = check_edit(where / "a.py", "import os\nx = 1\n", "import os\nx = 2\n")
    assert report.warnings == []


def test_repairing_syntax_does_not_block_on_uncovered_names(where):
    # ruff cannot lint a file it cannot parse, so names "appearing" after a repair are warnings.
    before = "def f(:\n    return missing_name\n"
    after = "def f():\n    return missing_name\n"
    report = check_edit(where / "a.py", before, after)
    assert not report.rejected
    assert any(w.code == "F821" for w in report.warnings)


def test_repository_ruff_config_cannot_hide_fatal_errors(where):
    (where / "ruff.toml").write_text('[lint]\nignore = ["F821", "F"]\n')
    assert check_edit(where / "a.py", "x = 1\n", "x = missing_name\n").rejected


def test_stub_files_are_checked_as_python(where):
    assert check_edit(where / "types.pyi", None, "def f(:\n").rejected


def test_check_never_touches_the_disk(where):
    target = where / "sub" / "new.py"
    check_edit(target, None, "x = 1\n")
    check_edit(target, None, "def f(:\n")
    assert not target.exists() and not (where / "sub").exists()


def test_without_ruff_the_compiler_still_rejects(where, monkeypatch):
    monkeypatch.setattr(guardrail, "_run_ruff", lambda path, text: ([], "ruff is not installed: test"))
    report = check_edit(where / "a.py", "x = 1\n", "x = (\n")
    assert report.rejected
    assert report.errors[0].code == SYNTAX
    assert any("ruff was not run" in note for note in report.notes)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="needs an interpreter older than PEP 695")
def test_newer_syntax_that_ruff_accepts_is_only_a_warning(where):
    report = check_edit(where / "a.py", "x = 1\n", "type Alias = int\nx = 1\n")
    assert not report.rejected
    assert any("cannot compile" in w.message for w in report.warnings)


def test_nul_byte_in_python_is_rejected(where):
    assert check_edit(where / "a.py", "x = 1\n", "x = 1\0\n").rejected


# --- tree-sitter -------------------------------------------------------------------------------

VALID_AND_BROKEN = {
    "a.js": ("function f(a) {\n  return a + 1;\n}\n", "function f(a) {\n  return (a + 1;\n}\n"),
    "a.ts": ("function f(a: number): number {\n  return a;\n}\n", "function f(a: number: number {\n  return a;\n}\n"),
    "a.tsx": ("const A = () => <div>hi</div>;\n", "const A = () => <div>hi</div;\n"),
    "a.go": ("package main\n\nfunc f() int {\n\treturn 1\n}\n", "package main\n\nfunc f() int {\n\treturn 1 +\n"),
    "a.rs": ("fn f() -> i32 {\n    1\n}\n", "fn f() -> i32 {\n    let x = ;\n}\n"),
    "A.java": ("class A {\n  int f() { return 1; }\n}\n", "class A {\n  int f() { return 1 }\n}\n"),
    "a.c": ("int f(void) {\n  return 1;\n}\n", "int f(void) {\n  return 1\n}\n"),
    "a.cpp": ("int f() {\n  return 1;\n}\n", "int f() {\n  return (1;\n}\n"),
    "a.rb": ("def f\n  1\nend\n", "def f\n  (1\nend\n"),
    "a.sh": ("if true; then\n  echo hi\nfi\n", "if true; then\n  echo hi\n"),
}


@pytest.mark.parametrize("name", sorted(VALID_AND_BROKEN))
def test_tree_sitter_languages(where, name):
    valid, broken = VALID_AND_BROKEN[name]
    clean = check_edit(where / name, None, valid)
    assert not clean.rejected, clean.errors
    assert "tree-sitter" in clean.checker
    report = check_edit(where / name, valid, broken)
    assert report.rejected
    assert all(error.code == TREE_SITTER for error in report.errors)


def test_tree_sitter_missing_node_is_named(where):
    report = check_edit(where / "a.js", "let x = f(1);\n", "let x = f(1;\n")
    assert report.errors and "missing" in report.errors[0].message


def test_tree_sitter_old_error_does_not_block(where):
    broken = "function f() {\n  return (1;\n}\n\n"
    before = broken + "function g() {\n  return 2;\n}\n"
    after = broken + "function g() {\n  return 3;\n}\n"
    assert not check_edit(where / "a.js", before, after).rejected


def test_unknown_language_is_not_checked(where):
    report = check_edit(where / "notes.txt", "a\n", "def f(:\n{{{\n")
    assert not report.rejected
    assert report.checker == "none"


def test_extension_is_case_insensitive(where):
    assert check_edit(where / "A.JS", None, "function f( {\n").rejected


# --- counting what is new ----------------------------------------------------------------------

def finding(line: int, message: str = "boom", code: str = SYNTAX) -> Finding:
    return Finding(line, 1, code, message)


def test_introduced_counts_by_kind_not_line():
    before = [finding(1)]
    after = [finding(5)]  # the same problem, moved
    assert introduced(after, before, "a\n", "x\ny\nz\nw\na\n") == []


def test_introduced_reports_the_surplus_on_the_new_lines():
    before_text = "bad\nok\n"
    after_text = "bad\nok\nnew bad\n"
    picked = introduced([finding(1), finding(3)], [finding(1)], before_text, after_text)
    assert [f.line for f in picked] == [3]


def test_introduced_for_a_new_file_reports_everything():
    assert len(introduced([finding(1), finding(2, "other")], [], None, "a\nb\n")) == 2


def test_describe_names_line_column_and_code():
    assert Finding(3, 7, "F821", "Undefined name `x`").describe() == "line 3, column 7: F821 Undefined name `x`"
    assert Finding(1, 2, SYNTAX, "invalid syntax").describe() == "line 1, column 2: syntax error: invalid syntax"
