"""`gitbot policy check --batch FILE` and `--run RUN_ID`: many questions, one JSON line for each answer.

Input lines are JSON objects with one of "command", "read" or "edit" (an "id" is echoed back). Each
answer is `{"allowed", "reason", "rule", "instead", "ms"}` in input order; a line that is not such an
object gets `{"error": ...}` in its place and the batch goes on. Users tune their policies with this,
and bench/bench_agent_corpus.py measures the judge with it.

`--run` replays the tool calls a past run made (its trajectory.jsonl) against the current policy,
with that run's check command, and says for each what the run got then (`then`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from gitbot.policy import Policy
from gitbot.tools.verdicts import command_verdict, path_verdict, run_context

QUESTIONS = ("command", "read", "edit")
# The file tools and the path argument they are judged on: reads or edits.
READ_TOOLS = {"read_file": "path", "list_files": "path", "search_files": "path",
              "list_code_definition_names": "path"}
EDIT_TOOLS = {"write_to_file": "path", "replace_in_file": "path"}


def answer(ctx, question: dict, sandboxed: bool | None) -> dict:
    """The verdict on one question, timed; {"error": ...} for a malformed one."""
    asked = [key for key in QUESTIONS if key in question]
    if len(asked) != 1 or not isinstance(question[asked[0]], str):
        return {"error": 'each line needs exactly one of "command", "read" or "edit", with a string value'}
    key = asked[0]
    started = time.perf_counter()
    if key == "command":
        verdict = command_verdict(ctx, question[key], sandboxed=sandboxed)
    else:
        verdict = path_verdict(ctx, question[key], for_edit=key == "edit")
    return {**verdict.to_json(), "ms": round((time.perf_counter() - started) * 1000, 3)}


def main_batch(repo: Path, policy: Policy, source: Path, check_commands: tuple[str, ...],
               sandboxed: bool | None) -> int:
    try:
        stream = sys.stdin if str(source) == "-" else open(source, encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError as exc:
        print(f"gitbot policy check: cannot read {source}: {exc}", file=sys.stderr)
        return 2
    ctx = run_context(repo, policy)
    ctx.extra_allowed_commands = check_commands
    out = sys.stdout
    with stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                question = json.loads(line)
            except ValueError as exc:
                result = {"error": f"line {number} is not JSON: {exc}"}
            else:
                result = answer(ctx, question, sandboxed) if isinstance(question, dict) else \
                    {"error": f"line {number} is not a JSON object"}
                if isinstance(question, dict) and "id" in question:
                    result = {"id": question["id"], **result}
            out.write(json.dumps(result, ensure_ascii=False) + "\n")
    out.flush()
    return 0


def main_replay(repo: Path, policy: Policy, run_id: str, sandboxed: bool | None) -> int:
    from gitbot.record import list_runs, load_events, runs_dir

    runs = list_runs(repo)
    if run_id not in runs:
        shown = ", ".join(runs[-5:]) or "none"
        print(f"gitbot policy check: no run {run_id!r} in {repo} (latest: {shown})", file=sys.stderr)
        return 2
    events = list(load_events(runs_dir(repo) / run_id))
    start = next((e for e in events if e.get("event") == "run_start"), {})
    ctx = run_context(repo, policy, check_command=start.get("check_command"))
    outcomes = {e.get("tool_use_id"): e.get("outcome") for e in events if e.get("event") == "tool_end"}
    for event in events:
        question = _question(event) if event.get("event") == "tool_start" else None
        if question is None:
            continue
        result = answer(ctx, question, sandboxed)
        then = outcomes.get(event.get("tool_use_id"), "interrupted")
        sys.stdout.write(json.dumps({"step": event.get("step"), "tool": event.get("tool"), **question, **result,
                                     "then": then}, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return 0


def _question(event: dict) -> dict | None:
    tool, arguments = event.get("tool"), event.get("input")
    if not isinstance(arguments, dict):
        return None
    if tool == "execute_command" and isinstance(arguments.get("command"), str):
        return {"command": arguments["command"]}
    for table, key in ((READ_TOOLS, "read"), (EDIT_TOOLS, "edit")):
        if tool in table and isinstance(arguments.get(table[tool]), str):
            return {key: arguments[table[tool]]}
    return None
