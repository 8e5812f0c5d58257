"""Reading a run's checkpoints: list them (joined with the run record) and diff two of them.

The shadow's refs are the source of truth for which steps have a checkpoint and which commit
it is; the run's trajectory.jsonl adds what happened at each step (tool, target).

A step without a ref of its own stands for the nearest earlier checkpoint only where the run
checkpointed every step (then nothing changed files since that checkpoint). Where it had
degraded to one checkpoint per model response, an earlier write of the same response may be
missing from that checkpoint, so such a step is refused with an explanation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitbot.checkpoints.errors import UnknownRun, UnknownStep, display_path
from gitbot.checkpoints.shadow import RepoPaths, ShadowRepo, discover, per_response_from, validate_run_id
from gitbot.record import load_events


def known_runs(paths: RepoPaths) -> list[str]:
    """Runs with a record or with checkpoints, oldest first (run ids sort by start time)."""
    runs = set(ShadowRepo(paths, create=False).runs())
    base = paths.gitbot_dir / "runs"
    if base.is_dir():
        runs.update(p.name for p in base.iterdir() if (p / "trajectory.jsonl").is_file())
    return sorted(runs)


def resolve_run(repo: Path | str, run_id: str | None) -> tuple[RepoPaths, str]:
    """The repository's paths and the run id (the latest run when None); UnknownRun if there is none."""
    paths = discover(repo)
    if run_id is None:
        runs = known_runs(paths)
        if not runs:
            raise UnknownRun(f"no gitbot runs recorded in {paths.work_tree}")
        return paths, runs[-1]
    validate_run_id(run_id)
    shadow = ShadowRepo(paths, create=False)
    if not shadow.run_steps(run_id) and not (paths.run_dir(run_id) / "trajectory.jsonl").is_file():
        runs = known_runs(paths)
        hint = f"; known runs: {', '.join(runs[-5:])}" if runs else "; no runs recorded in this repository"
        raise UnknownRun(f"unknown run id {run_id!r}{hint}")
    return paths, run_id


def checkpoint_steps(paths: RepoPaths, run_id: str) -> dict[int, str]:
    steps = ShadowRepo(paths, create=False).run_steps(run_id)
    if not steps:
        raise UnknownStep(f"run {run_id} has no checkpoints")
    return steps


def resolve_step(paths: RepoPaths, run_id: str, steps: dict[int, str], step: int) -> str:
    """The checkpoint commit that holds the state after `step` (see the module doc); UnknownStep if none."""
    if step not in steps:
        stand_in = _standing_in(paths, run_id, steps, [step]).get(step)
        if stand_in is not None:
            return steps[stand_in]
    return require_step(run_id, steps, step)


def _standing_in(paths: RepoPaths, run_id: str, steps: dict[int, str], wanted: list[int]) -> dict[int, int]:
    """For each wanted step without a ref, the earlier step whose checkpoint holds its state, if any."""
    ordered = sorted(steps)
    since = per_response_from(paths, run_id)
    no_checkpoint = _recorded_without_checkpoint(paths, run_id)
    found = {}
    for step in wanted:
        if step in steps or not ordered or not 0 < step < ordered[-1] or step in no_checkpoint:
            continue
        if since is not None and step >= since:
            continue
        found[step] = max(s for s in ordered if s < step)
    return found


def _recorded_without_checkpoint(paths: RepoPaths, run_id: str) -> set[int]:
    """Steps whose tool_end event says outright that they got no checkpoint."""
    run_dir = paths.run_dir(run_id)
    if not (run_dir / "trajectory.jsonl").is_file():
        return set()
    return {e["step"] for e in load_events(run_dir) if e.get("event") == "tool_end" and isinstance(e.get("step"), int)
            and "checkpoint" in e and e["checkpoint"] is None}


def require_step(run_id: str, steps: dict[int, str], step: int) -> str:
    if step not in steps:
        ordered = sorted(steps)
        if 0 <= step <= ordered[-1]:
            raise UnknownStep(f"run {run_id} has no checkpoint at step {step} (checkpoints were taken once per "
                              f"model response there); steps with checkpoints: {_ranges(ordered)}")
        raise UnknownStep(f"step {step} is out of range for run {run_id}: steps with checkpoints are "
                          f"{_ranges(ordered)}")
    return steps[step]


def _ranges(steps: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2, 5, 7-8'."""
    parts: list[str] = []
    start = prev = steps[0]
    for s in [*steps[1:], None]:
        if s is not None and s == prev + 1:
            prev = s
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if s is not None:
            start = prev = s
    return ", ".join(parts)


def _step_metadata(paths: RepoPaths, run_id: str) -> dict[int, dict[str, Any]]:
    """What the run record says about each step (tool_end events; checkpoint events)."""
    run_dir = paths.run_dir(run_id)
    if not (run_dir / "trajectory.jsonl").is_file():
        return {}
    meta: dict[int, dict[str, Any]] = {}
    for event in load_events(run_dir):
        step = event.get("step")
        if not isinstance(step, int):
            continue
        if event.get("event") == "tool_end":
            meta[step] = {**meta.get(step, {}), **{k: event.get(k) for k in ("tool", "target", "files_changed")
                                                  if event.get(k) is not None}}
        elif event.get("event") == "checkpoint":
            entry = meta.setdefault(step, {})
            restoring = str(event.get("reason") or "").endswith("restore")
            entry.setdefault("tool", "(restore)" if restoring else "(start)" if step == 0 else None)
            if event.get("reason"):
                if restoring:
                    entry["target"] = event["reason"] + (f" {event['restoring_to']}" if "restoring_to" in event else "")
                entry["reason"] = event["reason"]
            if event.get("files_changed") is not None:
                if restoring:
                    entry.setdefault("files_changed", event["files_changed"])
                else:  # e.g. taken at the end of a model response: it knows what the response changed
                    entry["files_changed"] = event["files_changed"]
    return meta


def list_checkpoints(repo: Path | str, run_id: str | None = None) -> list[dict[str, Any]]:
    """One dict per step: step, checkpoint (commit or None), tool, target, files_changed, reason, and
    checkpoint_step (the step whose checkpoint stands for this one, when it has none of its own)."""
    paths, run_id = resolve_run(repo, run_id)
    shadow = ShadowRepo(paths, create=False)
    steps = shadow.run_steps(run_id)
    meta = _step_metadata(paths, run_id)
    stand_ins = _standing_in(paths, run_id, steps, [s for s in meta if s not in steps])
    rows = []
    previous_commit: str | None = None
    for step in sorted(set(steps) | set(meta)):
        info = meta.get(step, {})
        stand_in = stand_ins.get(step)
        commit = steps.get(step) if stand_in is None else steps[stand_in]
        files_changed = info.get("files_changed")
        if files_changed is None and commit is not None:
            # Not recorded (e.g. checkpoints taken without a run record): ask the shadow.
            files_changed = (shadow.changed_paths(previous_commit, commit)
                             if previous_commit and previous_commit != commit else [])
        rows.append({"step": step, "checkpoint": commit, "tool": info.get("tool") or ("(start)" if step == 0 else None),
                     "target": info.get("target"), "files_changed": files_changed or [],
                     "reason": info.get("reason"), "checkpoint_step": None if commit is None else step if stand_in is None else stand_in})
        if commit is not None:
            previous_commit = commit
    return rows


def diff(repo: Path | str, run_id: str, from_step: int = 0, to_step: int | None = None) -> str:
    """The diff between two steps' checkpoints (binary files summarised), with notes on what was not captured."""
    paths, run_id = resolve_run(repo, run_id)
    steps = checkpoint_steps(paths, run_id)
    if to_step is None:
        to_step = max(steps)
    old = resolve_step(paths, run_id, steps, from_step)
    new = resolve_step(paths, run_id, steps, to_step)
    shadow = ShadowRepo(paths, create=False)
    # --no-ext-diff/--no-textconv: no user-configured programs; git prints "Binary files … differ".
    out = shadow.git("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--submodule=short", old, new).stdout
    _, manifest = shadow.read_commit(new)
    notes = [f"# gitbot checkpoints diff: run {run_id}, step {from_step} ({old[:12]}) -> step {to_step} ({new[:12]})"]
    for path, why in sorted(manifest.get("not_captured", {}).items()):
        notes.append(f"# not captured at step {to_step}: {display_path(path)} ({why})")
    return "\n".join(notes) + "\n" + out.decode("utf-8", "surrogateescape")
