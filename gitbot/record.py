"""The run record on disk: `<git-dir>/gitbot/runs/<run-id>/trajectory.jsonl` and `result.json`.

Kept inside .git so the work tree stays clean. trajectory.jsonl is append-only, one JSON
object per line, flushed as each event happens, so a crash at any instant leaves every
complete line readable (a torn last line is skipped on load). result.json is replaced
atomically at the end.

Events (field "event"): run_start, checkpoint, request, reply, tool_start, tool_end,
limit, error, run_end, secrets_stopped. See gitbot/agent/loop.py for what each carries.

Nothing is written before it passes the run's `Secrets.scrub` (known values, then the secret
scanner): a finding is replaced, never kept, and `stopped` lists where, so the run can say so. The
record is uploaded as the Action's artifact and read by `gitbot resume`; a secret a tool printed
must not outlive the step that printed it.
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
from gitbot.secrets import Secrets
from gitbot.secretscan import Finding, describe

MAX_STOPS_LISTED = 20


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
    def __init__(self, repo: Path, run_id: str, secrets: Secrets | None = None):
        self.run_id = run_id
        self.secrets = secrets if secrets is not None else Secrets()
        # Where secret-like values were stopped on their way into this record (or, reported by the
        # loop, into the model's context): "step 3 (execute_command output): line 2 (aws-access-key-id)".
        self.stopped: list[str] = []
        self.dir = runs_dir(repo) / run_id
        self.dir.mkdir(parents=True, exist_ok=True)
        self.trajectory_path = self.dir / "trajectory.jsonl"
        self.result_path = self.dir / "result.json"
        _cut_torn_line(self.trajectory_path)
        # Open for the whole run (closed in close()): every event is appended and flushed at once.
        # A lone surrogate (an undecodable file name) is written as an escape rather than failing.
        self._file = open(self.trajectory_path, "a", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115

    def event(self, kind: str, **data: Any) -> None:
        data, findings = self.secrets.scrub_data(data)
        if findings:
            self.secrets_stopped(_event_place(kind, data), findings)
        self._write({"event": kind, "t": round(time.time(), 3), **data})

    def secrets_stopped(self, where: str, findings: list[Finding]) -> None:
        """Say (in the record and in `stopped`) that secret-like values were replaced at `where`."""
        if not findings:
            return
        self.stopped.append(f"{where}: {describe(findings)}")
        self._write({"event": "secrets_stopped", "t": round(time.time(), 3), "where": where,
                     "findings": [{"kind": f.kind, "line": f.line} for f in findings]})

    def _write(self, event: dict[str, Any]) -> None:
        line = json.dumps(event, ensure_ascii=False, default=str)
        self._file.write(line + "\n")
        self._file.flush()

    def stop_note(self) -> str | None:
        """One sentence for the run's warnings, or None when nothing was stopped."""
        if not self.stopped:
            return None
        shown = "; ".join(self.stopped[:MAX_STOPS_LISTED])
        more = f"; and {len(self.stopped) - MAX_STOPS_LISTED} more" if len(self.stopped) > MAX_STOPS_LISTED else ""
        return (f"the secret scanner replaced secret-like values before they reached the model or the run "
                f"record, in: {shown}{more}")

    def write_result(self, result: dict[str, Any]) -> None:
        result, findings = self.secrets.scrub_data(result)
        if findings:
            self.secrets_stopped("result.json", findings)
            result = {**result, "warnings": [*result.get("warnings", []), self.stop_note()]}
        write_json_atomic(self.result_path, result)

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()


def _event_place(kind: str, data: dict[str, Any]) -> str:
    if isinstance(data.get("step"), int):
        tool = f" ({data['tool']})" if isinstance(data.get("tool"), str) else ""
        return f"the {kind} event of step {data['step']}{tool}"
    if isinstance(data.get("n"), int):
        return f"the {kind} event of request {data['n']}"
    return f"the {kind} event"


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
