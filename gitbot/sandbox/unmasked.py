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
# A path gitbot may not look at now: a command took away its permission to enter a directory above it
# (`chmod 000 box`, which it may do to what it owns). That says nothing about the host replacing the file,
# so it is not counted as a change; a directory gitbot cannot look into is hidden whole from the next
# command on (readdeny.py).
CANNOT_LOOK = "cannot look"


def states(root: str, paths) -> dict[str, State | str]:
    """(st_dev, st_ino, st_ctime_ns) of each repository-relative path under `root`, None where missing,
    CANNOT_LOOK where a directory on the way does not let gitbot in."""
    found: dict[str, State | str] = {}
    for path in paths:
        try:
            st = os.lstat(os.path.join(root, path))
        except PermissionError:
            found[path] = CANNOT_LOOK
        except OSError:
            found[path] = None
        else:
            found[path] = (st.st_dev, st.st_ino, st.st_ctime_ns)
    return found


def changed(root: str, before: dict[str, State | str]) -> list[str]:
    """The paths of `before` that are not the file they were (or are gone, or came back)."""
    now = states(root, before)
    return [path for path, state in before.items() if now[path] != state and CANNOT_LOOK not in (now[path], state)]


def withheld(paths: list[str]) -> str:
    """What the model and the record get instead of the output of a command during which `paths` changed."""
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return (f"gitbot: this command's output is withheld: a file hidden from commands ({shown}) was replaced, "
            "linked or unlinked on the host while it ran, which takes its mask off in the sandbox, so the output "
            "could hold its content. Run the command again if you need its output.\n")
