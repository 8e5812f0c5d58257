"""The agent's side of the conversation's start: the system prompt and the first user message.

The words are templates in prompts/ (system.md, first_message/); this module gathers what fills them:
the task (as data inside delimiters), the environment and the project's own instructions.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING

from gitbot.prompting import defuse_delimiters, render_prompt
from gitbot.task import Task
from gitbot.textsafe import printable

if TYPE_CHECKING:
    from gitbot.policy import Policy

TOP_LEVEL_LISTING_CAP = 200
INSTRUCTION_FILES = ("AGENTS.md", ".gitbot/instructions.md")
INSTRUCTIONS_CAP_CHARS = 8_000


def system_prompt() -> str:
    # Sent with the file's final newline, as always: the prompt cache keys on these exact bytes.
    return render_prompt("system") + "\n"


def first_user_message(task: Task, repo: Path, policy: Policy | None = None) -> str:
    """The task as data inside delimiters, and a short, stable environment block."""
    # Text that closes a delimiter early would step outside "data"; the slash is escaped instead.
    task_text = defuse_delimiters(task.text.strip(), outer_only=True)
    parts = [render_prompt("first_message/task", task=task_text)]
    if task.check_command:
        parts.append(render_prompt("first_message/check_command", check_command=task.check_command))
    parts.append(render_prompt("first_message/environment", repository_root=str(repo),
                               operating_system=f"{platform.system()} {platform.machine()}",
                               top_level_files=top_level_listing(repo)))
    instructions = project_instructions(repo, policy)
    if instructions:
        parts.append(render_prompt("first_message/project_instructions", instructions=instructions))
    return "\n\n".join(parts)


def top_level_listing(repo: Path) -> str:
    """The repository's top level as git sees it (what list_files(".") shows): read from the index
    and the top directory, without walking the tree (tools/listing.py)."""
    from gitbot.tools.listing import git_entries

    names = sorted({printable(name) for name in git_entries(Path(repo), recursive=False) or ()})
    shown = names[:TOP_LEVEL_LISTING_CAP]
    lines = [f"  {n}" for n in shown] or [f"  {render_prompt('first_message/no_files')}"]
    if len(names) > len(shown):
        lines.append(f"  {render_prompt('first_message/more_files', count=str(len(names) - len(shown)))}")
    return "\n".join(lines)


def project_instructions(repo: Path, policy: Policy | None = None) -> str:
    """AGENTS.md / .gitbot/instructions.md: regular files inside the repository only (a symlink could
    point at /proc/self/environ or a key), readable under the policy, capped."""
    texts = []
    for name in INSTRUCTION_FILES:
        path = repo / name
        if path.is_symlink() or not path.is_file() or (policy is not None and not policy.check_read(name)):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as f:
                text = f.read(INSTRUCTIONS_CAP_CHARS).decode("utf-8", "replace")
        except OSError:
            continue
        # The repository's text sits between <project_instructions> tags: it must not close them.
        texts.append(f"--- {name} ---\n{defuse_delimiters(printable(text).strip())}")
    return "\n\n".join(texts)
