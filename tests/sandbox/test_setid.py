"""No sandboxed command can leave a setuid or setgid file in the repository (helper.py's seccomp filter).

The repository is id-mapped: what the sandbox's uid makes there is stored as gitbot's user's, root's
when gitbot runs as root, so `chmod 4755` on a copy of a program would leave a setuid-root program
any local user could run after the run."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox.runner import Runner
from tests.conftest import make_repo
from tests.sandbox.support import require_bwrap

pytestmark = pytest.mark.slow

SETID = stat.S_ISUID | stat.S_ISGID


def test_a_sandboxed_command_cannot_leave_a_setuid_binary_in_the_repository(tmp_path: Path):
    require_bwrap()
    repo = make_repo(tmp_path / "repo", {"app.py": "print('hi')\n"})
    runner = Runner(Policy(repo=repo), repo)
    assert runner.sandboxed, runner.receipt_line
    run = runner.run_shell("cp /usr/bin/id ./myid; chmod 4755 ./myid; chmod g+s ./myid; mkdir d; chmod 2777 d;"
                           "install -m 6755 /usr/bin/id ./installed; mkdir -m 2755 e;"
                           "cp /usr/bin/id ./plain; chmod 755 ./plain && ./plain -u", 30)
    for name in ("myid", "d", "installed", "e"):
        path = repo / name
        if path.exists():
            assert not os.lstat(path).st_mode & SETID, f"{name} is {stat.filemode(os.lstat(path).st_mode)} on the host"
    # Ordinary modes still work: the copy is executable and runs.
    assert os.lstat(repo / "plain").st_mode & 0o777 == 0o755
    assert run.output.strip().splitlines()[-1].isdigit(), run.output


def test_a_contained_command_cannot_leave_a_setuid_binary_in_the_repository(tmp_path: Path):
    from tests.sandbox.test_contain import in_container

    path = make_repo(tmp_path / "repo", {"README.md": "r\n", "sub/deep/o.txt": "o\n"})
    results = in_container(path, {"suid": "cp /usr/bin/id sub/deep/myid && chmod 4755 sub/deep/myid",
                                  "plain": "chmod 700 sub/deep/o.txt"}, tmp_path)
    assert results["contained"] is True
    made = path / "sub" / "deep" / "myid"
    if made.exists():
        assert not os.lstat(made).st_mode & SETID, f"myid is {stat.filemode(os.lstat(made).st_mode)} on the host"
    assert os.lstat(path / "sub" / "deep" / "o.txt").st_mode & 0o777 == 0o700


AS_ANOTHER_USER = """
import os, stat, subprocess, sys
from pathlib import Path
from gitbot.policy import Policy
from gitbot.sandbox.runner import Runner
import resource
repo = Path(sys.argv[1])
subprocess.run(["git", "init", "-q", str(repo)], check=True)
# An ordinary user's usual open-file limit (root's, inherited through setpriv, is higher).
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
runner = Runner(Policy(repo=repo), repo)
if not runner.sandboxed:
    sys.exit(3)
run = runner.run_shell("cp /usr/bin/id ./myid; chmod 4755 ./myid; hostname", 30)
print(run.exit_code, run.output.strip().splitlines()[-1:])
print(stat.filemode(os.lstat(repo / "myid").st_mode))
"""


def test_without_root_a_sandboxed_command_cannot_leave_a_setuid_binary_either():
    # gitbot as an ordinary user: bubblewrap starts without the helper, and gets the filter from gitbot.
    require_bwrap()
    import shutil
    import subprocess

    from gitbot.sandbox.confine import reachable_by_others

    root = Path(__file__).resolve().parents[2]
    python = next((p for p in (os.path.realpath(sys.executable), "/usr/bin/python3") if reachable_by_others(p)), None)
    if os.geteuid() != 0 or not shutil.which("setpriv") or python is None or not reachable_by_others(str(root / "x")):
        pytest.skip("needs root to become another user, and an interpreter and gitbot that user can reach")
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="gitbot-test-nobody-"))  # pytest's tmp_path is root's alone
    os.chown(work, 65534, 65534)
    try:
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", f"HOME={work}",
                               f"XDG_CACHE_HOME={work}/cache", f"PYTHONPATH={root}", python, "-c", AS_ANOTHER_USER,
                               str(work / "repo")], capture_output=True, text=True, timeout=120, check=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if done.returncode == 3:
        pytest.skip("bubblewrap does not work for another user here")
    # Anything else that goes wrong is a failure: this is the one test of the path every ordinary
    # user's commands take (the suite runs as root), and skipping on any error hid that it was broken.
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines() == ["0 ['sandbox']", "-rwxr-xr-x"], done.stdout
