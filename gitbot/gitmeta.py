"""What git takes for its own metadata inside a work tree, by name alone (no git runs).

Git reads, and may run programs named in, more than the top-level `.git`:
- a `.git` entry anywhere below the root: a directory (a nested repository), a file (a submodule's or
  a worktree's gitfile, `gitdir: <path>`), or a symlink to either;
- a directory shaped like a git directory (`HEAD`, and `objects/` with `refs/` or a `commondir`): a
  gitfile can point at it, and git run inside it takes it for a bare repository (the default
  `safe.bareRepository = all`).
The sandbox makes the existing ones read-only, the runner undoes new ones after each command
(sandbox/planted.py), and checkpoints never store their files (checkpoints/capture.py).
"""

from __future__ import annotations

import os
from collections.abc import Collection

GIT_ENTRY = ".git"
HEAD = "HEAD"
# What makes a directory a git directory to git's discovery (setup.c: is_git_directory).
GIT_DIR_MEMBERS = ("HEAD", "objects", "refs", "commondir")


def looks_like_git_dir(names: Collection[str]) -> bool:
    """Whether a directory holding entries with these names is one git would take for a git directory."""
    return HEAD in names and ("commondir" in names or ("objects" in names and "refs" in names))


def is_git_dir(path: str | os.PathLike) -> bool:
    """`looks_like_git_dir` for the directory at `path`, by lstat() of the few names that decide it."""
    present = set()
    for name in GIT_DIR_MEMBERS:
        if os.path.lexists(os.path.join(path, name)):
            present.add(name)
        elif name == HEAD:
            return False
    return looks_like_git_dir(present)


def has_git_component(relative: str) -> bool:
    """Whether a work-tree path has a `.git` component (any letter case: case-insensitive file systems)."""
    return any(part.lower() == GIT_ENTRY for part in relative.split("/"))
