"""The pages of a project that people follow from gitbot's pull request bodies, replies and summaries.

Both forges lay them out alike below one root: GitHub's is the repository's page, GitLab's the project's
page and `/-`. A branch and a path are quoted, since either may hold `#` or `?`, which would end the link's
path early.
"""

from __future__ import annotations

import urllib.parse


class WebLinks:
    """interface.Forge's links, for an adapter that sets `pages`."""

    pages: str

    def branch_url(self, branch: str) -> str:
        return f"{self.pages}/tree/{urllib.parse.quote(branch)}"

    def commit_url(self, sha: str) -> str:
        return f"{self.pages}/commit/{sha}"

    def blob_url(self, sha: str, path: str) -> str:
        return f"{self.pages}/blob/{sha}/{urllib.parse.quote(path)}"

    def issue_url(self, number: int) -> str:
        return f"{self.pages}/issues/{number}"
