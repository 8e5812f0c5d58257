"""`gitbot policy check --batch` and `--run`: one answer per line, in order, bad lines answered in place."""

from __future__ import annotations

import json
from pathlib import Path

from gitbot.cli import main
from tests.conftest import make_repo


def _check(capsys, *argv: str) -> tuple[int, list[dict], str]:
    code = main(["policy", "check", *argv])
    captured = capsys.readouterr()
    return code, [json.loads(line) for line in captured.out.splitlines()], captured.err


def test_batch_answers_every_line_in_order_and_goes_on_after_bad_ones(tmp_path: Path, capsys):
    repo = make_repo(tmp_path / "repo", {"app.py": "print(1)\n"})
    questions = tmp_path / "q.jsonl"
    questions.write_text("\n".join([
        json.dumps({"command": "ls -la", "id": "a"}),
        "{not json",
        json.dumps({"command": "curl http://example.invalid"}),
        json.dumps(["command", "ls"]),
        json.dumps({"read": ".env"}),
        json.dumps({"command": "ls", "read": "x"}),
        "",
        json.dumps({"edit": "AGENTS.md"}),
    ]) + "\n")
    code, answers, _ = _check(capsys, "--repo", str(repo), "--batch", str(questions), "--no-sandbox")
    assert code == 0 and len(answers) == 7  # the blank line is no question
    assert answers[0]["id"] == "a" and answers[0]["allowed"] is True and answers[0]["rule"] == "ls *"
    assert "not JSON" in answers[1]["error"] and "not a JSON object" in answers[3]["error"]
    assert answers[2]["allowed"] is False and "curl" in answers[2]["reason"]
    assert answers[4]["allowed"] is False and answers[4]["instead"]
    assert "exactly one" in answers[5]["error"]
    # AGENTS.md is protected by every run, policy file or not.
    assert answers[6]["allowed"] is False and answers[6]["instead"]
    assert all(isinstance(a["ms"], float) for a in answers if "error" not in a)
    # In the sandbox a command runs unless a deny rule refuses it (the defaults have none; it has no network).
    code, answers, _ = _check(capsys, "--repo", str(repo), "--batch", str(questions), "--sandbox")
    assert answers[0]["allowed"] is True and answers[2]["allowed"] is True
    assert answers[4]["allowed"] is False and answers[6]["allowed"] is False  # the file rules hold in any mode


def test_sandbox_flags_judge_as_that_run_would(tmp_path: Path, capsys):
    repo = make_repo(tmp_path / "repo", {"app.py": "print(1)\n"})
    policy = tmp_path / "p.toml"
    policy.write_text('[sandbox]\nmode = "required"\n')
    common = ("--repo", str(repo), "--policy", str(policy), "--command", "ls")
    assert main(["policy", "check", *common, "--sandbox"]) == 0
    capsys.readouterr()
    # Unsandboxed, a run whose policy requires the sandbox runs nothing at all.
    assert main(["policy", "check", *common, "--no-sandbox"]) == 1
    out = capsys.readouterr().out
    assert "sandbox" in out and "instead: " in out


def test_run_replay_of_an_unknown_run_is_a_clear_error(tmp_path: Path, capsys):
    repo = make_repo(tmp_path / "repo", {"app.py": "print(1)\n"})
    code, answers, err = _check(capsys, "--repo", str(repo), "--run", "20990101-000000-abcdef")
    assert code == 2 and answers == [] and "no run '20990101-000000-abcdef'" in err
