"""`gitbot eval mine` on real histories: the tests run for real (through the sandbox) on each candidate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitbot.eval.instances import read_instances
from tests.conftest import git, make_repo, run_gitbot
from tests.eval import demo_set

CALC = "def double(x):\n    return x * 3\n\n\ndef negate(x):\n    return x\n\n\ndef square(x):\n    return x * x\n"
TESTS = ("import pathlib\nimport unittest\n\nfrom calc import double, negate, square\n\n\n"
         "class CalcTest(unittest.TestCase):\n    def test_square(self):\n        self.assertEqual(square(3), 9)\n")


def commit(repo: Path, message: str, edits: dict[str, tuple[str, str]]) -> str:
    for name, (old, new) in edits.items():
        path = repo / name
        text = path.read_text() if path.exists() else ""
        path.write_text(text.replace(old, new, 1) if old else text + new)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def add_test(name: str, body: str) -> tuple[str, str]:
    return "", f"\n    def {name}(self):\n{body}"


@pytest.mark.slow
def test_exactly_the_two_real_fixes_become_instances(tmp_path):
    repo = make_repo(tmp_path / "calc", {"calc.py": CALC, "test_calc.py": TESTS,
                                        ".gitignore": "__pycache__/\n.flaky-state\n"})
    fix_double = commit(repo, "double(2) is 6\n\nUse x * 2 in calc.py.\n\nFixes #4\n",
                        {"calc.py": ("x * 3", "x * 2"),
                         "test_calc.py": add_test("test_double", "        self.assertEqual(double(2), 4)\n")})
    commit(repo, "calc: square with **\n", {"calc.py": ("x * x", "x ** 2"),  # its new test passed before, too
                                            "test_calc.py": add_test("test_square_zero",
                                                                     "        self.assertEqual(square(0), 0)\n")})
    commit(repo, "docs only\n", {"README.md": ("", "calc\n")})
    # The second fix comes as a merge of a branch: first-parent history sees the merge, its change is what
    # the branch brought, and the branch's commit message is the problem statement.
    git(repo, "checkout", "-q", "-b", "negate")
    commit(repo, "negate() returns its argument\n\nnegate(2) should be -2.\n\nFixes #7\n",
           {"calc.py": ("    return x\n", "    return -x\n"),
            "test_calc.py": add_test("test_negate", "        self.assertEqual(negate(2), -2)\n")})
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge pull request #8 from someone/negate", "negate")
    fix_negate = git(repo, "rev-parse", "HEAD").strip()
    # A flaky change: its test leaks state into an ignored file and fails every other run. Without the
    # second run on the commit it would look like a fix: it passes there and fails on the parent.
    commit(repo, "calc: note\n", {"calc.py": ("", "\n\n# squares are never negative\n"),
                                  "test_calc.py": add_test("test_state", (
                                      "        state = pathlib.Path('.flaky-state')\n"
                                      "        if state.exists():\n            state.unlink()\n"
                                      "            self.fail('every other run')\n"
                                      "        state.write_text('x')\n"))})
    before = (git(repo, "status", "--porcelain", "--ignored"), git(repo, "rev-parse", "HEAD"),
              git(repo, "worktree", "list"))
    out = tmp_path / "mined.jsonl"
    proc = run_gitbot(["eval", "mine", "--repo", str(repo), "--max", "20", "--test-cmd", "python3 -m unittest -v",
                       "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    instances, errors = read_instances(out)
    assert errors == []
    assert [i.base_commit for i in instances] == [git(repo, "rev-parse", f"{fix_negate}^1").strip(),
                                                  git(repo, "rev-parse", f"{fix_double}^").strip()]
    negate, double = instances
    assert negate.fail_to_pass == ["test_calc.CalcTest.test_negate"]
    assert double.fail_to_pass == ["test_calc.CalcTest.test_double"]
    assert double.pass_to_pass == ["test_calc.CalcTest.test_square"]
    assert "test_double" in double.test_patch and "a/calc.py" not in double.test_patch
    assert "x * 2" in double.patch and "test_calc" not in double.patch
    assert double.problem_statement == "double(2) is 6" and double.extra["linked_issues"] == ["#4"]
    assert negate.problem_statement == "negate() returns its argument\n\nnegate(2) should be -2."
    assert negate.extra["linked_issues"] == ["#7"] and "-x" in negate.patch
    assert "flaky" in proc.stderr and "no test fails before and passes after" in proc.stderr
    # The user's repository is as it was: no worktree left, nothing changed or added.
    assert (git(repo, "status", "--porcelain", "--ignored"), git(repo, "rev-parse", "HEAD"),
            git(repo, "worktree", "list")) == before


@pytest.mark.slow
def test_the_bundled_set_is_what_mining_the_demo_history_gives(tmp_path):
    rebuilt = demo_set.build(tmp_path / "set")
    bundled, errors = read_instances(demo_set.TARGET / "instances.jsonl")
    assert errors == [] and len(bundled) >= 5
    assert [i.to_dict() for i in rebuilt] == [i.to_dict() for i in bundled]
    for instance in bundled:
        replay = json.loads((demo_set.TARGET / "replays" / f"{instance.instance_id}.json").read_text())
        assert replay == json.loads((tmp_path / "set" / "replays" / f"{instance.instance_id}.json").read_text())


@pytest.mark.slow
def test_pytest_node_ids_are_the_default(tmp_path):
    import shutil
    import subprocess

    python3 = shutil.which("python3")
    if not python3 or subprocess.run([python3, "-m", "pytest", "--version"], capture_output=True,
                                     check=False).returncode:
        pytest.skip("the python3 on PATH (the one the sandbox runs) has no pytest")
    repo = make_repo(tmp_path / "m", {"m.py": "def f():\n    return 1\n",
                                      "tests/test_m.py": "from m import f\n\n\ndef test_old():\n    assert True\n"})
    (repo / "tests" / "conftest.py").write_text(
        "import pathlib\nimport sys\n\nsys.path.insert(0, str(pathlib.Path(__file__).parents[1]))\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "conftest")
    commit(repo, "f() should return 2\n", {"m.py": ("return 1", "return 2"),
                                           "tests/test_m.py": ("", "\n\ndef test_f():\n    assert f() == 2\n")})
    proc = run_gitbot(["eval", "mine", "--repo", str(repo)])
    assert proc.returncode == 0, proc.stderr
    (instance,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert json.loads(instance["FAIL_TO_PASS"]) == ["tests/test_m.py::test_f"]
    assert json.loads(instance["PASS_TO_PASS"]) == ["tests/test_m.py::test_old"] and "test_cmd" not in instance
