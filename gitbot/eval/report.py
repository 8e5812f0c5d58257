"""What an evaluation leaves in OUTDIR: predictions.jsonl (the SWE-bench harness's format), report.json
(per instance and overall, with the 95% Wilson interval) and report.md (a table per model and the
instances that failed, with why). Also `merge`: the reports of shards joined into one."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

from gitbot.eval.stats import wilson

ROW_FIELDS = ("instance_id", "model", "resolved", "error", "why", "status", "cost_usd", "steps", "tool_calls",
              "tokens", "refusals", "wall_seconds", "timings", "run_id", "replay", "sandbox")


def write_json(path: Path, data) -> None:
    """Atomically: a reader (or a resume after a crash) sees the old file or the new one, never half."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def overall(rows: list[dict], total: int) -> dict:
    resolved = sum(1 for row in rows if row.get("resolved"))
    low, high = wilson(resolved, total)
    cost = sum(float(row.get("cost_usd") or 0.0) for row in rows)
    steps = [row["steps"] for row in rows if row.get("status")]
    return {"resolved": resolved, "total": total, "finished": len(rows),
            "resolve_rate": round(resolved / total, 4) if total else 0.0,
            "resolve_rate_95ci": [round(low, 4), round(high, 4)], "cost_usd": round(cost, 6),
            "cost_per_resolved_usd": round(cost / resolved, 6) if resolved else None,
            "median_steps": statistics.median(steps) if steps else None,
            "errors": sum(1 for row in rows if row.get("error"))}


def build_report(rows: list[dict], instance_ids: list[str], not_run: dict[str, str]) -> dict:
    rows = sorted(rows, key=lambda row: row["instance_id"])
    models = sorted({row.get("model") or "" for row in rows})
    by_model = {model: overall([r for r in rows if (r.get("model") or "") == model],
                               len([r for r in rows if (r.get("model") or "") == model])) for model in models}
    return {"overall": overall(rows, len(instance_ids)), "by_model": by_model, "instance_ids": sorted(instance_ids),
            "not_run": [{"instance_id": i, "why": why} for i, why in sorted(not_run.items())],
            "instances": [{key: row.get(key) for key in ROW_FIELDS} for row in rows]}


def predictions(rows: list[dict]) -> str:
    return "".join(json.dumps({"instance_id": row["instance_id"], "model_name_or_path": row.get("model") or "",
                               "model_patch": row.get("model_patch") or ""}, ensure_ascii=False) + "\n"
                   for row in sorted(rows, key=lambda row: row["instance_id"]) if not row.get("error"))


def markdown(report: dict) -> str:
    lines = ["# gitbot eval", "",
             "| model | resolved | resolve rate (95% CI) | cost | cost per resolved | median steps |",
             "|---|---|---|---|---|---|"]
    sections = [("all instances", report["overall"])] if len(report["by_model"]) != 1 else []
    sections += list(report["by_model"].items())
    for name, numbers in sections:
        low, high = numbers["resolve_rate_95ci"]
        per = numbers["cost_per_resolved_usd"]
        lines.append(f"| {_cell(name or '(none)')} | {numbers['resolved']}/{numbers['total']} | "
                     f"{numbers['resolve_rate']:.1%} ({low:.1%}–{high:.1%}) | ${numbers['cost_usd']:.4f} | "
                     f"{'—' if per is None else f'${per:.4f}'} | {_steps(numbers['median_steps'])} |")
    failed = [row for row in report["instances"] if not row.get("resolved")]
    if failed or report["not_run"]:
        lines += ["", "## Not resolved", "", "| instance | why |", "|---|---|"]
        for row in failed:
            kind = f"error ({row['error']}): " if row.get("error") else ""
            lines.append(f"| {_cell(row['instance_id'])} | {_cell(kind + (row.get('why') or ''))} |")
        for item in report["not_run"]:
            lines.append(f"| {_cell(item['instance_id'])} | not run: {_cell(item['why'])} |")
    return "\n".join(lines) + "\n"


def _steps(value) -> str:
    return "—" if value is None else f"{value:g}"


def _cell(text: str) -> str:
    """Untrusted text (instance ids, reasons quoting test output) kept inside its table cell."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;")[:300]


def write_outputs(out: Path, rows: list[dict], instance_ids: list[str], not_run: dict[str, str]) -> dict:
    report = build_report(rows, instance_ids, not_run)
    (out / "predictions.jsonl").write_text(predictions(rows), encoding="utf-8")
    write_json(out / "report.json", report)
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    return report


def load_rows(out: Path) -> list[dict]:
    """The finished instances' results in OUTDIR (instances/<id>/result.json)."""
    rows = []
    for path in sorted((out / "instances").glob("*/result.json")):
        try:
            rows.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError):
            continue  # torn by a crash: that instance runs again
    return rows


def merge(outdirs: list[Path], into: Path) -> dict:
    """The shards' results joined: each instance once (a later directory's row wins)."""
    rows: dict[str, dict] = {}
    instance_ids: set[str] = set()
    not_run: dict[str, str] = {}
    for outdir in outdirs:
        for row in load_rows(outdir):
            rows[row["instance_id"]] = row
        report_path = outdir / "report.json"
        if report_path.is_file():
            report = json.loads(report_path.read_text(encoding="utf-8"))
            instance_ids.update(report.get("instance_ids", []))
            not_run.update({item["instance_id"]: item["why"] for item in report.get("not_run", [])})
    instance_ids.update(rows)
    into.mkdir(parents=True, exist_ok=True)
    return write_outputs(into, list(rows.values()), sorted(instance_ids),
                         {k: v for k, v in not_run.items() if k not in rows})
