"""The run record on disk: `<git-dir>/gitbot/runs/<run-id>/trajectory.jsonl` and `result.json`.

Kept inside .git so the work tree stays clean. trajectory.jsonl is append-only, one JSON
object per line, flushed as each event happens, so a crash at any instant leaves every
complete line readable (a torn last line is skipped on load). result.json is replaced
atomically at the end.

Events (field "event"): run_start, checkpoint, request, reply, tool_start, tool_end,
limit, error, run_end. See gitbot/agent/loop.py for what each carries.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import secrets as _secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gitbot import git


def gitbot_dir(repo: Path) -> Path:
    return git.git_dir(repo) / "gitbot"


def runs_dir(repo: Path) -> Path:
    return gitbot_dir(repo) / "runs"


def new_run_id() -> str:
    # Sortable by time, unique enough for concurrent runs on one machine.
    return _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S-") + _secrets.token_hex(3)


def list_runs(repo: Path) -> list[str]:
    base = runs_dir(repo)
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "trajectory.jsonl").exists())


def latest_run(repo: Path) -> str | None:
    runs = list_runs(repo)
    return runs[-1] if runs else None


class RunRecord:
    def __init__(self, repo: Path, run_id: str):
        self.run_id = run_id
        self.dir = runs_dir(repo) / run_id
        self.dir.mkdir(parents=True, exist_ok=True)
        self.trajectory_path = self.dir / "trajectory.jsonl"
        self.result_path = self.dir / "result.json"
        _cut_torn_line(self.trajectory_path)
        # Open for the whole run (closed in close()): every event is appended and flushed at once.
        # A lone surrogate (an undecodable file name) is written as an escape rather than failing.
        self._file = open(self.trajectory_path, "a", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115

    def event(self, kind: str, **data: Any) -> None:
        line = json.dumps({"event": kind, "t": round(time.time(), 3), **data}, ensure_ascii=False, default=str)
        self._file.write(line + "\n")
        self._file.flush()

    def write_result(self, result: dict[str, Any]) -> None:
        write_json_atomic(self.result_path, result)

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()


def _cut_torn_line(path: Path) -> None:
    """A crash can leave half a line at the end; appending after it would glue the next event onto it."""
    try:
        with open(path, "rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
    except FileNotFoundError:
        pass


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8", errors="backslashreplace") as f:
        json.dump(data, f, indent=2, ensure_ascii=False, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_events(run_dir: Path) -> Iterator[dict[str, Any]]:
    """Every complete event of a trajectory; a line torn by a crash is skipped."""
    path = run_dir / "trajectory.jsonl"
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break  # torn final line
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def load_result(run_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
