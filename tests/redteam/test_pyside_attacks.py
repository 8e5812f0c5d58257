"""Red team, the per-command caches (readdeny's stamp pass, planted's bytes by stamp, filtered_store's
state by stamp): a read_deny file must stay hidden from every later sandboxed command, however it came to
be there, and git metadata a command plants must be undone, whatever the caches kept. Real bubblewrap,
the sandbox's own Runner, throwaway repositories under tmp_path.

Most of these use a racy window of 50 ms (stamps trusted almost at once: the caches keep the most they
ever would), so a stale cache would show here first."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox import readdeny
from gitbot.sandbox.planted import CommandUndone, GitMetadataPlanted
from gitbot.sandbox.runner import Runner
from tests.conftest import git, make_repo
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow

TRUSTED_AFTER = 0.05  # readdeny.RACY_SECONDS while a test wants stamps trusted at once
PAST_WINDOW = 0.15


def sandboxed(repo: Path, policy: Policy | None = None) -> Runner:
    require_bwrap()
    runner = Runner(policy or Policy(repo=repo), repo)
    assert runner.sandboxed, runner.receipt_line
    return runner


def settle(runner: Runner) -> None:
    """A command that changes nothing, then the racy window waited out: every stamp is trusted next."""
    time.sleep(PAST_WINDOW)
    runner.run_shell("true", 30)
    time.sleep(PAST_WINDOW)


@pytest.fixture
def trusted(monkeypatch):
    monkeypatch.setattr(readdeny, "RACY_SECONDS", TRUSTED_AFTER)


# -- held ------------------------------------------------------------------------------------------


def test_a_secret_the_host_writes_into_a_trusted_directory_with_its_mtime_put_back_is_hidden(tmp_path, trusted):
    # Held. The host (a setup script, the user) writes `.env` and `deploy/key.pem` between two commands into
    # directories whose stamps the index trusts, then sets their mtimes back: only the ctime moved.
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", "src/deep/er/m.py": "y\n", "deploy/README": "r\n"})
    runner = sandboxed(repo)
    settle(runner)
    for relative, secret in (("src/deep/er/.env", "SECRET_ENV_a41"), ("deploy/key.pem", "SECRET_PEM_b52")):
        parent = (repo / relative).parent
        st = os.stat(parent)
        (repo / relative).write_text(secret + "\n")
        os.utime(parent, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert os.stat(parent).st_mtime_ns == st.st_mtime_ns
    run = runner.run_shell("cat src/deep/er/.env deploy/key.pem; grep -r SECRET_ . 2>/dev/null", 30)
    assert "SECRET_ENV_a41" not in run.output and "SECRET_PEM_b52" not in run.output


def test_a_secret_the_host_writes_in_the_same_clock_tick_as_the_last_walk_is_hidden(tmp_path):
    # Held (real racy window). No pause at all: the walk after the command and the host's write share a tick.
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", "cfg/settings.toml": "a = 1\n"})
    runner = sandboxed(repo)
    runner.run_shell("true", 30)
    (repo / "cfg" / ".env").write_text("SECRET_SAME_TICK_c63\n")
    run = runner.run_shell("cat cfg/.env", 30)
    assert "SECRET_SAME_TICK_c63" not in run.output


def test_a_tree_a_command_moved_into_place_then_filled_by_the_host_is_hidden(tmp_path, trusted):
    # Held. A command builds a tree elsewhere in the repository and renames it into place (its directories
    # are ones the index has not seen at that path); the host later writes a secret deep in it, mtimes put back.
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n"})
    runner = sandboxed(repo)
    runner.run_shell("mkdir -p stage/a/b/c && touch stage/a/b/c/keep && mv stage/a moved && rmdir stage", 30)
    settle(runner)
    inner = repo / "moved" / "b" / "c"
    st = os.stat(inner)
    (inner / "id_ed25519").write_text("SECRET_MOVED_d74\n")
    os.utime(inner, ns=(st.st_atime_ns, st.st_mtime_ns))
    run = runner.run_shell("cat moved/b/c/id_ed25519; grep -r SECRET_ moved", 30)
    assert "SECRET_MOVED_d74" not in run.output


RENAME_EXCHANGE = ("python3 -c \"import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
                   "sys.exit(libc.renameat2(-100, b'public', -100, b'secrets', 2) != 0)\"")


def test_two_directories_a_command_exchanges_take_the_decisions_of_their_new_paths(tmp_path, trusted):
    # Held. renameat2(RENAME_EXCHANGE) keeps the root's subdirectories as they were (same names), so the
    # index is brought up to date without a walk and the listings take up the names' earlier decisions:
    # `token.txt` was allowed under public/, and must be hidden under secrets/ (read_deny `secrets/**`).
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", "public/token.txt": "TOKEN_NOW_DENIED_e85\n"})
    runner = sandboxed(repo, Policy(repo=repo, read_deny=(*Policy().read_deny, "secrets/**")))
    runner.run_shell("mkdir secrets", 30)
    settle(runner)
    assert runner.run_shell("cat public/token.txt", 30).output.strip() == "TOKEN_NOW_DENIED_e85"
    time.sleep(PAST_WINDOW)
    exchange = runner.run_shell(RENAME_EXCHANGE, 30)
    assert exchange.exit_code == 0, exchange.output
    time.sleep(PAST_WINDOW)
    run = runner.run_shell("cat secrets/token.txt", 30)
    assert "TOKEN_NOW_DENIED_e85" not in run.output


GITMODULES = "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n"
RISKY = "[submodule \"lib\"]\n\tpath = lib\n\tupdate = !touch /tmp/x\n"


def test_gitmodules_rewritten_in_place_with_its_size_and_mtime_kept_is_put_back_from_the_right_bytes(tmp_path,
                                                                                                     trusted):
    # Held. The guard's snapshot takes `.gitmodules`' bytes from its cache by stamp. A command rewrites it in
    # place (same inode, same size, the old mtime set back) with `update = !cmd`: only the ctime moves.
    risky = RISKY.ljust(len(GITMODULES) - 1, "#") + "\n"
    assert len(risky) == len(GITMODULES)
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", ".gitmodules": GITMODULES})
    runner = sandboxed(repo)
    settle(runner)
    settle(runner)  # (the bytes are now the cache's)
    rewrite = ("python3 -c \"import os; st = os.stat('.gitmodules'); "
               f"f = open('.gitmodules', 'r+b'); f.write(bytes.fromhex('{risky.encode().hex()}')); f.close(); "
               "os.utime('.gitmodules', ns=(st.st_atime_ns, st.st_mtime_ns))\"")
    with pytest.raises(GitMetadataPlanted):
        runner.run_shell(rewrite, 30)
    assert (repo / ".gitmodules").read_text() == GITMODULES


# -- got through (also on main, 52fe514: not the caches) -------------------------------------------------


def _deep_directory(repo: Path, runner: Runner, prefix: str) -> tuple[str, int, str]:
    """A chain of directories a command makes, whose deepest still has a name (< PATH_MAX), and a file name
    starting with `prefix` that entries there cannot have. Returns (the chain relative to the repository, a
    descriptor for its deepest directory, the file name)."""
    part = "d" * 200
    depth = 0
    while len(str(repo)) + 1 + len("L") + (depth + 1) * (len(part) + 1) < 4096:
        depth += 1
    runner.run_shell(f"mkdir -p L && cd L && for i in $(seq 1 {depth}); do mkdir {part} && cd {part}; done", 30)
    fd = os.open(repo / "L", os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    relative = "L" + f"/{part}" * depth
    # Whatever the temporary directory's length (xdist adds to it): past PATH_MAX with the name, not without.
    name = prefix + "p" * max(0, 4097 - (len(str(repo)) + 2 + len(relative) + len(prefix)))
    assert len(str(repo)) + 1 + len(relative) < 4096 < len(str(repo)) + 2 + len(relative) + len(name)
    assert len(name) <= 255
    return relative, fd, name


def test_a_denied_file_whose_path_is_longer_than_path_max_is_hidden(tmp_path):
    # GOT THROUGH (main too). The index lists `…/.env.production` (its directory can be named, so it is read and
    # not reported unreadable), but bwrap.wrap keeps only hidden files for which os.path.isfile(realpath(...))
    # is true, and that fails with ENAMETOOLONG: the file is silently left unmasked. A command reads it with
    # relative paths (cd step by step).
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n"})
    runner = sandboxed(repo)
    relative, fd, name = _deep_directory(repo, runner, ".env.production-")
    try:  # the host (a setup script, a restore) writes a secret there
        handle = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(handle, b"SECRET_TOO_LONG_f96\n")
        os.close(handle)
    finally:
        os.close(fd)
    assert any(path.startswith(relative + "/.env.") for path in runner.denied_files(repo)[0])  # the index has it
    steps = relative.replace("/", " ")
    run = runner.run_shell(f"for d in {steps}; do cd $d; done; cat .env.production-*", 30)
    assert "SECRET_TOO_LONG_f96" not in run.output


def test_a_secret_the_host_writes_through_a_symlink_a_command_planted_at_a_denied_name_is_hidden(tmp_path):
    # Got through before: read_deny judges names, and a symlink is judged by its target, so a command
    # planted `.env -> notes.txt`, and the host's ordinary `echo KEY=... > .env` (or `cp .env.example .env`)
    # wrote the secret into notes.txt, which the next command read. Now the link is set aside right after
    # the command that made it, which fails.
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", ".env.example": "KEY=\n"})
    runner = sandboxed(repo)
    with pytest.raises(CommandUndone, match=r"symlink at a name the policy does not let you read \(\.env\)"):
        runner.run_shell("echo notes > notes.txt && ln -s notes.txt .env", 30)
    assert not os.path.lexists(repo / ".env")
    with open(repo / ".env", "w") as handle:  # follows the symlink, as a shell redirection or cp would
        handle.write("KEY=SECRET_THROUGH_LINK_0a7\n")
    run = runner.run_shell("cat notes.txt", 30)
    assert "SECRET_THROUGH_LINK_0a7" not in run.output


def test_a_nested_repositorys_config_symlinked_into_the_work_tree_cannot_be_given_a_hook(tmp_path):
    # GOT THROUGH (main too; the bytes cache keeps it so). A vendored nested repository whose `.git/config` is a
    # symlink to a work-tree file (a shared config): its `.git` is read-only in the sandbox, but the link
    # leads out of it, so a command appends core.fsmonitor to the target. The guard stamps the config with
    # lstat() (the link's own stamp, which never moves) and caches the bytes it read through the link by that
    # stamp, so nothing is undone, and the user's `git status` in the nested repository runs the hook.
    import subprocess

    repo = make_repo(tmp_path / "repo", {"app.py": "x\n"})
    nested = repo / "vendor" / "x"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    config = nested / ".git" / "config"
    (repo / "vendor" / "x.gitconfig").write_text(config.read_text())
    config.unlink()
    config.symlink_to("../../x.gitconfig")
    pwned = tmp_path / "PWNED"
    runner = sandboxed(repo)
    with contextlib.suppress(Exception):  # refusing or undoing is a fix
        runner.run_shell(f"printf '[core]\\n\\tfsmonitor = \"touch {pwned}; false\"\\n' >> vendor/x.gitconfig", 30)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "status"], cwd=nested, capture_output=True, env=env, check=False)
    assert not pwned.exists(), "the user's git ran a core.fsmonitor a sandboxed command wrote through a config link"


def test_a_secret_committed_between_commands_is_hidden_from_the_history_after_the_state_was_cached(tmp_path, trusted):
    # Held. The filtered store's state is parsed again only when its stamp moves. The host commits a new
    # `.env` (and removes it from the work tree) between commands, twice, the second within the racy window
    # of the first; each time the next command's `git log -p --all` must not show it.
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n"})
    runner = sandboxed(repo)
    settle(runner)
    settle(runner)
    for secret in ("SECRET_HISTORY_1b8", "SECRET_HISTORY_2c9"):
        (repo / ".env").write_text(secret + "\n")
        git(repo, "add", "-f", ".env")
        git(repo, "commit", "-q", "-m", "oops")
        git(repo, "rm", "-q", "--cached", ".env")
        git(repo, "commit", "-q", "-m", "removed")
        (repo / ".env").unlink()
        run = runner.run_shell("git log -p --all | grep -c -e SECRET_ -e ^+++; git grep SECRET_ $(git rev-list --all)", 60)
        assert run.output.split()[0] not in ("0", ""), run.output  # the log was read (the +++ lines)
        assert secret not in run.output


def test_the_config_link_attack_through_gitbot_run(tmp_path):
    # GOT THROUGH (main too): the attack above as the agent does it, one execute_command of a `gitbot run` with
    # the default policy (in the sandbox, commands run unless a deny rule refuses them).
    import subprocess

    from tests.conftest import run_gitbot
    from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

    require_bwrap()
    repo = make_repo(tmp_path / "repo", {"app.py": "x\n"})
    nested = repo / "vendor" / "x"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    config = nested / ".git" / "config"
    (repo / "vendor" / "x.gitconfig").write_text(config.read_text())
    config.unlink()
    config.symlink_to("../../x.gitconfig")
    git(repo, "add", "vendor/x.gitconfig")
    git(repo, "commit", "-q", "-m", "shared config")
    pwned = tmp_path / "PWNED"
    command = f"printf '[core]\\n\\tfsmonitor = \"touch {pwned}; false\"\\n' >> vendor/x.gitconfig"
    script = [tool_turn(("execute_command", {"command": command})),
              tool_turn(("attempt_completion", {"result": "done"})),
              tool_turn(("attempt_completion", {"result": "done"}))]
    with FakeMessagesAPI(script) as api:
        run_gitbot(["run", "--task", "tidy the vendored config", "--repo", str(repo), "--json"], env=api.env(),
                   timeout=120)
    assert not pwned.exists(), "gitbot's own git ran the hook during the run"
    # The link's target is read-only in the sandbox: the write never lands (it did before).
    assert "fsmonitor" not in (repo / "vendor" / "x.gitconfig").read_text(), "a command wrote through the config link"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "status"], cwd=nested, capture_output=True, env=env, check=False)
    assert not pwned.exists(), "the user's git ran a core.fsmonitor the agent wrote through a config link"


def test_a_nested_repositorys_hook_symlinked_into_the_work_tree_cannot_be_rewritten(tmp_path):
    # The same hole through hooks/: a hook of a vendored repository that links to a work-tree script.
    import subprocess

    repo = make_repo(tmp_path / "repo", {"app.py": "x\n", "tools/pre-commit": "#!/bin/sh\nexit 0\n"})
    (repo / "tools" / "pre-commit").chmod(0o755)
    nested = repo / "vendor" / "x"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    (nested / ".git" / "hooks" / "pre-commit").symlink_to(repo / "tools" / "pre-commit")
    runner = sandboxed(repo)
    with contextlib.suppress(Exception):
        runner.run_shell("printf '#!/bin/sh\\ntouch PWNED\\n' > tools/pre-commit", 30)
    assert "PWNED" not in (repo / "tools" / "pre-commit").read_text()
