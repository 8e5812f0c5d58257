"""Nothing gitbot posts runs a GitLab quick action. GitLab executes `/merge`, `/approve`, `/close` …
from any line of a note or description that starts with a slash, as the user who posted it (gitbot's
token), after deleting every carriage return. The model's words (an answer, a summary) reach those
lines, so the door every posted text passes (Report.safe) leaves no line starting with a slash.

The pattern is GitLab's (lib/gitlab/quick_actions/extractor.rb) without its exclusions for code,
HTML and quote blocks: they are heuristics gitbot does not rely on."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from gitbot.forge.mdsafe import fenced, prose
from gitbot.forge.report import Report
from gitbot.secrets import Secrets

COMMANDS = "merge|approve|close|label|assign|target_branch|ready|submit_review|rebase|unlock"
GITLAB_QUICK_ACTION = re.compile(rf"^/(?P<cmd>{COMMANDS})(?:[ ](?P<arg>[^\n]*))?(?:\s*\n|$)", re.MULTILINE | re.IGNORECASE)


def quick_actions(posted: str) -> list[str]:
    return [m.group("cmd") for m in GITLAB_QUICK_ACTION.finditer(posted.replace("\r", ""))]


def safe(text: str) -> str:
    report = Report.__new__(Report)
    report.job = SimpleNamespace(secrets=Secrets(), inputs=SimpleNamespace(trigger_phrase="@gitbot"))
    return report.safe(text)


@pytest.mark.parametrize(
    "words",
    [
        "Done.\n/merge",
        "/approve\nall good",
        "Fixed it.\n\r/close",
        "see below\n```\n/target_branch main\n```",
        "````\n```\n/merge\n```\n````",
        "/label ~security",
    ],
)
def test_the_models_words_run_no_quick_action(words):
    for posted in (prose(words), fenced(words), f"💬 gitbot's answer:\n\n{words}"):
        assert quick_actions(posted.replace("\u200b", "")), "the attack must be real without the defence"
        assert quick_actions(safe(posted)) == [], safe(posted)


def test_what_people_read_stays_the_same():
    assert safe("a/b and /merge mid-line\n  /indented").replace("\u200b", "") == "a/b and /merge mid-line\n  /indented"
