"""delete_file: remove one file of the repository under the edit rules (issue 22).

The system prompt asks the model to clean up its scratch files; in the sandbox `rm` does that, but a
run without the sandbox holds commands to the allow-list, where `rm` is not. This tool works in both
and is held to what write_to_file is: inside the repository, never in `.git`, editable and readable by
the policy. It deletes only what a checkpoint can bring back: a file git ignores is not in the
checkpoints, so it is refused (`gitbot checkpoints restore` could not undo it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitbot import git
from gitbot.checkpoints.capture import CaptureRules, is_nested_repo, size_cap_from_env
from gitbot.errors import GitError
from gitbot.tools.base import Tool, ToolContext, ToolError, ToolResult
from gitbot.tools.files import require_string
from gitbot.tools.paths import resolve


def delete_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    written = require_string(args, "path")
    real, relpath = resolve(ctx, written, for_edit=True, must_exist=True)
    root = os.path.realpath(ctx.repo)
    # What is unlinked is the last name of the path in its real directory: a symlink is deleted as a
    # link (its target, checked by resolve too, stays). That directory must be the repository's: a
    # directory link leading out of it, to a link leading back in, must not delete outside it.
    lexical = os.path.join(root, os.path.normpath(written.strip()))
    target = os.path.join(os.path.realpath(os.path.dirname(lexical)), os.path.basename(lexical))
    if not target.startswith(root + os.sep):
        raise ToolError(f"{written} is not a file of the repository (a directory on its way leads out of it)")
    if not os.path.islink(target) and target != str(real):
        raise ToolError(f"cannot delete {relpath}: it changed while it was checked")
    if os.path.isdir(target) and not os.path.islink(target):
        raise ToolError(f"{relpath} is a directory; delete_file deletes one file (delete the files in it, and an "
                        f"empty directory no longer shows in git)")
    shown = os.path.relpath(target, root)
    why = _not_in_checkpoints(Path(root), shown)
    if why is None and _ignored(ctx, shown):
        why = "it is ignored by git"
    if why is not None:
        raise ToolError(f"{shown}: {why}, so no checkpoint holds it and a deletion could not be undone; leave it, "
                        f"or empty it with write_to_file")
    try:
        os.unlink(target)
    except OSError as exc:
        raise ToolError(f"cannot delete {relpath}: {exc.strerror}") from None
    return ToolResult(f"Deleted {shown}.", touched=(shown,))


def _not_in_checkpoints(root: Path, relpath: str) -> str | None:
    """Why the checkpoints would not hold this file (capture.py's rules), or None when they would."""
    parents = Path(relpath).parents
    if any(is_nested_repo(root / parent) for parent in parents if str(parent) != "."):
        return "it is in a nested git repository (checkpoints record only its HEAD)"
    rules = CaptureRules(root, size_cap_from_env(), None, root)
    return rules.why_not_capturable(relpath, os.lstat(root / relpath))


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
