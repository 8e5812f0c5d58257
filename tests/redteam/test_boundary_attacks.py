"""Red team, issue 22's boundary: in the sandbox commands run unless commands.deny refuses them, so the
sandbox (bubblewrap, or Landlock + seccomp in a container) and delete_file must hold on their own.

Each test asserts the secure behaviour. Those that fail name what got through."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from pathlib import Path

import pytest

from gitbot.checkpoints.restore import restore
from gitbot.policy import Policy, load_policy
from gitbot.sandbox.runner import Runner
from gitbot.secrets import Secrets
from gitbot.tools.base import ToolContext, ToolError
from gitbot.tools.delete import delete_file
from tests.conftest import git, make_repo
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow

ENV_SECRET = "SECRET=envsecret-0451"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "repo", {"app.py": "print('hi')\n", "sub/mod.py": "x = 1\n",
                                         ".github/workflows/ci.yml": "on: push\n", "AGENTS.md": "be nice\n"})
    (path / ".env").write_text(ENV_SECRET + "\n")
    git(path, "add", "-f", ".env")
    git(path, "commit", "-q", "-m", "a committed .env")
    return path


def sandboxed(repo: Path) -> Runner:
    require_bwrap()
    runner = Runner(Policy(repo=repo), repo)
    assert runner.sandboxed, runner.receipt_line
    return runner


# --------------------------------------------------------------------------------- GOT THROUGH


def test_a_sandboxed_command_cannot_leave_a_setuid_binary_in_the_repository(repo):
    # Inside, uid 1000 is id-mapped to gitbot's user on the host (root here): a file the command makes
    # is the host user's, and `chmod 4755` on it is a setuid-root program any local user can run after
    # the run (nosuid holds only inside the sandbox).
    run = sandboxed(repo).run_shell("cp /usr/bin/id ./myid; chmod 4755 ./myid; mkdir d; chmod 2777 d", 30)
    made = [p for p in (repo / "myid", repo / "d") if p.exists()]
    assert made, run.output
    for path in made:
        mode = os.lstat(path).st_mode
        assert not mode & (stat.S_ISUID | stat.S_ISGID), f"{path.name} is {stat.filemode(mode)} on the host"


def test_a_contained_command_cannot_leave_a_setuid_binary_in_the_repository(tmp_path):
    from tests.sandbox.test_contain import in_container

    path = make_repo(tmp_path / "repo", {"README.md": "r\n", "sub/deep/o.txt": "o\n"})
    results = in_container(path, {"suid": "cp /usr/bin/id sub/deep/myid && chmod 4755 sub/deep/myid"}, tmp_path)
    assert results["contained"] is True
    made = path / "sub" / "deep" / "myid"
    if made.exists():
        mode = os.lstat(made).st_mode
        assert not mode & stat.S_ISUID, f"myid is {stat.filemode(mode)} on the host (owner uid {os.lstat(made).st_uid})"


def test_the_object_store_leaks_a_read_deny_file_to_sandboxed_commands(repo):
    # The judge's history rule looks at words; the store itself is open. (Another branch filters the
    # object store: this test is the acceptance check for it here.)
    runner = sandboxed(repo)
    policy = Policy(repo=repo)
    leaks = {}
    for command in ("x=show; git $x HEAD:.env",
                    "git cat-file --batch-all-objects --batch",
                    ("python3 -c \"import glob,zlib\nfor f in glob.glob('.git/objects/??/*'):\n"
                     "  d=zlib.decompress(open(f,'rb').read())\n  print(d[:80])\"")):
        allowed = policy.check_command(command, sandboxed=True).allowed
        output = runner.run_shell(command, 30).output
        if allowed and "envsecret-0451" in output:
            leaks[command] = output[:200]
    assert not leaks, leaks


def test_restore_brings_back_what_rm_rf_and_git_clean_destroyed(tmp_path, monkeypatch):
    # Issue 22: "After `rm -rf ./*` or `git clean -fdx` by a command, `gitbot checkpoints restore`
    # brings back every file that was there when the run started, ignored ones included. Files that
    # cannot be restored that way are read-only in the sandbox."
    from tests.agent.test_loop import run
    from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

    require_bwrap()
    monkeypatch.setenv("GITBOT_CHECKPOINT_SIZE_CAP", "1K")
    path = make_repo(tmp_path / "repo", {"app.py": "x\n", ".gitignore": "build/\ndata.db\n"})
    (path / "build").mkdir()
    (path / "build" / "out.txt").write_text("ignored build output\n")
    (path / "data.db").write_text("an ignored local database\n")
    (path / "big.bin").write_bytes(b"B" * 4096)  # over the (lowered) size cap
    nested = path / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=nested, check=True)
    (nested / "work.py").write_text("uncommitted work in a nested repository\n")
    script = [tool_turn(("execute_command", {"command": "rm -rf ./* .gitignore; git clean -fdx"})),
              tool_turn(("attempt_completion", {"result": "done"})),
              tool_turn(("attempt_completion", {"result": "done."}))]
    with FakeMessagesAPI(script) as api:
        result = run(path, api, review=False)
    restore(path, result.run_id, 0, force=True)
    lost = [p for p in ("app.py", ".gitignore", "build/out.txt", "data.db", "big.bin", "vendor/lib/work.py")
            if not (path / p).exists()]
    assert lost == [], f"gone for good after one sandboxed command: {lost}"


@pytest.fixture
def ctx(repo) -> ToolContext:
    return ToolContext(repo=repo, policy=load_policy(repo), secrets=Secrets())


def test_delete_file_refuses_a_file_in_a_nested_repository(ctx, repo):
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=nested, check=True)
    (nested / "work.py").write_text("uncommitted\n")  # checkpoints record a nested repo by its HEAD only
    with pytest.raises(ToolError):
        delete_file(ctx, {"path": "vendor/lib/work.py"})
    assert (nested / "work.py").exists()


def test_delete_file_refuses_a_file_over_the_checkpoint_size_cap(ctx, repo, monkeypatch):
    monkeypatch.setenv("GITBOT_CHECKPOINT_SIZE_CAP", "1K")
    (repo / "big.bin").write_bytes(b"B" * 4096)  # no checkpoint holds it
    with pytest.raises(ToolError):
        delete_file(ctx, {"path": "big.bin"})
    assert (repo / "big.bin").exists()


def test_delete_file_does_not_delete_a_link_outside_the_repository(ctx, repo, tmp_path):
    # `dirlink` (which a sandboxed command can make) leads out of the repository; `outside/victim`
    # leads back in, so resolve() accepts it, and the lexical path is unlinked: outside the repository.
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(repo / "app.py", outside / "victim")
    os.symlink(outside, repo / "dirlink")
    try:
        delete_file(ctx, {"path": "dirlink/victim"})
    except ToolError:
        pass
    assert os.path.lexists(outside / "victim"), "delete_file removed a link outside the repository"


# --------------------------------------------------------------------------------- held


def test_held_protected_paths_masks_network_environ_and_leftover_processes(repo):
    runner = sandboxed(repo)
    marker = "gitbot-redteam-leftover-7731"
    run = runner.run_shell(
        "echo x > AGENTS.md; echo x >> .github/workflows/ci.yml; mkdir -p .gitbot; echo x > .git/hooks/pre-commit;"
        "echo x >> .git/config; mv .github gh2; mv sub sub2; ln .env hard; ln -s .env soft;"
        "cat .env hard soft sub2/.env /proc/self/fd/0 < .env;"
        "cat /proc/1/environ | tr '\\0' '\\n' | grep -c -i -e anthropic -e api_key;"
        "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), 2)\" 2>&1 | tail -1;"
        f"(setsid sh -c 'exec -a {marker} sleep 60' >/dev/null 2>&1 &); ls /root /home 2>&1", 30)
    assert "envsecret-0451" not in run.output
    assert (repo / "AGENTS.md").read_text() == "be nice\n"
    assert (repo / ".github" / "workflows" / "ci.yml").read_text() == "on: push\n"
    assert not (repo / ".gitbot").exists() and not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert not (repo / "gh2").exists()
    assert "Network is unreachable" in run.output
    from tests.sandbox.support import processes_with

    assert processes_with(marker) == []


def test_a_symlinked_git_dir_cannot_be_swapped_for_one_whose_config_runs_on_the_host(tmp_path):
    # mounts.git_arguments: "A `.git` that is a symlink cannot be protected this way: the agent could
    # replace the link itself." Nothing refuses or repairs it: the command replaces the link with a
    # copy whose core.fsmonitor the user's (and any host) git then runs, as gitbot's user.
    require_bwrap()
    path = make_repo(tmp_path / "repo", {"app.py": "x\n"})
    real_git = tmp_path / "elsewhere.git"
    os.rename(path / ".git", real_git)
    os.symlink(real_git, path / ".git")
    pwned = tmp_path / "PWNED"
    runner = Runner(Policy(repo=path), path)
    if runner.refusal:
        return  # refusing to run there is a fix
    with contextlib.suppress(Exception):  # refusing the command is a fix too
        runner.run_shell(
            f"rm .git && mkdir .git && cp -r {real_git}/. .git/ && "
            f"printf '[core]\\n\\tfsmonitor = \"touch {pwned}; false\"\\n' >> .git/config", 30)
    subprocess.run(["git", "status", "--short"], cwd=path, capture_output=True, check=False)
    assert not pwned.exists(), "the host's git ran a core.fsmonitor a sandboxed command planted"
    assert os.path.islink(path / ".git"), ".git was replaced by a sandboxed command"


@pytest.mark.parametrize("name", ["/etc/pip.conf", "/etc/npmrc", "/etc/.pypirc", "/etc/netrc"])
def test_credential_files_in_etc_are_masked_like_those_in_the_toolchain(repo, name):
    # /etc is bound whole (layout.SYSTEM_DIRS); only /etc/gitconfig is sanitized. CREDENTIAL_FILES
    # (pip.conf, npmrc, ...) are masked inside toolchain mounts but not in /etc, where CI images keep
    # `index-url = https://user:TOKEN@…` and `//registry/:_authToken=…` world-readable.
    if not os.path.isfile(name) or not os.access(name, os.R_OK):
        pytest.skip(f"no {name} on this machine")
    from gitbot.sandbox import bwrap

    argv = bwrap.wrap(["true"], repo, network=False, status=require_bwrap())
    covered = [argv[i + 2] for i, word in enumerate(argv[:-2]) if word in ("--ro-bind", "--bind")]
    assert name in covered, f"{name} is shown as it is on the host (neither masked nor sanitized like /etc/gitconfig)"
