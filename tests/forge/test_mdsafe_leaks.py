"""What gitbot posts and pushes: untrusted text cannot render, and secrets are found."""

from __future__ import annotations

import base64
import re

from markdown_it import MarkdownIt

from gitbot.forge.leaks import Leak, scan_diff
from gitbot.forge.mdsafe import code_cell, code_span, fenced, md_cell, neutralise
from gitbot.secrets import Secrets

HOSTILE = (
    "![x](https://evil.example/?d=1) [l](https://evil.example) <https://evil.example/a> "
    "https://evil.example/b www.evil.example <img src=https://evil.example/i> "
    "```` ![in](https://evil.example/fence) ```` `x` fixes #12 closes o/r#3 @everyone"
)


def html(markdown: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


def acting(rendered: str) -> str:
    return re.sub(r"<(pre|code)>.*?</\1>", "", rendered, flags=re.DOTALL)


def test_fenced_text_renders_nothing():
    block = fenced(HOSTILE + "\n```\n<script>alert(1)</script>")
    rendered = html(f"Before.\n\n{block}\n\nAfter.")
    assert "evil.example" in rendered and "evil.example" not in acting(rendered)
    assert "<script>" not in rendered and "<p>After.</p>" in rendered  # the fence held to the end


def test_code_spans_and_cells_render_nothing():
    for piece in (code_span(HOSTILE), code_cell(HOSTILE)):
        rendered = html(f"| a | b |\n|---|---|\n| {code_cell(HOSTILE)} | x |\n\n{piece}")
        assert "evil.example" not in acting(rendered)
        assert "<td>x</td>" in rendered  # the pipe-free cell stayed one cell


def test_md_cell_escapes_images_links_autolinks_and_html():
    rendered = html(f"| a |\n|---|\n| {md_cell(HOSTILE)} |")
    assert "<img" not in rendered and "<a " not in rendered
    assert "@\u200beveryone" in md_cell("@everyone") and "#\u200b12" in md_cell("#12")


def test_closing_keywords_and_mentions_are_neutralised():
    text = neutralise(
        "This fixes #12, Closes: o/r#3, resolved https://github.com/o/r/issues/4; fix the bug @al"
    )
    assert not re.search(r"(?i)\b(fixes|closes|resolved)\W", text)
    assert "fix the bug" in text and "@al" not in text  # a keyword without a reference is left alone


def test_the_diff_scan_finds_known_values_their_encodings_and_token_shapes():
    token = "ghs_" + "A1b2" * 9
    secrets = Secrets()
    secrets.add(token)
    secrets.add("an-api-key-value-1234")
    encoded = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    diff = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-old = 'an-api-key-value-1234'\n+new = 1\n"
        "diff --git a/b.cfg b/b.cfg\n--- /dev/null\n+++ b/b.cfg\n@@ -0,0 +1,2 @@\n"
        f"+[auth]\n+auth = {encoded}\n"
        "diff --git a/c.py b/c.py\n--- a/c.py\n+++ b/c.py\n@@ -10,2 +10,2 @@\n"
        f" context = '{token}'\n+other = 'github_pat_{'x' * 30}'\n"
    )
    assert scan_diff(diff, secrets) == [
        Leak("b.cfg", 2, "known-secret"),
        Leak("c.py", 11, "github-token"),
    ]  # not removed/context lines
    assert scan_diff(diff.replace(encoded, "nothing"), secrets) == [Leak("c.py", 11, "github-token")]


def _new_file(path: str, lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def test_the_diff_scan_knows_every_kind_the_scanner_knows_and_says_where():
    from tests.secret_corpus import planted

    lines = ["# settings", *(text for text, _ in planted().values())]
    text = "\n".join(lines)
    leaks = scan_diff(_new_file("conf/app.env", text.split("\n")), Secrets())
    assert len(leaks) >= len(planted())
    assert all(leak.path == "conf/app.env" and leak.line > 1 for leak in leaks)
    report = " ".join(leak.where() for leak in leaks)
    assert "conf/app.env:" in report and "(aws-access-key-id)" in report and "(private-key)" in report
    for _, value in planted().values():
        assert value not in report


def test_an_allow_marker_counts_only_on_a_line_the_change_does_not_add():
    from tests.secret_corpus import planted

    key = planted()["aws access key id"][1]
    marked = f"FIXTURE = '{key}'  # gitbot: allow-secret"
    written = _new_file("tests/fixtures.py", [marked])
    assert scan_diff(written, Secrets()) == [Leak("tests/fixtures.py", 1, "aws-access-key-id")]
    moved = written + (
        "diff --git a/tests/old.py b/tests/old.py\ndeleted file mode 100644\n--- a/tests/old.py\n+++ /dev/null\n"
        f"@@ -1 +0,0 @@\n-{marked}\n"
    )
    assert scan_diff(moved, Secrets()) == []
    known = Secrets({key})
    assert scan_diff(moved, known) == [Leak("tests/fixtures.py", 1, "known-secret")]  # never for a known value


def test_a_secret_in_a_new_files_name_is_found():
    token = "ghp_" + "Zz9" * 12
    leaks = scan_diff(_new_file(f"notes/{token}.txt", ["hello"]), Secrets())
    assert leaks and leaks[0].line == 0 and token not in leaks[0].where()


def test_texts_are_redacted_of_token_shapes_too():
    secrets = Secrets()
    secrets.add("known-secret-value")
    text = secrets.redact(
        "a known-secret-value, gho_" + "z" * 30 + " and sk-ant-" + "q" * 25 + " but ghp_short"
    )
    assert text == "a [REDACTED], [REDACTED] and [REDACTED] but ghp_short"
