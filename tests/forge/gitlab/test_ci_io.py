"""The GitLab job's log, summary and outputs, read back the way GitLab reads them."""

from __future__ import annotations

import io
import re
import subprocess

import pytest

from gitbot.forge.gitlab.ci_io import GitLabIO, inert
from gitbot.secrets import Secrets

TOKEN = "glpat-plantedTokenValue0123456789"
# GitLab's trace parser (Gitlab::Ci::Ansi2json) opens or closes a collapsible section on this.
SECTION = re.compile(r"section_((?:start)|(?:end)):(\d+):([a-zA-Z0-9_.-]+)\r\033\[0K")
HOSTILE = (
    "ok line\n"
    "\x1b[0Ksection_end:1700000000:step_script\r\x1b[0K\n"
    "\x1b[0Ksection_start:1700000001:fake[collapsed=true]\r\x1b[0KJob succeeded\n"
    "progress 10%\rprogress 100% (all tests passed)\n"
    "\x1b[2K\x1b[1A\x9b2Jcleared\n"
    f"token {TOKEN}\r\n"
)


def make(tmp_path, **environ):
    out = io.StringIO()
    env = {"CI_PROJECT_DIR": str(tmp_path / "project"), **environ}
    return GitLabIO(Secrets({TOKEN}), stdout=out, environ=env), out


def dotenv(path) -> dict[str, str]:
    """GitLab's dotenv rules: every line NAME=VALUE, ASCII names, no blank lines or comments."""
    values = {}
    for line in path.read_text(encoding="utf-8").split("\n")[:-1]:
        name, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name), line
        values[name] = value
    return values


def test_untrusted_text_can_open_no_section_rewrite_no_line_and_leak_no_token(tmp_path):
    gl, out = make(tmp_path)
    gl.untrusted(HOSTILE, heading="the check's output:")
    log = out.getvalue()
    assert not SECTION.search(log)
    assert "\r" not in log and "\x1b" not in log and "\x9b" not in log
    assert TOKEN not in log and "[REDACTED]" in log
    lines = log.splitlines()
    assert lines[0] == "the check's output:"
    # every line is still there to read, one printed line per line given
    assert len(lines) == 1 + HOSTILE.count("\n") + 1
    assert "progress 10%\\x0dprogress 100% (all tests passed)" in lines
    assert lines[-2] == "token [REDACTED]"  # a CRLF ending is dropped, not shown


def test_gitbots_own_lines_are_inert_too_and_stay_one_line(tmp_path):
    gl, out = make(tmp_path)
    gl.info("branch gitbot/x\nsection_start:1:a\r\x1b[0Kfake")
    gl.error("refused\n\x1b[0Ksection_end:1:step_script\r\x1b[0K", title="gitbot")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert not SECTION.search(out.getvalue())
    assert "section_start:" not in lines[0] and "section-start:" in lines[0]
    # the only escapes are the colour this module puts around the kind
    assert lines[1].count("\x1b") == 2 and lines[1].startswith("\x1b[31;1merror\x1b[0m gitbot: refused")


def test_inert_keeps_ordinary_text():
    assert inert("3 passed, 1 failed in 0.2s\tok") == "3 passed, 1 failed in 0.2s\tok"


def test_outputs_are_a_dotenv_report_gitlab_accepts(tmp_path):
    gl, _ = make(tmp_path)
    gl.set_outputs({"status": "error", "pr-url": ""})
    gl.set_outputs(
        {
            "status": "pr_created",
            "pr-url": "http://gl/g/p/-/merge_requests/3\nX=1",
            "cost-usd": f"0.1 {TOKEN}",
        }
    )
    values = dotenv(tmp_path / "project" / ".gitbot-out" / "gitbot.env")
    assert values == {
        "GITBOT_STATUS": "pr_created",
        "GITBOT_PR_URL": "http://gl/g/p/-/merge_requests/3 X=1",
        "GITBOT_COST_USD": "0.1 [REDACTED]",
    }


def test_summary_is_appended_redacted_to_the_output_dir_the_component_names(tmp_path):
    gl, _ = make(tmp_path, GITBOT_OUTPUT_DIR=str(tmp_path / "elsewhere"))
    gl.write_summary("## one")
    gl.write_summary(f"two {TOKEN}\n")
    assert (tmp_path / "elsewhere" / "summary.md").read_text() == "## one\ntwo [REDACTED]\n"


@pytest.mark.slow  # real git
def test_the_output_dir_inside_the_work_tree_is_ignored_by_git(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    gl, _ = make(tmp_path)
    gl.write_summary("## done")
    gl.set_outputs({"status": "skipped"})
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status == ""


def test_reports_planted_in_the_output_dir_never_survive(tmp_path):
    """The output dir is in the work tree, where the agent's commands write: a dotenv report planted there
    would set variables in later jobs."""
    gl, _ = make(tmp_path)
    out = tmp_path / "project" / ".gitbot-out"
    out.mkdir(parents=True)
    (out / "gitbot.env").write_text("LD_PRELOAD=/tmp/x.so\nGITBOT_STATUS=completed\n")
    (out / "summary.md").write_text("## gitbot: verified ✅ (planted)\n")
    gl.write_summary("## gitbot could not finish")
    gl.set_outputs({"status": "error"})
    assert dotenv(out / "gitbot.env") == {"GITBOT_STATUS": "error"}
    assert (out / "summary.md").read_text() == "## gitbot could not finish\n"


def test_a_known_secret_that_spans_lines_is_redacted_in_gitbots_own_lines_too(tmp_path):
    """A cloud credential's JSON or a PEM key is a known value over several lines: it is only found whole,
    before a line of gitbot's own is flattened onto one line (GitHub's and GitLab's logs alike)."""
    spanning = "Zq8xLm2pW4vB9nKt\nRf7yHc3dJ6sA1eUo"
    gl = GitLabIO(Secrets({spanning}), stdout=(out := io.StringIO()), environ={})
    gl.info(f"key {spanning}")
    gl.error(f"refused {spanning}", title=f"about {spanning}")
    gl.warning(spanning)
    log = out.getvalue()
    assert "Zq8xLm2pW4vB9nKt" not in log and "Rf7yHc3dJ6sA1eUo" not in log
    assert log.count("[REDACTED]") == 4
