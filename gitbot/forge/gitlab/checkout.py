"""The credential GitLab's runner leaves in the job's clone, out of `.git/config` while gitbot works.

The runner clones `CI_PROJECT_DIR` from `https://gitlab-ci-token:<CI_JOB_TOKEN>@host/group/project.git`
and keeps that URL as `remote.origin.url` (newer runners may keep a `credential.*` helper instead). The
agent never holds a credential, and the sandbox without namespaces refuses a repository whose config
holds one, so for the run every remote URL loses its userinfo and every local `credential.*` entry is
removed, and so is every `url.<base>.insteadOf` whose <base> carries userinfo; gitbot fetches and pushes
with its own token, passed to each git process. On the way out, what
was there is put back, so the checkout is as the runner left it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gitbot.forge.pull_request import git
from gitbot.sandbox.gitconfig import without_userinfo

CREDENTIAL_KEYS = r"^(remote\..*\.url|remote\..*\.pushurl|credential\..*|url\..*\.(insteadof|pushinsteadof))$"


def _entries(repo: Path) -> list[tuple[str, str]]:
    out = git(repo, "config", "--local", "--null", "--get-regexp", CREDENTIAL_KEYS, check=False)
    entries = []
    for item in out.split("\0"):
        key, _, value = item.partition("\n")
        if key:
            entries.append((key, value))
    return entries


def _rewrites_with_userinfo(key: str) -> bool:
    """`url.<base>.insteadOf`: the credential is in <base>, the key itself, so the entry goes whole."""
    if not key.startswith("url."):
        return False
    base = key[len("url.") : key.rindex(".")]
    return without_userinfo(base) != base


@contextmanager
def clone_credentials_removed(repo: Path) -> Iterator[list[str]]:
    """Inside, no remote URL carries userinfo and no `credential.*` entry is set; the names of what was
    taken out are yielded (for the log), and it is all put back afterwards."""
    taken = [
        (key, value)
        for key, value in _entries(repo)
        if key.startswith("credential.") or without_userinfo(value) != value or _rewrites_with_userinfo(key)
    ]
    for key, value in taken:
        git(repo, "config", "--local", "--fixed-value", "--unset-all", key, value)
        if key.startswith("remote."):
            git(repo, "config", "--local", "--add", key, without_userinfo(value))
    try:
        yield [re.sub(r"\.url$|\.pushurl$", "", key) for key, _ in taken]
    finally:
        for key, value in taken:
            if key.startswith("remote."):
                git(
                    repo,
                    "config",
                    "--local",
                    "--fixed-value",
                    "--unset-all",
                    key,
                    without_userinfo(value),
                    check=False,
                )
            git(repo, "config", "--local", "--add", key, value)
