"""Programs that would wait for a person: editors, pagers, full-screen programs, REPLs, `tail -f`,
git commands that open an editor or ask questions. A run has no terminal, so these are refused with
what to run instead (tools/verdicts.py asks, after the policy allowed the command)."""

from __future__ import annotations

import posixpath
import re

EDITORS = {"vi", "vim", "nvim", "view", "vimdiff", "nano", "pico", "emacs", "emacsclient", "joe", "micro",
           "mcedit", "ed", "ex"}
PAGERS = {"less", "more", "most", "pg"}
FULL_SCREEN = {"top", "htop", "btop", "watch", "tmux", "screen", "mc", "nmtui"}
REPLS = {"python", "python2", "python3", "ipython", "bpython", "node", "deno", "irb", "pry", "bash", "sh", "zsh",
         "fish", "dash", "ksh", "psql", "mysql", "sqlite3", "redis-cli", "mongosh", "ghci", "lua", "R", "julia",
         "iex", "erl", "scala", "gdb", "ssh"}
_PYTHON_VERSIONED = re.compile(r"python\d(\.\d+)?")
GIT_NON_EDITOR_COMMIT_OPTIONS = ("-m", "--message", "-F", "--file", "-C", "--reuse-message", "--no-edit",
                                 "--fixup")


def interactive_refusal(commands: tuple[tuple[str | None, ...], ...], fed: frozenset[int] = frozenset()) -> str | None:
    """Why a command would wait for a person (there is none), or None. `fed`: the indexes of the commands
    whose standard input is a heredoc, a file or a pipe: a REPL there reads a script, not a person."""
    for index, words in enumerate(commands):
        if not words or words[0] is None:
            continue
        name = posixpath.basename(words[0])
        args = [word or "" for word in words[1:]]
        if name in EDITORS:
            return (f"`{name}` is an interactive editor and there is no terminal here; change files with "
                    f"write_to_file or replace_in_file instead")
        if name in PAGERS:
            return f"`{name}` is an interactive pager; print the file with `cat`, `head` or `tail` instead"
        if name in FULL_SCREEN:
            return f"`{name}` is a full-screen program that never finishes on its own; run a one-shot command instead"
        if (name in REPLS or _PYTHON_VERSIONED.fullmatch(name)) and (
                (not args and index not in fed) or "-i" in args or "--interactive" in args):
            return (f"`{' '.join(w or '?' for w in words)}` starts an interactive session that would wait for input; "
                    f"pass a script or a command (e.g. `python -c '...'` or `python script.py`)")
        if name == "tail" and any(a in ("-f", "-F", "--follow") or a.startswith("--follow=") for a in args):
            return "`tail -f` follows a file forever; read it once with `tail -n 100 FILE`"
        if name == "git" and args:
            refusal = _git_interactive(args)
            if refusal:
                return refusal
    return None


def _git_interactive(args: list[str]) -> str | None:
    subcommand = next((a for a in args if not a.startswith("-")), "")
    rest = args[args.index(subcommand) + 1:] if subcommand else []
    if subcommand == "commit" and not any(a.startswith(GIT_NON_EDITOR_COMMIT_OPTIONS) for a in rest):
        return "`git commit` without -m would open an editor; pass the message with -m \"...\""
    if subcommand == "tag" and any(a in ("-a", "--annotate", "-s", "--sign") for a in rest) and \
            not any(a.startswith(("-m", "--message", "-F", "--file")) for a in rest):
        return "an annotated `git tag` without -m would open an editor; pass the message with -m \"...\""
    if subcommand == "rebase" and any(a in ("-i", "--interactive") for a in rest):
        return "`git rebase -i` is interactive; it cannot be used here"
    if subcommand in ("add", "checkout", "reset", "restore", "stash", "commit") and any(
            a in ("-p", "--patch", "-i", "--interactive") for a in rest):
        return f"`git {subcommand} {' '.join(rest)}` asks questions interactively; name the files instead"
    return None
