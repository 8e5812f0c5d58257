"""What to do instead of a refused command: every refusal says it, naming the file tool or the form
of the command that works, so a model adapts in one step instead of guessing (issue 22).

Chosen from the rule that refused and the simple commands of the line; the first fitting advice wins,
most specific first."""

from __future__ import annotations

import posixpath
import re

Commands = tuple[tuple[str | None, ...], ...]

READ_TOOLS = "read_file (a file, or a range of its lines), search_files (a pattern across files), list_files"
EDIT_TOOLS = "write_to_file (a whole file) or replace_in_file (a change inside one)"
# A read_deny path named in a reason: "reads .env", "could print deploy/.env.production".
_DENIED_PATH = re.compile(r"(?:reads|print|expand to) (\S+?)[,; ]")


def instead_for(command: str, reason: str, rule: str, commands: Commands) -> str:
    programs = [(posixpath.basename(words[0]), [w or "" for w in words[1:]]) for words in commands
                if words and words[0]]
    names = {name for name, _ in programs}
    if rule.startswith("commands.deny"):
        return ("the policy's commands.deny refuses this whatever the form; do without it, or use the file "
                f"tools: {READ_TOOLS}; {EDIT_TOOLS}")
    if rule == "files.read_deny (git's history)":
        return ("leave the read_deny files out with a pathspec, e.g. `git log -p -- . ':(exclude).env'`, or name "
                "the paths you need after `--`")
    if "quote it" in reason:
        return "quote the word so the program gets it as written (e.g. `'--include=*.py'`), or use search_files"
    if "inside .git/" in reason or "could be .git/" in reason:
        return ("ask git instead of reading .git: `git log`, `git show REV:PATH`, `git config --get KEY`, "
                "`git rev-parse --git-dir`")
    if rule == "files.read_deny" and "only known at run time" in reason:
        return ("name the files literally (not through xargs, find -exec or a variable), or use search_files, "
                "which skips read_deny files")
    if rule == "files.read_deny":
        denied = _DENIED_PATH.search(reason + " ")
        name = posixpath.basename(denied.group(1)) if denied else ".env"
        if names & {"grep", "rg", "egrep", "fgrep", "ag"} or "below" in reason:
            return (f"leave {name} out (`grep -r --exclude={name} PATTERN .`), name the files or directories to "
                    f"search, or use search_files, which skips read_deny files")
        return (f"{name} is secret (files.read_deny): no tool reads it. Work from the code that uses it or from "
                f"an example file; for other files use {READ_TOOLS}")
    in_place = _in_place_editor(programs)
    if in_place:
        return f"change the file with replace_in_file (SEARCH/REPLACE blocks) instead of `{in_place}`"
    if rule == "files.edit_allow/edit_deny":
        if "outside the repository" in reason:
            return "write inside the repository (a scratch file you delete afterwards), or print to the output"
        return (f"the edit rules protect that path from every tool; change files the policy lets you edit with "
                f"{EDIT_TOOLS}")
    if ("tee" in names or _writes_by_redirect(command)) and names <= {"cat", "echo", "printf", "tee", "true", ":"}:
        return "create or overwrite the file with write_to_file instead of a shell redirection or tee"
    if "rm" in names or "unlink" in names:
        return ("delete files with the delete_file tool (it is held to the edit rules and checkpointed); "
                "empty a file with write_to_file")
    if names & {"sed", "awk", "head", "tail", "cat", "nl", "less", "more"}:
        return ("read files with read_file (`start_line`/`end_line` for a range of lines); search with "
                "search_files, list with list_files")
    if names & {"grep", "rg", "egrep", "fgrep", "ag", "find", "xargs", "ls", "tree"}:
        return f"search with search_files (regex, optional file glob) or list with list_files; {READ_TOOLS}"
    if rule == "commands.allow":
        return ("run a command the policy's commands.allow names (the run's check command always is), or use "
                f"the file tools: {READ_TOOLS}; {EDIT_TOOLS}")
    return ("write the command so each program is named with literal arguments (run an inner command on its "
            f"own first), or use the file tools: {READ_TOOLS}; {EDIT_TOOLS}")


def _in_place_editor(programs: list[tuple[str, list[str]]]) -> str | None:
    """`sed -i`, `perl -pi` and the like, shown as the model wrote them, or None."""
    for name, args in programs:
        flags = [arg for arg in args if arg.startswith("-") and not arg.startswith("--")]
        if name == "sed" and (any("i" in flag for flag in flags) or any(a.startswith("--in-place") for a in args)):
            return "sed -i"
        if name in ("perl", "ruby") and any("i" in flag for flag in flags):
            return f"{name} -i"
    return None


def _writes_by_redirect(command: str) -> bool:
    # A `>` outside quotes is close enough for advice: the judge's reason has said what was refused.
    return bool(re.search(r"(?<![<>&0-9])>{1,2}(?![&>])", re.sub(r"'[^']*'|\"[^\"]*\"", "", command)))
