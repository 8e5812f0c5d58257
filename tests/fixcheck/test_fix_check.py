"""`gitbot fix-check` as a real subprocess on real git repositories, with the real anthropic SDK talking
to the loopback Messages API server. The check is real too: Python's unittest on a one-line bug.

The check runs like the agent's commands: in the sandbox (when bubblewrap works here), with the
allow-listed environment. The sandbox hides $HOME and /tmp, where this test run's own interpreter may
live (pyenv), so the checks here use `python3` from the sandbox's PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import BUGGY_MODULE, FIX_DIFF, TEST_MODULE, gitbot_env, make_repo, run_gitbot
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

PY = sys.executable
SANDBOX_PY = "python3"  # found on the sandbox's PATH (outside $HOME, /tmp and the repository)
CHECK = [SANDBOX_PY, "-m", "unittest"]
WRONG_DIFF = ("<<<<<<< SEARCH\n    return sum(values) / (len(values) - 1)\n=======\n"
              "    return sum(values) / (len(values) + 1)\n>>>>>>> REPLACE")
# Loosening the test instead of fixing the code: the check passes, and the receipt must say so.
TEST_EDIT_DIFF = ("<<<<<<< SEARCH\n        self.assertEqual(mean([1, 2, 3]), 2)\n=======\n"
                  "        self.assertEqual(mean([1, 2, 3]), 3)\n>>>>>>> REPLACE")


def git(repo: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=gitbot_env(),
                          check=check).stdout


def git_status(repo: Path, *args: str) -> int:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, env=gitbot_env(), check=False)
    return proc.returncode


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"stats.py": BUGGY_MODULE, "test_stats.py": TEST_MODULE,
                                         ".gitignore": "__pycache__/\n"})


def fix_check_with(runner, repo: Path, *args: str, env: dict[str, str] | None = None,
                   cmd: list[str] | None = None):
    proc = runner(["fix-check", "--repo", str(repo), "--json", *args, "--", *(cmd or CHECK)], env=env)
    data = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc, data


def fix_check(repo: Path, *args: str, env: dict[str, str] | None = None, cmd: list[str] | None = None):
    """fix-check as the real subprocess a user starts."""
    return fix_check_with(run_gitbot, repo, *args, env=env, cmd=cmd)


@pytest.fixture
def fix_check_here(gitbot_in_process):
    """fix-check in this worker: what most tests here ask is what it decides and does to the repository,
    not how its process starts (that is test_a_correct_fix_is_verified's, through `fix_check`)."""
    return lambda repo, *args, **kwargs: fix_check_with(gitbot_in_process, repo, *args, **kwargs)


def completion_turns(text: str = "fixed mean()") -> list[dict]:
    """attempt_completion is review-on-submit: the first call shows the diff, the second completes."""
    return [tool_turn(("attempt_completion", {"result": text})) for _ in range(2)]


def staged(repo: Path) -> tuple[str, str]:
    return git(repo, "ls-files", "--stage"), git(repo, "diff", "--cached", "--binary")


def counter_check(repo: Path, fail_times: int) -> list[str]:
    """A check that fails the first `fail_times` runs, then passes; it counts in an ignored file of the
    repository (the sandbox's /tmp is new on every run; ignored files are no change of the agent's)."""
    exclude = repo / ".git/info/exclude"
    exclude.write_text(exclude.read_text() + "runs.count\n")
    code = ("import pathlib, sys; p = pathlib.Path('runs.count'); "
            "n = int(p.read_text()) if p.exists() else 0; "
            f"p.write_text(str(n + 1)); print('run', n + 1); sys.exit(1 if n < {fail_times} else 0)")
    return [SANDBOX_PY, "-c", code]


# ---------------------------------------------------------------- no model call


@pytest.mark.slow
def test_a_passing_check_needs_no_key_and_makes_no_request(repo, tmp_path, fix_check_here):
    (repo / "stats.py").write_text(BUGGY_MODULE.replace("(len(values) - 1)", "len(values)"))
    summary = tmp_path / "summary.md"
    with FakeMessagesAPI([]) as api:
        proc, data = fix_check_here(repo, env={**api.env(), "GITHUB_STEP_SUMMARY": str(summary)})
        assert api.requests == []
    assert proc.returncode == 0, proc.stderr
    assert data["outcome"] == "check_passed" and data["verified"] is True and data["steps"] == 0
    assert data["check_exit_before"] == 0 and data["check_exit_after"] is None
    assert "passes" in proc.stderr
    assert "check passes" in summary.read_text()
    # And without any key at all.
    assert fix_check_here(repo)[0].returncode == 0


@pytest.mark.slow
def test_a_command_that_does_not_exist_is_a_config_error_without_a_request(repo, fix_check_here):
    with FakeMessagesAPI(completion_turns()) as api:
        proc, data = fix_check_here(repo, env=api.env(), cmd=["no-such-test-runner", "-q"])
        assert api.requests == []
    assert proc.returncode == 2 and data is None
    assert "`no-such-test-runner` is not found" in proc.stderr


def test_no_command(repo, gitbot_in_process):
    proc = gitbot_in_process(["fix-check", "--repo", str(repo)])
    assert proc.returncode == 2 and "no check command given" in proc.stderr


@pytest.mark.slow
def test_a_hanging_check_times_out(repo, fix_check_here):
    hang = [SANDBOX_PY, "-c", "import time; print('hanging'); time.sleep(60)"]
    proc, data = fix_check_here(repo, "--timeout", "1", cmd=hang)
    assert "timed out after 1 s" in proc.stderr
    # It failed (by timing out), and with no key gitbot stops there: exit 2, saying what is missing.
    assert proc.returncode == 2 and "ANTHROPIC_API_KEY" in proc.stderr
    assert data["check_exit_before"] == "timeout" and data["check_timed_out"] is True
    assert data["check_exit_confirm"] is None  # a hang is not re-run to test for flakiness


@pytest.mark.slow
def test_a_failing_check_without_a_key_reports_the_failure(repo, fix_check_here):
    proc, data = fix_check_here(repo)
    assert proc.returncode == 2
    assert "AssertionError: 3.0 != 2" in proc.stderr  # the check's own output, shown live
    assert "ANTHROPIC_API_KEY is not set" in proc.stderr
    assert data["outcome"] == "cannot_fix" and data["verified"] is False


@pytest.mark.slow
def test_a_flaky_check_is_reported_as_flaky_without_a_request(repo, tmp_path, fix_check_here):
    with FakeMessagesAPI(completion_turns()) as api:
        proc, data = fix_check_here(repo, env=api.env(), cmd=counter_check(repo, fail_times=1))
        assert api.requests == []
    assert proc.returncode == 1
    assert data["outcome"] == "flaky" and data["flaky"] is True and data["verified"] is False
    assert (data["check_exit_before"], data["check_exit_confirm"]) == (1, 0)
    assert "FLAKY" in proc.stderr


@pytest.mark.slow
def test_refuses_a_repository_in_the_middle_of_a_merge(repo, fix_check_here):
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "stats.py").write_text(BUGGY_MODULE + "\n# other\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "stats.py").write_text(BUGGY_MODULE + "\n# main\n")
    git(repo, "commit", "-q", "-am", "main")
    assert git_status(repo, "merge", "-q", "other") != 0
    with FakeMessagesAPI(completion_turns()) as api:
        proc, _ = fix_check_here(repo, env=api.env())
        assert api.requests == []
    assert proc.returncode == 2 and "in the middle of a merge" in proc.stderr


@pytest.mark.slow
def test_refuses_a_repository_in_the_middle_of_a_rebase(repo, fix_check_here):
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "stats.py").write_text(BUGGY_MODULE + "\n# topic\n")
    git(repo, "commit", "-q", "-am", "topic")
    git(repo, "checkout", "-q", "main")
    (repo / "stats.py").write_text(BUGGY_MODULE + "\n# main\n")
    git(repo, "commit", "-q", "-am", "main")
    git(repo, "checkout", "-q", "topic")
    assert git_status(repo, "rebase", "main") != 0  # stops on the conflict
    proc, _ = fix_check_here(repo)
    assert proc.returncode == 2 and "in the middle of a rebase" in proc.stderr


@pytest.mark.slow
def test_outside_a_git_repository(tmp_path, fix_check_here):
    proc, _ = fix_check_here(tmp_path)
    assert proc.returncode == 2 and "is not inside a git work tree" in proc.stderr


# ---------------------------------------------------------------- end to end through the real SDK


@pytest.mark.slow
def test_a_correct_fix_is_verified(repo, tmp_path):
    head = git(repo, "rev-parse", "HEAD")
    summary = tmp_path / "summary.md"
    script = [tool_turn(("read_file", {"path": "stats.py"})),
              tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})), *completion_turns()]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check(repo, env={**api.env(), "GITHUB_STEP_SUMMARY": str(summary)})
        assert api.errors == [] and api.remaining_turns == 0
        first_prompt = json.dumps(api.requests[0]["body"]["messages"][0])
    assert proc.returncode == 0, proc.stderr
    assert data["outcome"] == "fixed" and data["verified"] is True and data["status"] == "completed"
    assert (data["check_exit_before"], data["check_exit_confirm"], data["check_exit_after"]) == (1, 1, 0)
    assert data["tests_modified"] == [] and data["files_changed"] == ["stats.py"]
    assert data["check_command"] == " ".join(CHECK)
    assert "test_stats.MeanTest.test_mean" in first_prompt and "<check_output>" in first_prompt
    assert "VERIFIED" in proc.stderr
    # Left in the work tree, never staged, never committed.
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "diff", "--cached") == ""
    assert git(repo, "diff", "--name-only").split() == ["stats.py"]
    assert "✅ gitbot fix-check: verified fix" in summary.read_text()


@pytest.mark.slow
def test_a_wrong_fix_stays_unverified(repo, fix_check_here):
    script = [tool_turn(("replace_in_file", {"path": "stats.py", "diff": WRONG_DIFF})), *completion_turns()]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check_here(repo, env=api.env())
        assert api.remaining_turns == 0
    assert proc.returncode == 1
    assert data["outcome"] == "not_fixed" and data["verified"] is False
    assert data["check_exit_after"] == 1 and data["files_changed"] == ["stats.py"]
    assert "NOT VERIFIED" in proc.stderr


@pytest.mark.slow
def test_a_fix_that_edits_the_test_is_flagged(repo, fix_check_here):
    script = [tool_turn(("replace_in_file", {"path": "test_stats.py", "diff": TEST_EDIT_DIFF})),
              *completion_turns("adjusted the expectation")]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check_here(repo, env=api.env())
    assert proc.returncode == 0  # the check passes, so it is verified; the warning is what protects
    assert data["tests_modified"] == ["test_stats.py"]
    assert any("a fix that edits the test" in w for w in data["warnings"])
    assert "!! WARNING: the agent changed tests or check configuration (test_stats.py)" in proc.stderr


@pytest.mark.slow
def test_passing_without_changes_is_not_a_fix(repo, tmp_path, fix_check_here):
    # Fails on the first run and on the confirmation re-run, then passes although nothing changed.
    with FakeMessagesAPI(completion_turns("nothing to change")) as api:
        proc, data = fix_check_here(repo, env=api.env(), cmd=counter_check(repo, fail_times=2))
        assert len(api.requests) == 2
    assert proc.returncode == 1
    assert data["outcome"] == "passed_without_changes" and data["flaky"] is True and data["verified"] is False
    assert "passed without changes — flaky?" in proc.stderr


@pytest.mark.slow
def test_commit_puts_the_fix_on_a_new_branch_and_touches_nothing_else(repo, fix_check_here):
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "NOTES").write_text("my own uncommitted work\n")
    git(repo, "add", "NOTES")
    (repo / "NOTES").write_text("my own uncommitted work, edited again\n")
    index_before = staged(repo)
    script = [tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})), *completion_turns()]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check_here(repo, "--commit", env=api.env())
    assert proc.returncode == 0, proc.stderr
    branch, commit = data["branch"], data["commit"]
    assert branch == "gitbot/fix-stats"  # the module the failure is in (test_stats.py)
    assert git(repo, "rev-parse", f"refs/heads/{branch}").strip() == commit
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert staged(repo) == index_before
    assert (repo / "NOTES").read_text() == "my own uncommitted work, edited again\n"
    assert git(repo, "diff", "--name-only", "HEAD").split() == ["NOTES", "stats.py"]  # fix still in the tree
    # The commit holds the fix only, on top of HEAD.
    assert git(repo, "rev-parse", f"{commit}^").strip() == head
    assert git(repo, "diff", "--name-only", head, commit).split() == ["stats.py"]
    message = git(repo, "log", "-1", "--format=%B", commit)
    assert message.startswith(f"Fix failing check: {' '.join(CHECK)}"[:72])
    assert f"Gitbot-Run: {data['run_id']}" in message
    # Re-run on a checkout of exactly this commit before saying it passes.
    assert data["commit_verified"] is True and "It passes on this commit" in message
    assert "Co-authored-by: gitbot (claude-sonnet-5-5) <noreply@gitbot.invalid>" in message


@pytest.mark.slow
def test_megabytes_of_output_are_capped_in_the_task(repo, fix_check_here):
    noisy = BUGGY_MODULE.replace('    if not values:', '    print("noise " * 400_000)\n    if not values:')
    (repo / "stats.py").write_text(noisy)
    with FakeMessagesAPI(completion_turns("gave up")) as api:
        proc, data = fix_check_here(repo, env=api.env())
        first = api.requests[0]["body"]["messages"][0]["content"]
    text = first if isinstance(first, str) else "".join(block.get("text", "") for block in first)
    task = text.split("<task>", 1)[1].split("</task>", 1)[0]
    assert len(task) < 12_000
    assert "AssertionError: 3.0 != 2" in task
    assert proc.returncode == 1 and data["outcome"] == "not_fixed"


# ---------------------------------------------------------------- review findings


ENV_RECORDING_CHECK = '''import json, os, pathlib, sys
runs = pathlib.Path("runs")
runs.mkdir(exist_ok=True)
seen = {k: v for k, v in os.environ.items() if k.startswith("ANTHROPIC") or "TOKEN" in k or k == "GIT_INDEX_FILE"}
(runs / f"{len(list(runs.iterdir()))}.json").write_text(json.dumps(seen))
from calc import add
sys.exit(0 if add(2, 2) == 4 else 1)
'''
CALC_FIX = "<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "off"])
def test_no_run_of_the_check_sees_the_api_key_or_tokens(tmp_path, mode, fix_check_here):
    """Before, confirmation and verification all run like the agent's commands: sandbox (unless off) and
    the allow-listed environment, so agent-written code never runs with the keys."""
    files = {"check.py": ENV_RECORDING_CHECK, "calc.py": "def add(a, b):\n    return a - b\n",
             ".gitignore": "__pycache__/\nruns/\n"}
    if mode == "off":
        files[".gitbot/policy.toml"] = '[sandbox]\nmode = "off"\n'
    repo = make_repo(tmp_path / "repo", files)
    script = [tool_turn(("replace_in_file", {"path": "calc.py", "diff": CALC_FIX})), *completion_turns()]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check_here(repo, env={**api.env(), "GITHUB_TOKEN": "ghs_secret_token_value",
                                          "GIT_INDEX_FILE": str(repo / ".git/index")},
                               cmd=[SANDBOX_PY, "check.py"])
    assert proc.returncode == 0, proc.stderr
    assert data["outcome"] == "fixed" and data["check_environment"]
    seen = [json.loads(p.read_text()) for p in sorted((repo / "runs").iterdir())]
    assert len(seen) == 3  # before, the confirmation re-run, the verification
    assert seen == [{}, {}, {}]


@pytest.mark.slow
def test_agent_written_check_code_runs_without_secrets_and_the_edit_is_flagged(tmp_path, fix_check_here):
    repo = make_repo(tmp_path / "repo", {"check.py": "import sys\nsys.exit(1)\n", ".gitignore": "__pycache__/\n"})
    evil = ("import os, sys\n"
            "open('leak.txt', 'w').write(repr({k: v for k, v in os.environ.items()\n"
            "                                  if 'ANTHROPIC' in k or 'TOKEN' in k}))\n"
            "sys.exit(0)\n")
    script = [tool_turn(("write_to_file", {"path": "check.py", "content": evil})), *completion_turns("fixed")]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check_here(repo, env={**api.env(), "GITHUB_TOKEN": "ghs_secret_token_value"},
                               cmd=[SANDBOX_PY, "check.py"])
    assert (repo / "leak.txt").read_text() == "{}"
    assert data["outcome"] == "fixed"  # the check passes: the warning is what protects
    assert data["tests_modified"] == ["check.py (the check's own script)"]
    assert "!! WARNING: the agent changed tests or check configuration (check.py" in proc.stderr


@pytest.mark.slow
def test_silencing_the_check_is_flagged(repo, fix_check_here):
    skip = ("<<<<<<< SEARCH\n    def test_mean(self):\n=======\n    @unittest.skip(\"later\")\n"
            "    def test_mean(self):\n>>>>>>> REPLACE")
    script = [tool_turn(("replace_in_file", {"path": "test_stats.py", "diff": skip})), *completion_turns("skipped")]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check_here(repo, env=api.env())
    assert proc.returncode == 0
    assert data["suppressions_added"] == ["test_stats.py:7 (@unittest.skip)"]
    assert data["tests_modified"] == ["test_stats.py"]
    assert "silence the check (test_stats.py:7 (@unittest.skip))" in proc.stderr


@pytest.mark.slow
def test_commit_is_verified_on_the_commit_alone_and_says_so_when_it_fails(repo, fix_check_here):
    head = git(repo, "rev-parse", "HEAD").strip()
    # The fix needs a file only the user's work tree has (untracked): the commit alone still fails.
    (repo / "helpers.py").write_text("def count(values):\n    return len(values)\n")
    uses_helper = ("<<<<<<< SEARCH\n    return sum(values) / (len(values) - 1)\n=======\n"
                   "    from helpers import count\n    return sum(values) / count(values)\n>>>>>>> REPLACE")
    script = [tool_turn(("replace_in_file", {"path": "stats.py", "diff": uses_helper})), *completion_turns()]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check_here(repo, "--commit", env=api.env())
    assert data["outcome"] == "fixed" and data["verified"] is True  # in the work tree, it is fixed
    assert proc.returncode == 1, "a commit on which the check fails is a failed --commit"
    assert data["commit_verified"] is False and data["branch"] == "gitbot/fix-stats"
    message = git(repo, "log", "-1", "--format=%B", data["commit"])
    assert "NOT VERIFIED" in message and "It passes" not in message
    assert "the check fails on the commit alone" in data["message"]
    assert "NOT VERIFIED" in proc.stderr
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1  # the checkout is gone


@pytest.mark.slow
def test_commit_on_a_sha256_repository_with_diff_noprefix(tmp_path, fix_check_here):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", "--object-format=sha256")
    git(repo, "config", "diff.noprefix", "true")  # must not change the patch gitbot applies
    for name, text in {"stats.py": BUGGY_MODULE, "test_stats.py": TEST_MODULE, ".gitignore": "__pycache__/\n"}.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    git(repo, "branch", "gitbot/fix-stats")  # taken: the new branch gets another name
    script = [tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})), *completion_turns()]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check_here(repo, "--commit", env=api.env())
    assert proc.returncode == 0, proc.stderr
    assert data["branch"] == "gitbot/fix-stats-2" and data["commit_verified"] is True
    assert len(data["commit"]) == 64
    assert "It passes on this commit" in git(repo, "log", "-1", "--format=%B", data["commit"])


@pytest.mark.slow
def test_a_repository_locked_by_another_run_is_exit_2_without_a_traceback(repo, fix_check_here):
    code = ("import time\nfrom gitbot.checkpoints import RunLock\n"
            f"RunLock({str(repo)!r}, run_id='other').acquire()\nprint('held', flush=True)\ntime.sleep(60)")
    holder = subprocess.Popen([PY, "-c", code], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[2])
    try:
        assert holder.stdout.readline().strip() == "held"
        script = [tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})), *completion_turns()]
        with FakeMessagesAPI(script) as api:
            proc, data = fix_check_here(repo, env=api.env())
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 2, proc.stderr
    assert "LockHeld" not in proc.stderr and "gitbot/fixcheck" not in proc.stderr  # no traceback of gitbot's
    assert "holds the repository lock" in proc.stderr
    assert data["outcome"] == "cannot_fix"


@pytest.mark.slow
def test_a_nested_repository_and_untracked_files_neither_break_it_nor_enter_the_object_store(repo, fix_check_here):
    (repo / "scratch").mkdir()
    git(repo / "scratch", "init", "-q")  # a nested repository without commits
    big = os.urandom(256 * 1024)
    (repo / "untracked.bin").write_bytes(big)
    blob = subprocess.run(["git", "hash-object", "--stdin"], input=big, capture_output=True, check=True,
                          cwd=repo).stdout.decode().strip()
    script = [tool_turn(("replace_in_file", {"path": "stats.py", "diff": FIX_DIFF})), *completion_turns()]
    with FakeMessagesAPI(script) as api:
        proc, data = fix_check_here(repo, env=api.env())
    assert proc.returncode == 0, proc.stderr
    assert data["files_changed"] == ["stats.py"]
    # The user's own untracked file was not written into the user's .git/objects.
    assert git_status(repo, "cat-file", "-e", blob) != 0


@pytest.mark.parametrize("command, expected", [
    ("python check.py", {"check.py"}),
    ("python3 -W error tools/lint.py --strict src", {"tools/lint.py"}),
    ("./lint.sh src", {"lint.sh"}),
    ("python -m tools.check", {"tools/check.py", "tools/check/__main__.py"}),
    ("npm test", {"package.json"}),
    ("make lint", {"Makefile", "makefile", "GNUmakefile"}),
    ("tox -e py311", {"tox.ini"}),
    ("nox -s tests", {"noxfile.py"}),
    ("sh -c 'ruff check . && bash ci/test.sh'", {"ci/test.sh"}),
    ("env CI=1 uv run python check.py", {"check.py"}),
    ("ruff check --no-cache calc.py", set()),  # the files a linter checks are the code, not the check
])
def test_the_checks_own_definition_is_found_in_its_command_line(command, expected):
    from gitbot.fixcheck.tampering import check_script_paths

    assert set(check_script_paths(command)) == expected


def test_suppressions_are_found_in_added_lines_only():
    from gitbot.fixcheck.tampering import suppressions_added

    patch = (b"diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,3 +1,4 @@\n"
             b"-import os\n+import os  # noqa: F401\n x = 1  # type: ignore\n+y: int = 'a'  # type: ignore[assignment]\n"
             b" z = 2\n+@pytest.mark.skip(reason='later')\n"
             b"diff --git a/web/app.ts b/web/app.ts\nnew file mode 100644\n--- /dev/null\n+++ b/web/app.ts\n"
             b"@@ -0,0 +1,2 @@\n+// @ts-ignore\n+// eslint-disable-next-line no-console\n")
    assert suppressions_added(patch) == ["calc.py:1 (# noqa)", "calc.py:3 (# type: ignore)",
                                         "calc.py:5 (pytest.mark.skip)", "web/app.ts:1 (@ts-ignore)",
                                         "web/app.ts:2 (eslint-disable)"]


def test_branch_short_name_is_the_module_of_the_failure():
    from gitbot.fixcheck.commit import short_name
    from gitbot.fixcheck.outcome import FixOutcome
    from gitbot.sandbox.command import CommandRun as CheckRun

    run = CheckRun("python -m pytest -q", 1, "", 0.1)
    assert short_name(FixOutcome("fixed", 0, "", run, first_failure="tests/test_calc.py::test_add",
                                 first_failure_path="pkg/calc.py")) == "calc"
    assert short_name(FixOutcome("fixed", 0, "", run, first_failure="tests/test_calc.py::test_add",
                                 first_failure_path="tests/test_calc.py")) == "calc"
    assert short_name(FixOutcome("fixed", 0, "", run, first_failure_path="pkg/__init__.py")) == "pkg"
    assert short_name(FixOutcome("fixed", 0, "", run)) == "pytest"
