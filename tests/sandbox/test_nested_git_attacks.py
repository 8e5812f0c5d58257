"""Red team, issue 20 finding 2 (nested git; all got through before the fixes in planted.py, mounts.py,
bwrap.py and layout.py): code a check runs (a test module under `python3 -m unittest`)
tries to leave something the user's own git runs on the host, or to make gitbot's undo write outside the
repository. Each attack is a real `gitbot run` with a scripted model, in the bubblewrap sandbox; then the
user's own git runs on the host and the hook's marker must not exist."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import GIT_IDENTITY, git, make_repo, run_gitbot
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow

HOOK = ("import os, pathlib, shutil\n"
        "HOOK = pathlib.Path('hook.sh')\n"
        "HOOK.write_text('#!/bin/sh\\necho pwned >> MARKER\\n'); HOOK.chmod(0o755)\n"
        "FSMONITOR = '[core]\\n\\tfsmonitor = ' + str(HOOK.resolve()) + '\\n'\n")


def user_git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_IDENTITY)
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=False)


def users_commands(where: Path) -> None:
    for args in (["status"], ["diff"], ["log", "-1"], ["submodule", "status"], ["checkout", "-q", "HEAD"]):
        user_git(where, *args)


def run_check(repo: Path, tmp_path: Path, module: str, mode: str = "required") -> subprocess.CompletedProcess:
    """One `gitbot run` whose single step runs `python3 -m unittest <module>` (what a check does)."""
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[commands]\nallow = ["python3 -m unittest *"]\n[sandbox]\nmode = "{mode}"\n')
    script = [tool_turn(("execute_command", {"command": f"python3 -m unittest {module}"})),
              tool_turn(("attempt_completion", {"result": "done"})),
              tool_turn(("attempt_completion", {"result": "done"}))]
    with FakeMessagesAPI(script) as api:
        return run_gitbot(["run", "--task", "run the tests", "--repo", str(repo), "--policy", str(policy), "--json"],
                          env=api.env(), timeout=240)


def test_a_deep_tree_that_breaks_the_undo_does_not_leave_the_rest_planted(tmp_path: Path):
    # GOT THROUGH (before the fix). GitMetadataGuard.after() undoes in sorted order and stops at the first exception:
    # `aaa/.git` holding a 1,200-deep directory chain makes shutil.rmtree (recursive on 3.11) raise
    # RecursionError, so `libsub/.git` (a gitfile into `zevil`, a git dir whose config sets core.fsmonitor)
    # and `zevil` stay. The user's uninitialised submodule is then "populated", and their plain
    # `git status` runs the hook. (As a non-root runner, `chmod 555 libsub` after planting makes the
    # unlink fail with EACCES the same way.)
    require_bwrap()
    lib = make_repo(tmp_path / "lib", {"lib.py": "X = 1\n"})
    attack = HOOK.replace("MARKER", str(tmp_path / "MARKER")) + (
        "shutil.copytree('.git/modules/libsub', 'zevil')\n"
        "config = pathlib.Path('zevil/config')\n"
        "config.write_text(config.read_text().replace('../../../libsub', '../libsub') + FSMONITOR)\n"
        "pathlib.Path('libsub/.git').write_text('gitdir: ../zevil\\n')\n"
        "os.makedirs('aaa/.git')\n"
        "here = os.getcwd(); os.chdir('aaa/.git')\n"
        "for _ in range(1200):\n    os.mkdir('d'); os.chdir('d')\n"
        "os.chdir(here)\n")
    repo = make_repo(tmp_path / "repo", {"app.py": "print('app')\n", "test_deep.py": attack})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(lib), "libsub")
    git(repo, "commit", "-q", "-m", "submodule")
    git(repo, "submodule", "deinit", "-q", "libsub")  # the user keeps it uninitialised
    try:
        run_check(repo, tmp_path, "test_deep")
        users_commands(repo)
        assert not (tmp_path / "MARKER").exists(), "the user's git ran the agent's fsmonitor hook"
        assert not (repo / "libsub" / ".git").exists() and not (repo / "zevil").exists()
    finally:  # pytest's own cleanup of old temporary directories is a recursive rmtree too (the tree is
        # set aside, not deleted: it may hold the user's files)
        subprocess.run(["rm", "-rf", str(repo / "aaa"), str(repo / ".git" / "gitbot" / "set-aside")], check=False)


def test_a_git_directory_swapped_for_a_symlink_does_not_make_gitbot_write_outside_the_repository(tmp_path: Path):
    # GOT THROUGH (before the fix). The guard keeps each git-shaped directory's config by absolute path and puts it back
    # through whatever that path now resolves to: a command that moves the (writable) fixture aside and
    # puts a symlink to a host directory in its place makes gitbot, unsandboxed, replace `<that dir>/config`
    # (a directory there is rmtree'd; a `config.worktree` there is deleted), e.g. ~/.ssh/config, ~/.kube/config,
    # another repository's .git/config. The committed fixture is deleted as "new" on the way.
    require_bwrap()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "config").write_text("Host *\n  User me\n")
    (victim / "config.worktree").write_text("keep me\n")
    attack = (f"import os\nos.rename('fixtures/bare.git', 'fixtures/moved')\n"
              f"os.symlink({str(victim)!r}, 'fixtures/bare.git')\n")
    repo = make_repo(tmp_path / "repo", {"app.py": "print('app')\n", "test_swap.py": attack,
                                         "fixtures/bare.git/HEAD": "ref: refs/heads/main\n",
                                         "fixtures/bare.git/config": "[core]\n\tbare = true\n",
                                         "fixtures/bare.git/objects/.keep": "", "fixtures/bare.git/refs/.keep": ""})
    run_check(repo, tmp_path, "test_swap")
    assert (victim / "config").read_text() == "Host *\n  User me\n", "gitbot wrote outside the repository"
    assert (victim / "config.worktree").read_text() == "keep me\n"
    assert (repo / "fixtures" / "bare.git" / "HEAD").is_file() and not (repo / "fixtures" / "bare.git").is_symlink()


def test_the_git_directory_a_nested_git_symlink_names_is_read_only(tmp_path: Path):
    # GOT THROUGH (before the fix). A nested repository whose `.git` is a symlink to a git directory inside the work tree
    # (Android's `repo` layout): nested_git_arguments() skips symlinks, so the target is writable in the
    # sandbox, and the guard compares only its `config`. A `commondir` the command adds makes git read
    # the config of a directory the command wrote (no HEAD, so not "git-shaped"): nothing is undone, the
    # step succeeds, and the user's `git status` in the nested repository runs the hook.
    require_bwrap()
    attack = HOOK.replace("MARKER", str(tmp_path / "MARKER")) + (
        "os.makedirs('.cc')\n"
        "shutil.copytree('.libgit/objects', '.cc/objects'); shutil.copytree('.libgit/refs', '.cc/refs')\n"
        "pathlib.Path('.cc/config').write_text(pathlib.Path('.libgit/config').read_text() + FSMONITOR)\n"
        "pathlib.Path('.libgit/commondir').write_text('../.cc\\n')\n")
    repo = make_repo(tmp_path / "repo", {"app.py": "print('app')\n", "test_commondir.py": attack})
    lib = make_repo(repo / "vendor" / "lib", {"lib.py": "X = 1\n"})
    shutil.move(str(lib / ".git"), str(repo / ".libgit"))
    (lib / ".git").symlink_to("../../.libgit")
    run_check(repo, tmp_path, "test_commondir")
    users_commands(lib)
    users_commands(repo)
    assert not (tmp_path / "MARKER").exists(), "the user's git ran the agent's fsmonitor hook"
    assert not (repo / ".libgit" / "commondir").exists()


def test_a_nested_git_symlinks_directory_swapped_for_a_symlink_does_not_make_gitbot_delete_another_git_dir(
        tmp_path: Path):
    # GOT THROUGH (before the fix). The directory above a nested `.git` symlink is not pinned (only non-symlink `.git`s are),
    # and _restore_entry() puts the link back through whatever the path now resolves to: `vendor/lib`
    # renamed and replaced by a symlink to another repository on the host makes gitbot, unsandboxed,
    # rmtree that repository's whole `.git` and put a symlink in its place.
    require_bwrap()
    victim = make_repo(tmp_path / "other-project", {"precious.txt": "history\n"})
    attack = f"import os\nos.rename('vendor/lib', 'vendor/lib.old')\nos.symlink({str(victim)!r}, 'vendor/lib')\n"
    repo = make_repo(tmp_path / "repo", {"app.py": "print('app')\n", "test_swap.py": attack})
    lib = make_repo(repo / "vendor" / "lib", {"lib.py": "X = 1\n"})
    shutil.move(str(lib / ".git"), str(repo / ".libgit"))
    (lib / ".git").symlink_to("../../.libgit")
    run_check(repo, tmp_path, "test_swap")
    assert (victim / ".git").is_dir() and not (victim / ".git").is_symlink(), "gitbot removed another repository's .git"
    assert git(victim, "log", "--format=%s") == "initial\n"


NOBODY = 65534


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_as_an_ordinary_user_a_directory_made_read_only_does_not_keep_a_planted_gitfile(tmp_path: Path):
    # GOT THROUGH (before the fix) (how gitbot runs on GitHub: an ordinary user). `chmod 555 libsub` after planting
    # `libsub/.git` makes the guard's unlink fail with EACCES; after() stops there (the tool reports
    # "could not be started") and the gitfile and the git dir it names stay; the user's `git status` runs
    # the hook. Here: the runner itself as `nobody` (bubblewrap works unprivileged on this machine).
    require_bwrap()
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="gitbot-rt-nobody-"))  # pytest's own directories are 0700
    os.chmod(work, 0o755)
    script = work / "attack.py"
    script.write_text(NOBODY_SCRIPT)
    os.chown(work, NOBODY, NOBODY)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "XDG_CACHE_HOME": str(work / ".cache"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           "/usr/bin/python3", str(script), str(work)], capture_output=True, text=True, env=env,
                          timeout=180, check=False)
    subprocess.run(["chmod", "-R", "u+rwX", str(work)], check=False)
    shutil.rmtree(work, ignore_errors=True)
    assert "sandboxed True" in proc.stdout, proc.stdout + proc.stderr
    assert "MARKER False" in proc.stdout, proc.stdout + proc.stderr


NOBODY_SCRIPT = r'''
import os, subprocess, sys
from pathlib import Path
from gitbot.policy import Policy
from gitbot.sandbox.runner import Runner
base = Path(sys.argv[1])
env = dict(os.environ, GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@b", GIT_COMMITTER_NAME="a", GIT_COMMITTER_EMAIL="a@b")
def g(cwd, *a):
    subprocess.run(["git", *a], cwd=cwd, check=True, capture_output=True, env=env)
lib = base / "lib"; lib.mkdir(); g(lib, "init", "-q", "-b", "main"); (lib / "x").write_text("x")
g(lib, "add", "x"); g(lib, "commit", "-qm", "i")
repo = base / "repo"; repo.mkdir(); g(repo, "init", "-q", "-b", "main"); (repo / "a.py").write_text("x")
g(repo, "add", "a.py"); g(repo, "commit", "-qm", "i")
g(repo, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(lib), "libsub"); g(repo, "commit", "-qm", "s")
g(repo, "submodule", "deinit", "-q", "libsub")
marker = base / "MARKER"
cmd = ("printf '#!/bin/sh\\necho pwned >> %s\\n' > hook.sh; chmod +x hook.sh; cp -r .git/modules/libsub zevil; "
       "sed -i 's#worktree = .*#worktree = ../libsub#' zevil/config; "
       "printf '[core]\\n\\tfsmonitor = %%s/hook.sh\\n' \"$PWD\" >> zevil/config; "
       "echo 'gitdir: ../zevil' > libsub/.git; chmod 555 libsub") % marker
runner = Runner(Policy(repo=repo, sandbox_mode="required"), repo)
print("sandboxed", runner.sandboxed)
try:
    runner.run_shell(cmd, 60)
except Exception as exc:
    print("raised", type(exc).__name__, exc)
for args in (["status"], ["diff"], ["submodule", "status"]):
    subprocess.run(["git", *args], cwd=repo, capture_output=True, env=env)
print("MARKER", marker.exists())
'''


# Held: each plants `libsub/.git` (the user's submodule, uninitialised) pointing at a git dir with an
# fsmonitor, by another road; the guard removes it and the user's git runs nothing.
PREPARE = ("printf '#!/bin/sh\\necho pwned >> MARKER\\n' > hook.sh; chmod +x hook.sh; cp -r .git/modules/libsub zevil; "
           "sed -i 's#worktree = .*#worktree = ../libsub#' zevil/config; "
           "printf '[core]\\n\\tfsmonitor = %s/hook.sh\\n' \"$PWD\" >> zevil/config; ")
HELD = {
    "a process left behind plants later": "setsid sh -c 'sleep 2; echo gitdir: ../zevil > libsub/.git' "
                                          ">/dev/null 2>&1 </dev/null & sleep 0.2",
    "RENAME_EXCHANGE of a prepared directory": "mkdir prep && echo 'gitdir: ../zevil' > prep/.git && python3 -c "
        "\"import ctypes; ctypes.CDLL(None).renameat2(-100, b'prep', -100, b'libsub', 2)\"",
    "a HEAD symlink and commondir": "mkdir q && ln -s refs/heads/main q/HEAD && echo ../zevil > q/commondir && "
                                    "echo 'gitdir: ../q' > libsub/.git",
    "a hard-linked gitfile": "echo 'gitdir: ../zevil' > gf && ln gf libsub/.git",
    "the directory made unreadable (as root)": "echo 'gitdir: ../zevil' > libsub/.git && chmod 000 libsub zevil",
}


def test_other_roads_to_a_planted_gitfile_are_undone(tmp_path: Path):
    require_bwrap()
    import time

    from gitbot.policy import Policy
    from gitbot.sandbox.runner import Runner

    lib = make_repo(tmp_path / "lib", {"lib.py": "X = 1\n"})
    repo = make_repo(tmp_path / "repo", {"app.py": "print('app')\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(lib), "libsub")
    git(repo, "commit", "-q", "-m", "submodule")
    git(repo, "submodule", "deinit", "-q", "libsub")
    runner = Runner(Policy(repo=repo, sandbox_mode="required"), repo)
    prepare = PREPARE.replace("MARKER", str(tmp_path / "MARKER"))
    for name, attack in HELD.items():
        with pytest.raises(Exception, match="git metadata"):
            runner.run_shell(prepare + attack, 60)
        if name.startswith("a process"):
            time.sleep(2.5)
        users_commands(repo)
        assert not (tmp_path / "MARKER").exists(), name
        assert not os.path.lexists(repo / "libsub" / ".git") and not (repo / "zevil").exists(), name
        subprocess.run(["rm", "-rf", "gf", "hook.sh", "q", "prep"], cwd=repo, check=False)


def test_a_tree_too_deep_for_a_recursive_walk_is_removed_without_following_its_symlinks(tmp_path: Path):
    # The guard's removal, where nothing can be set aside: descriptor by descriptor, with a directory made
    # unsearchable inside and a symlink to a directory outside that must stay untouched.
    from gitbot.sandbox.planted import _remove

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep\n")
    top = tmp_path / "deep"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1200):  # by descriptors: os.makedirs is recursive too
        os.mkdir("d", dir_fd=fd)
        fd, parent = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
        os.close(parent)
    os.close(os.open("f", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    os.close(fd)
    (top / "link").symlink_to(outside)
    (top / "d" / "d").chmod(0o000)
    try:
        _remove(str(top))
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(tmp_path)], check=False, capture_output=True)
        subprocess.run(["rm", "-rf", str(top)], check=False)
    assert not os.path.lexists(top)
    assert (outside / "keep").read_text() == "keep\n"


def test_without_the_sandbox_an_undo_that_would_follow_a_symlink_refuses_the_rest_of_the_run(tmp_path: Path):
    # Unsandboxed nothing pins `vendor/lib`: swapped for a symlink to another repository, the guard must not
    # put the nested `.git` link back through it; it cannot undo that safely, so it says so and every later
    # command of the run is refused (fail closed).
    from gitbot.policy import Policy
    from gitbot.sandbox.planted import UndoIncomplete
    from gitbot.sandbox.runner import Runner, SandboxRefused

    victim = make_repo(tmp_path / "other-project", {"precious.txt": "history\n"})
    repo = make_repo(tmp_path / "repo", {"app.py": "print('app')\n"})
    lib = make_repo(repo / "vendor" / "lib", {"lib.py": "X = 1\n"})
    shutil.move(str(lib / ".git"), str(repo / ".libgit"))
    (lib / ".git").symlink_to("../../.libgit")
    runner = Runner(Policy(repo=repo, sandbox_mode="off"), repo)
    with pytest.raises(UndoIncomplete, match="no further command"):
        runner.run_shell(f"mv vendor/lib vendor/lib.old && ln -s {victim} vendor/lib", 60)
    assert (victim / ".git").is_dir() and git(victim, "log", "--format=%s") == "initial\n"
    with pytest.raises(SandboxRefused, match="could NOT undo"):
        runner.run_shell("true", 60)


def test_without_the_sandbox_a_nested_repositorys_hooks_and_info_are_put_back(tmp_path: Path):
    # Nothing makes a nested git directory read-only without the sandbox: a hook the command adds is set
    # aside, one it changes is put back with its executable bit, and so is info/exclude.
    from gitbot.policy import Policy
    from gitbot.sandbox.planted import GitMetadataPlanted
    from gitbot.sandbox.runner import Runner

    repo = make_repo(tmp_path / "repo", {"app.py": "print('app')\n"})
    nested = make_repo(repo / "nested", {"lib.py": "X = 1\n"})
    hooks = nested / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (hooks / "pre-commit").chmod(0o755)
    exclude = nested / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text("*.log\n")
    runner = Runner(Policy(repo=repo, sandbox_mode="off"), repo)
    with pytest.raises(GitMetadataPlanted, match="post-checkout"):
        runner.run_shell("cd nested/.git && printf '#!/bin/sh\\necho pwned\\n' | tee hooks/post-checkout "
                         "hooks/pre-commit >/dev/null && chmod +x hooks/post-checkout && echo '!*' >> info/exclude", 60)
    assert not os.path.lexists(hooks / "post-checkout")
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n" and os.access(hooks / "pre-commit", os.X_OK)
    assert exclude.read_text() == "*.log\n"
