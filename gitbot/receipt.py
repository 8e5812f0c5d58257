"""One RunResult rendered for every place it is shown: terminal, Markdown (PR, job summary), JSON."""

from __future__ import annotations

import json

from gitbot.agent.result import RunResult
from gitbot.textsafe import printable

REPLAY_NOTE = "REPLAY of a recorded trajectory: no model was called and no money was spent now."


def money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def cost_rows(result: RunResult) -> list[tuple[str, str]]:
    """What the run cost, by token class: the same rows in the terminal, the PR and the job summary."""
    u = result.usage
    total = money(result.cost_usd)
    if result.price_source == "policy":
        total += " (prices from the policy's [model] table)"
    elif result.price_table_date:
        total += f" (prices of {result.price_table_date})"
    rows = [("provider", result.provider)] if result.provider else []
    rows += [
        ("model", result.model + (" (replay)" if result.replay else "")),
        ("model requests", str(result.steps)),
        ("tool calls", str(result.tool_calls)),
        ("input tokens", f"{u.input_tokens:,}"),
        ("cache-write tokens", f"{u.cache_creation_input_tokens:,}"),
        ("cache-read tokens", f"{u.cache_read_input_tokens:,}"),
        ("cache-read share", cache_read_share(result)),
        ("output tokens", f"{u.output_tokens:,}"),
        ("cost", total),
    ]
    if result.max_cost_usd:
        used = "unknown" if result.cost_usd is None else f"{result.cost_usd / result.max_cost_usd:.0%}"
        rows.append(("budget used", f"{used} of ${result.max_cost_usd:.2f}"))
    return rows


def cache_read_share(result: RunResult) -> str:
    """How much of the input the model read back from the prompt cache (what a continued run saves)."""
    u = result.usage
    prompt = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens
    return f"{u.cache_read_input_tokens / prompt:.0%} of the input" if prompt else "none"


def receipt_rows(result: RunResult) -> list[tuple[str, str]]:
    rows = [("status", result.status.value), ("run id", result.run_id), *cost_rows(result)]
    rows.append(("duration", f"{result.duration_seconds:.1f} s"))
    rows.append(("files changed", ", ".join(result.files_changed) or "none"))
    if result.checkpoints:
        mode = result.checkpoints.get("mode", "per_step")
        median_ms = (result.checkpoints.get("median_seconds") or 0) * 1000
        rows.append(("checkpoints", f"{result.checkpoints.get('count', 0)} ({mode}, median {median_ms:.0f} ms)"))
    rows.append(("sandbox", result.sandbox))
    for key in ("verified", "check_command", "check_exit_before", "check_exit_after", "allowed_for_this_run"):
        if key in result.extra:
            rows.append((key.replace("_", " "), str(result.extra[key])))
    if "tests_modified" in result.extra:
        modified = result.extra["tests_modified"]
        rows.append(("tests modified", "YES: " + ", ".join(modified) if modified else "no"))
    return rows


def print_receipt(result: RunResult) -> None:
    """The receipt table on stderr."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(stderr=True, highlight=False)
    if result.replay:
        console.print(f"[bold yellow]{REPLAY_NOTE}[/]")
    table = Table(title="gitbot receipt", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for key, value in receipt_rows(result):
        table.add_row(key, escape(printable(value)))
    table.add_row("summary", escape(printable(result.summary)))  # the model's words: no terminal escapes
    console.print(table)
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {escape(printable(warning))}")
    console.print(f"inspect the steps: gitbot checkpoints list {result.run_id}")


def render_markdown(result: RunResult) -> str:
    lines = [f"> **{REPLAY_NOTE}**\n"] if result.replay else []
    lines += ["| | |", "|---|---|"]
    lines += [f"| {k} | {_cell(v)} |" for k, v in receipt_rows(result)]
    for warning in result.warnings:
        lines.append(f"\n> warning: {warning}")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_json(result: RunResult) -> str:
    return json.dumps(result.to_dict(), ensure_ascii=False)
