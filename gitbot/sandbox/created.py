"""Protected paths a command created where there were none: set aside right after the command.

A protected path that exists (`.gitbot/`, AGENTS.md, an edit_deny `dir/**`, an in-repository toolchain
directory) is pinned read-only by a mount (layout.py). One that is missing gets no mount, and nothing is
made in the user's repository for it: a mount point there would be a visible empty AGENTS.md while a
command runs, would change the root directory twice per command (every later walk lists it again), and
would have to sit in the tree for as long as a sandbox is kept ready. So a command can create one. Before
it, `missing` notes the first missing component of each protected path; right after it (before its
checkpoint, any git of the user's or the next policy load reads the tree), `undo_created` sets aside
whatever stands there now, file, directory or symlink, into the git directory's gitbot/ store (planted.py's
`set_aside`: one rename, never through a symlink), and the command fails with ProtectedPathCreated. A
directory on the way that a command swapped for a symlink is set aside the same way (the protected path
would lead wherever it points). What cannot be set aside fails closed (UndoIncomplete).

The command's processes are all gone by then (run_command kills what it left, the process limit waits for
its cgroup to empty), so nothing can make the path again after the check. Within the command nothing gains
from it: what reads the path in the sandbox (`gitbot` or an agent tool run by the command) runs with the
command's own rights, so it can do nothing the command could not do directly; gitbot and the user's git
read `.gitbot/` and AGENTS.md only outside, after this check.

This holds in every mode: it is the only protection of a missing path without a sandbox, and costs an
lstat() per protected path per command.
"""

from __future__ import annotations

import os

from gitbot.sandbox.layout import first_missing
from gitbot.sandbox.planted import CommandUndone, UndoIncomplete, set_aside


class ProtectedPathCreated(CommandUndone):
    """A command created a protected path that was missing; it was set aside."""


def missing(root: str, protected) -> list[str]:
    """The first missing component (absolute) of each of the `protected` repository-relative paths under
    `root` (a real path), where its parent is a real directory; call right before a command."""
    found = []
    for relative in protected:
        component = first_missing(root, relative)
        if component is not None and os.path.realpath(os.path.dirname(component)) == os.path.dirname(component):
            found.append(component)
    return sorted(set(found))


def undo_created(root: str, components: list[str], aside: str | None) -> None:
    """Set aside what a command made at `components` (from `missing`, before it); raise ProtectedPathCreated
    naming it, or UndoIncomplete when something could not be set aside."""
    made: list[str] = []
    failed: list[str] = []
    for component in components:
        path = _swapped_parent(root, component) or component
        if not os.path.lexists(path):
            continue
        relative = os.path.relpath(path, root)
        try:
            set_aside(path, root, aside)
            made.append(relative)
        except OSError as exc:
            failed.append(f"{relative}: {exc}")
    if failed:
        raise UndoIncomplete(
            "gitbot could NOT set aside a protected path a command created (" + "; ".join(failed) + "); it runs "
            f"no further command in this run; look at these paths in {root} before running gitbot or git there.")
    if made:
        raise ProtectedPathCreated(
            f"the command created {', '.join(made)}, a protected path (the policy, instructions, workflows or "
            "toolchain directories only the user may change), which commands cannot create: gitbot moved it out "
            "of the work tree (kept in the git directory's gitbot/ store) and counts the command as failed.")


def _swapped_parent(root: str, component: str) -> str | None:
    """The directory on the way from `root` to `component` (all real directories before the command) that is
    a symlink now, if one is."""
    parent = os.path.dirname(component)
    if os.path.realpath(parent) == parent:
        return None
    path = root
    for part in os.path.relpath(parent, root).split("/"):
        path = os.path.join(path, part)
        if os.path.islink(path):
            return path
    return None
