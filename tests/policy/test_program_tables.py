"""The judge's tables of programs: every program a policy allows out of the box has a row, and
options are read the way the programs read them (bundled, abbreviated, Go's single dash)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.policy.defaults import DEFAULT_COMMAND_ALLOW
from gitbot.policy.init import detect_commands, render_policy
from gitbot.policy.judge import knows_program, split_pattern
from gitbot.policy.judge.options import EXACT, GNU, GO, table, walk
from gitbot.policy.judge.words import lit


def _every_signal(repo: Path) -> Path:
    (repo / "tests").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[project]\nname='x'\n[tool.ruff]\n[tool.mypy]\n")
    (repo / "package.json").write_text(json.dumps({"scripts": {"test": "t", "lint": "l", "typecheck": "c",
                                                               "build": "b"}}))
    (repo / "go.mod").write_text("module x\n")
    (repo / "Cargo.toml").write_text("[package]\nname='x'\n")
    (repo / "Makefile").write_text("test:\n\ttrue\ncheck:\n\ttrue\nlint:\n\ttrue\n")
    return repo


def test_every_program_of_the_defaults_and_of_policy_init_has_a_row(tmp_path):
    patterns = list(DEFAULT_COMMAND_ALLOW) + [pattern for pattern, _ in detect_commands(_every_signal(tmp_path))]
    assert len(patterns) > 40
    missing = sorted({split_pattern(pattern)[0] for pattern in patterns} - {
        split_pattern(pattern)[0] for pattern in patterns if knows_program(split_pattern(pattern)[0])})
    assert missing == []
    assert not knows_program("awk")  # a row means something: not every name has one


@pytest.mark.parametrize("words, options, operands", [
    # bundled short options: the first that takes a value takes the rest of the word
    (["sort", "-uo", "out", "in"], [("--output", ["out"])], ["in"]),
    (["sort", "-uoout", "in"], [("--output", ["out"])], ["in"]),
    # a unique prefix of a long option is that option (getopt_long)
    (["sort", "--outp=x", "in"], [("--output", ["x"])], ["in"]),
    (["sort", "--outp", "x", "in"], [("--output", ["x"])], ["in"]),
    # options after operands, and `--` ends them
    (["sort", "in", "-o", "x", "--", "-o"], [("--output", ["x"])], ["in", "-o"]),
])
def test_gnu_options_are_read_as_getopt_long_reads_them(words, options, operands):
    found = walk([lit(word) for word in words], 1, table("o|output=:write k|key="), GNU)
    assert [(option.name, [value.value for value in values]) for _, option, values in found.options] == options
    assert [word.value for _, word in found.operands] == operands


def test_exact_and_go_syntaxes_do_not_abbreviate_or_bundle():
    rg = table("pre=:run e|regexp=")
    assert walk([lit("rg"), lit("--pr=x"), lit("foo")], 1, rg, EXACT).options == []
    go = table("exec=:run o=:write")
    found = walk([lit(word) for word in ("go", "-exec", "./x", "--o=bin", "./...")], 1, go, GO)
    assert [(option.name, values[0].value) for _, option, values in found.options] == [("--exec", "./x"),
                                                                                       ("-o", "bin")]


def test_the_most_dangerous_reading_of_an_ambiguous_abbreviation_wins():
    options = table("output=:write output-indicator-new= outline")
    found = walk([lit("git"), lit("--out=x")], 1, options, GNU)
    assert found.options[0][1].effect == "write"
    found = walk([lit("git"), lit("--output-indicator-new=+")], 1, options, GNU)
    assert found.options[0][1].effect == ""


def test_policy_init_writes_the_python_the_project_uses(tmp_path):
    repo = tmp_path / "project"
    (repo / "tests").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[project]\nname='x'\n")
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text("steps:\n  - run: python3 -m pytest -q\n")
    assert ("python3 -m pytest *" in dict(detect_commands(repo)))
    (repo / "tox.ini").write_text("[testenv]\ncommands = python -m pytest\n    python -m pytest --doctest-modules\n")
    assert ("python -m pytest *" in dict(detect_commands(repo)))
    assert "python -m pytest *" in render_policy(repo)


def test_python_names_match_each_other_in_rules_and_deny_rules(tmp_path):
    strict = Policy(command_allow=("python -m pytest *",), repo=tmp_path)
    for command in ("python -m pytest -q", "python3 -m pytest -q", "python3.12 -m pytest"):
        assert strict.check_command(command).allowed, command
    assert not strict.check_command("python3 -c 'import os'").allowed
    assert not strict.check_command("./python3 -m pytest").allowed  # a path names one file
    denied = Policy(command_allow=("*",), command_deny=("python3 *",), repo=tmp_path)
    assert not denied.check_command("python -c 1").allowed
