"""attempt_completion (with review-on-submit) and ask_followup_question (nobody is there).

Their answers are templates in prompts/completion/.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gitbot.prompting import render_prompt
from gitbot.tools.base import Tool, ToolContext, ToolError, ToolResult

MAX_REVIEW_DIFF_CHARS = 20_000


def attempt_completion(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    summary = args["result"].strip()
    if not summary:
        raise ToolError("attempt_completion needs a non-empty `result` summarising what you did.")
    diff_of_work: Callable[[], str] | None = ctx.state.get("diff_of_work")
    if ctx.state.get("review_on_submit") and not ctx.state.get("review_shown"):
        ctx.state["review_shown"] = True
        diff = diff_of_work() if diff_of_work else ""
        if not diff.strip():
            diff = render_prompt("completion/no_changes")
        elif len(diff) > MAX_REVIEW_DIFF_CHARS:
            note = render_prompt("completion/diff_truncated", count=str(len(diff) - MAX_REVIEW_DIFF_CHARS))
            diff = f"{diff[:MAX_REVIEW_DIFF_CHARS]}\n{note}"
        return ToolResult(render_prompt("completion/review", diff=diff))
    return ToolResult(render_prompt("completion/accepted"), completed=summary)


def ask_followup_question(ctx: ToolContext, args: dict[str, Any]) -> str:
    if not args["question"].strip():
        raise ToolError("ask_followup_question needs a non-empty `question`.")
    return render_prompt("completion/no_human")


ATTEMPT_COMPLETION = Tool(
    name="attempt_completion",
    input_schema={"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"],
                  "additionalProperties": False},
    function=attempt_completion,
)

ASK_FOLLOWUP_QUESTION = Tool(
    name="ask_followup_question",
    input_schema={"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"],
                  "additionalProperties": False},
    function=ask_followup_question,
)
