"""delete_file: remove one file of the repository under the edit rules (issue 22).

The system prompt asks the model to clean up its scratch files; in the sandbox `rm` does that, but a
run without the sandbox holds commands to the allow-list, where `rm` is not. This tool works in both
and is held to what write_to_file is: inside the repository, never in `.git`, editable and readable by
the policy. It deletes only what a checkpoint can bring back: a file git ignores is not in the
checkpoints, so it is refused (`gitbot checkpoints restore` could not undo it).
"""

from __future__ import annotations

import os
from typing import Any

from gitbot import git
from gitbot.errors import GitError
from gitbot.tools.base import Tool, ToolContext, ToolError, ToolResult
from gitbot.tools.files import require_string
from gitbot.tools.paths import resolve


def delete_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    written = require_string(args, "path")
    real, relpath = resolve(ctx, written, for_edit=True, must_exist=True)
    # A symlink is deleted as a link: its target (checked by resolve too) stays.
    lexical = os.path.join(os.path.realpath(ctx.repo), os.path.normpath(written.strip()))
    target = lexical if os.path.islink(lexical) else str(real)
    if os.path.isdir(target) and not os.path.islink(target):
        raise ToolError(f"{relpath} is a directory; delete_file deletes one file (delete the files in it, and an "
                        f"empty directory no longer shows in git)")
    if _ignored(ctx, os.path.relpath(target, os.path.realpath(ctx.repo))):
        raise ToolError(f"{relpath} is ignored by git, so no checkpoint holds it and a deletion could not be "
                        f"undone; leave it, or empty it with write_to_file")
    try:
        os.unlink(target)
    except OSError as exc:
        raise ToolError(f"cannot delete {relpath}: {exc.strerror}") from None
    shown = os.path.relpath(target, os.path.realpath(ctx.repo))
    return ToolResult(f"Deleted {shown}.", touched=(shown,))


def _ignored(ctx: ToolContext, relpath: str) -> bool:
    try:
        # Exit 0: ignored, 1: not. check-ignore refuses the literal-pathspec switch git.py's environments set,
        # so it is turned off here; `./` keeps a name starting with ':' from being read as pathspec magic.
        done = git.run(["check-ignore", "-q", "--", "./" + relpath], cwd=ctx.repo, ok=(0, 1),
                       env=git.clean_env(git.MAGIC_PATHSPECS))
    except GitError:
        return False  # not a git repository: nothing is ignored, the checkpoints take the directory
    return done.returncode == 0


DELETE_FILE = Tool(
    name="delete_file",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path relative to the repository root."},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    function=delete_file,
    changes_files=True,
)
