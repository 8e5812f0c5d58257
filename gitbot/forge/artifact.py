"""The Action's artifact: a scanned copy of the run records and the checkpoint store, made by gitbot,
which is the only thing action.yml uploads (`$RUNNER_TEMP/gitbot-artifact`, laid out like
`.git/gitbot`, so unpacking it there makes `gitbot checkpoints list/restore` work).

- `runs/*/*` (trajectory.jsonl, result.json): already scrubbed as they were written (record.py); each
  file passes `Secrets.scrub` again on its way into the copy, findings replaced.
- `shadow/` (the checkpoint store): its objects cannot be edited without breaking the store, so the
  copy is scanned instead: every object the store holds itself (not the ones it borrows from the
  repository's own store through `objects/info/alternates`, which were in the repository already).
  When one holds a secret, the store is left out of the artifact and the report names the checkpoint,
  path, line and kind, never the value. (read_deny files never enter the store; a secret the agent
  wrote into another file would.)
- Nothing else: private indexes, the definitions cache, restore backups and locks stay on the runner.

Nothing is uploaded when gitbot never got here: the upload step finds no directory and skips.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from gitbot.host_programs import host_path, program
from gitbot.record import gitbot_dir
from gitbot.secrets import Secrets
from gitbot.secretscan import Finding

ARTIFACT_DIR_NAME = "gitbot-artifact"
_SHADOW_SKIPPED = ("indexes", "tmp", "no-xdg-config")
CHECKPOINT_REFS = "refs/gitbot/"


@dataclass
class ArtifactReport:
    directory: Path
    record_stops: list[str] = field(default_factory=list)  # "runs/ID/trajectory.jsonl: line 4 (jwt)"
    store_findings: list[str] = field(default_factory=list)  # "run ID step 3: app/x.py:2 (aws-access-key-id)"

    @property
    def store_left_out(self) -> bool:
        return bool(self.store_findings)

    def notes(self) -> list[str]:
        """What the run's report says about the artifact (nothing when nothing was stopped)."""
        notes = []
        if self.record_stops:
            notes.append("The secret scanner replaced secret-like values in the uploaded run record: "
                         + "; ".join(self.record_stops[:10]) + ".")
        if self.store_findings:
            more = f" and {len(self.store_findings) - 10} more" if len(self.store_findings) > 10 else ""
            notes.append("The checkpoints were left out of the uploaded artifact: the checkpoint store holds "
                         "secret-like values in " + "; ".join(self.store_findings[:10]) + more
                         + ". The run record is uploaded; the value is not shown anywhere.")
        return notes


def prepare_artifact(repo: Path, destination: Path, secrets: Secrets) -> ArtifactReport:
    """Fill `destination` (replaced) with what may be uploaded. It is built beside it and renamed into
    place when complete, so a failure part-way leaves no directory, never an unscanned copy."""
    source = gitbot_dir(repo)
    staging = destination.with_name(destination.name + ".partial")
    for stale in (destination, staging):
        if stale.exists():
            shutil.rmtree(stale)
    staging.mkdir(parents=True)
    report = ArtifactReport(destination)
    try:
        _copy_records(source / "runs", staging / "runs", secrets, report)
        if (source / "shadow" / "HEAD").is_file():
            _copy_store(source / "shadow", staging / "shadow", secrets, report)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    os.replace(staging, destination)
    return report


def _copy_records(source: Path, target: Path, secrets: Secrets, report: ArtifactReport) -> None:
    if not source.is_dir():
        return
    for path in sorted(source.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        relative = path.relative_to(source)
        # surrogateescape: bytes that are not UTF-8 pass through unchanged.
        text = path.read_bytes().decode("utf-8", "surrogateescape")
        text, findings = secrets.scrub(text)
        if findings:
            report.record_stops.append(f"runs/{relative.as_posix()}: " + ", ".join(f.where() for f in findings[:5]))
        out = target / relative
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(text.encode("utf-8", "surrogateescape"))


def _copy_store(store: Path, target: Path, secrets: Secrets, report: ArtifactReport) -> None:
    shutil.copytree(store, target, symlinks=True,
                    ignore=lambda directory, names: [n for n in names if n in _SHADOW_SKIPPED or n.endswith(".lock")])
    # Without the alternates, the copy lists only the objects the store holds itself.
    (target / "objects" / "info" / "alternates").unlink(missing_ok=True)
    flagged: dict[str, list[Finding]] = {}
    for oid, kind, data in _objects(target):
        _, findings = secrets.scrub(data.decode("utf-8", "surrogateescape"))
        if findings:
            flagged[oid] = findings
            if kind != "blob":  # a commit message (the manifest names paths) or a tree (file names)
                report.store_findings.append(f"a checkpoint {kind} ({', '.join(f.kind for f in findings[:3])})")
    if flagged:
        report.store_findings += _where_in_checkpoints(store, flagged, secrets)
        if not report.store_findings:
            report.store_findings.append("an object no checkpoint names")
        shutil.rmtree(target)


def _git_env(store: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"PATH": host_path(), "GIT_DIR": str(store), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
                "LC_ALL": "C"})
    return env


def _git(store: Path, *args: str) -> bytes:
    return subprocess.run([program("git"), *args], env=_git_env(store), capture_output=True, check=True).stdout


def _objects(store: Path):
    """(oid, type, content) of every object in `store`'s own object directory."""
    proc = subprocess.Popen([program("git"), "cat-file", "--batch-all-objects", "--batch", "--unordered"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_git_env(store))
    assert proc.stdout is not None
    try:
        while header := proc.stdout.readline():
            oid, kind, size = header.decode().split()
            data = proc.stdout.read(int(size))
            proc.stdout.read(1)  # the newline after each object
            yield oid, kind, data
    finally:
        proc.stdout.close()
        proc.wait()


def _where_in_checkpoints(store: Path, flagged: dict[str, list[Finding]], secrets: Secrets) -> list[str]:
    """`run R step N: path:line (kind)` for each checkpoint file whose blob holds a finding, at the first
    step of each run that has it. Read from the store itself, which can still see the trees it borrows."""
    refs = _git(store, "for-each-ref", "--format=%(refname)", CHECKPOINT_REFS).decode().split()
    steps = sorted((parts[2], int(parts[3])) for parts in (ref.split("/") for ref in refs)
                   if len(parts) == 4 and parts[3].isdigit())
    where: list[str] = []
    seen: set[tuple[str, str, bytes]] = set()
    for run, step in steps:
        for record in _git(store, "ls-tree", "-r", "-z", f"{CHECKPOINT_REFS}{run}/{step}").split(b"\0"):
            meta, _, path = record.partition(b"\t")
            oid = meta.split(b" ")[-1].decode() if meta else ""
            if oid in flagged and (run, oid, path) not in seen:
                seen.add((run, oid, path))
                name = secrets.redact(path.decode("utf-8", "replace"))  # a file name can hold a token too
                where += [f"run {run} step {step}: {f.where(name)}" for f in flagged[oid][:5]]
    return where
