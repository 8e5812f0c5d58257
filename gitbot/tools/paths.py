"""Turning a tool's path argument into a file inside the repository, or a clear refusal.

Every file tool goes through `resolve`: the path is relative to the repository root (absolute
paths inside the repository are accepted too), and anything that leads outside the repository,
through `..`, an absolute path or a symlink, is refused. Symlinks are followed, for the existing
parents and for the file itself, so the policy judges the file that would really be read or
written. Anything inside a `.git` directory (the repository's own or a nested one, in any letter
case) is refused whatever the policy says: it holds credentials and hooks.
"""

from __future__ import annotations

import difflib
import os
import subprocess
from pathlib import Path, PurePosixPath
from stat import S_ISREG

from gitbot.host_programs import host_env, program
from gitbot.sandbox.readdeny import SandboxRefusal
from gitbot.tools.base import ToolContext, ToolDenied, ToolError

GIT_DIR_NAME = ".git"
MAX_SUGGESTIONS = 3
MAX_CANDIDATES = 20_000  # repository paths considered for "did you mean" (keeps a huge tree fast)
LS_FILES_TIMEOUT_SECONDS = 10


def resolve(ctx: ToolContext, path: str, *, for_edit: bool = False, must_exist: bool = False) -> tuple[Path, str]:
    """(absolute path, repository-relative POSIX path; "." for the root) of a tool's path argument.

    Raises ToolError when the path is malformed, leads outside the repository or into `.git`, or
    (with must_exist) does not exist; ToolDenied when the policy refuses to read it (or, with
    for_edit, to edit it; editing an existing file needs the right to read it as well).
    """
    written = _validated(path)
    root = Path(os.path.realpath(ctx.repo))
    lexical = _lexical_relative(written, ctx.repo, root)
    if _in_git_dir(lexical):
        raise ToolError(_git_dir_message(written))

    try:
        real = Path(os.path.realpath(root / lexical))
    except (OSError, RuntimeError) as error:  # a symlink loop, on some Python versions
        raise ToolError(f"cannot resolve {written!r}: {error}") from error
    try:
        relative = real.relative_to(root)
    except ValueError:
        raise ToolError(f"{written!r} leads through a symlink to {real}, which is outside the repository; "
                        f"only files inside the repository can be used") from None
    relpath = relative.as_posix() if relative.parts else "."
    if _in_git_dir(relpath):
        raise ToolError(f"{written!r} leads through a symlink into {relpath}; " + _git_dir_message(relpath))

    _check_policy(ctx, relpath, lexical, for_edit=for_edit)
    _refuse_a_hard_link_to_a_denied_file(ctx, real, relpath)
    if for_edit and not real.is_dir():
        _refuse_blocking_a_protected_directory(ctx, relpath)
        _refuse_making_a_git_directory(root, relpath)
    if for_edit and real.is_file():
        # Editing shows the file's lines back (matches, "did you mean", the guardrail's excerpt), so
        # changing an existing file also needs the right to read it.
        _check_policy(ctx, relpath, lexical, for_edit=False, action="edit (editing needs reading)")
    if must_exist and not os.path.lexists(real):
        raise ToolError(_missing_message(ctx, root, relpath))
    return real, relpath


# --- steps -------------------------------------------------------------------------------------

def _validated(path: object) -> str:
    if not isinstance(path, str):
        raise ToolError(f"the path must be a string, got {type(path).__name__}")
    if "\0" in path:
        raise ToolError("the path contains a NUL character")
    written = path.strip()
    if not written:
        raise ToolError("the path is empty; use '.' for the repository root")
    return written


def _lexical_relative(written: str, repo: Path, root: Path) -> str:
    """The path relative to the root, normalized without touching the disk; refuses `..` escapes."""
    if os.path.isabs(written):
        normal = os.path.normpath(written)
        # The repository as the run was given it, or its real path (a checkout reached through a symlink).
        for base in dict.fromkeys((os.path.abspath(repo), str(root))):
            if normal == base or normal.startswith(base.rstrip(os.sep) + os.sep):
                written = os.path.relpath(normal, base)
                break
        else:
            raise ToolError(f"{written!r} is an absolute path outside the repository ({root}); "
                            f"give paths relative to the repository root")
    lexical = os.path.normpath(written)
    if lexical == ".." or lexical.startswith(".." + os.sep):
        raise ToolError(f"{written!r} leads outside the repository (through '..'); "
                        f"only files inside the repository can be used")
    return "." if lexical in ("", ".") else PurePosixPath(*Path(lexical).parts).as_posix()


def _in_git_dir(relpath: str) -> bool:
    return any(part.lower() == GIT_DIR_NAME for part in relpath.split("/"))


def _git_dir_message(shown: str) -> str:
    return (f"{shown!r} is inside a .git directory, which the tools never read or change (it holds git's "
            f"internals and credentials); use execute_command with git commands such as `git log` instead")


def _check_policy(ctx: ToolContext, relpath: str, lexical: str, *, for_edit: bool, action: str = "") -> None:
    """The policy judges the real path and, when a symlink was followed, the path as written too."""
    check = ctx.policy.check_edit if for_edit else ctx.policy.check_read
    action = action or ("edit" if for_edit else "read")
    for candidate in dict.fromkeys((relpath, lexical)):
        decision = check(candidate)
        if not decision.allowed:
            raise ToolDenied(f"cannot {action} {relpath}: {decision.reason}")


def _refuse_a_hard_link_to_a_denied_file(ctx: ToolContext, real: Path, relpath: str) -> None:
    """read_deny judges names; a file with more than one name may be a file it denies under another. Only
    then is the sandbox's index of denied files asked (it lists such other names, readdeny.py)."""
    try:
        st = os.lstat(real)
    except OSError:
        return
    if st.st_nlink < 2 or not S_ISREG(st.st_mode):
        return
    try:
        hidden, _unreadable = ctx.runner.denied_files(ctx.repo)
    except (SandboxRefusal, OSError):  # cannot tell (e.g. too many denied files): refuse rather than show it
        hidden = [relpath]
    if relpath in hidden:
        raise ToolDenied(f"cannot read {relpath}: it is a hard link to a file that files.read_deny hides")


def _refuse_making_a_git_directory(root: Path, relpath: str) -> None:
    """A file that is, or would make, part of a directory shaped like a git directory (gitmeta.py): git run
    in it would read its config and could run a program from it (the commands' version is undone after
    each one, sandbox/planted.py)."""
    from gitbot.gitmeta import GIT_DIR_MEMBERS, looks_like_git_dir

    parts = relpath.split("/")
    directory = root
    for depth, part in enumerate(parts):
        if depth:  # the root is the repository's own
            present = {name for name in GIT_DIR_MEMBERS if os.path.lexists(directory / name)} | {part}
            if looks_like_git_dir(present):
                shown = "/".join(parts[:depth])
                raise ToolDenied(f"cannot write {relpath}: {shown}/ is, or would become, a git directory (it has "
                                 f"HEAD, objects/ and refs/), which git would read and could run programs from")
        directory = directory / part


def _refuse_blocking_a_protected_directory(ctx: ToolContext, relpath: str) -> None:
    """A file where a protected directory (or a directory above one) belongs would leave the sandbox no
    place to mount it read-only: every command after would fail to start (issue 20)."""
    from gitbot.sandbox.layout import ALWAYS_PROTECTED_DIRS

    low = relpath.lower()
    rules = getattr(ctx.policy, "file_rules", None)  # (a policy-like object may judge paths without rules)
    for directory in (*ALWAYS_PROTECTED_DIRS, *(rules.protected_directories() if rules else ())):
        protected = directory.strip("/").lower()
        if protected == low or protected.startswith(low + "/"):
            raise ToolDenied(f"cannot write a file at {relpath}: the directory {directory}/ is protected by the "
                             f"policy (edit_deny), and a file there would stand in its place")


def _missing_message(ctx: ToolContext, root: Path, relpath: str) -> str:
    parts = [f"{relpath} does not exist."]
    missing_parent = _first_missing_parent(root, relpath)
    if missing_parent is not None:
        parts[0] = f"{relpath} does not exist (there is no directory {missing_parent}/)."
    suggestions = [s for s in _suggestions(root, relpath) if s != relpath and _readable(ctx, s)]
    if suggestions:
        parts.append("Did you mean " + " or ".join(suggestions[:MAX_SUGGESTIONS]) + "?")
    else:
        parts.append("Use list_files or search_files to find the right path.")
    return " ".join(parts)


def _first_missing_parent(root: Path, relpath: str) -> str | None:
    parents = PurePosixPath(relpath).parents
    for parent in reversed(parents):
        if str(parent) != "." and not (root / parent).is_dir():
            return parent.as_posix()
    return None


def _readable(ctx: ToolContext, relpath: str) -> bool:
    try:
        return bool(ctx.policy.check_read(relpath).allowed)
    except Exception:  # noqa: BLE001 - a suggestion is a bonus; never let it turn into a crash
        return False


def _suggestions(root: Path, relpath: str) -> list[str]:
    """Close matches: names in the nearest existing directory, then repository paths."""
    wanted = PurePosixPath(relpath)
    directory = wanted.parent
    while str(directory) != "." and not (root / directory).is_dir():
        directory = directory.parent
    found: list[str] = []
    try:
        siblings = [entry.name for entry in os.scandir(root / directory) if entry.name.lower() != GIT_DIR_NAME]
    except OSError:
        siblings = []
    prefix = "" if str(directory) == "." else f"{directory.as_posix()}/"
    for name in difflib.get_close_matches(wanted.name, siblings, n=MAX_SUGGESTIONS, cutoff=0.6):
        found.append(prefix + name + ("/" if (root / directory / name).is_dir() else ""))

    tracked = _repository_files(root)
    same_name = [name for name in tracked if PurePosixPath(name).name == wanted.name]
    found += sorted(same_name, key=len)[:MAX_SUGGESTIONS]
    found += difflib.get_close_matches(relpath, tracked, n=MAX_SUGGESTIONS, cutoff=0.7)
    return [name for name in dict.fromkeys(found) if not _in_git_dir(name.rstrip("/"))]


def _repository_files(root: Path) -> list[str]:
    """Files git tracks or would track (not ignored), at most MAX_CANDIDATES; [] outside git."""
    # A git hook runs with GIT_DIR/GIT_INDEX_FILE set for the outer repository; they must not leak in.
    environment = host_env({key: value for key, value in os.environ.items() if not key.startswith("GIT_")})
    try:
        completed = subprocess.run(
            [program("git"), "-c", "core.quotepath=off", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root, capture_output=True, timeout=LS_FILES_TIMEOUT_SECONDS, env=environment, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if completed.returncode != 0:
        return []
    names = completed.stdout.decode("utf-8", "replace").split("\0")
    return [name for name in names if name][:MAX_CANDIDATES]
