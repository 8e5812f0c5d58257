"""Two evaluations side by side: the instances that flipped, and the difference in resolve rate with its
95% interval (paired when both ran the same instances, else unpaired)."""

from __future__ import annotations

import json
from pathlib import Path

from gitbot.eval.stats import difference_paired, difference_unpaired


def load_report(outdir: Path) -> dict:
    path = outdir / "report.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None


def compare(a: dict, b: dict) -> dict:
    resolved_a = {row["instance_id"] for row in a["instances"] if row.get("resolved")}
    resolved_b = {row["instance_id"] for row in b["instances"] if row.get("resolved")}
    ids_a, ids_b = set(a["instance_ids"]), set(b["instance_ids"])
    common = ids_a & ids_b
    result = {"gained": sorted((resolved_b - resolved_a) & common), "lost": sorted((resolved_a - resolved_b) & common),
              "only_in_a": sorted(ids_a - ids_b), "only_in_b": sorted(ids_b - ids_a),
              "rate_a": a["overall"]["resolve_rate"], "rate_b": b["overall"]["resolve_rate"]}
    if ids_a == ids_b:
        both = len(resolved_a & resolved_b & common)
        # B's only wins first: the difference comes out as B - A.
        difference = difference_paired(both, len(result["gained"]), len(result["lost"]),
                                       len(common) - both - len(result["gained"]) - len(result["lost"]))
        result["method"] = "paired (Newcombe)"
    else:
        difference = difference_unpaired(len(resolved_b & ids_b), len(ids_b), len(resolved_a & ids_a), len(ids_a))
        result["method"] = "unpaired (Newcombe)"
    result["difference"], result["difference_95ci"] = round(difference[0], 4), [round(difference[1], 4),
                                                                                  round(difference[2], 4)]
    return result


def render(result: dict, name_a: str, name_b: str) -> str:
    low, high = result["difference_95ci"]
    lines = [f"A = {name_a}: resolve rate {result['rate_a']:.1%}",
             f"B = {name_b}: resolve rate {result['rate_b']:.1%}",
             f"B − A = {result['difference']:+.1%} (95% CI {low:+.1%} to {high:+.1%}, {result['method']})", "",
             "| instance | A | B |", "|---|---|---|"]
    lines += [f"| {i} | not resolved | resolved |" for i in result["gained"]]
    lines += [f"| {i} | resolved | not resolved |" for i in result["lost"]]
    if not result["gained"] and not result["lost"]:
        lines.append("| (no instance flipped) | | |")
    if result["only_in_a"] or result["only_in_b"]:
        lines.append(f"\nonly in A: {len(result['only_in_a'])}, only in B: {len(result['only_in_b'])}")
    return "\n".join(lines) + "\n"
