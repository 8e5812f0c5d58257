"""A run's record, kept on GitHub under `refs/gitbot/runs/<run-id>` so that a later job can continue it.

Each job runs on a fresh machine; the next request on the same pull request needs the conversation
of the run before it (agent/history.py). gitbot pushes the record (`trajectory.jsonl` and
`result.json`, redacted once more on the way out) as a commit outside `refs/heads/`: it is no branch,
starts no workflow and shows in no branch list, and `git fetch origin refs/gitbot/runs/<id>` brings
it back. Who can read the repository can read it, as they can the job's artifact that holds the same
record; who can push to the repository can replace it, as they can the branch it describes.

Records do not pile up: when a conversation pushes a new one, the records of the pull request's runs
before the last `[limits] keep_run_records` (the policy's; the ledger lists the runs in order) are
deleted from origin (`prune`). Only the last one is ever continued.
"""

from __future__ import annotations

import re
from pathlib import Path

from gitbot.errors import GitError
from gitbot.forge.pull_request import git
from gitbot.record import runs_dir
from gitbot.secrets import Secrets

REF_PREFIX = "refs/gitbot/runs/"
RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")
FILES = ("trajectory.jsonl", "result.json")
MAX_RECORD_BYTES = 20 * 1024 * 1024  # a record larger than this is not kept on GitHub


def ref_of(run_id: str) -> str:
    if not RUN_ID.match(run_id):
        raise GitError(f"not a gitbot run id: {run_id!r}")
    return REF_PREFIX + run_id


def publish(repo: Path, run_id: str, *, auth: dict[str, str], secrets: Secrets) -> str | None:
    """Push the run's record to origin; returns the ref, or None when there is nothing to push."""
    ref = ref_of(run_id)
    run_dir = runs_dir(repo) / run_id
    entries = []
    size = 0
    for name in FILES:
        path = run_dir / name
        if not path.is_file():
            continue
        text = secrets.redact(path.read_text(encoding="utf-8", errors="replace"))
        size += len(text)
        blob = git(repo, "hash-object", "-w", "--stdin", input=text).strip()
        entries.append(f"100644 blob {blob}\t{name}")
    if not entries or size > MAX_RECORD_BYTES:
        return None
    tree = git(repo, "mktree", input="\n".join(entries) + "\n").strip()
    commit = git(repo, "commit-tree", tree, "-m", f"gitbot run record {run_id}").strip()
    git(repo, "push", "--quiet", "--no-verify", "origin", f"{commit}:{ref}", env=auth)
    return ref


def prune(repo: Path, runs: list[str], *, keep: int, auth: dict[str, str]) -> list[str]:
    """Delete from origin the records of all but the last `keep` (at least 1) of `runs`, a pull request's
    runs oldest first; returns the refs deleted. What is not a run id, or not on origin, is left alone."""
    ordered = [run for run in dict.fromkeys(reversed(runs)) if RUN_ID.match(run)][::-1]  # last mention wins
    old = [ref_of(run) for run in ordered[:-max(1, keep)]]
    if not old:
        return []
    listed = git(repo, "ls-remote", "origin", *old, env=auth)
    present = [ref for ref in (line.partition("\t")[2] for line in listed.splitlines()) if ref in old]
    if present:
        git(repo, "push", "--quiet", "--no-verify", "origin", *(f":{ref}" for ref in present), env=auth)
    return present


def fetch(repo: Path, run_id: str, *, auth: dict[str, str]) -> Path | None:
    """The run's record directory, fetched from origin unless it is here already; None when origin has
    no record of that run."""
    from gitbot.forge.pull_request import fetch_refs

    if (runs_dir(repo) / run_id / "trajectory.jsonl").is_file():
        return runs_dir(repo) / run_id
    ref = ref_of(run_id)
    if fetch_refs(repo, {ref: ref}, auth=auth)[ref] is None:
        return None
    return unpack(repo, run_id)


def unpack(repo: Path, run_id: str) -> Path | None:
    """The record of a run from its local ref (fetched with `ref_of(run_id)` as the local name) into the
    run directory, unless it is there already; None when there is no such ref."""
    ref = ref_of(run_id)
    run_dir = runs_dir(repo) / run_id
    if (run_dir / "trajectory.jsonl").is_file():
        return run_dir
    if not git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False).strip():
        return None
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        if git(repo, "ls-tree", ref, "--", name).strip():
            (run_dir / name).write_text(git(repo, "show", f"{ref}:{name}"), encoding="utf-8")
    return run_dir if (run_dir / "trajectory.jsonl").is_file() else None
