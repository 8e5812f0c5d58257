"""RunResult and the statuses a run can end with (one enum, one source of truth)."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from gitbot.errors import ExitCode  # defined with the errors; imported from here too
from gitbot.llm.usage import Usage


class Status(str, enum.Enum):
    COMPLETED = "completed"
    STEP_LIMIT = "step_limit"
    BUDGET_EXCEEDED = "budget_exceeded"
    MISTAKE_LIMIT = "mistake_limit"
    TIME_LIMIT = "time_limit"
    ERROR = "error"


def exit_code_for(status: Status) -> ExitCode:
    if status is Status.COMPLETED:
        return ExitCode.OK
    if status is Status.ERROR:
        return ExitCode.INFRA
    return ExitCode.GAVE_UP


@dataclass
class StepRecord:
    """One tool call, as the receipt and the PR's steps table show it."""

    step: int
    tool: str
    target: str
    outcome: str  # "ok", "error", "denied", "interrupted"
    checkpoint: str | None = None
    request: int = 0  # which model request asked for it


@dataclass
class RunResult:
    status: Status
    run_id: str
    model: str
    summary: str
    steps: int = 0  # model requests that got a reply
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0
    files_changed: list[str] = field(default_factory=list)
    duration_seconds: float = 0.0
    replay: bool = False
    warnings: list[str] = field(default_factory=list)
    step_log: list[StepRecord] = field(default_factory=list)
    checkpoints: dict[str, Any] = field(default_factory=dict)  # mode, timings
    sandbox: str = "none"  # "bubblewrap", "none (…reason…)"
    price_table_date: str | None = None
    max_cost_usd: float | None = None
    provider: str | None = None  # "anthropic", "bedrock (us-east-1)", "openai (localhost:8000)"; never a key
    price_source: str | None = None  # "policy": priced by the policy's [model] table, not the price table
    extra: dict[str, Any] = field(default_factory=dict)  # fix-check / action fields

    def to_dict(self) -> dict[str, Any]:
        data = {
            "status": self.status.value,
            "run_id": self.run_id,
            "steps": self.steps,
            "tool_calls": self.tool_calls,
            "usage": self.usage.to_dict(),
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "model": self.model,
            "files_changed": list(self.files_changed),
            "summary": self.summary,
            "duration_seconds": round(self.duration_seconds, 3),
            "replay": self.replay,
            "warnings": list(self.warnings),
            "sandbox": self.sandbox,
            "checkpoints": self.checkpoints,
            "price_table_date": self.price_table_date,
            "max_cost_usd": self.max_cost_usd,
            "provider": self.provider,
            "price_source": self.price_source,
            "step_log": [asdict(s) for s in self.step_log],
        }
        data.update(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        known = {"status", "run_id", "steps", "tool_calls", "usage", "cost_usd", "model", "files_changed",
                 "summary", "duration_seconds", "replay", "warnings", "sandbox", "checkpoints",
                 "price_table_date", "max_cost_usd", "step_log", "provider", "price_source"}
        return cls(
            status=Status(data["status"]), run_id=data["run_id"], model=data.get("model", ""),
            summary=data.get("summary", ""), steps=data.get("steps", 0), tool_calls=data.get("tool_calls", 0),
            usage=Usage(**data.get("usage", {})), cost_usd=data.get("cost_usd"),
            files_changed=list(data.get("files_changed", [])), duration_seconds=data.get("duration_seconds", 0.0),
            replay=data.get("replay", False), warnings=list(data.get("warnings", [])),
            step_log=[StepRecord(**s) for s in data.get("step_log", [])],
            checkpoints=data.get("checkpoints", {}), sandbox=data.get("sandbox", "none"),
            price_table_date=data.get("price_table_date"), max_cost_usd=data.get("max_cost_usd"),
            provider=data.get("provider"), price_source=data.get("price_source"),
            extra={k: v for k, v in data.items() if k not in known},
        )
