"""Git hooks on real repositories: install, chain, run through real `git commit` / `git push`, block,
skip, uninstall byte for byte. The fix path runs the real agent against the loopback Messages API."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import BUGGY_MODULE, FIX_DIFF, TEST_MODULE, gitbot_env, make_repo, run_gitbot
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn
from tests.fakes.openai_api import FakeChatCompletionsAPI

PY = sys.executable
# A check that passes while ok.txt says "ok": cheap, and the tests control it by editing one file.
CHECK_PY = 'import sys\nsys.exit(0 if open("ok.txt").read().strip() == "ok" else 1)\n'


def git(repo: Path, *args: str, env: dict[str, str] | None = None, check: bool = True,
        input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=gitbot_env(env),
                          check=check, input=input, timeout=180)


def check_cmd() -> str:
    return f"{PY} check.py"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"check.py": CHECK_PY, "ok.txt": "ok\n", "notes.txt": "notes\n",
                                         ".gitignore": "__pycache__/\n"})


def installed(repo: Path, *args: str) -> subprocess.CompletedProcess:
    proc = run_gitbot(["hook", "install", *args], cwd=repo)
    assert proc.returncode == 0, proc.stderr
    return proc


def index_state(repo: Path) -> tuple[str, str]:
    """What is staged, exactly: the index entries and the staged diff."""
    return git(repo, "ls-files", "--stage").stdout, git(repo, "diff", "--cached", "--binary").stdout


# ---------------------------------------------------------------- install / uninstall


def test_install_writes_an_executable_hook_and_the_configuration(repo):
    proc = installed(repo, "--check", check_cmd(), "--check", "true")
    hook = repo / ".git/hooks/pre-commit"
    assert hook.stat().st_mode & stat.S_IXUSR
    script = hook.read_text()
    assert script.startswith("#!/bin/sh\n")
    assert f"GITBOT_PYTHON='{PY}'" in script  # the Python that installed it, not whatever is on PATH
    config = (repo / ".gitbot/config.toml").read_text()
    # Installing is the opt-in to fixing: fix = true is written (it is off without the setting).
    assert config == f'[hooks.pre-commit]\nchecks = ["{check_cmd()}", "true"]\nfix = true\n'
    assert "installed the pre-commit hook" in proc.stderr


def test_install_honours_core_hooks_path_and_uninstall_removes_what_it_created(repo):
    git(repo, "config", "core.hooksPath", "tools/hooks")
    installed(repo, "--check", "true", "--no-fix", "--force")  # outside .git: only when forced
    hook = repo / "tools/hooks/pre-commit"
    assert hook.is_file() and not (repo / ".git/hooks/pre-commit").exists()
    assert "fix = false" in (repo / ".gitbot/config.toml").read_text()
    assert run_gitbot(["hook", "uninstall"], cwd=repo).returncode == 0
    assert not (repo / "tools").exists()  # the directories install created are gone again
    assert not (repo / ".gitbot").exists()
    assert git(repo, "status", "--porcelain").stdout == ""


@pytest.mark.slow
def test_existing_hook_is_chained_first_and_restored_byte_for_byte(repo):
    previous = repo / ".git/hooks/pre-commit"
    original = b"#!/bin/sh\n# the team's hook\necho previous-hook-ran >> previous.log\nexit 0\n"
    previous.write_bytes(original)
    previous.chmod(0o750)
    config = repo / ".gitbot/config.toml"
    config.parent.mkdir()
    config_bytes = b'# shared settings\n[hooks.pre-push]\nchecks = ["true"]  # fast\n\n[other]\nkeep = 1\n'
    config.write_bytes(config_bytes)

    proc = installed(repo, "--check", check_cmd())
    assert "runs first" in proc.stderr
    kept = repo / ".git/hooks/pre-commit.gitbot-previous"  # renamed in place, next to gitbot's
    assert kept.read_bytes() == original and stat.S_IMODE(kept.stat().st_mode) == 0o750
    text = config.read_text()
    assert text.startswith(config_bytes.decode())  # what was there is kept verbatim
    assert '[hooks.pre-commit]\nchecks = ["' in text
    installed(repo, "--check", check_cmd())  # installing twice keeps the original, not our own script

    (repo / "notes.txt").write_text("more notes\n")
    git(repo, "add", "notes.txt")
    commit = git(repo, "commit", "-q", "-m", "notes", check=False)
    assert commit.returncode == 0, commit.stderr
    assert (repo / "previous.log").read_text() == "previous-hook-ran\n"

    assert run_gitbot(["hook", "uninstall"], cwd=repo).returncode == 0
    assert previous.read_bytes() == original
    assert stat.S_IMODE(previous.stat().st_mode) == 0o750
    assert config.read_bytes() == config_bytes
    assert not kept.exists()
    assert not (repo / ".git/gitbot/hooks").exists()


def test_a_failing_chained_hook_stops_the_commit_before_gitbot_runs(repo):
    hook = repo / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho team-hook-says-no >&2\nexit 7\n")
    hook.chmod(0o755)
    installed(repo, "--check", f"{PY} -c 'open(\"gitbot-ran\", \"w\")'")
    (repo / "notes.txt").write_text("x\n")
    git(repo, "add", "notes.txt")
    commit = git(repo, "commit", "-q", "-m", "x", check=False)
    assert commit.returncode != 0
    assert "team-hook-says-no" in commit.stderr
    assert not (repo / "gitbot-ran").exists()


def test_uninstall_leaves_a_configuration_edited_since_install(repo):
    installed(repo, "--check", "true")
    config = repo / ".gitbot/config.toml"
    config.write_text(config.read_text() + "\n[hooks.pre-push]\nchecks = [\"true\"]\n")
    proc = run_gitbot(["hook", "uninstall"], cwd=repo)
    assert proc.returncode == 0 and "changed since install; left as it is" in proc.stderr
    assert "[hooks.pre-push]" in config.read_text()
    assert not (repo / ".git/hooks/pre-commit").exists()


def test_uninstall_without_a_hook_says_so(repo):
    proc = run_gitbot(["hook", "uninstall"], cwd=repo)
    assert proc.returncode == 2 and "no gitbot pre-commit hook is installed" in proc.stderr


# ---------------------------------------------------------------- running at commit time


def test_passing_checks_let_the_commit_through(repo):
    installed(repo, "--check", check_cmd())
    (repo / "notes.txt").write_text("more\n")
    git(repo, "add", "notes.txt")
    commit = git(repo, "commit", "-q", "-m", "more notes", check=False)
    assert commit.returncode == 0, commit.stderr
    assert commit.stderr == ""  # quiet when all is well
    assert git(repo, "log", "--format=%s", "-1").stdout.strip() == "more notes"


@pytest.mark.slow
def test_failing_check_without_a_key_blocks_the_commit_and_touches_nothing(repo):
    installed(repo, "--check", check_cmd())
    (repo / "ok.txt").write_text("broken\n")
    git(repo, "add", "ok.txt")
    (repo / "notes.txt").write_text("unstaged work in another file\n")
    staged_before = index_state(repo)
    commit = git(repo, "commit", "-q", "-m", "break it", check=False)
    assert commit.returncode != 0
    assert f"pre-commit check `{check_cmd()}` exited 1" in commit.stderr
    assert "ANTHROPIC_API_KEY is not set" in commit.stderr
    assert git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "1"
    assert index_state(repo) == staged_before
    assert (repo / "notes.txt").read_text() == "unstaged work in another file\n"


def test_fix_false_only_reports(repo):
    installed(repo, "--check", check_cmd(), "--no-fix")
    (repo / "ok.txt").write_text("broken\n")
    git(repo, "add", "ok.txt")
    commit = git(repo, "commit", "-q", "-m", "x", check=False, env={"ANTHROPIC_API_KEY": "sk-not-used"})
    assert commit.returncode != 0 and "fixing is off for pre-commit (fix = false)" in commit.stderr
    assert "set fix = true under [hooks.pre-commit]" in commit.stderr


def test_gitbot_skip_and_no_verify_let_a_failing_commit_through(repo):
    installed(repo, "--check", check_cmd())
    (repo / "ok.txt").write_text("broken\n")
    git(repo, "add", "ok.txt")
    skipped = git(repo, "commit", "-q", "-m", "skip", check=False, env={"GITBOT_SKIP": "1"})
    assert skipped.returncode == 0 and "skipped (GITBOT_SKIP=1)" in skipped.stderr
    (repo / "ok.txt").write_text("still broken\n")
    git(repo, "add", "ok.txt")
    assert git(repo, "commit", "-q", "--no-verify", "-m", "no verify", check=False).returncode == 0
    assert git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "3"


def test_hook_whose_python_is_gone_explains_itself(repo, tmp_path):
    from gitbot.hooks.install import install

    install(repo, "pre-commit", checks=["true"], python=str(tmp_path / "gone/bin/python"))
    commit = git(repo, "commit", "--allow-empty", "-q", "-m", "x", check=False)
    assert commit.returncode == 1
    assert "is gone" in commit.stderr and "GITBOT_SKIP=1" in commit.stderr


def test_configuration_edits_take_effect_on_the_next_run(repo):
    installed(repo, "--check", "true")
    assert git(repo, "commit", "--allow-empty", "-q", "-m", "a", check=False).returncode == 0
    # The parsed configuration is cached in .git; an edit must still be seen at once.
    (repo / ".gitbot/config.toml").write_text('[hooks.pre-commit]\nchecks = ["false"]\nfix = false\n')
    commit = git(repo, "commit", "--allow-empty", "-q", "-m", "b", check=False)
    assert commit.returncode == 1 and "check `false` exited 1" in commit.stderr


def test_pre_push_hook_blocks_the_push_and_the_previous_hook_still_reads_the_refs(repo, tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    previous = repo / ".git/hooks/pre-push"
    previous.write_text("#!/bin/sh\ncat > pushed-refs.txt\n")
    previous.chmod(0o755)
    installed(repo, "--stage", "pre-push", "--check", check_cmd(), "--no-fix")
    (repo / "ok.txt").write_text("broken\n")
    git(repo, "commit", "-q", "-am", "break")
    push = git(repo, "push", "-q", "origin", "main", check=False)
    assert push.returncode != 0 and "pre-push check" in push.stderr
    assert "refs/heads/main" in (repo / "pushed-refs.txt").read_text()
    assert git(remote, "branch", "--list").stdout == ""  # nothing reached the remote


# ---------------------------------------------------------------- gitbot hook run directly


def test_hook_run_outside_a_git_repository(tmp_path):
    proc = run_gitbot(["hook", "run", "pre-commit"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "is not inside a git work tree" in proc.stderr


def test_hook_run_without_a_configuration_file_says_what_to_add(repo):
    proc = run_gitbot(["hook", "run", "pre-commit"], cwd=repo)
    assert proc.returncode == 0
    assert "there is no .gitbot/config.toml" in proc.stderr
    assert '[hooks.pre-commit]\nchecks = ["python -m pytest -q -x"]' in proc.stderr


def test_hook_run_with_a_broken_configuration_fails_closed(repo):
    (repo / ".gitbot").mkdir()
    (repo / ".gitbot/config.toml").write_text('[hooks.pre-commit]\nchekcs = ["true"]\n')
    proc = run_gitbot(["hook", "run", "pre-commit"], cwd=repo)
    assert proc.returncode == 2 and "unknown key(s) chekcs" in proc.stderr


def test_hook_run_with_checks_on_the_command_line(repo):
    assert run_gitbot(["hook", "run", "--check", "true"], cwd=repo).returncode == 0
    proc = run_gitbot(["hook", "run", "--check", "no-such-tool-xyz"], cwd=repo)
    assert proc.returncode == 2 and "'no-such-tool-xyz' was not found" in proc.stderr


def test_the_hook_fast_path_does_not_import_the_heavy_parts(repo):
    installed(repo, "--check", "true")
    watched = ("anthropic", "git", "github", "rich", "httpx", "dataclasses", "pathlib", "tomllib", "gitbot")
    allowed = ("gitbot", "gitbot.hooks", "gitbot.hooks.run", "gitbot.hooks.config", "gitbot.errors", "gitbot.git",
               "gitbot.host_programs", "gitbot.sandbox", "gitbot.sandbox.command", "gitbot.sandbox.env", "gitbot.sandbox.processes")
    code = ("import sys\nfrom gitbot.hooks import main\ncode = main(['run', 'pre-commit'])\n"
            f"heavy = sorted(m for m in sys.modules\n"
            f"               if m.split('.')[0] in {watched!r} and m not in {allowed!r})\n"
            "print(code, heavy)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    for _ in range(2):  # the second run reads the cached configuration: no tomllib either
        proc = subprocess.run([PY, "-c", code], cwd=repo, capture_output=True, text=True, env=env, check=True)
    # pathlib may come with an editable install's import hook; nothing else may.
    assert proc.stdout.strip() in ("0 []", "0 ['pathlib']"), proc.stdout + proc.stderr


# ---------------------------------------------------------------- the fix path (real agent, fake API)


@pytest.mark.slow
def test_a_failing_check_is_fixed_left_unstaged_and_the_commit_stops(tmp_path):
    repo = make_repo(tmp_path / "repo", {"stats.py": BUGGY_MODULE, "test_stats.py": TEST_MODULE,
                                         "notes.txt": "notes\n", ".gitignore": "__pycache__/\n"})
    # python3: the re-runs around the fix are in the sandbox, which hides $HOME (where PY may live).
    installed(repo, "--check", "python3 -m unittest")
    (repo / "notes.txt").write_text("unstaged work in another file\n")
    (repo / "README").write_text("staged readme\n")
    git(repo, "add", "README")
    staged_before = index_state(repo)
    script = [tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})),
              tool_turn(("attempt_completion", {"result": "fixed mean()"})),
              tool_turn(("attempt_completion", {"result": "fixed mean()"}))]
    with FakeMessagesAPI(script) as api:
        commit = git(repo, "commit", "-q", "-m", "readme", check=False, env=api.env())
        assert len(api.requests) == 3, commit.stderr
    assert commit.returncode != 0, "the commit must stop so the fix can be reviewed"
    assert "VERIFIED" in commit.stderr and "NOT staged" in commit.stderr
    assert git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "1"
    assert index_state(repo) == staged_before  # the fix is not staged, the staged README still is
    assert git(repo, "diff", "--name-only").stdout.split() == ["notes.txt", "stats.py"]
    assert (repo / "notes.txt").read_text() == "unstaged work in another file\n"
    assert "/ len(values)\n" in (repo / "stats.py").read_text()


@pytest.mark.slow
def test_a_hook_fixes_with_the_provider_the_policy_names_without_an_anthropic_key(tmp_path):
    # The policy chooses a self-hosted OpenAI-compatible server: no ANTHROPIC_API_KEY is needed.
    with FakeChatCompletionsAPI([tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})),
                                 tool_turn(("attempt_completion", {"result": "fixed mean()"})),
                                 tool_turn(("attempt_completion", {"result": "fixed mean()"}))],
                                api_key=None) as api:
        repo = make_repo(tmp_path / "repo", {
            "stats.py": BUGGY_MODULE, "test_stats.py": TEST_MODULE, ".gitignore": "__pycache__/\n",
            ".gitbot/policy.toml": f'[model]\nprovider = "openai"\nname = "local"\nbase_url = "{api.base_url}"\n'
                                   "price_input = 0\nprice_output = 0\n"})
        installed(repo, "--check", "python3 -m unittest")
        (repo / "notes.txt").write_text("x\n")
        git(repo, "add", "notes.txt")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        commit = git(repo, "commit", "-q", "-m", "notes", check=False, env=env)
        assert len(api.requests) == 3, commit.stderr
    assert "ANTHROPIC_API_KEY" not in commit.stderr
    assert "VERIFIED" in commit.stderr and "/ len(values)\n" in (repo / "stats.py").read_text()


# ---------------------------------------------------------------- the configuration file


def test_config_defaults_and_values(tmp_path):
    from gitbot.hooks.config import load_config

    assert load_config(tmp_path).exists is False
    assert load_config(tmp_path).stage("pre-commit").checks == []
    (tmp_path / ".gitbot").mkdir()
    (tmp_path / ".gitbot/config.toml").write_text(
        '[hooks.pre-push]\nchecks = ["python -m pytest -q", "ruff check \'my dir\'"]\nfix = false\n'
        'max_cost_usd = 0.25\ncheck_timeout_seconds = 90\nmodel = "claude-haiku-5"\nmax_steps = 12\n')
    stage = load_config(tmp_path).stage("pre-push")
    assert stage.argv == [["python", "-m", "pytest", "-q"], ["ruff", "check", "my dir"]]
    assert (stage.fix, stage.max_cost_usd, stage.check_timeout_seconds, stage.model, stage.max_steps) == \
        (False, 0.25, 90.0, "claude-haiku-5", 12)
    pre_commit = load_config(tmp_path).stage("pre-commit")  # absent table: the defaults; fixing is opt-in
    assert (pre_commit.fix, pre_commit.max_cost_usd, pre_commit.check_timeout_seconds) == (False, 0.5, 300.0)


@pytest.mark.parametrize("body, message", [
    ('[hooks.pre-commit]\nchecks = "true"\nfix = "yes"\n', "`fix` must be true or false"),
    ('[hooks.pre-commit]\nchecks = [1]\n', "`checks` must be a list of command lines"),
    ('[hooks.pre-commit]\nchecks = ["pytest \'open"]\n', "cannot split the check"),
    ('[hooks.pre-commit]\nmax_cost_usd = -1\n', "`max_cost_usd` must be a positive number"),
    ('[hooks.post-merge]\nchecks = ["true"]\n', "unknown stage"),
    ('[hooks.pre-commit\n', "is not valid TOML"),
])
def test_config_errors_name_the_problem(tmp_path, body, message):
    from gitbot.hooks.config import ConfigFileError, load_config

    (tmp_path / ".gitbot").mkdir()
    (tmp_path / ".gitbot/config.toml").write_text(body)
    with pytest.raises(ConfigFileError, match=message):
        load_config(tmp_path)


def test_config_update_keeps_everything_outside_the_stage_table():
    from gitbot.hooks.config import updated_config_text

    existing = ('# team settings\n[hooks.pre-commit]\nchecks = ["old"]\nmax_cost_usd = 0.2\n\n'
                '[hooks.pre-push]\nchecks = ["true"]  # keep me\n')
    text = updated_config_text(existing, "pre-commit", checks=["ruff check ."], fix=None)
    assert text == ('# team settings\n[hooks.pre-commit]\nchecks = ["ruff check ."]\nmax_cost_usd = 0.2\n\n'
                    '[hooks.pre-push]\nchecks = ["true"]  # keep me\n')


# ---------------------------------------------------------------- review findings


@pytest.mark.slow
def test_install_refuses_a_hooks_directory_outside_the_git_dir(repo, tmp_path):
    shared = tmp_path / "global-hooks"  # a global core.hooksPath: every repository's hooks
    git(repo, "config", "core.hooksPath", str(shared))
    proc = run_gitbot(["hook", "install", "--check", "true"], cwd=repo)
    assert proc.returncode == 2 and "outside this repository" in proc.stderr and "--force" in proc.stderr
    assert not shared.exists() and not (repo / ".gitbot").exists() and not (repo / ".git/gitbot").exists()

    (repo / "tools/hooks").mkdir(parents=True)  # a committed hooks directory
    (repo / "tools/hooks/pre-commit").write_text("#!/bin/sh\nexit 0\n")
    git(repo, "add", "tools")
    git(repo, "commit", "-q", "-m", "team hooks")
    git(repo, "config", "core.hooksPath", "tools/hooks")
    proc = run_gitbot(["hook", "install", "--check", "true"], cwd=repo)
    assert proc.returncode == 2 and "is tracked in this repository" in proc.stderr
    assert (repo / "tools/hooks/pre-commit").read_text() == "#!/bin/sh\nexit 0\n"

    git(repo, "config", "core.hooksPath", ".git/custom-hooks")  # inside .git: fine without --force
    installed(repo, "--check", "true")
    assert is_gitbot_script(repo / ".git/custom-hooks/pre-commit")


def is_gitbot_script(path: Path) -> bool:
    from gitbot.hooks.script import is_gitbot_hook

    return is_gitbot_hook(path)


HUSKY_HOOK = b'#!/usr/bin/env sh\n. "$(dirname -- "$0")/h"\n'
# Like husky 9's helper: it finds the user's script by the hook's own name.
HUSKY_HELPER = b'n=$(basename "$0")\necho "husky ran .husky/$n" >> husky.log\n'


@pytest.mark.slow
def test_a_husky_style_previous_hook_still_finds_its_helpers_and_is_renamed_back(repo):
    hooks = repo / ".husky/_"
    hooks.mkdir(parents=True)
    (hooks / "pre-commit").write_bytes(HUSKY_HOOK)
    (hooks / "pre-commit").chmod(0o755)
    (hooks / "h").write_bytes(HUSKY_HELPER)
    git(repo, "config", "core.hooksPath", ".husky/_")
    assert run_gitbot(["hook", "install", "--check", check_cmd()], cwd=repo).returncode == 2  # not by default
    proc = installed(repo, "--check", check_cmd(), "--force")
    previous = hooks / "pre-commit.gitbot-previous"
    assert "runs first" in proc.stderr and previous.read_bytes() == HUSKY_HOOK
    commit = git(repo, "commit", "--allow-empty", "-q", "-m", "x", check=False)
    assert commit.returncode == 0, commit.stderr
    assert (repo / "husky.log").read_text() == "husky ran .husky/pre-commit\n"
    assert run_gitbot(["hook", "uninstall"], cwd=repo).returncode == 0
    assert (hooks / "pre-commit").read_bytes() == HUSKY_HOOK
    assert stat.S_IMODE((hooks / "pre-commit").stat().st_mode) == 0o755 and not previous.exists()


@pytest.mark.slow
def test_reinstalling_after_the_state_is_lost_never_chains_gitbot_to_itself(repo):
    import shutil

    installed(repo, "--check", "true")
    shutil.rmtree(repo / ".git/gitbot")
    installed(repo, "--check", "true")
    assert not (repo / ".git/hooks/pre-commit.gitbot-previous").exists()
    assert "GITBOT_PREVIOUS" not in (repo / ".git/hooks/pre-commit").read_text()
    assert git(repo, "commit", "--allow-empty", "-q", "-m", "x", check=False).returncode == 0

    # With a previous hook: after the loss it is found again next to ours, and runs once.
    run_gitbot(["hook", "uninstall"], cwd=repo)
    team = repo / ".git/hooks/pre-commit"
    team.write_text("#!/bin/sh\necho ran >> previous.log\n")
    team.chmod(0o755)
    installed(repo, "--check", "true")
    shutil.rmtree(repo / ".git/gitbot")
    installed(repo, "--check", "true")
    assert git(repo, "commit", "--allow-empty", "-q", "-m", "y", check=False).returncode == 0
    assert (repo / "previous.log").read_text() == "ran\n"
    assert run_gitbot(["hook", "uninstall"], cwd=repo).returncode == 0
    assert team.read_text() == "#!/bin/sh\necho ran >> previous.log\n"


ENV_CHECK = ("python3 -c \"import os, sys; bad = [k for k in os.environ if k.startswith('ANTHROPIC') or "
             "k in ('GITHUB_TOKEN', 'GIT_INDEX_FILE', 'GIT_DIR', 'GIT_PREFIX')]; print(bad); sys.exit(1 if bad else 0)\"")


@pytest.mark.slow
def test_hook_checks_get_neither_gitbots_credentials_nor_gits_hook_variables(repo):
    installed(repo, "--check", ENV_CHECK, "--no-fix")
    (repo / "notes.txt").write_text("changed\n")
    commit = git(repo, "commit", "-a", "-q", "-m", "all", check=False,
                 env={"ANTHROPIC_API_KEY": "sk-not-for-checks", "GITHUB_TOKEN": "ghs_not_for_checks"})
    assert commit.returncode == 0, commit.stderr
    assert git(repo, "show", "--name-only", "--format=", "HEAD").stdout.split() == ["notes.txt"]


def test_unstaged_changes_get_a_warning_that_the_checks_see_the_work_tree(repo):
    installed(repo, "--check", "true")
    (repo / "notes.txt").write_text("staged\n")
    git(repo, "add", "notes.txt")
    (repo / "ok.txt").write_text("ok\nunstaged\n")
    commit = git(repo, "commit", "-q", "-m", "partly staged", check=False)
    assert commit.returncode == 0
    assert "unstaged changes" in commit.stderr and "work tree" in commit.stderr
    quiet = git(repo, "commit", "-a", "-q", "-m", "everything", check=False)  # nothing left unstaged
    assert quiet.returncode == 0 and quiet.stderr == ""


@pytest.mark.slow
def test_fixing_is_opt_in(repo):
    (repo / ".gitbot").mkdir()
    (repo / ".gitbot/config.toml").write_text(f'[hooks.pre-commit]\nchecks = ["{check_cmd()}"]\n')
    (repo / "ok.txt").write_text("broken\n")
    with FakeMessagesAPI([]) as api:
        proc = run_gitbot(["hook", "run", "pre-commit"], cwd=repo, env=api.env())
        assert api.requests == []
    assert proc.returncode == 1 and "fixing is off for pre-commit" in proc.stderr
    # `hook install` is the opt-in, unless --no-fix; an explicit setting is kept when reinstalling.
    installed(repo)
    assert "fix = true" in (repo / ".gitbot/config.toml").read_text()
    installed(repo, "--no-fix")
    installed(repo)
    assert "fix = false" in (repo / ".gitbot/config.toml").read_text()


@pytest.mark.slow
def test_a_check_failing_only_in_the_users_environment_is_not_sent_to_the_model(repo):
    check = "python3 -c \"import os, sys; sys.exit(1 if os.environ.get('ONLY_HERE') else 0)\""
    installed(repo, "--check", check)
    with FakeMessagesAPI([]) as api:
        commit = git(repo, "commit", "--allow-empty", "-q", "-m", "x", check=False,
                     env={**api.env(), "ONLY_HERE": "1"})
        assert api.requests == []
    assert commit.returncode == 1
    assert "passes in the one the agent's commands run in" in commit.stderr


def test_framework_virtualenv_is_taken_off_the_checks_path(monkeypatch, tmp_path):
    from gitbot.sandbox import env as runner

    venv = tmp_path / "py_env-python3.11"
    (venv / "bin").mkdir(parents=True)
    monkeypatch.setattr(runner.sys, "prefix", str(venv))
    monkeypatch.setattr(runner.sys, "base_prefix", "/usr")
    environ = {"PATH": f"{venv}/bin:/project/.venv/bin:/usr/bin", "VIRTUAL_ENV": str(venv), "PRE_COMMIT": "1",
               "ANTHROPIC_API_KEY": "k", "GITHUB_TOKEN": "t", "GIT_INDEX_FILE": ".git/index", "HOME": "/home/u"}
    env = runner.user_check_env(environ)
    assert env == {"PATH": "/project/.venv/bin:/usr/bin", "PRE_COMMIT": "1", "HOME": "/home/u"}
    monkeypatch.setattr(runner.sys, "prefix", "/usr")  # not in a virtualenv: PATH is left alone
    assert runner.user_check_env({"PATH": f"{venv}/bin:/usr/bin"})["PATH"] == f"{venv}/bin:/usr/bin"
