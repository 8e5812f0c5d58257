"""replace_in_file: the matching cascade, atomic blocks, refused ambiguity, helpful failures.

The cases follow the kinds that Aider's editblock tests, Cline's diff tests and OpenHands-ACI's
editor tests cover, adjusted to stricter semantics: all blocks or none, and never a guess.
"""

from __future__ import annotations

import re

import pytest

from gitbot.tools.base import ToolDenied, ToolError, ToolResult
from gitbot.tools.edit import REPLACE_IN_FILE, replace_in_file
from tests.tools.conftest import write


def block(search: str, replace: str, *, cline: bool = False) -> str:
    opening, closing = ("------- SEARCH", "+++++++ REPLACE") if cline else ("<<<<<<< SEARCH", ">>>>>>> REPLACE")
    parts = [opening, *([search] if search else []), "=======", *([replace] if replace else []), closing]
    return "\n".join(parts)


def apply(ctx, path: str, *blocks: str) -> ToolResult:
    return replace_in_file(ctx, {"path": path, "diff": "\n".join(blocks)})


def failure(ctx, path: str, *blocks: str) -> str:
    with pytest.raises(ToolError) as caught:
        apply(ctx, path, *blocks)
    return str(caught.value)


def refused(ctx, target, *blocks: str) -> str:
    """The error for `blocks`, after checking the refusal left the file byte-identical."""
    before = target.read_bytes()
    message = failure(ctx, target.name, *blocks)
    assert target.read_bytes() == before
    return message


def numbered(output: str) -> dict[int, str]:
    return {int(n): text for n, text in re.findall(r"^\s*(\d+) \| (.*)$", output, re.MULTILINE)}


CLASS_FILE = """class Cart:
    def __init__(self):
        self.items = []

    def total(self):
        return sum(self.items)

    def count(self):
        return len(self.items)
"""


@pytest.fixture
def cart(repo):
    write(repo, "cart.py", CLASS_FILE)
    return repo / "cart.py"


# --- the matching cascade ----------------------------------------------------------------------

def test_exact_match(ctx, cart):
    result = apply(ctx, "cart.py", block("        return sum(self.items)", "        return sum(self.items) + 0"))
    assert "return sum(self.items) + 0\n" in cart.read_text()
    assert "Applied 1 block to cart.py" in result.text
    assert "matched" not in result.text  # an exact match needs no note
    assert result.touched == ("cart.py",)


def test_trailing_whitespace_is_ignored(ctx, repo):
    target = write(repo, "ws.py", "x = 1   \ny = 2\t\nz = 3\n")
    result = apply(ctx, "ws.py", block("x = 1\ny = 2", "x = 10\ny = 20"))
    assert target.read_text() == "x = 10\ny = 20\nz = 3\n"
    assert "ignoring trailing whitespace" in result.text


def test_search_with_extra_trailing_whitespace_matches(ctx, repo):
    target = write(repo, "ws.py", "x = 1\ny = 2\n")
    apply(ctx, "ws.py", block("x = 1  ", "x = 5"))
    assert target.read_text() == "x = 5\ny = 2\n"


def test_indentation_offset_reindents_replace(ctx, cart):
    # SEARCH written without the class's indentation: matched with the offset, REPLACE shifted by it.
    search = "def count(self):\n    return len(self.items)"
    replace = "def count(self):\n    if not self.items:\n        return 0\n    return len(self.items)"
    result = apply(ctx, "cart.py", block(search, replace))
    assert cart.read_text().endswith("    def count(self):\n        if not self.items:\n            return 0\n"
                                     "        return len(self.items)\n")
    assert "uniform indentation offset" in result.text
    assert "shifted" in result.text


def test_search_indented_deeper_than_the_file(ctx, repo):
    target = write(repo, "top.py", "def f():\n    return 1\n")
    apply(ctx, "top.py", block("        def f():\n            return 1", "        def f():\n            return 2"))
    assert target.read_text() == "def f():\n    return 2\n"


def test_indentation_offset_with_tabs(ctx, repo):
    target = write(repo, "tabs.go", "package main\n\nfunc f() int {\n\tif true {\n\t\treturn 1\n\t}\n\treturn 0\n}\n")
    apply(ctx, "tabs.go", block("if true {\n\treturn 1\n}", "if true {\n\treturn 2\n}"))
    assert "\tif true {\n\t\treturn 2\n\t}\n" in target.read_text()


def test_indentation_offset_keeps_blank_lines_blank(ctx, repo):
    target = write(repo, "blank.py", "class A:\n    x = 1\n\n    y = 2\n")
    apply(ctx, "blank.py", block("x = 1\n\ny = 2", "x = 1\n\ny = 3"))
    assert target.read_text() == "class A:\n    x = 1\n\n    y = 3\n"


def test_trimmed_lines_match_last(ctx, repo):
    # Indentation differs by a different amount on each line: only the trimmed comparison matches.
    target = write(repo, "odd.py", "if a:\n    b = 1\n    c = 2\n")
    result = apply(ctx, "odd.py", block("if a:\n  b = 1\n      c = 2", "if a:\n    b = 1\n    c = 3"))
    assert target.read_text() == "if a:\n    b = 1\n    c = 3\n"
    assert "only after trimming" in result.text
    assert "check their indentation" in result.text


def test_a_stricter_match_wins_over_a_looser_one(ctx, repo):
    # "foo()" matches exactly once and also, ignoring trailing whitespace, a second place: not ambiguous.
    target = write(repo, "strict.txt", "foo()\nbar()\nfoo()   \n")
    apply(ctx, "strict.txt", block("foo()", "baz()"))
    assert target.read_text() == "baz()\nbar()\nfoo()   \n"


def test_first_and_last_line_anchor_is_never_used(ctx, repo):
    content = "def f():\n    a = 1\n    b = 2\n    return a + b\n"
    target = write(repo, "anchor.py", content)
    message = failure(ctx, "anchor.py", block("def f():\n    a = 100\n    b = 200\n    return a + b",
                                              "def f():\n    return 0"))
    assert "does not match" in message
    assert target.read_text() == content


def test_near_miss_is_not_fuzzy_applied(ctx, cart):
    before = cart.read_bytes()
    failure(ctx, "cart.py", block("        return sum(self.itemz)", "        return 0"))
    assert cart.read_bytes() == before


# --- markers and format ------------------------------------------------------------------------

def test_cline_markers(ctx, cart):
    apply(ctx, "cart.py", block("        return len(self.items)", "        return len(self.items) or 0", cline=True))
    assert "or 0" in cart.read_text()


def test_code_fences_and_blank_lines_between_blocks_are_ignored(ctx, cart):
    diff = "```python\n" + block("        self.items = []", "        self.items = list()") + "\n```\n\n"
    replace_in_file(ctx, {"path": "cart.py", "diff": diff})
    assert "self.items = list()" in cart.read_text()


def test_diff_with_crlf_line_endings(ctx, cart):
    diff = block("        return len(self.items)", "        return 0").replace("\n", "\r\n")
    replace_in_file(ctx, {"path": "cart.py", "diff": diff})
    assert cart.read_text().endswith("        return 0\n")
    assert b"\r" not in cart.read_bytes()


def test_file_path_line_before_the_block_is_tolerated(ctx, cart):
    diff = "cart.py\n" + block("        return len(self.items)", "        return 0")
    replace_in_file(ctx, {"path": "cart.py", "diff": diff})
    assert "return 0" in cart.read_text()


@pytest.mark.parametrize("diff, problem", [
    ("just replace total with something better", "outside any block"),
    ("<<<<<<< SEARCH\nx\n>>>>>>> REPLACE", "no ======="),
    ("<<<<<<< SEARCH\n        self.items = []\n=======\n        self.items = None", "not closed"),
    ("<<<<<<< SEARCH\n        self.items = []", "not closed"),
    ("=======\nx\n>>>>>>> REPLACE", "before any SEARCH"),
    ("<<<<<<< SEARCH\na\n=======\nb\n=======\nc\n>>>>>>> REPLACE", "2 lines made only of = signs (lines 3, 5)"),
    ("<<<<<<< SEARCH\na\n<<<<<<< SEARCH\nb\n=======\nc\n>>>>>>> REPLACE", "second SEARCH"),
    ("", "diff"),
])
def test_malformed_diff_shows_the_expected_format(ctx, cart, diff, problem):
    before = cart.read_bytes()
    with pytest.raises(ToolError) as caught:
        replace_in_file(ctx, {"path": "cart.py", "diff": diff})
    message = str(caught.value)
    assert problem in message
    if diff:
        assert "<<<<<<< SEARCH" in message and "=======" in message and ">>>>>>> REPLACE" in message
    assert cart.read_bytes() == before


# --- several blocks, atomicity -----------------------------------------------------------------

def test_multiple_blocks_apply_in_order(ctx, cart):
    result = apply(ctx, "cart.py",
                   block("        return sum(self.items)", "        return sum(self.items) * 2"),
                   block("        return len(self.items)", "        return len(self.items) * 3"))
    text = cart.read_text()
    assert "sum(self.items) * 2" in text and "len(self.items) * 3" in text
    assert "Applied 2 blocks" in result.text


def test_later_block_sees_the_text_of_earlier_blocks(ctx, repo):
    target = write(repo, "chain.txt", "alpha\nbeta\n")
    apply(ctx, "chain.txt", block("alpha", "gamma"), block("gamma\nbeta", "delta"))
    assert target.read_text() == "delta\n"


def test_failing_second_block_leaves_the_file_byte_identical(ctx, cart):
    before = cart.read_bytes()
    message = failure(ctx, "cart.py",
                      block("        return sum(self.items)", "        return 0"),
                      block("        return max(self.items)", "        return 1"))
    assert cart.read_bytes() == before
    assert "Block 2 of 2 failed" in message
    assert "return max(self.items)" in message  # the failing block is quoted
    assert "No change was made" in message
    assert "Block 1 matched but was not written" in message


def test_failing_first_block_names_block_one(ctx, cart):
    before = cart.read_bytes()
    message = failure(ctx, "cart.py", block("nope()", "yes()"), block("        return len(self.items)", "x"))
    assert "Block 1 of 2 failed" in message
    assert cart.read_bytes() == before


def test_block_that_fails_after_an_earlier_block_changed_its_text(ctx, repo):
    target = write(repo, "t.txt", "one\ntwo\n")
    message = failure(ctx, "t.txt", block("one", "uno"), block("one\ntwo", "x"))
    assert "as edited by the blocks before it" in message
    assert target.read_text() == "one\ntwo\n"


def test_blocks_that_undo_each_other_change_nothing(ctx, repo):
    target = write(repo, "t.txt", "one\ntwo\n")
    result = apply(ctx, "t.txt", block("one", "uno"), block("uno", "one"))
    assert "nothing changed" in result.text
    assert target.read_text() == "one\ntwo\n"


def test_identical_search_and_replace_is_an_error(ctx, cart):
    assert "identical" in failure(ctx, "cart.py", block("class Cart:", "class Cart:"))


# --- ambiguity ---------------------------------------------------------------------------------

def test_ambiguous_search_lists_the_line_numbers(ctx, repo):
    content = "a = 1\nprint(a)\nb = 2\nc = 3\nprint(a)\n"
    target = write(repo, "amb.py", content)
    message = failure(ctx, "amb.py", block("print(a)", "print(a, b)"))
    assert "matches 2 places" in message
    assert "lines 2, 5" in message
    assert "Add surrounding lines" in message
    assert target.read_text() == content


def test_ambiguous_multiline_search_lists_ranges(ctx, repo):
    content = "x = 0\nif x:\n    y()\nz = 1\nif x:\n    y()\n"
    write(repo, "amb.py", content)
    message = failure(ctx, "amb.py", block("if x:\n    y()", "if x:\n    w()"))
    assert "2-3" in message and "5-6" in message


def test_ambiguity_at_a_looser_level_is_refused_too(ctx, repo):
    write(repo, "amb.py", "class A:\n    def f(self):\n        pass\n\nclass B:\n    def f(self):\n        pass\n")
    message = failure(ctx, "amb.py", block("def f(self):\n    pass", "def f(self):\n    return 1"))
    assert "matches 2 places" in message and "indentation" in message


def test_adding_context_resolves_ambiguity(ctx, repo):
    target = write(repo, "amb.py", "a = 1\nprint(a)\nb = 2\nprint(a)\n")
    apply(ctx, "amb.py", block("b = 2\nprint(a)", "b = 2\nprint(b)"))
    assert target.read_text() == "a = 1\nprint(a)\nb = 2\nprint(b)\n"


# --- empty SEARCH, creating files --------------------------------------------------------------

def test_empty_search_creates_a_new_file(ctx, repo):
    result = apply(ctx, "pkg/new_module.py", block("", "def hello():\n    return 'hi'"))
    assert (repo / "pkg" / "new_module.py").read_text() == "def hello():\n    return 'hi'\n"
    assert "Created pkg/new_module.py" in result.text
    assert result.touched == ("pkg/new_module.py",)


def test_empty_search_fills_an_empty_file(ctx, repo):
    target = write(repo, "empty.txt", "")
    apply(ctx, "empty.txt", block("", "content"))
    assert target.read_text() == "content\n"


def test_empty_search_on_a_non_empty_file_is_an_error(ctx, cart):
    before = cart.read_bytes()
    message = failure(ctx, "cart.py", block("", "print('appended')"))
    assert "SEARCH part is empty" in message and "not empty" in message
    assert cart.read_bytes() == before


def test_non_empty_search_on_a_missing_file_is_an_error(ctx, repo):
    message = failure(ctx, "missing.py", block("x = 1", "x = 2"))
    assert "does not exist" in message and "empty SEARCH" in message
    assert not (repo / "missing.py").exists()


def test_rejected_new_file_is_not_created(ctx, repo):
    message = failure(ctx, "newdir/bad.py", block("", "def broken(:\n    pass"))
    assert "was not created" in message
    assert not (repo / "newdir").exists()


# --- failures that help ------------------------------------------------------------------------

def test_no_match_shows_the_most_similar_lines_with_numbers(ctx, cart):
    message = failure(ctx, "cart.py", block("    def total(self):\n        return sum(self.itemz)",
                                            "    def total(self):\n        return 0"))
    assert "does not match" in message
    assert "Did you mean" in message
    shown = numbered(message)
    assert shown.get(5) == "    def total(self):"
    assert shown.get(6) == "        return sum(self.items)"
    assert "lines 5-6" in message


def test_no_match_notes_when_replace_is_already_present(ctx, cart):
    message = failure(ctx, "cart.py", block("        return sum(self.items) * 100",
                                            "        return len(self.items)"))
    assert "already present at line 9" in message


def test_copied_line_numbers_are_pointed_out(ctx, cart):
    message = failure(ctx, "cart.py", block("5 |     def total(self):\n6 |         return sum(self.items)",
                                            "    def total(self):\n        return 0"))
    assert "line numbers" in message and "leave them out" in message


def test_unrelated_search_gets_no_bogus_suggestion(ctx, cart):
    message = failure(ctx, "cart.py", block("completely unrelated zebra text", "x"))
    assert "Did you mean" not in message
    assert "read_file" in message


# --- line endings, BOM, final newline ----------------------------------------------------------

def test_crlf_file_stays_crlf(ctx, repo):
    target = write(repo, "win.py", "a = 1\r\nb = 2\r\nc = 3\r\n")
    result = apply(ctx, "win.py", block("b = 2", "b = 20\nb2 = 21"))
    assert target.read_bytes() == b"a = 1\r\nb = 20\r\nb2 = 21\r\nc = 3\r\n"
    assert "CRLF" in result.text
    assert "matched" not in result.text  # the carriage returns are not mistaken for trailing whitespace


def test_bom_is_kept(ctx, repo):
    target = write(repo, "bom.txt", "\ufeffone\ntwo\n")
    apply(ctx, "bom.txt", block("two", "three"))
    assert target.read_bytes() == b"\xef\xbb\xbfone\nthree\n"


def test_missing_final_newline_stays_missing(ctx, repo):
    target = write(repo, "nonl.txt", "one\ntwo")
    apply(ctx, "nonl.txt", block("two", "three"))
    assert target.read_bytes() == b"one\nthree"


def test_deleting_lines_with_empty_replace(ctx, cart):
    apply(ctx, "cart.py", block("\n    def count(self):\n        return len(self.items)", ""))
    assert cart.read_text() == CLASS_FILE.split("\n\n    def count")[0] + "\n"


# --- what success shows ------------------------------------------------------------------------

def test_success_shows_the_changed_region_with_four_lines_of_context(ctx, repo):
    target = write(repo, "long.txt", "".join(f"line {n}\n" for n in range(1, 31)))
    result = apply(ctx, "long.txt", block("line 15", "LINE FIFTEEN"))
    shown = numbered(result.text)
    assert sorted(shown) == list(range(11, 20))
    assert shown[15] == "LINE FIFTEEN"
    assert "Lines 11-19:" in result.text
    assert "now 30 lines" in result.text
    assert "LINE FIFTEEN" in target.read_text()


def test_numbers_in_the_snippet_follow_the_new_file(ctx, repo):
    write(repo, "long.txt", "".join(f"line {n}\n" for n in range(1, 31)))
    result = apply(ctx, "long.txt", block("line 10", "line 10\nnew a\nnew b"))
    shown = numbered(result.text)
    assert shown[11] == "new a" and shown[12] == "new b" and shown[13] == "line 11"


def test_distant_changes_are_shown_as_separate_regions(ctx, repo):
    write(repo, "long.txt", "".join(f"line {n}\n" for n in range(1, 61)))
    result = apply(ctx, "long.txt", block("line 5", "five"), block("line 50", "fifty"))
    assert "Lines 1-9:" in result.text and "Lines 46-54:" in result.text
    assert 30 not in numbered(result.text)


def test_region_at_the_start_of_the_file(ctx, repo):
    write(repo, "long.txt", "".join(f"line {n}\n" for n in range(1, 31)))
    result = apply(ctx, "long.txt", block("line 1\nline 2", "first"))
    shown = numbered(result.text)
    assert shown[1] == "first" and shown[2] == "line 3"
    assert max(shown) == 5


# --- the guardrail -----------------------------------------------------------------------------

def test_edit_introducing_a_syntax_error_is_rejected(ctx, cart):
    before = cart.read_bytes()
    message = failure(ctx, "cart.py", block("    def total(self):", "    def total(self:"))
    assert "NOT applied" in message and "line 5" in message
    assert cart.read_bytes() == before


def test_edit_introducing_an_undefined_name_is_rejected(ctx, cart):
    before = cart.read_bytes()
    message = failure(ctx, "cart.py", block("        return len(self.items)", "        return len(itemz)"))
    assert "F821" in message
    assert cart.read_bytes() == before


def test_js_edit_with_syntax_error_is_rejected(ctx, repo):
    target = write(repo, "app.js", "function add(a, b) {\n  return a + b;\n}\n")
    before = target.read_bytes()
    failure(ctx, "app.js", block("  return a + b;", "  return (a + b;"))
    assert target.read_bytes() == before


def test_file_with_an_old_syntax_error_can_still_be_edited(ctx, repo):
    target = write(repo, "old.py", "def broken(:\n    pass\n\nVALUE = 1\n")
    apply(ctx, "old.py", block("VALUE = 1", "VALUE = 2"))
    assert target.read_text().endswith("VALUE = 2\n")


def test_new_unused_import_is_a_warning(ctx, cart):
    result = apply(ctx, "cart.py", block("class Cart:", "import json\n\n\nclass Cart:"))
    assert "import json" in cart.read_text()
    assert "F401" in result.text


# --- refusals ----------------------------------------------------------------------------------

def test_outside_path_is_refused(ctx, tmp_path):
    (tmp_path / "out.py").write_text("x = 1\n")
    assert "outside" in failure(ctx, "../out.py", block("x = 1", "x = 2"))
    assert (tmp_path / "out.py").read_text() == "x = 1\n"


def test_git_dir_is_refused(ctx, repo):
    before = (repo / ".git" / "config").read_bytes()
    failure(ctx, ".git/config", block("[core]", "[core]\n\thooksPath = /tmp"))
    assert (repo / ".git" / "config").read_bytes() == before


def test_policy_protected_file_is_denied(ctx, repo):
    target = write(repo, ".github/workflows/ci.yml", "on: push\n")
    with pytest.raises(ToolDenied):
        apply(ctx, ".github/workflows/ci.yml", block("on: push", "on: pull_request"))
    assert target.read_text() == "on: push\n"


def test_read_denied_file_cannot_be_probed_through_edits(ctx, repo):
    write(repo, ".env", "API_TOKEN=very-secret-value\n")
    with pytest.raises(ToolDenied) as caught:
        apply(ctx, ".env", block("API_TOKEN=x", "API_TOKEN=y"))
    assert "very-secret-value" not in str(caught.value)


def test_directory_is_refused(ctx):
    assert "directory" in failure(ctx, "src", block("", "x"))


def test_binary_file_is_refused(ctx, repo):
    write(repo, "img.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    assert "PNG" in failure(ctx, "img.png", block("x", "y"))


@pytest.mark.parametrize("args", [{"path": "cart.py"}, {"diff": "x"}, {"path": "cart.py", "diff": 3}])
def test_bad_arguments(ctx, cart, args):
    with pytest.raises(ToolError):
        replace_in_file(ctx, args)


def test_schema_and_description():
    definition = REPLACE_IN_FILE.definition()
    assert definition["input_schema"]["required"] == ["path", "diff"]
    assert REPLACE_IN_FILE.changes_files
    description = definition["description"]
    for marker in ("<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "------- SEARCH", "+++++++ REPLACE"):
        assert marker in description


# --- habits real models show (measured against Aider's and Cline's edit test suites) -----------------

def test_stray_blank_line_before_under_indented_search_lines_is_tolerated(ctx, repo):
    # Aider's test for its issue #25: the blank line is not in the file, and the lines are indented less.
    target = write(repo, "lines.txt", "    line1\n    line2\n    line3\n")
    result = apply(ctx, "lines.txt", block("\n  line1\n  line2", "  new_line1\n  new_line2"))
    assert target.read_text() == "    new_line1\n    new_line2\n    line3\n"
    assert "once the blank line at the start of its SEARCH was left out" in result.text


def test_stray_blank_line_mirrored_in_replace_is_not_written(ctx, cart):
    apply(ctx, "cart.py", block("\ndef __init__(self):\n    self.items = []",
                                "\ndef __init__(self):\n    self.items = list()"))
    assert cart.read_text().startswith("class Cart:\n    def __init__(self):\n        self.items = list()\n")


def test_stray_blank_line_is_tolerated_only_when_the_rest_matches_uniquely(ctx, repo):
    target = write(repo, "twice.py", "def a():\n    return 1\ndef b():\n    return 1\n")
    message = refused(ctx, target, block("\nreturn 1", "return 2"))
    assert "without the blank line it starts with matches 2 places" in message
    assert "lines 2, 4" in message


@pytest.mark.parametrize("divider", ["===", "=====", "=======", "=========", "==========", "=" * 16])
def test_divider_lengths_the_peers_accept(ctx, cart, divider):
    # Cline accepts three or more, Aider five to nine: every one of them divides here.
    diff = f"<<<<<<< SEARCH\n        return len(self.items)\n{divider}\n        return 0\n>>>>>>> REPLACE"
    replace_in_file(ctx, {"path": "cart.py", "diff": diff})
    assert cart.read_text().endswith("        return 0\n")


def test_three_character_markers_are_accepted(ctx, cart):
    diff = "<<< SEARCH\n        return len(self.items)\n===\n        return 0\n>>> REPLACE"
    replace_in_file(ctx, {"path": "cart.py", "diff": diff})
    assert cart.read_text().endswith("        return 0\n")


def test_a_line_of_equals_signs_in_the_text_is_not_taken_for_the_divider(ctx, repo):
    # A Markdown heading underline in SEARCH and in REPLACE: the divider is the line closest to seven =.
    target = write(repo, "README.md", "Title\n=====\n\nText.\n")
    apply(ctx, "README.md", block("Title\n=====", "Better title\n============"))
    assert target.read_text() == "Better title\n============\n\nText.\n"


def test_two_equally_likely_dividers_are_refused_by_name(ctx, repo):
    target = write(repo, "README.md", "Title\n=======\n")
    message = refused(ctx, target, block("Title\n=======", "Other\n======="))
    assert "3 lines made only of = signs (lines 3, 4, 6)" in message
    assert "not clear which one divides SEARCH from REPLACE" in message


@pytest.mark.parametrize("near", ["==", "======= REPLACE", "=======>"])
def test_a_line_that_is_almost_a_divider_is_named(ctx, cart, near):
    diff = f"<<<<<<< SEARCH\n        return len(self.items)\n{near}\n        return 0\n>>>>>>> REPLACE"
    message = refused(ctx, cart, diff)
    assert f"line 3 ({near!r}) is not one" in message
    assert "a line of = signs alone, at least three" in message


@pytest.mark.parametrize("elision", ["...", "# ... rest unchanged", "# rest of the method unchanged",
                                     "// ... existing code ..."])
def test_an_elided_middle_is_named_with_what_to_send_instead(ctx, repo, elision):
    target = write(repo, "calc.py", "def f():\n    a = 1\n    b = 2\n    c = 3\n    return a\n")
    message = refused(ctx, target, block(f"def f():\n    a = 1\n    {elision}\n    return a",
                                         f"def f():\n    a = 10\n    {elision}\n    return a"))
    assert f"SEARCH line 3 ({elision!r}) stands for lines left out, and SEARCH cannot skip lines" in message
    assert "send one block per place that changes" in message
    assert f"REPLACE line 3 ({elision!r}) would be written into the file as it is" in message
    assert "SEARCH must repeat the file's current lines exactly" not in message  # the cause replaces it


def test_an_ellipsis_that_is_in_the_file_is_not_called_an_elision(ctx, repo):
    target = write(repo, "stub.py", "def f():\n    ...\n")
    message = refused(ctx, target, block("def f():\n    ...\n    return 1", "def f():\n    return 2"))
    assert "left out" not in message
    assert "SEARCH must repeat the file's current lines exactly" in message


def test_curly_quotes_for_straight_ones_are_named(ctx, repo):
    target = write(repo, "greet.py", "print('hello')\nname = \"world\"\n")
    message = refused(ctx, target, block("print(\u2018hello\u2019)\nname = \u201cworld\u201d",
                                         "print(\u2018bye\u2019)\nname = \u201cworld\u201d"))
    assert "curly quotes (\u2018 \u2019 \u201c \u201d) where the file has straight ones" in message
    assert "with straight quotes it would match lines 1-2" in message
    assert "straight ' and \" in SEARCH, and in REPLACE too" in message


@pytest.mark.slow
def test_curly_quotes_in_the_file_are_named(ctx, repo):
    target = write(repo, "notes.txt", "It\u2019s done.\nNext.\n")
    message = refused(ctx, target, block("It's done.", "It is done."))
    assert "the file has curly quotes (\u2019) at line 1 where SEARCH has straight ones" in message
    assert "curly quotes included" in message


@pytest.mark.parametrize("header", ["", "diff --git a/cart.py b/cart.py\nindex 1111111..2222222 100644\n"])
def test_a_unified_diff_is_named_with_what_to_send_instead(ctx, cart, header):
    diff = (f"{header}--- a/cart.py\n+++ b/cart.py\n@@ -8,2 +8,2 @@\n     def count(self):\n"
            f"-        return len(self.items)\n+        return 0\n")
    message = refused(ctx, cart, diff)
    assert "The diff is a unified diff" in message
    assert "Send SEARCH/REPLACE blocks instead, one per hunk" in message
    assert "<<<<<<< SEARCH" in message  # the format it expects


def test_a_hunk_without_file_headers_is_a_unified_diff_too(ctx, cart):
    message = refused(ctx, cart, "@@ -9 +9 @@\n-        return len(self.items)\n+        return 0")
    assert "The diff is a unified diff" in message


def test_counts_of_one_are_singular(ctx, repo):
    target = write(repo, "one.py", "x = 1\n")
    message = refused(ctx, target, block("", "x = 2"))
    assert "is not empty (1 line)" in message and "(1 REPLACE line)" in message
    message = refused(ctx, target, block("x = 100", "x = 2"))
    assert "Did you mean this line (83% similar, line 1)?" in message
    assert "lines" not in message.split("Did you mean", 1)[1].splitlines()[0]


def test_a_question_in_a_malformed_message_is_not_followed_by_a_full_stop(ctx, cart):
    message = refused(ctx, cart, "replace total with something better")
    assert "marker lost?\n" in message and "?." not in message
