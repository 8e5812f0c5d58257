"""A pull request's conversation with gitbot, kept in its body: one row per iteration, and the totals.

The body of a pull request gitbot works on ends with a section between two markers:

    <!-- gitbot:iterations -->
    ## Iterations            (a table, once there is more than the first run)
    …rows, and the cumulative cost and tokens by class…
    <!-- gitbot:ledger BASE64-JSON -->
    <!-- /gitbot:iterations -->

The JSON, base64-encoded so that nothing in it (a summary the model wrote, a file name someone chose) can
end the HTML comment, render, mention anyone or close an issue, is what gitbot reads back on the next request: which run to continue, what has been spent,
how many iterations there were and which comment each answered (a comment is never worked on twice:
a re-run of the same workflow run replaces its own row). Only the last section counts, and only
gitbot writes one: everything the model wrote is fenced with `<!--` broken (mdsafe.fenced), and only
people with write access can edit the body. Base64 hides strings from the redaction of what gitbot posts,
so every string is redacted before it goes in (report.iteration_of).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from gitbot.forge.mdsafe import code_span, md_cell
from gitbot.receipt import money

START = "<!-- gitbot:iterations -->"
END = "<!-- /gitbot:iterations -->"
DATA = re.compile(r"<!-- gitbot:ledger ([A-Za-z0-9+/=]*) -->")
SUMMARY_CHARS = 1_500  # of each iteration's summary, kept for a later run that cannot continue this one


@dataclass
class Iteration:
    n: int
    trigger: str | None  # the request's key ("comment-123", "review-45"); None for the run that made the PR
    request: str  # what asked, in gitbot's words: "issue #7", "line comment on stats.py:12", …
    by: str  # the login who asked
    link: str  # where the request is
    actions_run: str  # the workflow run id
    run_id: str  # gitbot's run id (its record is pushed to refs/gitbot/runs/<run_id>)
    outcome: str  # "changed", "answered", "no change", or the run's status
    verified: bool | None = None  # None: no check ran
    commit: str | None = None
    cost_usd: float | None = 0.0
    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    continued: bool = False  # the run continued the previous run's conversation
    summary: str = ""  # the model's summary (untrusted text), capped

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens

    @property
    def cache_read_share(self) -> float | None:
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Iteration:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class Ledger:
    issue: int | None = None  # the issue the pull request was made for
    iterations: list[Iteration] = field(default_factory=list)

    # ---------------------------------------------------------------- reading

    @classmethod
    def parse(cls, body: str | None) -> Ledger | None:
        """The ledger in a pull request body, or None when it has none (or a damaged one)."""
        body = body or ""
        start = body.rfind(START)
        if start < 0:
            return None
        end = body.find(END, start)
        match = DATA.search(body, start, end if end >= 0 else len(body))
        if match is None:
            return None
        try:
            data = json.loads(base64.b64decode(match.group(1), validate=True))
            return cls(
                issue=data.get("issue") if isinstance(data.get("issue"), int) else None,
                iterations=[Iteration.from_dict(item) for item in data.get("iterations", [])],
            )
        except (ValueError, TypeError, AttributeError, binascii.Error):
            return None

    def find(self, trigger: str) -> Iteration | None:
        return next((it for it in self.iterations if it.trigger == trigger), None)

    @property
    def follow_ups(self) -> int:
        """Iterations asked for in comments (the run that made the pull request is not one)."""
        return sum(1 for it in self.iterations if it.trigger is not None)

    @property
    def total_cost(self) -> float:
        return sum(it.cost_usd or 0.0 for it in self.iterations)

    @property
    def last_run_id(self) -> str | None:
        """The run whose conversation the next one continues: the newest that ran the model."""
        for it in reversed(self.iterations):
            if it.run_id:
                return it.run_id
        return None

    # ---------------------------------------------------------------- writing

    def record(self, iteration: Iteration) -> None:
        """Add an iteration, or replace the one for the same request (a re-run of the same job)."""
        iteration.summary = iteration.summary[:SUMMARY_CHARS]
        for i, existing in enumerate(self.iterations):
            if iteration.trigger is not None and existing.trigger == iteration.trigger:
                iteration.n = existing.n
                self.iterations[i] = iteration
                return
        iteration.n = len(self.iterations) + 1
        self.iterations.append(iteration)

    def section(self) -> str:
        payload = {"issue": self.issue, "iterations": [asdict(it) for it in self.iterations]}
        data = base64.b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()
        parts = [START]
        if len(self.iterations) > 1:
            parts += ["## Iterations", "", self.table(), "", self.totals()]
        parts += [f"<!-- gitbot:ledger {data} -->", END]
        return "\n".join(parts)

    def table(self) -> str:
        lines = [
            "| # | Asked | By | Outcome | Check | Tokens in · cache write · cache read · out | Cache read | Cost |",
            "|--:|---|---|---|---|--:|--:|--:|",
        ]
        for it in self.iterations:
            asked = (
                f"[{md_cell(it.request)}]({it.link})" if it.link.startswith("http") else md_cell(it.request)
            )
            check = {True: "✅ passed", False: "❌ failed", None: "not run"}[it.verified]
            outcome = md_cell(it.outcome) + (f" {code_span(it.commit[:10])}" if it.commit else "")
            tokens = f"{it.input_tokens:,} · {it.cache_write_tokens:,} · {it.cache_read_tokens:,} · {it.output_tokens:,}"
            share = "" if it.cache_read_share is None else f"{it.cache_read_share:.0%}"
            lines.append(
                f"| {it.n} | {asked} | {code_span(it.by)} | {outcome} | {check} | {tokens} | {share} "
                f"| {money(it.cost_usd)} |"
            )
        return "\n".join(lines)

    def totals(self) -> str:
        its = self.iterations
        total = money(self.total_cost) if all(it.cost_usd is not None for it in its) else "unknown"
        return (
            f"**All {len(its)} iterations:** {total} · input {sum(it.input_tokens for it in its):,} · cache writes "
            f"{sum(it.cache_write_tokens for it in its):,} · cache reads {sum(it.cache_read_tokens for it in its):,} "
            f"· output {sum(it.output_tokens for it in its):,} tokens"
        )


def with_section(body: str, section: str) -> str:
    """`body` with its iterations section replaced by `section` (appended when it has none)."""
    start = body.rfind(START)
    if start >= 0:
        end = body.find(END, start)
        if end >= 0:
            return body[:start] + section + body[end + len(END) :]
        return body[:start] + section
    return body.rstrip("\n") + "\n\n" + section + "\n"
