"""Many instances: a shard of them, on N workers, under one budget, resumable, with progress.

- Shard i/n: an instance belongs to shard 1 + (sha256(instance_id) mod n): deterministic, every instance
  in exactly one shard, whatever the order of the file.
- Budget (--max-cost): no instance starts when what is spent, plus what the running ones are expected to
  spend, plus one more instance's projection would pass it. The projection is the mean cost of the
  instances finished so far; before any has finished it is unknown, and then one instance runs alone with
  everything that remains as its own cap. Each instance's own budget is capped by what remains (the agent
  loop stops at its budget).
- Resume: an instance with OUTDIR/instances/<id>/result.json is done and skipped (its cost counts against
  the budget); one that was interrupted has none and runs again.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from gitbot.eval.attempt import Interrupted, Settings, instance_dir, run_instance
from gitbot.eval.instances import Instance
from gitbot.eval.report import load_rows, write_json

BUDGET_NOT_RUN = "the evaluation's --max-cost would be passed"


def parse_shard(text: str) -> tuple[int, int]:
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected i/n, e.g. 2/8") from None
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"--shard {text!r}: i must be between 1 and n")
    return index, count


def in_shard(instance_id: str, index: int, count: int) -> bool:
    digest = hashlib.sha256(instance_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count == index - 1


@dataclass
class Budget:
    max_cost: float | None
    spent: float = 0.0
    costs: list[float] = field(default_factory=list)  # of finished instances whose agent ran
    reserved: dict[str, float] = field(default_factory=dict)  # running instance -> what it is expected to spend

    def projection(self) -> float | None:
        return sum(self.costs) / len(self.costs) if self.costs and sum(self.costs) > 0 else None

    def start(self, instance_id: str) -> tuple[bool, float | None]:
        """(may it start, its own cap)."""
        if self.max_cost is None:
            return True, None
        remaining = self.max_cost - self.spent - sum(self.reserved.values())
        projection = self.projection()
        if projection is None:
            if self.reserved or remaining <= 0:
                return False, None
            self.reserved[instance_id] = remaining
            return True, remaining
        if remaining - projection < 0 or remaining <= 0:
            return False, None
        self.reserved[instance_id] = projection
        return True, remaining

    def finish(self, instance_id: str, row: dict) -> None:
        self.reserved.pop(instance_id, None)
        cost = float(row.get("cost_usd") or 0.0)
        self.spent += cost
        if row.get("status"):
            self.costs.append(cost)


class Progress:
    """One line per finished instance on stderr: done/total, the running resolve rate and the spend."""

    def __init__(self, total: int, done_rows: list[dict], stream=None):
        self.total = total
        self.done = len(done_rows)
        self.resolved = sum(1 for row in done_rows if row.get("resolved"))
        self.spent = sum(float(row.get("cost_usd") or 0.0) for row in done_rows)
        self.stream = stream or sys.stderr

    def finished(self, row: dict) -> None:
        self.done += 1
        self.resolved += bool(row.get("resolved"))
        self.spent += float(row.get("cost_usd") or 0.0)
        outcome = "resolved" if row.get("resolved") else (f"error: {row['why']}" if row.get("error")
                                                          else f"not resolved: {row.get('why', '')}")
        print(f"gitbot eval: [{self.done}/{self.total}] {row['instance_id']}: {outcome[:200]} · "
              f"{self.resolved}/{self.done} resolved ({self.resolved / self.done:.0%}) · ${self.spent:.4f} spent",
              file=self.stream, flush=True)


def run_batch(instances: list[Instance], settings: Settings, *, workers: int = 1,
              max_cost: float | None = None, reporter_for=None) -> tuple[list[dict], dict[str, str]]:
    """Runs what is not done yet. Returns (every finished row in OUTDIR for these instances, the ones not
    run and why). Raises KeyboardInterrupt after an interruption; what finished is kept."""
    wanted = {instance.instance_id for instance in instances}
    done = {row["instance_id"]: row for row in load_rows(settings.out) if row["instance_id"] in wanted}
    pending = [instance for instance in instances if instance.instance_id not in done]
    budget = Budget(max_cost)
    for row in done.values():
        budget.finish(row["instance_id"], row)
    progress = Progress(len(instances), list(done.values()))
    lock = threading.Lock()

    not_run: dict[str, str] = {}

    def one(instance: Instance, cap: float | None) -> dict:
        row = run_instance(instance, settings, budget_usd=cap,
                           reporter=reporter_for(instance) if reporter_for else None)
        with lock:
            budget.finish(instance.instance_id, row)
            progress.finished(row)
            if row["error"] == "config":  # no key, a bad policy: a resume (once fixed) runs it
                not_run[instance.instance_id] = row["why"]
                return row
            keep(settings.out, row)
            done[instance.instance_id] = row
        return row

    if workers <= 1:
        for instance in pending:
            allowed, cap = budget.start(instance.instance_id)
            if not allowed:
                not_run[instance.instance_id] = BUDGET_NOT_RUN
                continue
            try:
                one(instance, cap)
            except Interrupted:
                raise KeyboardInterrupt from None
        return list(done.values()), not_run

    queue = list(pending)
    running: dict[Future, str] = {}
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gitbot-eval")
    try:
        while queue or running:
            while queue and len(running) < workers:
                with lock:
                    allowed, cap = budget.start(queue[0].instance_id)
                if not allowed:
                    break
                instance = queue.pop(0)
                running[pool.submit(one, instance, cap)] = instance.instance_id
            if not running:  # the budget lets nothing more start
                not_run.update({instance.instance_id: BUDGET_NOT_RUN for instance in queue})
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                running.pop(future)
                if isinstance(future.exception(), Interrupted):
                    raise KeyboardInterrupt
                future.result()
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return list(done.values()), not_run


def keep(out: Path, row: dict) -> None:
    directory = instance_dir(out, row["instance_id"])
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / "result.json", row)
