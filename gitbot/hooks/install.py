"""`gitbot hook install` / `uninstall`: the hook script, the configuration it reads, and the hook it replaced.

Install writes the script (script.py) into the hooks directory, honouring core.hooksPath but only
when that directory is inside this repository's git dir: a global or committed hooks directory is
refused unless forced. A hook that was there before is renamed in place and runs first; uninstall
renames it back (bytes and mode unchanged). A gitbot hook found there is replaced, never chained.
What install changed is remembered in <git-common-dir>/gitbot/hooks/<stage>.json.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

from gitbot import git
from gitbot.errors import NotAGitRepository
from gitbot.hooks.config import CACHE_NAME, CONFIG_RELPATH, STATE_DIR, HookError, check_stage, load_config
from gitbot.hooks.script import PREVIOUS_SUFFIX, hook_script, is_gitbot_hook, shell_interpreter


def find_repo(start: str | os.PathLike | None = None) -> Path:
    try:
        return git.repo_root(start or os.getcwd())
    except NotAGitRepository as exc:
        raise HookError(f"{exc}: gitbot hooks work inside a git repository") from None


def hooks_dir(repo: Path) -> Path:
    """Where git runs hooks from: core.hooksPath when set (relative to the work tree), else .git/hooks."""
    from pathlib import Path

    path = Path(git.out(repo, "rev-parse", "--git-path", "hooks"))
    return path if path.is_absolute() else repo / path


def state_dir(repo: Path) -> Path:
    from pathlib import Path

    common = Path(git.out(repo, "rev-parse", "--git-common-dir"))
    return (common if common.is_absolute() else repo / common) / STATE_DIR


def hooks_dir_problem(repo: Path, target_dir: Path) -> str | None:
    """Why installing into `target_dir` would reach beyond this repository, or None: it must be inside
    this repository's git directory (what `git rev-parse --git-path hooks` gives without a
    core.hooksPath). A directory outside it may be shared by every repository (a global core.hooksPath)
    or committed (husky's .husky/, a tools/hooks/ in the tree)."""
    from pathlib import Path

    real = os.path.realpath(target_dir)
    git_dirs = {os.path.realpath(git.out(repo, "rev-parse", "--absolute-git-dir")),
                os.path.realpath(Path(repo) / git.out(repo, "rev-parse", "--git-common-dir"))}
    if any(real == d or real.startswith(d + os.sep) for d in git_dirs):
        return None
    root = os.path.realpath(repo)
    if real == root or real.startswith(root + os.sep):
        relative = os.path.relpath(real, root)
        if git.out(repo, "ls-files", "--", relative, ok=range(256)):  # a literal name (git.py's environments)
            return (f"the hooks directory {target_dir} (core.hooksPath) is tracked in this repository: a hook "
                    f"written there would be committed and run for everyone who checks it out")
        return (f"the hooks directory {target_dir} (core.hooksPath) is outside this repository's git "
                f"directory: it may be committed, or shared by other checkouts")
    return (f"the hooks directory {target_dir} (core.hooksPath) is outside this repository: it may be shared "
            f"by every repository on this machine (a global core.hooksPath), and gitbot's hook would run "
            f"in all of them")


def install(repo: Path, stage: str = "pre-commit", *, checks: list[str] | None = None,
            fix: bool | None = None, python: str | None = None, force: bool = False) -> SimpleNamespace:
    """Install (or refresh) the hook. Returns hook_path, chained (where the previous hook now lives, or
    None), config_changed, reinstalled, and the stage's checks and fix setting as now configured.

    `fix`: None keeps the stage's `fix` setting, or writes `fix = true` when it has none (installing
    the hook is the opt-in); False writes `fix = false`. `force`: install into a core.hooksPath
    directory outside this repository's git directory (see hooks_dir_problem)."""
    import json
    from pathlib import Path

    from gitbot.hooks.config import parse_toml, updated_config_text

    check_stage(stage)
    target_dir = hooks_dir(repo)
    if not force:
        problem = hooks_dir_problem(repo, target_dir)
        if problem:
            raise HookError(f"{problem}. Not installing there. Unset core.hooksPath for this repository "
                            f"(git config --unset core.hooksPath), or pass --force to install there anyway.")
    # The new configuration text first: a file that cannot be updated stops the install before any change.
    cfg_path = Path(repo) / CONFIG_RELPATH
    old_bytes = cfg_path.read_bytes() if cfg_path.exists() else None
    if fix is None:
        table = parse_toml(old_bytes).get("hooks", {}).get(stage, {}) if old_bytes else {}
        if not isinstance(table, dict) or "fix" not in table:
            fix = True  # installing the hook is the opt-in to fixing (unless --no-fix)
    new_text = None
    if checks or fix is not None:
        new_text = updated_config_text(old_bytes.decode("utf-8") if old_bytes is not None else None, stage,
                                       checks=checks or None, fix=fix)

    hook_path = target_dir / stage
    previous_path = target_dir / f"{stage}{PREVIOUS_SUFFIX}"
    states = state_dir(repo)
    state_file = states / f"{stage}.json"
    ours = is_gitbot_hook(hook_path)
    reinstalled = state_file.exists() and ours

    if reinstalled:
        state = _migrated(json.loads(state_file.read_text(encoding="utf-8")), states, stage, previous_path)
        if state["previous"] is not None and not previous_path.is_file():
            state["previous"] = None  # removed by hand since: nothing to chain
    else:
        state = {"hook_path": str(hook_path), "created_dirs": [], "previous": None, "config": None}
        created = []
        for directory in (target_dir, *target_dir.parents):
            if directory.exists():
                break
            created.append(str(directory))
        state["created_dirs"] = created
        if hook_path.is_symlink() or (hook_path.exists() and not hook_path.is_file()):
            raise HookError(f"{hook_path} is not a regular file; move it away or install by hand")
        if hook_path.exists() and not ours:
            # Someone's hook (or one that replaced ours since): it becomes the previous hook, renamed in place.
            if previous_path.exists() or previous_path.is_symlink():
                raise HookError(f"both {hook_path} and {previous_path} exist; gitbot keeps the hook it replaces "
                                f"under the second name. Move one of them away first.")
            os.rename(hook_path, previous_path)
        # else: no hook, or our own hook whose record was lost (.git/gitbot removed): it is replaced, and
        # a previous hook it was chained to is adopted again.
        if previous_path.is_file() and not previous_path.is_symlink():
            if is_gitbot_hook(previous_path):
                previous_path.unlink()  # never chain gitbot to itself
            else:
                state["previous"] = {"path": str(previous_path), "mode": previous_path.stat().st_mode & 0o7777}
        states.mkdir(parents=True, exist_ok=True)

    # The configuration: only when asked to change it; remember what was there the first time.
    config_changed = False
    if new_text is not None:
        new_bytes = new_text.encode("utf-8")
        if new_bytes != old_bytes:
            if state["config"] is None:
                state["config"] = {"previous": None if old_bytes is None else old_bytes.decode("utf-8"),
                                   "created_dir": not cfg_path.parent.exists()}
            cfg_path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(cfg_path, new_bytes)
            config_changed = True
        if state["config"] is not None and (config_changed or "written" not in state["config"]):
            state["config"]["written"] = new_text

    target_dir.mkdir(parents=True, exist_ok=True)
    interpreter = shell_interpreter(previous_path.read_bytes()[:512]) if state["previous"] else None
    script = hook_script(stage, python or sys.executable, chained=state["previous"] is not None,
                         previous_interpreter=interpreter)
    _write_atomic(hook_path, script.encode("utf-8"))
    os.chmod(hook_path, 0o755)
    state_file.write_text(json.dumps(state, indent=2), encoding="utf-8")

    stage_config = load_config(repo).stage(stage)
    return SimpleNamespace(hook_path=hook_path, chained=previous_path if state["previous"] else None,
                           config_changed=config_changed, reinstalled=reinstalled, checks=stage_config.checks,
                           fix=stage_config.fix)


def uninstall(repo: Path, stage: str = "pre-commit") -> SimpleNamespace:
    """Remove the hook, renaming the previous one back (and restoring the configuration file, if install
    changed it and nobody has since). Returns hook_path, restored_previous, removed, config_restored,
    notes."""
    import json
    from pathlib import Path

    check_stage(stage)
    states = state_dir(repo)
    state_file = states / f"{stage}.json"
    hook_path = hooks_dir(repo) / stage
    if not state_file.exists():
        if is_gitbot_hook(hook_path):  # the record was lost: take our script away, put theirs back
            previous_path = hook_path.with_name(f"{stage}{PREVIOUS_SUFFIX}")
            restored = previous_path.is_file() and not is_gitbot_hook(previous_path)
            if restored:
                os.replace(previous_path, hook_path)
            else:
                hook_path.unlink()
            return SimpleNamespace(
                hook_path=hook_path, restored_previous=restored, removed=not restored, config_restored=False,
                notes=["no record of the installation was found; removed the gitbot hook"
                       + (" and renamed the previous hook back" if restored else "")])
        raise HookError(f"no gitbot {stage} hook is installed here ({hook_path})")
    hook_path = Path(json.loads(state_file.read_text(encoding="utf-8"))["hook_path"])
    state = _migrated(json.loads(state_file.read_text(encoding="utf-8")), states, stage,
                      hook_path.with_name(f"{stage}{PREVIOUS_SUFFIX}"))
    previous = state.get("previous")
    previous_path = Path(previous["path"]) if previous and previous.get("path") else None
    notes = []
    restored = removed = False
    if is_gitbot_hook(hook_path) or not hook_path.exists():
        if previous_path is not None and previous_path.exists():
            os.replace(previous_path, hook_path)  # a rename: the same bytes and mode as before install
            restored = True
        elif hook_path.exists():
            hook_path.unlink()
            removed = True
            if previous_path is not None:
                notes.append(f"the hook that was there before gitbot ({previous_path}) is gone")
        for directory in state.get("created_dirs", []):
            _remove_if_empty(Path(directory))
    else:
        notes.append(f"{hook_path} was replaced since gitbot installed it; left as it is")
        if previous_path is not None and previous_path.exists():
            notes.append(f"the hook that was there before gitbot is kept at {previous_path}")

    config_restored = False
    if state.get("config"):
        cfg_path = Path(repo) / CONFIG_RELPATH
        current = cfg_path.read_text(encoding="utf-8") if cfg_path.exists() else None
        if current == state["config"].get("written"):
            previous_text = state["config"]["previous"]
            if previous_text is None:
                cfg_path.unlink()
                if state["config"].get("created_dir"):
                    _remove_if_empty(cfg_path.parent)
            else:
                _write_atomic(cfg_path, previous_text.encode("utf-8"))
            config_restored = True
        else:
            notes.append(f"{CONFIG_RELPATH} changed since install; left as it is")
    state_file.unlink()
    if not any(states.glob("*.json")):  # no other stage installed: the parsed-configuration cache goes too
        (states / CACHE_NAME).unlink(missing_ok=True)
    _remove_if_empty(states)
    _remove_if_empty(states.parent)
    return SimpleNamespace(hook_path=hook_path, restored_previous=restored, removed=removed,
                           config_restored=config_restored, notes=notes)


def _migrated(state: dict, states: Path, stage: str, previous_path: Path) -> dict:
    """A record from before the previous hook was kept next to gitbot's (it was copied to
    <git-common-dir>/gitbot/hooks/<stage>.previous): move that copy next to the hook, mode kept."""
    import shutil

    previous = state.get("previous")
    if previous is None or "path" in previous:
        return state
    legacy = states / f"{stage}.previous"
    if legacy.is_file() and not previous_path.exists():
        shutil.move(legacy, previous_path)
        os.chmod(previous_path, previous.get("mode", 0o755))
    state["previous"] = {"path": str(previous_path), "mode": previous.get("mode", 0o755)} \
        if previous_path.is_file() else None
    return state


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.gitbot-{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass
