"""The /bin/sh script `gitbot hook install` writes into the hooks directory.

It calls the Python that installed it (`gitbot hook run <stage>` through `gitbot.hooks.main`), so a
hook keeps working outside the virtual environment, and it says what to do when that Python is gone.
A hook that was there before is renamed in place to `<stage>.gitbot-previous` and runs first, from
that directory and with its own name as $0 when it is a shell script, so helpers it sources relative
to itself (husky) are still found.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

HOOK_MARKER = "# gitbot-hook: 1"
PREVIOUS_SUFFIX = ".gitbot-previous"  # the hook that was there before, renamed next to ours
SHELL_NAMES = {"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"}


SCRIPT_HEAD = """#!/bin/sh
# gitbot {stage} hook, written by `gitbot hook install`.
# Remove it with `gitbot hook uninstall --stage {stage}` (that also restores the hook it replaced).
{marker}
GITBOT_PYTHON={python}
"""
# git writes the refs being pushed on stdin; both the previous hook and gitbot may read them.
SCRIPT_SAVE_STDIN = """GITBOT_STDIN=$(mktemp "${{TMPDIR:-/tmp}}/gitbot-pre-push.XXXXXX") || exit 1
trap 'rm -f "$GITBOT_STDIN"' EXIT
cat > "$GITBOT_STDIN"
"""
SCRIPT_CHAIN = """# The hook that was here before gitbot runs first; if it fails, so does this one.
GITBOT_PREVIOUS="${{0%/*}}/{stage}{suffix}"
if [ -x "$GITBOT_PREVIOUS" ]; then
    {call}{feed} || exit $?
fi
"""
# A shell-script previous hook is run by its own interpreter with $0 set to this hook's path, so that
# `$(dirname "$0")` and `$(basename "$0")` inside it mean what they meant before it was renamed.
SCRIPT_CALL_SHELL = 'GITBOT_PREVIOUS="$GITBOT_PREVIOUS" {interpreter} -c \'. "$GITBOT_PREVIOUS"\' "$0" "$@"'
SCRIPT_CALL_DIRECT = '"$GITBOT_PREVIOUS" "$@"'
SCRIPT_RUN = """if [ "${{GITBOT_SKIP:-}}" = 1 ]; then
    echo "gitbot: skipped (GITBOT_SKIP=1)" >&2
    exit 0
fi
if [ ! -x "$GITBOT_PYTHON" ]; then
    echo "gitbot: cannot run the {stage} hook: $GITBOT_PYTHON (gitbot's Python) is gone." >&2
    echo "gitbot: reinstall it (gitbot hook install --stage {stage})," >&2
    echo "gitbot: remove it (gitbot hook uninstall --stage {stage})," >&2
    echo "gitbot: or skip it once with GITBOT_SKIP=1 (or git commit/push --no-verify)." >&2
    exit 1
fi
{run_line}
"""
# What the script runs: `gitbot hook run STAGE`, entered through gitbot.hooks.main rather than the full
# CLI, which imports every subcommand to build its parser (too slow for every commit).
SCRIPT_PYTHON_CODE = """import sys
try:
    from gitbot.hooks import main
except ImportError as exc:
    sys.exit(f"gitbot: {sys.executable} cannot import gitbot ({exc}); reinstall the hook, "
             "or skip it with GITBOT_SKIP=1")
sys.exit(main(sys.argv[1:]))"""


def hook_script(stage: str, python: str, chained: bool, previous_interpreter: list[str] | None = None) -> str:
    """The hook script. `previous_interpreter`: the shell (with its options) that runs the previous hook,
    when it is a shell script; None runs it directly."""
    feed = ' < "$GITBOT_STDIN"' if stage == "pre-push" else ""
    call = f'"$GITBOT_PYTHON" -c {_sh_quote(SCRIPT_PYTHON_CODE)} run {stage}'
    # pre-push: not exec, so that the trap still removes the saved stdin afterwards.
    run_line = f"{call}{feed}" if stage == "pre-push" else f"exec {call}"
    parts = [SCRIPT_HEAD.format(stage=stage, marker=HOOK_MARKER, python=_sh_quote(python))]
    if stage == "pre-push":
        parts.append(SCRIPT_SAVE_STDIN.format())
    if chained:
        call = SCRIPT_CALL_DIRECT if not previous_interpreter else \
            SCRIPT_CALL_SHELL.format(interpreter=" ".join(_sh_quote(word) for word in previous_interpreter))
        parts.append(SCRIPT_CHAIN.format(stage=stage, suffix=PREVIOUS_SUFFIX, call=call, feed=feed))
    parts.append(SCRIPT_RUN.format(stage=stage, run_line=run_line))
    return "".join(parts)


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def shell_interpreter(data: bytes) -> list[str] | None:
    """The `#!` line's interpreter and options when the script is a shell script (sh, bash, …, also via
    /usr/bin/env); None otherwise."""
    if not data.startswith(b"#!"):
        return None
    words = data[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if not rest or rest[0].rsplit("/", 1)[-1] not in SHELL_NAMES or "-S" in words[1:]:
            return None
        return words
    return words if program in SHELL_NAMES and program != "busybox" else None


def is_gitbot_hook(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return HOOK_MARKER.encode() in f.read(4096)
    except OSError:
        return False
