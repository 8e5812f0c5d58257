"""Files the policy does not let the agent read, found in the work tree so the sandbox can hide them.

Not covered: content in git's object store (`git show HEAD:.env`, `git log -p`) cannot be masked
this way; the command judge and output redaction have to cover that.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitbot.policy import Policy

# More files the read_deny rules match than this: refuse the command instead of running it unmasked.
MAX_MASKED_FILES = 2000


class SandboxRefusal(Exception):
    """The sandbox cannot be built safely for this command; the message says why."""


def read_denied_files(repo: Path | str, policy: Policy) -> list[str]:
    """Repository files (hidden and gitignored ones too, `.git` aside) that `policy.check_read`
    denies: the sandbox replaces each with /dev/null, so `cat .env` or `grep -r SECRET .` cannot read
    them. Raises SandboxRefusal when there are more than MAX_MASKED_FILES.

    Not covered: content in git's object store (`git show HEAD:.env`, `git log -p`) cannot be masked
    this way; the command judge and output redaction have to cover that."""
    root = os.path.realpath(repo)
    prefilter = _read_deny_prefilter(policy)
    denied = []
    for relpath in _repository_files(root):
        if prefilter is not None and not prefilter.match(relpath):
            continue
        if not policy.check_read(relpath):
            denied.append(relpath)
            if len(denied) > MAX_MASKED_FILES:
                raise SandboxRefusal(
                    f"more than {MAX_MASKED_FILES} files in the repository match files.read_deny; the sandbox "
                    f"hides each one and will not run a command with that many (narrow the read_deny rules or "
                    f"remove the files)")
    return denied


def _read_deny_prefilter(policy: Policy) -> re.Pattern[str] | None:
    """The read_deny globs as one regex, when it decides exactly what the policy's own check_read
    decides for a file reached without symlinks (then check_read runs only on the matches); None
    when every file must go through check_read."""
    from gitbot.policy import Policy as StandardPolicy
    from gitbot.policy.files import GlobError, compile_glob

    if type(policy).check_read is not StandardPolicy.check_read:
        return None
    try:
        compiled = [compile_glob(pattern, path_mode=True, ignore_case=True) for pattern in policy.read_deny]
    except (GlobError, TypeError, AttributeError):
        return None
    if not compiled:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{c.pattern})" for c in compiled), re.IGNORECASE | re.DOTALL)


def _repository_files(root: str) -> list[str]:
    """Every regular file under `root` (relative paths), hidden and ignored ones included, without
    following symlinks or entering `.git` directories. ripgrep lists them in parallel."""
    from gitbot.ripgrep import RipgrepMissing, rg_binary

    try:
        rg = rg_binary()
    except RipgrepMissing:
        rg = None
    if rg:
        try:
            completed = subprocess.run(
                [rg, "--files", "--hidden", "--no-ignore", "--no-config", "--no-follow", "--no-messages",
                 "--glob", "!.git", "--null", "."],
                cwd=root, capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
                stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired):
            completed = None
        # rg exits 1 when there are no files, 2 when some could not be read (still listing the rest).
        if completed is not None and completed.returncode in (0, 1, 2):
            names = completed.stdout.decode("utf-8", "surrogateescape").split("\0")
            return [name.removeprefix("./") for name in names if name]
    found = []
    stack = [""]
    while stack:
        relative = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, relative) if relative else root))
        except OSError:
            continue
        for entry in entries:
            if entry.name == ".git":
                continue
            path = f"{relative}/{entry.name}" if relative else entry.name
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    stack.append(path)
                elif entry.is_file(follow_symlinks=False):
                    found.append(path)
    return found
