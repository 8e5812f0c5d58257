"""The model's words never close an issue on merge, on GitLab either: GitLab's default closing pattern
knows more keywords than GitHub's (closing, fixing, resolving, implements), an `issue` word between
keyword and reference, and Jira-style keys. Its pattern, from the GitLab documentation (with the
local, cross-project and URL forms of %{issue_ref}), must find nothing in neutralised text."""

from __future__ import annotations

import re

import pytest

from gitbot.forge.mdsafe import neutralise

ISSUE_REF = r"(?:(?:[\w.-]+/)*[\w.-]+)?#\d+|https?://\S+/-/issues/\d+|https?://\S+/issues/\d+"
GITLAB_CLOSING_PATTERN = re.compile(
    r"\b((?:[Cc]los(?:e[sd]?|ing)|\b[Ff]ix(?:e[sd]|ing)?|\b[Rr]esolv(?:e[sd]?|ing)|\b[Ii]mplement(?:s|ed|ing)?)"
    rf"(:?) +(?:(?:issues? +)?(?:{ISSUE_REF})(?:(?: *,? +and +| *,? *)?)|([A-Z][A-Z0-9_]+-\d+))+)"
)


@pytest.mark.parametrize(
    "text",
    [
        "Closes #12",
        "Closing #12 and #13",
        "This fixes issue #12",
        "Fixing group/project#7",
        "Resolving #3",
        "Implements #4",
        "implemented: #4",
        "Implementing https://gitlab.example.com/g/p/-/issues/9",
        "resolves issues #1, #2",
        "Fixes PROJ-123",
    ],
)
def test_no_gitlab_closing_phrase_survives_neutralise(text):
    assert GITLAB_CLOSING_PATTERN.search(text), "the pattern itself must know the phrase"
    assert not GITLAB_CLOSING_PATTERN.search(neutralise(text)), neutralise(text)
