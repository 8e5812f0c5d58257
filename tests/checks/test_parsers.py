"""The parsers on the real output of the real tools, run here on a small project with known faults.

Each expected location is found in the sample source by a marker, so the assertions say "the
parser points at the line that really failed", not "the parser repeats a captured string".
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from gitbot.checks.parsers import parse_output, strip_ansi

CALC = '''import os


def add(a: int, b: int) -> int:
    return a - b  # BUG-ADD


def name() -> int:
    return "x"  # BUG-TYPE
'''

TEST_CALC = '''import pytest

from pkg.calc import add


def test_add():
    assert add(1, 2) == 3  # FAIL-ASSERT


def test_ok():
    assert True


def helper(x):
    raise ValueError(f"bad {x}")  # FAIL-RAISE


def test_raises():
    helper(3)


def test_fixture_error(missing_fixture):  # ERROR-SETUP
    pass


class TestGroup:
    def test_in_class(self):
        assert add(2, 2) == 4  # FAIL-CLASS


@pytest.mark.parametrize("text", ["a b"])
def test_param(text):
    assert text == "ab"  # FAIL-PARAM
'''

TEST_BROKEN = "import pkg.nothere  # COLLECT-ERROR\n"

TEST_UT = '''import unittest

from pkg.calc import add


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(1, 2), 3)  # UT-FAIL

    def test_boom(self):
        raise RuntimeError("boom")  # UT-ERROR

    def test_fine(self):
        pass
'''

# Subtests: pytest 9's `subtests` fixture and unittest's subTest (run by pytest and by unittest).
TEST_SUB = '''import unittest


def test_items(subtests):
    for i in range(3):
        with subtests.test(i=i):
            assert i == 0  # SUB-PT


class SubTest(unittest.TestCase):
    def test_sub(self):
        for i in range(2):
            with self.subTest("labelled", i=i):
                self.assertEqual(i, 0)  # SUB-UT
'''

FILES = {"pkg/__init__.py": "", "pkg/calc.py": CALC, "tests/__init__.py": "", "tests/test_calc.py": TEST_CALC,
         "tests/test_broken.py": TEST_BROKEN, "tests/test_ut.py": TEST_UT, "tests/test_sub.py": TEST_SUB}


def line_of(marker: str) -> tuple[str, int]:
    for path, text in FILES.items():
        for number, line in enumerate(text.splitlines(), 1):
            if marker in line:
                return path, number
    raise AssertionError(marker)


def location(marker: str) -> str:
    path, line = line_of(marker)
    return f"{path}:{line}"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sample")
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def run(root: Path, *argv: str) -> str:
    proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "NO_COLOR": "1"})
    assert proc.returncode != 0, "the sample must fail this check"
    return proc.stdout + proc.stderr


def by_name(parsed):
    return {f.name: f for f in parsed.failures}


@pytest.mark.slow
def test_pytest_failures_errors_and_collection_errors(project):
    out = run(project, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/test_calc.py",
              "tests/test_broken.py", "--continue-on-collection-errors")
    parsed = parse_output(out, project)
    assert parsed.format == "pytest"
    assert "failed" in parsed.summary and "error" in parsed.summary
    failures = by_name(parsed)
    assert set(failures) == {"tests/test_calc.py::test_add", "tests/test_calc.py::test_raises",
                             "tests/test_calc.py::TestGroup::test_in_class",
                             "tests/test_calc.py::test_param[a b]", "tests/test_calc.py::test_fixture_error",
                             "tests/test_broken.py"}
    assert failures["tests/test_calc.py::test_add"].kind == "failed"
    assert failures["tests/test_calc.py::test_add"].location == location("FAIL-ASSERT")
    assert "assert -1 == 3" in failures["tests/test_calc.py::test_add"].message
    # The exception surfaced in a helper: the location is the raise, the last frame.
    assert failures["tests/test_calc.py::test_raises"].location == location("FAIL-RAISE")
    assert failures["tests/test_calc.py::test_raises"].message == "ValueError: bad 3"
    assert failures["tests/test_calc.py::TestGroup::test_in_class"].location == location("FAIL-CLASS")
    assert failures["tests/test_calc.py::test_param[a b]"].location == location("FAIL-PARAM")
    setup = failures["tests/test_calc.py::test_fixture_error"]
    assert setup.kind == "error" and setup.location == location("ERROR-SETUP")
    assert "missing_fixture" in setup.excerpt
    broken = failures["tests/test_broken.py"]
    assert broken.kind == "collection error" and broken.location == location("COLLECT-ERROR")
    assert "ModuleNotFoundError" in broken.message


@pytest.mark.slow
def test_pytest_interrupted_by_a_collection_error(project):
    out = run(project, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests")
    parsed = parse_output(out, project)
    assert parsed.format == "pytest"
    assert [f.name for f in parsed.failures] == ["tests/test_broken.py"]
    assert parsed.failures[0].kind == "collection error"
    assert "1 error" in parsed.summary


@pytest.mark.slow
def test_pytest_short_tracebacks_and_colour(project):
    out = run(project, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tb=short", "--color=yes",
              "tests/test_calc.py")
    assert "\x1b[" in out  # the colour codes are really there
    parsed = parse_output(out, project)
    failures = by_name(parsed)
    assert failures["tests/test_calc.py::test_add"].location == location("FAIL-ASSERT")
    assert failures["tests/test_calc.py::test_raises"].location == location("FAIL-RAISE")
    assert all("\x1b" not in f.excerpt + f.message for f in parsed.failures)


@pytest.mark.slow
def test_pytest_without_short_summary_still_finds_failures(project):
    out = run(project, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rN", "tests/test_calc.py")
    assert "short test summary" not in out
    failures = by_name(parse_output(out, project))
    assert failures["test_add"].location == location("FAIL-ASSERT")
    assert failures["TestGroup.test_in_class"].location == location("FAIL-CLASS")


@pytest.mark.slow
def test_pytest_subtests(project):
    out = run(project, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests/test_sub.py")
    parsed = parse_output(out, project)
    assert "subtests passed" in parsed.summary and "failed" in parsed.summary
    failures = by_name(parsed)
    # Each failed subtest, by its parameters; not the parent "contains 2 failed subtests".
    assert set(failures) == {"tests/test_sub.py::test_items (i=1)", "tests/test_sub.py::test_items (i=2)",
                             "tests/test_sub.py::SubTest::test_sub [labelled] (i=1)"}
    assert failures["tests/test_sub.py::test_items (i=2)"].location == location("SUB-PT")
    assert failures["tests/test_sub.py::test_items (i=2)"].message == "assert 2 == 0"
    assert failures["tests/test_sub.py::test_items (i=2)"].kind == "subtest failed"
    assert failures["tests/test_sub.py::SubTest::test_sub [labelled] (i=1)"].location == location("SUB-UT")


@pytest.mark.slow
def test_pytest_line_tracebacks(project):
    out = run(project, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tb=line", "tests/test_calc.py",
              "tests/test_sub.py", "tests/test_ut.py")
    failures = by_name(parse_output(out, project))
    assert failures["tests/test_calc.py::test_add"].location == location("FAIL-ASSERT")
    assert failures["tests/test_calc.py::test_param[a b]"].location == location("FAIL-PARAM")
    assert failures["tests/test_sub.py::test_items (i=1)"].location == location("SUB-PT")
    assert "assert 1 == 0" in failures["tests/test_sub.py::test_items (i=1)"].excerpt
    # unittest's own frame (unittest/case.py) is no help: the test's file is named instead.
    assert failures["tests/test_ut.py::CalcTest::test_add"].location == "tests/test_ut.py"


def test_unittest_subtests(project):
    out = run(project, sys.executable, "-m", "unittest", "tests.test_sub")
    failures = by_name(parse_output(out, project))
    assert set(failures) == {"tests.test_sub.SubTest.test_sub [labelled] (i=1)"}
    assert failures["tests.test_sub.SubTest.test_sub [labelled] (i=1)"].location == location("SUB-UT")
    assert failures["tests.test_sub.SubTest.test_sub [labelled] (i=1)"].message == "AssertionError: 1 != 0"


def test_unittest_failures_and_errors(project):
    out = run(project, sys.executable, "-m", "unittest", "tests.test_ut")
    parsed = parse_output(out, project)
    assert parsed.format == "unittest"
    assert parsed.summary.startswith("Ran 3 tests")
    failures = by_name(parsed)
    assert failures["tests.test_ut.CalcTest.test_add"].kind == "failed"
    assert failures["tests.test_ut.CalcTest.test_add"].location == location("UT-FAIL")
    assert failures["tests.test_ut.CalcTest.test_add"].message == "AssertionError: -1 != 3"
    assert failures["tests.test_ut.CalcTest.test_boom"].kind == "error"
    assert failures["tests.test_ut.CalcTest.test_boom"].location == location("UT-ERROR")


def test_unittest_import_error(project):
    out = run(project, sys.executable, "-m", "unittest", "tests.test_broken")
    parsed = parse_output(out, project)
    assert parsed.format == "unittest"
    (failure,) = parsed.failures
    assert failure.kind == "import error"
    assert failure.location == location("COLLECT-ERROR")
    assert "ModuleNotFoundError" in failure.message


@pytest.mark.parametrize("output_format", ["full", "concise"])
def test_ruff(project, output_format):
    out = run(project, sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache",
              f"--output-format={output_format}", "pkg", "tests/test_broken.py")
    parsed = parse_output(out, project)
    assert parsed.format == "diagnostics"
    assert [(f.name, f.location) for f in parsed.failures] == [("F401", "pkg/calc.py:1:8"),
                                                              ("F401", "tests/test_broken.py:1:8")]
    assert "`os` imported but unused" in parsed.failures[0].message
    assert parsed.summary.startswith("Found 2 errors")


def test_flake8(project):
    if importlib.util.find_spec("flake8") is None:
        pytest.skip("flake8 is not installed")
    out = run(project, sys.executable, "-m", "flake8", "--isolated", "--select=F", "pkg",
              "tests/test_broken.py")
    parsed = parse_output(out, project)
    assert [(f.name, f.location) for f in parsed.failures] == [("F401", "pkg/calc.py:1:1"),
                                                              ("F401", "tests/test_broken.py:1:1")]


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], ["--pretty", "--show-column-numbers"]])
def test_mypy(project, extra):
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed")
    # The cache (in the sample project) lets the second variant skip most of the work.
    cache = str(project / ".mypy_cache")
    out = run(project, sys.executable, "-m", "mypy", "--cache-dir", cache, *extra, "pkg")
    parsed = parse_output(out, project)
    assert parsed.format == "diagnostics"
    (failure,) = parsed.failures
    path, line = line_of("BUG-TYPE")
    assert (failure.path, failure.line) == (path, line)
    assert failure.name == "return-value" and failure.kind == "error"
    assert "Incompatible return value type" in failure.message
    assert parsed.summary.startswith("Found 1 error")


def test_pyright_captured_output():
    data = Path(__file__).parent / "data"
    out = (data / "basedpyright.txt").read_text()
    parsed = parse_output(out, Path("/tmp/gitbot-pyright-sample"))
    source = (data / "pyright_sample/pkg/calc.py.txt").read_text().splitlines()
    # Errors first (warnings rarely fail the check), each pointing at a real line of the sample.
    assert [(f.kind, f.location, f.name) for f in parsed.failures] == [
        ("error", "pkg/calc.py:9:12", "reportReturnType"), ("error", "pkg/calc.py:13:12", "reportReturnType"),
        ("warning", "pkg/calc.py:1:8", "reportUnusedImport")]
    assert source[8].strip() == 'return "x"' and source[12].strip() == "return sum(values)"
    assert parsed.summary == "2 errors, 1 warning, 0 notes"


def test_generic_fallback_keeps_the_tail():
    lines = [f"step {i}" for i in range(500)] + ["Error: the build broke at the end"]
    parsed = parse_output("\n".join(lines))
    assert parsed.format == "generic" and not parsed.failures
    assert parsed.tail.endswith("Error: the build broke at the end")
    assert "step 0\n" not in parsed.tail


def test_strip_ansi():
    assert strip_ansi("\x1b[31mFAILED\x1b[0m x\r\n") == "FAILED x\n"
