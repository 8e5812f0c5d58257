"""attempt_completion (with review-on-submit) and ask_followup_question (nobody is there)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gitbot.tools.base import Tool, ToolContext, ToolError, ToolResult

REVIEW_CHECKLIST = """Before this is accepted, review your work once. This is the full diff of your changes:

{diff}

Checklist:
- Remove scratch files, debug prints and temporary scripts you created.
- Run the relevant tests or the check command and make sure they pass.
- Do not weaken, skip or delete tests to make them pass.
- Keep the change minimal and focused on the task.

If everything is in order, call attempt_completion again with your final summary. Otherwise fix
what is missing first."""

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
            diff = "(no changes to files in the repository)"
        elif len(diff) > MAX_REVIEW_DIFF_CHARS:
            diff = diff[:MAX_REVIEW_DIFF_CHARS] + f"\n[… diff truncated: {len(diff) - MAX_REVIEW_DIFF_CHARS} " \
                                                  "more characters]"
        return ToolResult(REVIEW_CHECKLIST.format(diff=diff))
    return ToolResult("Completion accepted.", completed=summary)


def ask_followup_question(ctx: ToolContext, args: dict[str, Any]) -> str:
    if not args["question"].strip():
        raise ToolError("ask_followup_question needs a non-empty `question`.")
    return ("No human is available: this is a non-interactive run and nobody will answer. Proceed on "
            "your best reading of the task, or, if the task truly cannot be done without the answer, stop "
            "with attempt_completion and explain exactly what is missing.")


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
