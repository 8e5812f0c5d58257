"""Git hooks: install, uninstall, and run the configured checks at pre-commit or pre-push.

Install writes a small /bin/sh script into the hooks directory (honouring core.hooksPath, but only
when that directory is inside this repository's git dir: a global or committed hooks directory is
refused unless forced). A hook that was there before is renamed in place to `<stage>.gitbot-previous`
and runs first, from that directory and with its own name as $0 when it is a shell script, so
helpers it sources relative to itself (husky) are still found; uninstall renames it back (bytes and
mode unchanged). A gitbot hook found there is replaced, never chained. The script calls the Python
that installed it (`gitbot hook run <stage>` through `gitbot.hooks.main`), so a hook keeps working
outside the virtual environment, and it says what to do when that Python is gone.

Running is on every commit's path, so the fast path (all checks pass) imports only the standard
library pieces it needs; the agent is imported only when a check fails and may be fixed.
The hook never stages anything and never stashes: the checks see the work tree as it is (a warning
says so when tracked files have unstaged changes), and a fix is left unstaged for the user to review.
The checks run as the user configured them, in the user's environment minus gitbot's credentials
(ANTHROPIC_*, GITHUB_TOKEN), git's repository-locating variables (GIT_INDEX_FILE, …) and the
pre-commit framework's private virtualenv; the re-runs around a fix run in the agent's sandbox.
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

from gitbot.config import (
    CACHE_NAME,
    CONFIG_RELPATH,
    STAGES,
    ConfigFileError,
    example_stage_table,
    load_config,
)

TYPE_CHECKING = False  # importing typing for TYPE_CHECKING costs milliseconds on every commit
if TYPE_CHECKING:
    from pathlib import Path

# Imports stay inside functions below: `run_hook` with passing checks must start in tens of ms, so the
# fast path loads only os, sys, the check runner and, when the configuration changed, tomllib.

HOOK_MARKER = "# gitbot-hook: 1"
STATE_DIR = "gitbot/hooks"  # inside the git common dir
PREVIOUS_SUFFIX = ".gitbot-previous"  # the hook that was there before, renamed next to ours
SHELL_NAMES = {"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"}
SHOWN_OUTPUT_CHARS = 6_000  # of a failing check's output, printed when it is not fixed


class HookError(Exception):
    """A user-facing problem with installing or running a hook (exit 2)."""


# ---------------------------------------------------------------- where things are


def _git(repo: Path, *args: str, check: bool = True) -> str:
    import subprocess

    from gitbot.checks.worktree import clean_git_env

    proc = subprocess.run(["git", *args], cwd=repo, env=clean_git_env(), capture_output=True, text=True,
                          check=False)
    if check and proc.returncode != 0:
        raise HookError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def find_repo(start: str | os.PathLike | None = None) -> Path:
    from pathlib import Path

    from gitbot.checks.worktree import NotAGitRepository, repo_root

    try:
        return repo_root(Path(start or os.getcwd()))
    except NotAGitRepository as exc:
        raise HookError(f"{exc}: gitbot hooks work inside a git repository") from None


def _config_cache_dir(root: str) -> str | None:
    """Where the parsed configuration is cached: gitbot's own state directory in .git, when it exists."""
    path = os.path.join(root, ".git", STATE_DIR)
    return path if os.path.isdir(path) else None


def _hook_work_tree() -> str:
    """The work tree a running hook is for. git runs hooks from the work tree's root, so a `.git` here
    answers without starting `git rev-parse` (a few ms on every commit); anything unusual asks git."""
    work_tree = os.environ.get("GIT_WORK_TREE")
    if work_tree:
        return os.path.abspath(work_tree)
    if not os.environ.get("GIT_DIR") and os.path.exists(".git"):
        return os.getcwd()
    return os.fspath(find_repo())


def hooks_dir(repo: Path) -> Path:
    """Where git runs hooks from: core.hooksPath when set (relative to the work tree), else .git/hooks."""
    from pathlib import Path

    path = Path(_git(repo, "rev-parse", "--git-path", "hooks"))
    return path if path.is_absolute() else repo / path


def state_dir(repo: Path) -> Path:
    from pathlib import Path

    common = Path(_git(repo, "rev-parse", "--git-common-dir"))
    return (common if common.is_absolute() else repo / common) / STATE_DIR


def _check_stage(stage: str) -> None:
    if stage not in STAGES:
        raise HookError(f"unknown hook stage {stage!r}; gitbot hooks run at {', '.join(STAGES)}")


# ---------------------------------------------------------------- the script


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


# ---------------------------------------------------------------- install / uninstall


def hooks_dir_problem(repo: Path, target_dir: Path) -> str | None:
    """Why installing into `target_dir` would reach beyond this repository, or None: it must be inside
    this repository's git directory (what `git rev-parse --git-path hooks` gives without a
    core.hooksPath). A directory outside it may be shared by every repository (a global core.hooksPath)
    or committed (husky's .husky/, a tools/hooks/ in the tree)."""
    from pathlib import Path

    real = os.path.realpath(target_dir)
    git_dirs = {os.path.realpath(_git(repo, "rev-parse", "--absolute-git-dir")),
                os.path.realpath(Path(repo) / _git(repo, "rev-parse", "--git-common-dir"))}
    if any(real == d or real.startswith(d + os.sep) for d in git_dirs):
        return None
    root = os.path.realpath(repo)
    if real == root or real.startswith(root + os.sep):
        relative = os.path.relpath(real, root)
        if _git(repo, "ls-files", "--", f":(literal){relative}", check=False):
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

    from gitbot.config import parse_toml, updated_config_text

    _check_stage(stage)
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

    _check_stage(stage)
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


# ---------------------------------------------------------------- run


def infer_stage() -> str:
    """Under the pre-commit framework no stage is passed; pre-push exports the refs it pushes."""
    return "pre-push" if os.environ.get("PRE_COMMIT_FROM_REF") or os.environ.get("PRE_COMMIT_REMOTE_NAME") \
        else "pre-commit"


def run_hook(stage: str | None = None, *, checks: list[str] | None = None, fix: bool | None = None,
             repo: Path | None = None, stream=None) -> int:
    stream = stream or sys.stderr
    if os.environ.get("GITBOT_SKIP") == "1":
        print("gitbot: skipped (GITBOT_SKIP=1)", file=stream)
        return 0
    stage = stage or infer_stage()
    try:
        _check_stage(stage)
        root = os.fspath(find_repo(repo)) if repo is not None else _hook_work_tree()
        config = load_config(root, cache_dir=_config_cache_dir(root))
    except (HookError, ConfigFileError) as exc:
        print(f"gitbot: {exc}", file=stream)
        return 2
    stage_config = config.stage(stage)
    # Checks from the configuration come already split into arguments; --check ones are split when run.
    commands = list(zip(checks, checks)) if checks else list(zip(stage_config.checks, stage_config.argv))
    allow_fix = stage_config.fix if fix is None else fix
    if not commands:
        if config.exists:
            where = f"{CONFIG_RELPATH} has no [hooks.{stage}] checks"
        else:
            where = f"there is no {CONFIG_RELPATH}"
        print(f"gitbot: nothing to check at {stage}: {where}. Add for example:\n\n"
              f"{example_stage_table(stage)}\n(or pass --check CMD)", file=stream)
        return 0

    from gitbot.checks.runner import CheckCommandError, run_check, user_check_env

    # Started now, read after the checks: it runs alongside them instead of adding to every commit.
    unstaged = _start_unstaged_probe(root) if stage == "pre-commit" else None
    # The user's own command on the user's own code, as configured: the user's environment, minus
    # gitbot's credentials, git's pointers at the commit in progress and pre-commit's private venv.
    env = user_check_env()
    failed = []
    try:
        for command, argv in commands:
            try:
                run = run_check(argv, root, timeout=stage_config.check_timeout_seconds, display=command, env=env)
            except CheckCommandError as exc:
                print(f"gitbot: {stage} check `{command}`: {exc}", file=stream)
                return 2
            if not run.passed:
                failed.append((command, run))
    finally:
        _warn_about_unstaged_changes(unstaged, stream)
    if not failed:
        return 0

    for command, run in failed:
        print(f"gitbot: {stage} check `{command}` {run.describe()}:", file=stream)
        print(_shown_output(run), file=stream)
    command, run = failed[0]
    return _fix_in_hook(stage, root, command, run, stage_config, allow_fix, others=len(failed) - 1,
                        stream=stream)


def _start_unstaged_probe(root: str):
    """`git diff --quiet` against the index git is committing (GIT_INDEX_FILE as the hook got it: under
    `git commit -a` or `git commit FILE` that is git's temporary index), writing nothing; None if git
    cannot start."""
    import subprocess

    env = dict(os.environ)
    env["GIT_OPTIONAL_LOCKS"] = "0"
    try:
        return subprocess.Popen(["git", "diff", "--quiet", "--no-ext-diff", "--no-textconv", "--ignore-submodules"],
                                cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    except OSError:
        return None


def _warn_about_unstaged_changes(probe, stream) -> None:
    """The checks run on the work tree, not on what is being committed: say so when tracked files have
    changes that are not staged."""
    if probe is not None and probe.wait() == 1:
        print("gitbot: warning: tracked files have unstaged changes. The checks run on your work tree, so they "
              "see those changes too, not only what this commit holds (stage them, or `git stash --keep-index` "
              "before committing, to check exactly the commit).", file=stream)


def _shown_output(run) -> str:
    text = run.output.rstrip()
    if len(text) > SHOWN_OUTPUT_CHARS:
        hidden = len(text) - SHOWN_OUTPUT_CHARS
        text = f"[… {hidden:,} characters above not shown …]\n" + text[-SHOWN_OUTPUT_CHARS:]
    return text


def _fix_in_hook(stage, root, command, run, stage_config, allow_fix, *, others, stream) -> int:
    from pathlib import Path

    verb = "commit" if stage == "pre-commit" else "push"
    if not allow_fix:
        print(f"gitbot: the {verb} is stopped; fixing is off for {stage} (fix = false). To let gitbot try to fix "
              f"a failing check, set fix = true under [hooks.{stage}] in {CONFIG_RELPATH}.", file=stream)
        return 1
    if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
        print(f"gitbot: the {verb} is stopped; set ANTHROPIC_API_KEY to let gitbot try to fix it "
              f"(budget ${stage_config.max_cost_usd:.2f}), or fix it yourself", file=stream)
        return 1

    # From here on nothing should see the index of the commit in progress, only the repository itself.
    from gitbot.checkpoints import CheckpointError, GitCommandError
    from gitbot.checks.runner import GIT_LOCAL_ENV
    from gitbot.checks.worktree import GitError
    from gitbot.verify import FixRequest, fix_failing_check, print_report

    for name in GIT_LOCAL_ENV:
        os.environ.pop(name, None)
    print(f"gitbot: asking the agent to fix `{command}` (budget ${stage_config.max_cost_usd:.2f}) …",
          file=stream)
    # The re-runs (confirmation, verification) run in the agent's sandbox, like the agent's commands.
    request = FixRequest(repo=Path(root), command=command, display=command,
                         timeout=stage_config.check_timeout_seconds, model=stage_config.model,
                         max_cost_usd=stage_config.max_cost_usd,
                         max_steps=stage_config.max_steps, source="hook", first_run_in_user_environment=True,
                         progress=lambda text: print(f"gitbot: {text}", file=stream))
    from gitbot.progress import ConsoleReporter

    try:
        fix = fix_failing_check(request, run, reporter=ConsoleReporter())
    except (CheckpointError, GitCommandError, GitError) as exc:
        print(f"gitbot: the {verb} is stopped; gitbot could not try a fix: {exc}", file=stream)
        return 2
    print_report(fix, stream)
    if fix.verified:
        print(f"gitbot: the fix is in your work tree, NOT staged. Review it (git diff), stage what you want "
              f"(git add -p), then {verb} again.", file=stream)
    if others:
        print(f"gitbot: {others} more check(s) failed; they were not fixed this time", file=stream)
    return 1


def main(argv: list[str]) -> int:
    """`run STAGE`: the installed hook script's entry (see SCRIPT_PYTHON_CODE)."""
    if len(argv) < 2 or argv[0] != "run":
        print("usage: python -c '…gitbot.hooks.main…' run STAGE", file=sys.stderr)
        return 2
    try:
        return run_hook(argv[1])
    except KeyboardInterrupt:
        print("gitbot: interrupted", file=sys.stderr)
        return 3
