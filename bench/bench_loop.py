"""The agent loop over a 20-step scripted run against the loopback Messages API server.

Prints:
  - cache-read share: cache_read_input_tokens / all input tokens, over requests 2..N (goal ≥ 85%);
  - harness overhead per step: wall time of the run minus time spent waiting on the server, per request
    (the tools' own work included), against the median server round trip measured in the same run;
  - total tokens sent.

Run: .venv/bin/python bench/bench_loop.py [--steps 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anthropic

from gitbot.agent.run import RunOptions, run_task, with_limits
from gitbot.llm.anthropic import AnthropicProvider
from gitbot.policy import Policy
from gitbot.record import load_events, runs_dir
from gitbot.secrets import Secrets
from gitbot.task import Task
from tests.conftest import BUGGY_MODULE, TEST_MODULE, make_repo
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

CHECK = "python3 -m unittest"


def script(steps: int) -> list[dict]:
    """A plausible exploration: list, search, read windows, run the check; then complete."""
    cycle = [
        tool_turn(("list_files", {"path": ".", "recursive": True})),
        tool_turn(("search_files", {"path": ".", "regex": "def (mean|helper_\\d+)"})),
        tool_turn(("read_file", {"path": "pkg/module_3.py", "start_line": 1, "end_line": 60})),
        tool_turn(("execute_command", {"command": CHECK})),
        tool_turn(("read_file", {"path": "stats.py"}), ("list_code_definition_names", {"path": "pkg"})),
    ]
    turns = [cycle[i % len(cycle)] for i in range(steps - 1)]
    return turns + [tool_turn(("attempt_completion", {"result": "explored"}))]


def sample_repo(root: Path) -> Path:
    files = {"stats.py": BUGGY_MODULE, "test_stats.py": TEST_MODULE}
    for i in range(12):
        body = "\n\n".join(f"def helper_{j}(x):\n    return x * {j} + {i}\n" for j in range(40))
        files[f"pkg/module_{i}.py"] = f'"""Module {i}."""\n\n{body}'
    return make_repo(root / "repo", files)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    steps = parser.parse_args().steps
    with tempfile.TemporaryDirectory() as tmp, FakeMessagesAPI(script(steps)) as api:
        repo = sample_repo(Path(tmp))
        client = anthropic.Anthropic(base_url=api.url, api_key=api.api_key, max_retries=0)
        provider = AnthropicProvider("claude-sonnet-5-5", client=client)
        started = time.monotonic()
        result = run_task(Task(text="Explore the repository.", check_command=CHECK), repo,
                          policy=with_limits(Policy(), max_steps=steps + 5), provider=provider, secrets=Secrets(),
                          options=RunOptions(max_tokens=4096, review_on_submit=False))
        wall = time.monotonic() - started
        waits = [e["wait_seconds"] for e in load_events(runs_dir(repo) / result.run_id) if e["event"] == "reply"]
    assert api.errors == [], api.errors
    usages = [r["usage"] for r in api.requests if r["usage"]]
    later = usages[1:]
    read = sum(u["cache_read_input_tokens"] for u in later)
    total_in = sum(u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"] for u in later)
    sent = sum(u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"] for u in usages)
    overhead = (wall - sum(waits)) / len(usages)
    print(f"status: {result.status.value}; requests: {len(usages)}; tool calls: {result.tool_calls}")
    print(f"cache-read share of input tokens, requests 2..{len(usages)}: {read / total_in:.1%} (goal >= 85%)")
    print(f"harness overhead per step (wall - server wait, tools included): {overhead * 1000:.1f} ms; "
          f"median server round trip: {statistics.median(waits) * 1000:.1f} ms "
          f"(ratio {overhead / statistics.median(waits):.1f}x)")
    print(f"total input tokens sent: {sent:,}; output tokens: {sum(u['output_tokens'] for u in usages):,}; "
          f"cost at list price: ${result.cost_usd:.4f}")


if __name__ == "__main__":
    main()
