"""Whether a process id named in a file another gitbot process left (a lock, a note) is still alive."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """True when a process with this id exists, even one this user may not signal."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
