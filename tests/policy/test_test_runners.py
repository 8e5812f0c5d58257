"""The project's own test runners (issue 22, part 4): `policy init` finds and allows them, and
`gitbot fix-check` without a command runs the first one. Small real repositories, the real judge."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitbot.cli import main
from gitbot.policy.test_runners import detect_test_runners
from tests.conftest import make_repo, run_gitbot

RUNNER_SCRIPT = "#!/usr/bin/env python3\nprint('Ran 1 test')\n"

# (project files, the runner fix-check picks, commands agents type that the written policy must allow)
PROJECTS = {
    "django": ({"tests/runtests.py": RUNNER_SCRIPT, "setup.py": "", "django/__init__.py": ""},
               "./tests/runtests.py",
               ["./tests/runtests.py admin_views --parallel 1", "tests/runtests.py -v 2 queries",
                "python tests/runtests.py queries", "python3 ./tests/runtests.py x"]),
    "sympy": ({"bin/test": RUNNER_SCRIPT, "setup.py": "", "sympy/__init__.py": ""},
              "./bin/test",
              ["bin/test sympy/physics/units/tests/test_quantities.py", "./bin/test -k test_x",
               "python bin/test sympy/core"]),
    "tox": ({"tox.ini": "[tox]\nenvlist = py3\n"}, "tox", ["tox -e py3", "tox -- -k x"]),
    "nox": ({"noxfile.py": "import nox\n"}, "nox", ["nox -s tests", "nox"]),
    "make": ({"Makefile": "test:\n\t@true\n"}, "make test", ["make test", "make test V=1"]),
    "npm": ({"package.json": '{"scripts": {"test": "node t.js"}}'}, "npm test", ["npm test", "npm run test"]),
    "cargo": ({"Cargo.toml": "[package]\nname = 'x'\n"}, "cargo test", ["cargo test", "cargo test -q it_works"]),
    "go": ({"go.mod": "module x\n"}, "go test ./...", ["go test ./...", "go test -run TestX ./pkg"]),
}


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_policy_init_finds_and_allows_the_projects_test_runner(tmp_path: Path, capsys, name: str):
    files, first, commands = PROJECTS[name]
    repo = make_repo(tmp_path / name, files)
    for script in ("tests/runtests.py", "bin/test"):
        if (repo / script).exists():
            os.chmod(repo / script, 0o755)
    assert detect_test_runners(repo)[0].command == first
    assert main(["policy", "init", "--repo", str(repo)]) == 0
    capsys.readouterr()
    for command in commands:
        code = main(["policy", "check", "--repo", str(repo), "--no-sandbox", "--command", command])
        out = capsys.readouterr().out
        assert code == 0, (command, out)
    # Without the runner's files nothing of the kind is allowed: the detection, not the defaults, allows it.
    bare = make_repo(tmp_path / "bare", {"README.md": "x\n"})
    assert main(["policy", "init", "--repo", str(bare)]) == 0
    capsys.readouterr()
    assert main(["policy", "check", "--repo", str(bare), "--no-sandbox", "--command", commands[0]]) == 1


def test_a_script_that_is_not_executable_runs_through_python(tmp_path: Path):
    repo = make_repo(tmp_path / "r", {"tests/runtests.py": RUNNER_SCRIPT})
    assert detect_test_runners(repo)[0].command.split()[1:] == ["tests/runtests.py"]


@pytest.mark.slow
def test_fix_check_without_a_command_runs_the_projects_own_runner(tmp_path: Path):
    repo = make_repo(tmp_path / "django", {"tests/runtests.py": RUNNER_SCRIPT, "setup.py": ""})
    os.chmod(repo / "tests" / "runtests.py", 0o755)
    proc = run_gitbot(["fix-check", "--repo", str(repo)])
    assert proc.returncode == 0, proc.stderr
    assert "running `./tests/runtests.py`" in proc.stderr
