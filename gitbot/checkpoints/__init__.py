"""Shadow-git checkpoints: snapshot the work tree after every step, list, diff and restore them.

    cp = Checkpointer(repo, run_id)           # the loop holds RunLock(repo) for the run
    cp.take(0)                                # before the agent does anything
    cp.take(k, touched=["src/app.py"])        # after a file tool wrote those paths
    cp.take(k)                                # after a command (anything may have changed)
    cp.should_checkpoint_step(), cp.stats()   # per-step until slow, then per model response

    list_checkpoints(repo, run_id); diff(repo, run_id, 0, 5); restore(repo, run_id, 3)
    prune(repo, keep=20)                      # delete old runs' checkpoints and records

Everything lives in `<git-dir>/gitbot/shadow`; see shadow.py for the isolation rules,
snapshot.py for what is captured, restore.py for what restore refuses to do.
"""

from gitbot.checkpoints.capture import DEFAULT_SIZE_CAP
from gitbot.checkpoints.errors import (
    CheckpointError,
    LockHeld,
    OutsideChanges,
    UnknownRun,
    UnknownStep,
    display_path,
    json_safe_path,
)
from gitbot.checkpoints.history import diff, known_runs, list_checkpoints
from gitbot.checkpoints.lock import RunLock
from gitbot.checkpoints.prune import PruneReport, prune
from gitbot.checkpoints.restore import RestoreReport, restore
from gitbot.checkpoints.snapshot import Checkpoint, Checkpointer

__all__ = [
    "DEFAULT_SIZE_CAP",
    "Checkpoint",
    "CheckpointError",
    "Checkpointer",
    "LockHeld",
    "OutsideChanges",
    "PruneReport",
    "RestoreReport",
    "RunLock",
    "UnknownRun",
    "UnknownStep",
    "diff",
    "display_path",
    "json_safe_path",
    "known_runs",
    "list_checkpoints",
    "prune",
    "restore",
]
