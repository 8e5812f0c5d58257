"""Workflow commands and environment files: what the runner would read from gitbot's output."""

from __future__ import annotations

import io
import re

from gitbot.forge.github.actions_io import SUMMARY_LIMIT_BYTES, ActionsIO
from gitbot.secrets import Secrets

TOKEN = "ghs_plantedTokenValue0123456789"


def make(tmp_path, **environ):
    out = io.StringIO()
    env = {
        "GITHUB_OUTPUT": str(tmp_path / "out"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        **environ,
    }
    return ActionsIO(Secrets({TOKEN}), stdout=out, environ=env), out


def read_outputs(path) -> dict[str, str]:
    """Parse GITHUB_OUTPUT the way the runner does (name<<DELIM … DELIM)."""
    found = {}
    for match in re.finditer(r"^([\w-]+)<<(\S+)\n(.*?)\n\2$", path.read_text(), re.MULTILINE | re.DOTALL):
        found[match.group(1)] = match.group(3)
    return found


def test_secrets_are_masked_before_anything_else_and_redacted_after(tmp_path):
    actions, out = make(tmp_path)
    actions.mask_secrets()
    actions.info(f"token is {TOKEN}")
    lines = out.getvalue().splitlines()
    assert lines[0] == f"::add-mask::{TOKEN}"
    assert lines[1] == "token is [REDACTED]"


def test_untrusted_text_cannot_issue_commands_or_close_the_block(tmp_path):
    actions, out = make(tmp_path)
    hostile = "fine\n::add-mask::x\n::error::pwned\n::stop-commands::abc\n::abc::\n::set-output name=a::b"
    actions.untrusted(hostile)
    lines = out.getvalue().splitlines()
    token = lines[0].removeprefix("::stop-commands::")
    assert len(token) == 32 and token not in hostile
    assert lines[-1] == f"::{token}::"
    assert lines[1:-1] == hostile.splitlines()


def test_annotation_messages_are_escaped_onto_one_line(tmp_path):
    actions, out = make(tmp_path)
    actions.error("line one\nline two 100%", title="a: b, c")
    assert out.getvalue() == "::error title=a%3A b%2C c::line one%0Aline two 100%25\n"


def test_info_cannot_start_a_command_line(tmp_path):
    actions, out = make(tmp_path)
    actions.info("branch x\n::error::injected")
    assert out.getvalue().count("\n") == 1
    assert not out.getvalue().startswith("::")


def test_outputs_survive_values_with_newlines_and_delimiter_lookalikes(tmp_path):
    actions, _ = make(tmp_path)
    tricky = "first\nEOF\nghadelimiter_x\nlast"
    actions.set_outputs({"status": "completed", "summary": tricky, "secret": TOKEN})
    assert read_outputs(tmp_path / "out") == {
        "status": "completed",
        "summary": tricky,
        "secret": "[REDACTED]",
    }


def test_summary_is_cut_under_one_mebibyte(tmp_path):
    actions, _ = make(tmp_path)
    actions.write_summary("x" * 100 + "é" * (SUMMARY_LIMIT_BYTES // 2) + "\n")
    data = (tmp_path / "summary").read_bytes()
    assert len(data) < 1024 * 1024
    assert data.decode("utf-8").rstrip().endswith("limit.")


def test_nothing_is_written_outside_actions(tmp_path):
    actions = ActionsIO(Secrets(), stdout=io.StringIO(), environ={})
    actions.set_outputs({"status": "x"})
    actions.write_summary("hello")
    assert list(tmp_path.iterdir()) == []
