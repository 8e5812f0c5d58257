"""run_check: real processes, real timeouts, real floods of output."""

from __future__ import annotations

import io
import os
import sys
import time
from pathlib import Path

import pytest

from gitbot.sandbox.command import CHECK_HEAD_BYTES as HEAD_BYTES
from gitbot.sandbox.command import CHECK_TAIL_BYTES as TAIL_BYTES
from gitbot.sandbox.command import CannotStart, run_check
from tests.sandbox.support import require_bwrap

PY = sys.executable


def test_exit_code_output_and_directory(tmp_path):
    code = "import os, sys; print(os.getcwd()); print('to stderr', file=sys.stderr); sys.exit(3)"
    run = run_check([PY, "-c", code], tmp_path, timeout=30)
    assert run.exit_code == 3 and not run.passed and not run.timed_out
    assert run.output.splitlines() == [str(tmp_path), "to stderr"]  # stderr merged, in order
    assert run.output_bytes == len(run.output.encode())


def test_string_command_is_split_like_a_shell_but_not_run_by_one(tmp_path):
    run = run_check(f"{PY} -c 'import sys; print(sys.argv[1:])' 'a b' '$HOME'", tmp_path, timeout=30)
    assert run.passed
    assert run.output.strip() == "['a b', '$HOME']"  # quoted as one word; no variable expansion
    assert run.command == f"{PY} -c 'import sys; print(sys.argv[1:])' 'a b' '$HOME'"


def test_list_command_is_shown_shell_quoted(tmp_path):
    run = run_check([PY, "-c", "pass"], tmp_path, timeout=30)
    assert run.command == f"{PY} -c pass"


def test_command_not_found_is_a_clear_error(tmp_path):
    with pytest.raises(CannotStart, match="'no-such-check-xyz' was not found on PATH"):
        run_check(["no-such-check-xyz", "--flag"], tmp_path, timeout=30)


def test_missing_relative_program(tmp_path):
    with pytest.raises(CannotStart, match="does not exist"):
        run_check("./scripts/check.sh", tmp_path, timeout=30)


def test_program_without_execute_permission(tmp_path):
    script = tmp_path / "check.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    with pytest.raises(CannotStart, match="not an executable file"):
        run_check(["./check.sh"], tmp_path, timeout=30)


@pytest.mark.parametrize("command", ["pytest 'unterminated", "", []])
def test_unusable_command_strings(tmp_path, command):
    with pytest.raises(CannotStart):
        run_check(command, tmp_path, timeout=30)


@pytest.mark.slow
def test_a_hanging_check_times_out_and_everything_it_started_is_stopped(tmp_path):
    pid_file = tmp_path / "background.pid"
    # A shell that leaves a background child holding the output pipe, then hangs itself.
    started = time.monotonic()
    shell = f"sleep 60 & echo $! > {pid_file}; echo waiting; sleep 60"
    run = run_check(["sh", "-c", shell], tmp_path, timeout=1)
    elapsed = time.monotonic() - started
    assert run.timed_out and run.exit_code is None and not run.passed
    assert "waiting" in run.output
    assert run.describe() == "timed out after 1 s"
    assert elapsed < 10
    background = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(background) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(background), "the check's background child survived the timeout"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie waiting for its reaper counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_megabytes_of_output_are_capped_in_memory(tmp_path):
    code = ("import sys; w = sys.stdout.write; w('START\\n'); "
            "[w('x' * 1023 + '\\n') for _ in range(6 * 1024)]; w('END: the real error\\n'); sys.exit(1)")
    run = run_check([PY, "-c", code], tmp_path, timeout=60)
    assert run.exit_code == 1
    assert run.output_bytes > 6 * 1024 * 1024
    assert run.truncated
    assert len(run.output) < HEAD_BYTES + TAIL_BYTES + 200
    assert run.output.startswith("START\n")
    assert run.output.rstrip().endswith("END: the real error")
    assert "bytes of output omitted" in run.output


def test_echo_receives_the_output_as_it_comes(tmp_path):
    echo = io.StringIO()
    run = run_check([PY, "-c", "print('live line')"], tmp_path, timeout=30, echo=echo)
    assert echo.getvalue() == run.output == "live line\n"


def test_check_does_not_read_the_terminal(tmp_path):
    # stdin is /dev/null: a check that asks a question gets EOF instead of hanging the hook.
    run = run_check([PY, "-c", "import sys; print(repr(sys.stdin.read()))"], tmp_path, timeout=30)
    assert run.passed and run.output.strip() == "''"


# ---------------------------------------------------------------- checks run like the agent's commands


def _policy(mode: str):
    from gitbot.policy import Policy

    return Policy(sandbox_mode=mode)


def test_checks_get_the_allow_listed_environment_even_unsandboxed(tmp_path, monkeypatch):
    from gitbot.sandbox.runner import Runner

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-should-not-reach-checks")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_should_not_reach_checks")
    monkeypatch.setenv("GIT_INDEX_FILE", "/somewhere/index")
    checks = Runner(_policy("off"), tmp_path)
    run = checks.run_check(["python3", "-c", "import os; print(sorted(os.environ))"], 30)
    assert run.passed
    assert "ANTHROPIC" not in run.output and "GITHUB_TOKEN" not in run.output and "GIT_INDEX_FILE" not in run.output
    assert "no sandbox" in checks.description


def test_required_sandbox_that_does_not_work_refuses_to_run_the_check(tmp_path, monkeypatch):
    from gitbot.sandbox import bwrap, contain
    from gitbot.sandbox.runner import Runner, SandboxRefused

    monkeypatch.setattr(bwrap, "probe", lambda **_: bwrap.SandboxStatus(False, "bwrap is missing"))
    monkeypatch.setattr(contain, "probe", lambda: (False, "no Landlock here"))
    with pytest.raises(SandboxRefused, match="bwrap is missing(.|\n)*no Landlock here"):
        Runner(_policy("required"), tmp_path).run_check(["true"], 10)
    assert Runner(_policy("auto"), tmp_path).run_check(["true"], 10).passed  # auto: unsandboxed instead


def test_sandboxed_check_cannot_see_secrets_or_programs_hidden_by_the_sandbox(tmp_path, monkeypatch):
    from gitbot.sandbox.runner import Runner

    require_bwrap()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-should-not-reach-checks")
    repo = tmp_path / "repo"
    repo.mkdir()
    checks = Runner(_policy("auto"), repo)
    assert checks.sandboxed and "bubblewrap" in checks.description
    run = checks.run_check(["python3", "-c", "import os; print(sorted(os.environ)); open('out.txt', 'w').write('x')"], 30)
    assert run.passed and "ANTHROPIC" not in run.output and (repo / "out.txt").read_text() == "x"
    outside = tmp_path / "tools" / "check.sh"  # under /tmp but outside the repository: hidden in the sandbox
    outside.parent.mkdir()
    outside.write_text("#!/bin/sh\nexit 0\n")
    outside.chmod(0o755)
    with pytest.raises(CannotStart, match=r"cannot start where gitbot runs checks(.|\n)*the sandbox does not show"):
        checks.run_check([str(outside)], 30)
