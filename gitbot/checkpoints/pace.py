"""Whether a run checkpoints after every step or, once checkpoints got slow, once per model response.

The first checkpoint of a run pays for seeding and does not count. When the median of the recent
per-step timings passes the limit, the run switches for good, and writes so next to its index: a
resumed run stays in the mode it had degraded to, and list/diff/restore know which steps have no
checkpoint of their own.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
from typing import Any

from gitbot.checkpoints.shadow import RepoPaths, modes_file, per_response_from

log = logging.getLogger(__name__)

SLOW_MEDIAN_SECONDS = 2.0
# How many recent per-step timings the slow-checkpoint decision looks at, and how many it needs.
_TIMING_WINDOW = 10
_TIMING_MIN_SAMPLES = 3


class Pace:
    def __init__(self, paths: RepoPaths, run_id: str, *, slow_median_seconds: float, resumed: bool):
        self.paths = paths
        self.run_id = run_id
        self.slow_median_seconds = slow_median_seconds
        self._timings: list[float] = []
        self._first_seconds: float | None = None
        self.mode = "per_step"
        self._degraded_reason: str | None = None
        self._degraded_at_step: int | None = None
        since = per_response_from(paths, run_id) if resumed else None
        if since is not None:
            self.mode = "per_response"
            self._degraded_at_step = since - 1
            self._degraded_reason = (f"checkpoints were slow before the run was resumed; checkpointing once per "
                                     f"model response since step {since - 1}")

    @property
    def per_step(self) -> bool:
        return self.mode == "per_step"

    def stats(self) -> dict[str, Any]:
        timings = self._timings
        return {
            "mode": self.mode,
            "count": len(timings),
            "median_seconds": round(statistics.median(timings), 4) if timings else None,
            "max_seconds": round(max(timings), 4) if timings else None,
            "first_seconds": None if self._first_seconds is None else round(self._first_seconds, 4),
            "degraded_reason": self._degraded_reason,
            "degraded_at_step": self._degraded_at_step,
        }

    def note(self, step: int, seconds: float, first: bool) -> None:
        """One checkpoint's time; switches the run to per-response checkpoints when they got slow."""
        self._timings.append(seconds)
        if first:
            self._first_seconds = seconds
            return
        if self.mode != "per_step":
            return
        recent = self._timings[1 if self._first_seconds is not None else 0:][-_TIMING_WINDOW:]
        if len(recent) < _TIMING_MIN_SAMPLES:
            return
        median = statistics.median(recent)
        if median <= self.slow_median_seconds:
            return
        self.mode = "per_response"
        self._degraded_at_step = step
        # Steps after this one may have no checkpoint of their own; list/diff/restore must know not to
        # stand in the last checkpoint for them. (A resumed run stays in this mode.)
        modes = modes_file(self.paths.shadow_dir, self.run_id)
        modes.parent.mkdir(exist_ok=True)
        tmp = modes.with_name(f".{modes.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"per_response_from": step + 1}) + "\n")
        os.replace(tmp, modes)
        self._degraded_reason = (
            f"median checkpoint time {median:.2f} s over the last {len(recent)} checkpoints is above "
            f"{self.slow_median_seconds:g} s; checkpointing once per model response from step {step} on")
        log.warning("gitbot checkpoints: %s", self._degraded_reason)
