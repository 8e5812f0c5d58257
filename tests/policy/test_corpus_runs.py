"""Every command the corpus allows is run under bash in the bubblewrap sandbox, to show that the program
the judge judged is the program that runs.

Each repository of the corpus gets a working copy whose PATH starts with a directory of shims, one
for every program on the system's PATH: a shim writes its name, its arguments and the shims above it
to a log on file descriptor 9 and then runs the real program, so wrappers, `find -exec`, `xargs` and
nested shells reach the shims of the programs they start. Every program that ran must be one the
judge saw among the line's simple commands, and, judged on its own with the arguments it really got,
be allowed by the same policy (programs that a test runner, build tool, git or tar starts by design
are left out: what those run is the agent's code or their own helpers).
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox.bwrap import probe, wrap
from gitbot.sandbox.env import build_env
from tests.policy.corpus import POLICIES, build_repositories, command_of
from tests.policy.test_command_corpus import CORPUS

pytestmark = pytest.mark.slow

SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
# Programs whose job is to run code or helpers the judge does not see on the command line: the tests
# or scripts a rule for them allows on purpose, tar's compressors.
RUNS_BY_DESIGN = {"npm", "node", "yarn", "make", "python", "python3", "pytest", "go", "cargo", "mypy", "ruff",
                  "tar", "git"}
FIELD, RECORD = "\036", "\035"
# Sandboxed cases run whatever no deny rule refuses: there is no allow-list for the shims to hold them to.
ALLOWED = sorted(name for name, case in CORPUS.items() if case.allowed and not case.sandboxed)


def _shims(directory: Path) -> int:
    directory.mkdir(parents=True)
    made = 0
    for folder in SYSTEM_PATH:
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            real = os.path.join(folder, name)
            shim = directory / name
            if shim.exists() or "'" in name or not os.access(real, os.X_OK) or os.path.isdir(real):
                continue
            shim.write_text("#!/bin/sh\n"
                            f"printf '%s\\036' \"$SHIM_CHAIN\" '{name}' \"$@\" >&9; printf '\\035' >&9\n"
                            f"SHIM_CHAIN=\"$SHIM_CHAIN/{name}\"; export SHIM_CHAIN\n"
                            f"exec '{real}' \"$@\"\n")
            shim.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
            made += 1
    return made


@pytest.fixture(scope="module")
def working_copies(tmp_path_factory):
    if not probe().available:
        pytest.skip("bubblewrap does not work here")
    built = build_repositories(tmp_path_factory.mktemp("corpus-built"))
    copies = {}
    root = tmp_path_factory.mktemp("corpus-runs")
    for name, (repo, values) in built.items():
        copy = root / name
        shutil.copytree(repo, copy, symlinks=True)
        shims = copy / ".git" / "shims" if (copy / ".git").is_dir() else copy / ".shims"
        assert _shims(shims) > 50
        copies[name] = (copy, values, shims)
    return copies


def _run(command: str, repo: Path, shims: Path, log: Path) -> subprocess.CompletedProcess[bytes]:
    env = build_env(repo=repo)
    env["PATH"] = ":".join((str(shims), *SYSTEM_PATH))
    argv = wrap(["/bin/bash", "-c", command], repo, network=False, env=env)
    # fd 9, opened outside the sandbox, is where the shims write.
    opener = ["/bin/sh", "-c", 'exec 9>>"$0"; exec "$@"', str(log), *argv]
    return subprocess.run(opener, cwd=repo, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                          check=False)


@pytest.mark.parametrize("name", ALLOWED)
def test_the_program_judged_is_the_program_that_runs(working_copies, tmp_path, name):
    case = CORPUS[name]
    repo, values, shims = working_copies[case.repo]
    command = command_of(case, repo, values)
    decision = Policy(repo=repo, **POLICIES[case.policy]).check_command(command, case.extra)
    assert decision.allowed, decision.reason
    judged = {os.path.basename(words[0]) for words in decision.commands if words and words[0]}
    log = tmp_path / "ran.log"
    log.touch()
    completed = _run(command, repo, shims, log)
    policy = Policy(repo=repo, **POLICIES[case.policy])
    for chain, program, *arguments in _invocations(log):
        if set(chain.split("/")) & RUNS_BY_DESIGN:
            continue
        ran = shlex.join([program, *arguments])
        assert program in judged, (f"{command!r} ran {program} (below {chain or 'the shell'}), which the judge "
                                   f"did not see: it judged {sorted(judged)}; output: {completed.stdout[-300:]!r}")
        alone = policy.check_command(ran, case.extra)
        assert alone.allowed, f"{command!r} ran `{ran}`, which the policy does not allow: {alone.reason}"


def _invocations(log: Path) -> list[list[str]]:
    records = log.read_bytes().decode("utf-8", "surrogateescape").split(RECORD)
    return [record.split(FIELD)[:-1] for record in records if record]


def test_the_shims_see_what_a_shadowing_function_hides(working_copies, tmp_path):
    """The finding behind refusing functions: bash calls the function, a wrapper starts the program."""
    repo, _, shims = working_copies["plain"]
    log = tmp_path / "ran.log"
    log.touch()
    _run("python3() { ls; }; env python3 -c 'print(1)'; python3", repo, shims, log)
    ran = [invocation[1] for invocation in _invocations(log)]
    assert ran == ["env", "python3", "ls"]
    decision = Policy(repo=repo).check_command("python3() { ls; }; env python3 -c 'print(1)'")
    assert not decision.allowed and "shell function" in decision.reason
