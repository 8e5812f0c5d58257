"""What a command did to the way to a protected path: found right after the command, and undone.

A protected path (`.gitbot/`, AGENTS.md, an edit_deny `dir/**`, an in-repository toolchain directory, and
`.gitbot/` and AGENTS.md of each nested repository) leads to what the next run loads. One rule covers every
shape it can have: before a command, `watch` follows the path from the repository root one component at a
time (an lstat each) and notes
- every symlink on the way, with its text (the protected path itself, `.gitbot -> cfg`, and every hop of a
  chain, `cfg -> config/gitbot`, inside the repository), and
- the first component that does not exist (a missing `.gitbot`, or the missing `config/gitbot` a dangling
  `.gitbot -> config/gitbot` leads to);
what exists at the end of the way is the sandbox's to pin (layout.py binds it read-only, whatever its kind;
contain.py grants nothing but reading on it, nor on any noted path). Right after the command (before its
checkpoint, any git of the user's or the next policy load reads the tree), `undo` compares: a symlink that is
not the same symlink any more is set aside and made again; whatever stands at a noted missing component is
set aside (as is a directory on the way to it that a command swapped for a symlink). Setting aside is
planted.py's `set_aside`: one rename into the git directory's gitbot/ store, never through a symlink; nothing
is deleted. Then the command fails (ProtectedPathCreated, ProtectedLinkReplaced); what could not be undone
fails closed (UndoIncomplete: the runner refuses every later command).

Nothing is made in the user's repository for a missing path (a mount point there would be a visible empty
AGENTS.md while a command runs, and would change the root directory twice per command). The command's
processes are all gone by the check (run_command kills what it left, the process limit waits for its
cgroup to empty), so nothing can make the path again after it. Within the command nothing gains from it:
what reads the path in the sandbox runs with the command's own rights; gitbot and the user's git read
`.gitbot/` and AGENTS.md only outside, after this check. If gitbot itself dies mid-command, crashnote.py
does the same undo on the next start.

This holds in every mode (without a sandbox it is the only protection of a missing path) and costs an lstat
per component of each protected path, and a readlink per symlink on the way, per command.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from gitbot.gitmeta import GIT_ENTRY
from gitbot.sandbox.env import under
from gitbot.sandbox.planted import CommandUndone, UndoIncomplete, set_aside

# Protected in every repository, nested ones too (what `gitbot run --repo vendor/lib` would load).
PER_REPOSITORY = (".gitbot", "AGENTS.md")
# Symlinks followed on one way at most (as the kernel's own limit): a loop ends here.
MAX_HOPS = 40


class ProtectedPathCreated(CommandUndone):
    """A command created a protected path that was missing (or the missing target of one); it was set aside."""


class ProtectedLinkReplaced(CommandUndone):
    """A command replaced a symlink on the way to a protected path (which no mount can pin); it was put back."""


@dataclass
class Watch:
    """The way to the protected paths before a command, repository-relative: what `undo` compares."""
    links: dict[str, str] = field(default_factory=dict)  # every symlink on the way -> its text
    missing: list[str] = field(default_factory=list)  # the first missing component of each way
    ends: list[str] = field(default_factory=list)  # what each way leads to that exists, inside the repository



def confined(seen: Watch, nested_git: list[str]) -> list[str]:
    """What a confinement without mounts makes read-only (contain.py): every path `seen` noted, but a missing
    one right in a nested repository (that would keep commands from making any file there; what a command
    makes at it is set aside after)."""
    nested_roots = {entry.rpartition("/")[0] for entry in nested_git}
    return [*seen.links, *seen.ends, *(path for path in seen.missing if path.rpartition("/")[0] not in nested_roots)]


def nested_protected(nested_git: list[str]) -> list[str]:
    """The per-repository protected paths of the nested repositories whose `.git` entries (relative, as
    planted.py's `GitMetadataGuard.before` returns them) exist."""
    found = []
    for entry in nested_git:
        parent, _, name = entry.rpartition("/")
        if name == GIT_ENTRY and parent:
            found += [f"{parent}/{path}" for path in PER_REPOSITORY]
    return found


def watch(root: str, protected) -> Watch:
    """Follow each of the `protected` repository-relative paths under `root` (a real path); call right
    before a command."""
    seen = Watch()
    for relative in dict.fromkeys(protected):
        _follow(root, relative.strip("/").split("/"), seen)
    seen.missing = sorted(set(seen.missing))
    seen.ends = sorted(set(seen.ends))
    return seen


def _follow(root: str, parts: list[str], seen: Watch) -> None:
    path, hops = root, 0
    while parts:
        part = parts.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            return  # (never made by the callers: a protected path does not lead up)
        path = os.path.join(path, part)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if part != GIT_ENTRY:  # (git metadata a command makes is planted.py's)
                seen.missing.append(os.path.relpath(path, root))
            return
        except OSError:
            return  # (unreadable to gitbot: nothing to compare)
        if stat.S_ISLNK(st.st_mode):
            relative = os.path.relpath(path, root)
            try:
                text = seen.links.setdefault(relative, os.readlink(path))
            except OSError:
                return
            if part == GIT_ENTRY:
                return  # the link is kept; where it leads is git metadata, planted.py's and mounts.py's
            hops += 1
            target = os.path.normpath(os.path.join(os.path.dirname(path), text))  # every part before is real
            if hops > MAX_HOPS or not under(target, root):
                return  # leads out of the repository: only the link itself is the repository's to keep
            parts = [*os.path.relpath(target, root).split("/"), *parts]
            path = root
        elif part == GIT_ENTRY:
            return
        elif parts and not stat.S_ISDIR(st.st_mode):  # a file where a directory belongs: a command may swap it
            seen.missing.append(os.path.relpath(os.path.join(path, parts[0]), root))
            return
    if path != root:
        seen.ends.append(os.path.relpath(path, root))


def undo(root: str, seen: Watch, aside: str | None) -> None:
    """Put back every symlink of `seen` a command changed and set aside what it made at a missing component
    (each whatever the others raised); raise UndoIncomplete when something could not be undone, else
    ProtectedLinkReplaced / ProtectedPathCreated naming what was."""
    put_back: list[str] = []
    made: list[str] = []
    failed: list[str] = []
    for relative, text in seen.links.items():
        path = os.path.join(root, relative)
        try:
            if os.path.islink(path) and os.readlink(path) == text:
                continue
            set_aside(_swapped_parent(root, path) or path, root, aside)
            os.symlink(text, path)
            put_back.append(relative)
        except OSError as exc:
            failed.append(f"{relative} (to be put back as a symlink to {text}): {exc}")
    for relative in seen.missing:
        path = os.path.join(root, relative)
        path = _swapped_parent(root, path) or path
        if not os.path.lexists(path):
            continue
        try:
            set_aside(path, root, aside)
            made.append(os.path.relpath(path, root))
        except OSError as exc:
            failed.append(f"{os.path.relpath(path, root)}: {exc}")
    if failed:
        raise UndoIncomplete(
            "gitbot could NOT undo what a command did to a protected path (" + "; ".join(failed) + "); it runs "
            f"no further command in this run; look at these paths in {root} before running gitbot or git there.")
    said = []
    if made:
        said.append(
            f"the command created {', '.join(made)}, a protected path (the policy, instructions, workflows or "
            "toolchain directories only the user may change, or where a protected symlink leads), which commands "
            "cannot create: gitbot moved it out of the work tree (kept in the git directory's gitbot/ store)")
    if put_back:
        said.append(f"the command replaced {', '.join(put_back)}, a symlink on the way to a protected path (only "
                    "the user may change it), so gitbot put it back")
    if said:
        kind = ProtectedLinkReplaced if put_back and not made else ProtectedPathCreated
        raise kind("; ".join(said) + "; the command counts as failed.")


def _swapped_parent(root: str, path: str) -> str | None:
    """The directory on the way from `root` to `path` (all real directories when `watch` ran) that is a
    symlink now, if one is."""
    parent = os.path.dirname(path)
    if os.path.realpath(parent) == parent:
        return None
    walked = root
    for part in os.path.relpath(parent, root).split("/"):
        walked = os.path.join(walked, part)
        if os.path.islink(walked):
            return walked
    return None
