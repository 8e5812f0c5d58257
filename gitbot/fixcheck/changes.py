"""What a run changed, read from its checkpoints: the paths, a file before and after, the patch.

Step 0 is the work tree before the agent started, the last checkpoint the work tree when it
stopped. The change is built with plumbing from the shadow repository (gitbot.checkpoints), so no
diff.* setting of the user's can change it, and reading it writes nothing anywhere.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

from gitbot.errors import GitError
from gitbot.git import GitCommandError

# Interpreter caches: running a Python check rewrites them, and they are never part of a fix.
CACHE_PATTERNS = (re.compile(r"(^|/)__pycache__/"), re.compile(r"\.py[co]$"))
# Plumbing only, and every option that could change the patch set explicitly.
PATCH_ARGS = ("diff-tree", "-p", "--binary", "--full-index", "--no-renames", "--no-color", "--no-ext-diff",
              "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/")


def is_cache_path(path: str) -> bool:
    return any(pattern.search(path) for pattern in CACHE_PATTERNS)


class RunChanges:
    """What a run changed, from its checkpoints: step 0 (before the agent) to the last checkpoint.

    Read-only: the checkpoints live in the shadow repository at `<git-dir>/gitbot/shadow` (see
    gitbot.checkpoints), which borrows the user's objects; reading them writes nothing anywhere."""

    def __init__(self, repo: Path, run_id: str):
        from gitbot.checkpoints import list_checkpoints
        from gitbot.checkpoints.shadow import ShadowRepo, discover

        self.repo = Path(repo)
        self.run_id = run_id
        commits = [row["checkpoint"] for row in list_checkpoints(repo, run_id) if row.get("checkpoint")]
        self.first = commits[0] if commits else None
        self.last = commits[-1] if commits else None
        self.shadow = ShadowRepo(discover(repo), create=False)

    def _git(self, *args: str, ok=(0,)) -> subprocess.CompletedProcess:
        try:
            return self.shadow.git(*args, ok=ok)
        except GitCommandError as exc:
            raise GitError(f"git {' '.join(args[:2])} on the run's checkpoints failed: {exc.stderr}") from None

    @property
    def changed(self) -> bool:
        return self.first is not None and self.last is not None and self.first != self.last

    def names(self) -> list[bytes]:
        """Every changed path as git has it (bytes), interpreter caches included: what the patch holds."""
        if not self.changed:
            return []
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--name-only", self.first, self.last).stdout
        return [p for p in out.split(b"\0") if p]

    def paths(self) -> list[str]:
        """Changed paths, interpreter caches left out (undecodable bytes as surrogate escapes)."""
        return [p for p in map(os.fsdecode, self.names()) if not is_cache_path(p)]

    def patch(self) -> bytes:
        """The run's change as a binary patch (full index lines, a/ b/ prefixes, no renames)."""
        if not self.changed:
            return b""
        return self._git(*PATCH_ARGS, self.first, self.last).stdout

    def entries(self, commit: str | None) -> dict[bytes, tuple[bytes, bytes]]:
        """path -> (mode, object name) of every file of a checkpoint (empty for None)."""
        return tree_entries(self._git("ls-tree", "-r", "-z", "--full-tree", commit).stdout) if commit else {}

    def blob(self, sha: bytes) -> bytes:
        return self._git("cat-file", "blob", sha.decode()).stdout

    def file_before(self, path: str) -> bytes | None:
        return self._blob(self.first, path)

    def file_after(self, path: str) -> bytes | None:
        return self._blob(self.last, path)

    def _blob(self, commit: str | None, path: str) -> bytes | None:
        if commit is None:
            return None
        proc = self._git("cat-file", "blob", f"{commit}:{path}", ok=range(256))
        return proc.stdout if proc.returncode == 0 else None


def tree_entries(ls_tree: bytes) -> dict[bytes, tuple[bytes, bytes]]:
    """path -> (mode, object name) from `git ls-tree -r -z` output."""
    entries = {}
    for record in ls_tree.split(b"\0"):
        meta, _, path = record.partition(b"\t")
        if path:
            mode, _type, sha = meta.split(b" ")
            entries[path] = (mode, sha)
    return entries


def added_lines(patch: bytes) -> Iterator[tuple[str, int, str]]:
    """(path, line number in the new file, text) of every added line of a unified patch."""
    path: str | None = None
    line_no = 0
    in_hunk = False
    for raw in patch.split(b"\n"):
        line = raw.decode("utf-8", "replace")
        if line.startswith("diff --git "):
            path, in_hunk = None, False
        elif not in_hunk and line.startswith("+++ "):
            target = _unquote(line[4:].rstrip("\t"))
            path = None if target == "/dev/null" else target.removeprefix("b/")
        elif line.startswith("@@ "):
            m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
            in_hunk = bool(m)
            line_no = int(m.group(1)) if m else 0
        elif in_hunk and path is not None:
            if line.startswith("+"):
                yield path, line_no, line[1:]
                line_no += 1
            elif line.startswith(" "):
                line_no += 1
            elif not line.startswith(("-", "\\")):
                in_hunk = False


def _unquote(name: str) -> str:
    """A path as git quotes it in patch headers ("b/na\\tme", octal escapes for non-ASCII bytes)."""
    if not (len(name) >= 2 and name[0] == name[-1] == '"'):
        return name
    out = bytearray()
    body = name[1:-1].encode("utf-8", "surrogateescape")
    escapes = {ord("n"): 10, ord("t"): 9, ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("r"): 13, ord("v"): 11,
               ord("\\"): 92, ord('"'): 34}
    i = 0
    while i < len(body):
        c = body[i]
        if c == 92 and i + 1 < len(body):
            nxt = body[i + 1]
            if 48 <= nxt <= 55 and i + 3 < len(body):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out.append(escapes.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return out.decode("utf-8", "surrogateescape")
