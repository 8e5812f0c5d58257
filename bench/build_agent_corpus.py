"""Rebuild bench/corpus/agent_commands.jsonl.gz: the shell commands real agents typed on real GitHub issues.

Sources: public repositories that commit mini-swe-agent trajectories of SWE-bench Verified runs (each
trajectory is one agent solving one real GitHub issue of a real Python project). SOURCES names each
repository, the commit read and the folder of `*.traj.json` files; every version of every such file in
the repository's history is read (a re-run of an instance is another trajectory).

Each assistant turn that issued a shell command gives one row:
  {"trajectory": "<source>/<instance>@<blob>", "step": N (1-based assistant turn), "model": ...,
   "project": "owner/name", "instance": ..., "command": ..., "kind": read|run|setup|edit|git|other}
The harness's own submit line (`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT ...`) is left out: it is
the protocol's last word, not work the agent does.

Run: python bench/build_agent_corpus.py [--mirror DIR]...   (DIR: a bare git directory of a source,
     as the search tools' `fetch` leaves it under /work/.mirror/<owner>+<name>/repo)
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.agent_corpus_kinds import classify

OUT = Path(__file__).resolve().parent / "corpus" / "agent_commands.jsonl.gz"
MIRRORS = Path("/work/.mirror")

# (GitHub repository, folder of trajectories in it)
SOURCES = [
    ("gruckion/mini-swe-agent", "swebench_results/20251118_gemini-3-pro-74pct/trajs/"),
    ("RussellRyanH/CSCI-635-LiveSWE-Agent", "results/"),
]

# mini-swe-agent 1's own action pattern: exactly one ```bash block is the command.
_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
_INSTANCE = re.compile(r"^([A-Za-z0-9_.-]+?)__([A-Za-z0-9_.-]+)-\d+$")


def git(gitdir: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], input=data, capture_output=True,
                          check=True).stdout


def trajectory_blobs(gitdir: Path, folder: str) -> dict[str, str]:
    """blob id → path, for every version of every `*.traj.json` under `folder` in the history."""
    found: dict[str, str] = {}
    for commit in git(gitdir, "rev-list", "--all").decode().split():
        listing = git(gitdir, "ls-tree", "-r", "-z", commit, "--", folder or ".").decode("utf-8", "replace")
        for entry in listing.split("\0"):
            if not entry.endswith(".traj.json"):
                continue
            meta, path = entry.split("\t", 1)
            found.setdefault(meta.split()[2], path)
    return found


def read_blobs(gitdir: Path, blobs: list[str]):
    """(blob, bytes) for each blob, through one `git cat-file --batch`."""
    out = git(gitdir, "cat-file", "--batch", data="".join(b + "\n" for b in blobs).encode())
    pos = 0
    for blob in blobs:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        size = int(header[2])
        yield blob, out[header_end + 1:header_end + 1 + size]
        pos = header_end + 1 + size + 1


def commands_of(message: dict) -> list[str]:
    """The shell commands one assistant message issued: tool calls (mini-swe-agent 2) or a bash block (1)."""
    found = []
    for call in message.get("tool_calls") or []:
        try:
            arguments = json.loads(call["function"]["arguments"])
        except (KeyError, TypeError, ValueError):
            continue
        if isinstance(arguments, dict) and isinstance(arguments.get("command"), str):
            found.append(arguments["command"])
    content = message.get("content")
    if not found and isinstance(content, str):
        blocks = _BASH_BLOCK.findall(content)
        if len(blocks) == 1:  # the harness rejects any other count as a format error
            found.append(blocks[0])
    return [c.strip() for c in found if c.strip()]


def model_of(trajectory: dict) -> str:
    config = (trajectory.get("info") or {}).get("config") or {}
    model = config.get("model")
    name = model.get("model_name") if isinstance(model, dict) else model
    return str(name or "unknown").rsplit("/", 1)[-1]


def project_of(instance: str) -> str:
    match = _INSTANCE.match(instance)
    return f"{match.group(1)}/{match.group(2)}" if match else "unknown"


def rows_of(source: str, blob: str, path: str, data: bytes):
    try:
        trajectory = json.loads(data)
    except ValueError:
        return
    instance = trajectory.get("instance_id") or Path(path).name.removesuffix(".traj.json")
    model = model_of(trajectory)
    step = 0
    for message in trajectory.get("messages") or []:
        if message.get("role") != "assistant":
            continue
        step += 1
        for command in commands_of(message):
            if _SUBMIT in command:
                continue
            yield {"trajectory": f"{source}/{instance}@{blob[:10]}", "step": step, "model": model,
                   "project": project_of(instance), "instance": instance, "command": command,
                   "kind": classify(command), "source": f"github.com/{source}/{path}"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, default=MIRRORS,
                        help="the directory holding <owner>+<name>/repo git directories (default /work/.mirror)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = []
    for source, folder in SOURCES:
        gitdir = args.mirror / source.replace("/", "+") / "repo"
        if not gitdir.exists():
            print(f"missing {gitdir}: fetch github:{source} first", file=sys.stderr)
            return 1
        blobs = trajectory_blobs(gitdir, folder)
        for blob, data in read_blobs(gitdir, sorted(blobs)):
            rows.extend(rows_of(source, blob, blobs[blob], data))
    rows.sort(key=lambda r: (r["trajectory"], r["step"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same sources give the same bytes.
    with open(args.out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as out:
        for row in rows:
            out.write((json.dumps(row, ensure_ascii=False) + "\n").encode())
    trajectories = {r["trajectory"] for r in rows}
    print(f"{len(rows)} commands, {len(trajectories)} trajectories -> {args.out} ({args.out.stat().st_size:,} bytes)")
    for label, key in (("model", "model"), ("project", "project"), ("kind", "kind")):
        print(f"  by {label}: " + ", ".join(f"{k} {n}" for k, n in Counter(r[key] for r in rows).most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
