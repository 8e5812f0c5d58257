"""What checkpoint operations raise. The CLI prints a CheckpointError's message and exits 2."""

from __future__ import annotations

from typing import Any


class CheckpointError(Exception):
    """Bad input or a refusal that the user can act on."""


class UnknownRun(CheckpointError):
    pass


class UnknownStep(CheckpointError):
    pass


class OutsideChanges(CheckpointError):
    """The work tree was changed outside the run since its last checkpoint; restore would lose that."""

    def __init__(self, run_id: str, last_step: int, paths: list[str]):
        self.paths = paths
        shown = "\n".join(f"  {display_path(p)}" for p in paths[:50])
        more = f"\n  … and {len(paths) - 50} more" if len(paths) > 50 else ""
        super().__init__(
            f"the work tree differs from run {run_id}'s last checkpoint (step {last_step}) in "
            f"{len(paths)} path(s) changed outside the run:\n{shown}{more}\n"
            "Restoring would overwrite or delete those changes. Commit or move them first, "
            "or pass --force (the current state is checkpointed first, so it can be restored again).")


class LockHeld(CheckpointError):
    """Another live process holds the repository's gitbot lock."""

    def __init__(self, lock_path: str, holder: dict[str, Any]):
        self.holder = holder
        who = f"pid {holder.get('pid', '?')}"
        if holder.get("run_id"):
            who += f" (run {holder['run_id']})"
        if holder.get("host"):
            who += f" on {holder['host']}"
        super().__init__(f"another gitbot process holds the repository lock {lock_path}: {who}. "
                         "Wait for it to finish (or stop it) and try again.")


def display_path(path: str) -> str:
    """A path safe to print on one line: control characters and undecodable bytes are escaped."""
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(_CONTROL_ESCAPES.get(c, f"\\x{ord(c):02x}") if ord(c) < 32 or ord(c) == 127 else c
                   for c in text)


_CONTROL_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def json_safe_path(path: str) -> str:
    """A path that json.dumps(ensure_ascii=False) can write as UTF-8 (undecodable bytes become \\xNN)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
