"""Finding 20.6: `gitbot policy check` answers exactly what a run decides.

A real `gitbot run` with a scripted model issues each command and file call; the run record says what
the run did with each (ran it, or refused it). `policy check --command/--read/--edit`, `--batch` and
`--run` on the same repository and policy must give the same decision for every one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitbot.record import latest_run, load_events, runs_dir
from tests.conftest import make_repo
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

COMMANDS = [
    "ls",
    "echo x > AGENTS.md",                # protected by every run, whatever the policy file says
    "echo x >> .gitbot/notes.md",        # .gitbot/ likewise
    "echo hi > notes.txt",
    "make check",                        # the run's check command
    "make check -s",                     # the check command with more arguments
    "vim app.py",                        # interactive: refused even where the policy allows vim
    "cat app.py",
    "curl http://example.invalid",
]
READS = ["app.py", ".env", ".git/config", "../outside.txt"]
EDITS = ["app.py", "AGENTS.md", ".gitbot/policy.toml", ".github/workflows/ci.yml"]

POLICIES = {
    "defaults": "[limits]\nmax_consecutive_mistakes = 50\nmax_steps = 50\n",
    "allows vim and make": "[limits]\nmax_consecutive_mistakes = 50\nmax_steps = 50\n"
                           "[commands]\nallow = ['ls *', 'cat *', 'echo *', 'vim *', 'make *']\n",
}


def _repo(tmp_path: Path, policy_text: str) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "repo", {"app.py": "print(1)\n", "AGENTS.md": "be nice\n",
                                         "Makefile": "check:\n\t@true\n", ".gitignore": ".env\n"})
    (repo / ".env").write_text("TOKEN=not-a-real-one\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    policy = tmp_path / "policy.toml"  # outside the repository: the run's own writes cannot touch it
    policy.write_text(policy_text)
    return repo, policy


def _script() -> list[dict]:
    calls = [("execute_command", {"command": c}) for c in COMMANDS]
    calls += [("read_file", {"path": p}) for p in READS]
    calls += [("write_to_file", {"path": p, "content": "print(2)\n"}) for p in EDITS]
    return [tool_turn(call) for call in calls] + [tool_turn(("attempt_completion", {"result": "done"}))] * 2


def _run_decisions(repo: Path) -> tuple[str, list[tuple[dict, bool]]]:
    """(run id, [(tool input, whether the run let it through)]) from the run record."""
    run_id = latest_run(repo)
    events = list(load_events(runs_dir(repo) / run_id))
    ends = {e["tool_use_id"]: e["outcome"] for e in events if e["event"] == "tool_end"}
    return run_id, [(e["input"], ends[e["tool_use_id"]] == "ok") for e in events
                    if e["event"] == "tool_start" and e["tool"] != "attempt_completion"]


def _cli(gitbot_in_process, *argv: str) -> tuple[int, str]:
    proc = gitbot_in_process(list(argv))
    return proc.returncode, proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("policy_name", sorted(POLICIES))
def test_policy_check_decides_what_a_run_decides(tmp_path: Path, gitbot_in_process, policy_name: str):
    repo, policy = _repo(tmp_path, POLICIES[policy_name])
    with FakeMessagesAPI(_script()) as api:
        proc = gitbot_in_process(["run", "--task", "try things", "--repo", str(repo), "--policy", str(policy),
                                  "--check", "make check", "--json"], env=api.env())
    assert proc.returncode == 0, proc.stderr
    run_id, decisions = _run_decisions(repo)
    assert len(decisions) == len(COMMANDS) + len(READS) + len(EDITS)
    # The cases are chosen so both answers occur: a vacuous comparison would prove nothing.
    assert {ran for _, ran in decisions} == {True, False}

    common = ["policy", "check", "--repo", str(repo), "--policy", str(policy), "--allow-check", "make check"]
    batch = tmp_path / "questions.jsonl"
    questions = []
    for tool_input, ran in decisions:
        if "command" in tool_input:
            question = ["--command", tool_input["command"]]
            questions.append({"command": tool_input["command"]})
        elif "content" in tool_input:
            question = ["--edit", tool_input["path"]]
            questions.append({"edit": tool_input["path"]})
        else:
            question = ["--read", tool_input["path"]]
            questions.append({"read": tool_input["path"]})
        code, out = _cli(gitbot_in_process, *common, *question)
        assert (code == 0) == ran, (tool_input, ran, out)
    batch.write_text("".join(json.dumps(q) + "\n" for q in questions))

    code, out = _cli(gitbot_in_process, *common, "--batch", str(batch))
    answers = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [a["allowed"] for a in answers] == [ran for _, ran in decisions]
    # A refused read or edit says what to do instead (commands: once the judge names it, bench/).
    assert all(a["instead"] for a, q in zip(answers, questions) if not a["allowed"] and "command" not in q)

    code, out = _cli(gitbot_in_process, "policy", "check", "--repo", str(repo), "--policy", str(policy), "--run", run_id)
    replayed = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["allowed"] for r in replayed] == [ran for _, ran in decisions]
    assert [r["then"] == "ok" for r in replayed] == [ran for _, ran in decisions]


@pytest.mark.slow
def test_with_no_policy_file_policy_check_allows_what_gitbot_run_adds(tmp_path: Path, gitbot_in_process):
    """`gitbot run` with no policy file allows the test commands `policy init` would write: so does check."""
    # (AGENTS.md exists: a missing one a command creates is set aside and the command fails, which is no
    # policy decision; test_created_protected.py)
    repo = make_repo(tmp_path / "repo", {"app.py": "print(1)\n", "tests/test_app.py": "def test_x():\n    pass\n",
                                         "pyproject.toml": "[project]\nname = 'app'\n", "AGENTS.md": "be nice\n"})
    commands = ["python -m pytest -q", "ls", "echo x > AGENTS.md", "ls", "vim notes.txt", "ls"]
    script = [tool_turn(("execute_command", {"command": c})) for c in commands]
    with FakeMessagesAPI(script + [tool_turn(("attempt_completion", {"result": "done"}))] * 2) as api:
        proc = gitbot_in_process(["run", "--task", "try things", "--repo", str(repo), "--json"], env=api.env())
    assert proc.returncode == 0, proc.stderr
    _, decisions = _run_decisions(repo)
    # In the sandbox the write to AGENTS.md runs (and meets a read-only mount); without it the judge refuses
    # it. An editor waits for a person in either.
    from gitbot.sandbox.bwrap import probe

    sandboxed = probe().available
    assert [ran for _, ran in decisions] == [True, True, sandboxed, True, False, True]
    assert (repo / "AGENTS.md").read_text() == "be nice\n"
    for tool_input, ran in decisions:
        code, out = _cli(gitbot_in_process, "policy", "check", "--repo", str(repo), "--command", tool_input["command"])
        assert (code == 0) == ran, (tool_input, out)
