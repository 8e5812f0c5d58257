"""Whether a mask may have come off a hidden file while a command ran.

bubblewrap hides a read_deny file by mounting an empty file over its path, and the repository's
.git/config by mounting a copy without credentials over it. A mount belongs to the directory entry it
was made on: when the host unlinks that entry or renames something over it while the command runs (an
editor saving `.env` by rename, `git config` writing through a lock file), the kernel detaches the mount
in the sandbox, and the command reads the real file from then on. Nothing can put the mask back, but
every such change moves the path's (st_dev, st_ino, st_ctime): a new file, a link made or removed. So
the runner notes them when the mounts are made and compares after the command; where one moved, the
command's output is withheld (`WITHHELD`), since it may hold what was hidden.
"""

from __future__ import annotations

import os

State = tuple[int, int, int] | None


def states(root: str, paths) -> dict[str, State]:
    """(st_dev, st_ino, st_ctime_ns) of each repository-relative path under `root`, None where missing."""
    found: dict[str, State] = {}
    for path in paths:
        try:
            st = os.lstat(os.path.join(root, path))
        except OSError:
            found[path] = None
        else:
            found[path] = (st.st_dev, st.st_ino, st.st_ctime_ns)
    return found


def changed(root: str, before: dict[str, State]) -> list[str]:
    """The paths of `before` that are not the file they were (or are gone, or came back)."""
    now = states(root, before)
    return [path for path, state in before.items() if now[path] != state]


def withheld(paths: list[str]) -> str:
    """What the model and the record get instead of the output of a command during which `paths` changed."""
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return (f"gitbot: this command's output is withheld: a file hidden from commands ({shown}) was replaced, "
            "linked or unlinked on the host while it ran, which takes its mask off in the sandbox, so the output "
            "could hold its content. Run the command again if you need its output.\n")
