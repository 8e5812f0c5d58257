"""A job trace as GitLab's log page shows it."""

from __future__ import annotations

from gitbot.forge.gitlab.trace import readable

RAW = (
    "\x1b[0KRunning with gitlab-runner 17.5.0\x1b[0;m\n"
    "\x1b[0Ksection_start:1764190000:step_script[collapsed=true]\r\x1b[0K\x1b[0K\x1b[36;1mExecuting "
    '"step_script" stage\x1b[0;m\x1b[0;m\n'
    "$ python3 -m unittest -q\n"
    "downloading  10%\rdownloading 100%\n"
    "\x1b]8;;http://example.com\x1b\\link\x1b]8;;\x1b\\ text\n"
    "AssertionError: 3.0 != 2\r\n"
    "\x1b[0Ksection_end:1764190001:step_script\r\x1b[0K\n"
    "\x1b[31;1mERROR: Job failed: exit code 1\x1b[0;m\n"
)


def test_escapes_sections_and_rewritten_lines_are_rendered_away():
    assert readable(RAW) == (
        "Running with gitlab-runner 17.5.0\n"
        'Executing "step_script" stage\n'
        "$ python3 -m unittest -q\n"
        "downloading 100%\n"
        "link text\n"
        "AssertionError: 3.0 != 2\n"
        "\n"
        "ERROR: Job failed: exit code 1\n"
    )


def test_plain_text_is_unchanged():
    text = "FAIL: test_mean (test_stats.MeanTest.test_mean)\n\tat line 3 [50%]\n"
    assert readable(text) == text
