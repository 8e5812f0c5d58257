"""read_deny in git's object store: no process in the sandbox, git or not, reads a hidden file's content
from the history, the index, a stash or a reflog, while git keeps working for everything else (real git,
real bubblewrap, the sandbox's own Runner; the command judge is not asked)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox.filtered_store import PLACEHOLDER, FilteredStore, StoreNotReady
from gitbot.sandbox.runner import Runner
from tests.conftest import git, make_repo
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow

SECRETS = {
    "deleted": "SECRET_DELETED_4f1a",  # committed, then deleted
    "tracked": "SECRET_TRACKED_9b2c",  # tracked now
    "staged": "SECRET_STAGED_77d0",  # only in the index
    "stashed": "SECRET_STASHED_c3e5",  # only in a stash
    "reflog": "SECRET_REFLOG_0a9f",  # only in a reflog entry
    "twin": "SECRET_TWIN_e61b",  # a .env blob identical to an allowed file's (deleted) blob
}

# Reads every file below .git (by two paths) and prints it raw and zlib-inflated from every offset:
# loose objects, packs, the index, whatever is there.
READ_EVERYTHING = r'''
import os, sys, zlib
for top in (".git", "/proc/self/cwd/.git"):
    for root, dirs, files in os.walk(top):
        for name in files:
            try:
                data = open(os.path.join(root, name), "rb").read()
            except OSError:
                continue
            sys.stdout.write(data.decode("latin-1"))
            for i in range(len(data)):
                try:
                    sys.stdout.write(zlib.decompressobj().decompress(data[i:], 1 << 20).decode("latin-1"))
                except zlib.error:
                    pass
'''

FORMS = [
    "git log -p --all -- sub/..",
    "git log -p --all --reflog",
    "git log -p -g",
    "git log -p --full-diff -- app.py",
    "git show :0:.env",
    "git show :0:staged/.env",
    "git show HEAD -- sub/..",
    "git show stash@{0} -p --include-untracked; git stash show -p",
    "git grep --cached SECRET -- sub/..",
    "git grep SECRET $(git rev-list --all --reflog)",
    "git archive HEAD | tar -xOf -",
    ("git archive --format=zip HEAD > /tmp/a.zip; python3 -c \"import zipfile;z=zipfile.ZipFile('/tmp/a.zip');"
    "[print(z.read(n).decode('latin-1')) for n in z.namelist()]\""),
    ("git bundle create /tmp/b.bundle --all && git init -q /tmp/c && cd /tmp/c && "
    "git fetch -q /tmp/b.bundle 'refs/*:refs/*' && git log -p --all"),
    "git fast-export --all",
    "git cat-file --batch-all-objects --batch",
    "git rev-list --objects --all --reflog | cut -d' ' -f1 | git cat-file --batch",
    "GIT_NO_REPLACE_OBJECTS=1 git log -p --all --reflog",
    "git --no-replace-objects show :0:.env; git --no-replace-objects log -p --all",
    "git ls-files -s | awk '{print $2}' | GIT_NO_REPLACE_OBJECTS=1 git cat-file --batch",
    "cat .git/objects/info/alternates; ls -R .git",
    f"python3 -c '{READ_EVERYTHING}'",
]


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    require_bwrap()
    path = make_repo(tmp_path_factory.mktemp("history") / "repo", {
        "app.py": "print('app')\n", "sub/tool.py": "x = 1\n", "old/.env": f"A={SECRETS['deleted']}\n",
        "twin.txt": f"T={SECRETS['twin']}\n"})
    git(path, "rm", "-q", "old/.env", "twin.txt")
    (path / ".env").write_text(f"B={SECRETS['tracked']}\n")
    (path / "twin" / ".env").parent.mkdir()
    (path / "twin" / ".env").write_text(f"T={SECRETS['twin']}\n")
    git(path, "add", "-f", ".env", "twin/.env")
    git(path, "commit", "-q", "-m", "delete old/.env, track .env")
    # Only in a reflog: a commit on a branch that is gone.
    git(path, "checkout", "-q", "-b", "gone")
    (path / "gone").mkdir()
    (path / "gone" / ".env").write_text(f"E={SECRETS['reflog']}\n")
    git(path, "add", "-f", "gone/.env")
    git(path, "commit", "-q", "-m", "gone")
    git(path, "checkout", "-q", "main")
    git(path, "branch", "-q", "-D", "gone")
    # Only in a stash.
    (path / "stashed").mkdir()
    (path / "stashed" / ".env").write_text(f"D={SECRETS['stashed']}\n")
    git(path, "add", "-f", "stashed/.env")
    git(path, "stash", "-q")
    # Only in the index.
    (path / "staged").mkdir()
    (path / "staged" / ".env").write_text(f"C={SECRETS['staged']}\n")
    git(path, "add", "-f", "staged/.env")
    (path / "staged" / ".env").unlink()
    (path / "app.py").write_text("print('app, changed')\n")
    return path


@pytest.fixture(scope="module")
def runner(repo) -> Runner:
    runner = Runner(Policy(repo=repo), repo)
    assert runner.sandboxed
    return runner


@pytest.mark.parametrize("command", FORMS)
def test_no_form_prints_a_hidden_file_from_history(runner, command):
    output = runner.run_shell(command, 60).output
    leaked = [name for name, secret in SECRETS.items() if secret in output]
    assert not leaked, f"{command!r} printed {leaked}:\n{output[-2000:]}"


def test_git_shows_a_placeholder_and_keeps_working_for_everything_else(runner, repo):
    def run(command: str) -> str:
        done = runner.run_shell(command, 60)
        assert done.exit_code == 0, f"{command}: {done.output}"
        return done.output

    assert run("git show :0:.env") == PLACEHOLDER.decode()
    assert "print('app, changed')" in run("git diff")
    assert "+print('app')" in run("git log -p -- app.py")
    assert "x = 1" in run("git show HEAD:sub/tool.py")
    assert "print('app')" in run("git blame HEAD -- app.py")
    assert "app.py" in run("git grep -n print HEAD")
    assert run("git status --porcelain").strip()


def test_nothing_is_prepared_without_a_hidden_file_in_history(tmp_path):
    require_bwrap()
    path = make_repo(tmp_path / "plain", {"app.py": "print(1)\n"})
    (path / ".env").write_text("NOT_IN_HISTORY=1\n")
    runner = Runner(Policy(repo=path), path)
    assert runner.store_view() is None
    assert not any((path / ".git" / "gitbot").rglob("*.pack"))
    assert "print(1)" in runner.run_shell("git log -p", 60).output


def test_a_secret_committed_during_the_run_is_hidden_at_the_next_command(runner, repo):
    later = "SECRET_LATER_5e5e"
    work = repo.parent / "later"
    subprocess.run(["git", "worktree", "add", "-q", str(work), "HEAD"], cwd=repo, check=True, capture_output=True)
    try:
        (work / "later").mkdir()
        (work / "later" / ".env").write_text(f"L={later}\n")
        git(work, "add", "-f", "later/.env")
        git(work, "commit", "-q", "-m", "later")
        git(work, "branch", "-q", "later-branch")
        output = runner.run_shell(f"git log -p --all; python3 -c '{READ_EVERYTHING}'", 120).output
        assert later not in output
        assert "later/.env" in output  # the commit is there, its .env content is not
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(work)], cwd=repo, check=True)


def test_the_judge_leaves_history_to_the_sandbox_and_keeps_it_unsandboxed(runner, repo):
    for command in ("git log -p --all", "git diff HEAD~1", "git show HEAD~1"):
        # As the shell tool asks: sandboxed, over the filtered store. The same policy asked about an
        # unsandboxed run, and a policy without the store, still judge git's history.
        assert runner.policy.check_command(command, sandboxed=True).allowed, command
        assert not runner.policy.check_command(command, sandboxed=False).allowed, command
        assert not Policy(repo=repo).check_command(command).allowed, command


def test_a_tracked_hidden_file_is_not_reported_as_emptied(runner):
    assert runner.run_shell("git status --porcelain -- .env twin", 60).output == ""
    assert runner.run_shell("git diff --stat -- .env", 60).output == ""


def test_until_the_store_is_ready_a_command_is_refused_with_the_reason(tmp_path):
    path = make_repo(tmp_path / "fresh", {"app.py": "print(1)\n", "config/.env": "K=v\n"})
    policy = Policy(repo=path)
    store = FilteredStore(str(path), str(path / ".git"), policy.read_deny, policy.file_rules.denies_read_by_name)
    abandoned = Path(f"{store.root}.building-4194304-dead")  # above the kernel's largest pid: no such process
    abandoned.mkdir(parents=True)
    with pytest.raises(StoreNotReady, match="still preparing"):
        store.view(wait=0)
    view = store.view(wait=120)
    assert view is not None and Path(view.objects, "pack").is_dir()
    assert not abandoned.exists()
    packs = sorted(Path(view.objects, "pack").glob("*.pack"))
    os.utime(path / ".git" / "index", ns=(1, 1))  # a new state with nothing new in it: no new pack
    store.view(wait=120)
    assert sorted(Path(view.objects, "pack").glob("*.pack")) == packs
    (path / "new.py").write_text("x\n")
    git(path, "add", "new.py")
    store.view(wait=120)
    added = sorted(set(Path(view.objects, "pack").glob("*.pack")) - set(packs))
    assert len(added) == 1  # new.py's blob, and only it


def test_rev_path_of_a_hidden_file_runs_and_prints_the_placeholder_through_policy_check_and_a_run(tmp_path):
    # Issue 22: over the filtered store the judge predicts no history read, REV:PATH included, whichever
    # list holds sandboxed commands; without the sandbox (so without the store) it is still refused.
    from gitbot.record import runs_dir
    from tests.agent.test_checkpoint_overlap import run_commands
    from tests.conftest import run_gitbot

    require_bwrap()
    secret = "SECRET_REVPATH_1d2e"
    path = make_repo(tmp_path / "revpath", {"app.py": "print(1)\n", ".env": f"K={secret}\n"})
    git(path, "rm", "-q", "--cached", ".env")
    (path / ".env").unlink()
    git(path, "commit", "-q", "-m", "drop .env")
    allow_list = tmp_path / "allow-list.toml"
    allow_list.write_text('[commands]\nsandboxed = "allow-list"\nallow = ["git *"]\n')
    for policy in ([], ["--policy", str(allow_list)]):
        asked = ["policy", "check", "--repo", str(path), *policy, "--command", "git show HEAD~1:.env"]
        assert run_gitbot(asked).returncode == 0, run_gitbot(asked).stdout
        refused = run_gitbot([*asked, "--no-sandbox"])
        assert refused.returncode == 1 and "read_deny" in refused.stdout, refused.stdout

    result, _ = run_commands(path, ["git show HEAD~1:.env"], Policy(command_sandboxed="allow-list",
                                                                     command_allow=("git *",)))
    record = "".join(p.read_text(errors="replace") for p in (runs_dir(path) / result.run_id).rglob("*") if p.is_file())
    assert PLACEHOLDER.decode().strip() in record and secret not in record
