"""The edit guardrail: would this edit break the file's syntax (reject it) or add lint (warn)?

SWE-agent measured +3 points from refusing edits that introduce syntax errors: a broken edit
left in place tends to cascade into more failed edits. Only problems the edit *introduces*
count, so a file that was already broken can still be edited. "Introduced" is decided per
kind of problem (error message, or tree-sitter node kind): an edit is rejected when some kind
occurs more often after it than before. Counting by kind rather than by line number keeps
pre-existing problems from looking new just because the edit moved them.

Python is checked with the interpreter's own compiler and with ruff's fatal subset; other
languages with their tree-sitter grammar (ERROR and MISSING nodes). The check works on text,
before anything is written, so a rejected edit never touches the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gitbot.host_programs import host_path
from gitbot.treesitter import language_name, parser_for

# flake8's classic "the code cannot run" selection; everything else pyflakes reports is a warning.
FATAL_RUFF_PREFIXES = ("E9", "F63", "F7", "F82")
RUFF_SELECT = "E9,F63,F7,F82,F"
# How ruff names a parse error, across versions (old: E999; new: no code, or "invalid-syntax").
RUFF_SYNTAX_CODES = (None, "", "E999", "invalid-syntax", "syntax-error")
RUFF_TIMEOUT_SECONDS = 30
SYNTAX = "syntax"
TREE_SITTER = "tree-sitter"


@dataclass(frozen=True)
class Finding:
    line: int  # 1-based
    column: int  # 1-based
    code: str  # "syntax", a ruff rule code such as "F821", or "tree-sitter"
    message: str
    # What makes two findings "the same problem" when counting before vs after; the message by default.
    kind: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.code, self.kind or self.message)

    def describe(self) -> str:
        label = {SYNTAX: "syntax error: ", TREE_SITTER: ""}.get(self.code, f"{self.code} ")
        return f"line {self.line}, column {self.column}: {label}{self.message}"


@dataclass
class GuardrailReport:
    checker: str  # what checked the file, e.g. "Python's compiler and ruff", "none"
    errors: list[Finding] = field(default_factory=list)  # new fatal problems: the edit must be rejected
    warnings: list[Finding] = field(default_factory=list)  # new non-fatal findings, shown after success
    notes: list[str] = field(default_factory=list)  # limits of the check itself (e.g. ruff unavailable)

    @property
    def rejected(self) -> bool:
        return bool(self.errors)


def check_edit(path: Path, before: str | None, after: str) -> GuardrailReport:
    """Compare the file's problems before (None for a new file) and after an edit."""
    if language_name(path) == "python":
        return _check_python(path, before, after)
    parser = parser_for(path)
    if parser is None:
        return GuardrailReport(checker="none")
    return _check_tree_sitter(path, parser, before, after)


# --- tree-sitter -------------------------------------------------------------------------------

def _check_tree_sitter(path: Path, parser, before: str | None, after: str) -> GuardrailReport:
    after_problems = _syntax_nodes(parser, after)
    before_problems = _syntax_nodes(parser, before) if before is not None else []
    report = GuardrailReport(checker=f"the tree-sitter {language_name(path)} grammar")
    report.errors = introduced(after_problems, before_problems, before, after)
    return report


def _syntax_nodes(parser, text: str) -> list[Finding]:
    """ERROR and MISSING nodes, outermost ERROR only (its children are the same problem)."""
    tree = parser.parse(text.encode("utf-8"))
    findings: list[Finding] = []
    stack = [tree.root_node] if tree.root_node.has_error else []
    while stack:
        node = stack.pop()
        row, column = node.start_point
        if node.is_missing:
            findings.append(Finding(row + 1, column + 1, TREE_SITTER, f"missing `{node.type}`",
                                    kind=f"MISSING {node.type}"))
        elif node.is_error:
            snippet = node.text.decode("utf-8", "replace").strip().splitlines()
            near = f" near `{snippet[0][:60]}`" if snippet else ""
            findings.append(Finding(row + 1, column + 1, TREE_SITTER, f"syntax error{near}", kind="ERROR"))
        elif node.has_error:
            stack.extend(reversed(node.children))
    return sorted(findings, key=lambda f: (f.line, f.column))


# --- Python ------------------------------------------------------------------------------------

@dataclass
class _PythonProblems:
    compile_error: Finding | None
    syntax: list[Finding]  # ruff's parse errors (it recovers, so there can be several)
    fatal_lint: list[Finding]
    other_lint: list[Finding]
    ruff_problem: str | None  # why ruff could not be used, if it could not


def _check_python(path: Path, before: str | None, after: str) -> GuardrailReport:
    report = GuardrailReport(checker="Python's compiler and ruff")
    now = _python_problems(path, after)
    if now.ruff_problem:
        report.notes.append(f"ruff was not run ({now.ruff_problem}); only the compiler checked the edit")
    old = _python_problems(path, before) if before is not None else None

    report.errors = introduced(now.syntax, old.syntax if old else [], before, after)
    # compile() stops at the first error, so it can only tell "it compiled before and not now".
    newly_uncompilable = now.compile_error is not None and (old is None or old.compile_error is None)
    if newly_uncompilable:
        if now.syntax or now.ruff_problem:
            if not report.errors:
                report.errors.append(now.compile_error)
        else:
            # ruff's parser knows newer syntax than this interpreter may (PEP 695, PEP 701, ...):
            # refusing would block edits to projects that target a newer Python.
            version = f"{sys.version_info.major}.{sys.version_info.minor}"
            report.warnings.append(Finding(
                now.compile_error.line, now.compile_error.column, SYNTAX,
                f"Python {version} cannot compile this ({now.compile_error.message}); ruff's parser "
                f"accepts it, which is fine only if the project targets a newer Python"))

    old_fatal = old.fatal_lint if old else []
    new_fatal = introduced(now.fatal_lint, old_fatal, before, after)
    if old is not None and old.syntax:
        # ruff does not lint a file it cannot parse, so "before" had no lint to compare with:
        # an edit that repairs the syntax must not be blocked by undefined names it merely uncovered.
        report.warnings.extend(new_fatal)
    else:
        report.errors.extend(new_fatal)
    report.warnings.extend(introduced(now.other_lint, old.other_lint if old else [], before, after))
    report.warnings.sort(key=lambda f: (f.line, f.column))
    return report


def _python_problems(path: Path, text: str) -> _PythonProblems:
    compile_error = _compile_error(path, text)
    diagnostics, ruff_problem = _run_ruff(path, text)
    syntax, fatal, other = [], [], []
    for item in diagnostics:
        location = item.get("location") or {}
        code = item.get("code")
        message = str(item.get("message", "")).removeprefix("SyntaxError: ")
        finding = Finding(int(location.get("row") or 1), int(location.get("column") or 1),
                          SYNTAX if code in RUFF_SYNTAX_CODES else str(code), message)
        if finding.code == SYNTAX:
            syntax.append(finding)
        elif finding.code.startswith(FATAL_RUFF_PREFIXES):
            fatal.append(finding)
        else:
            other.append(finding)
    return _PythonProblems(compile_error, syntax, fatal, other, ruff_problem)


def _compile_error(path: Path, text: str) -> Finding | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings (e.g. invalid escapes) are not errors
        try:
            compile(text, str(path), "exec", dont_inherit=True)
        except SyntaxError as error:
            return Finding(error.lineno or 1, error.offset or 1, SYNTAX, error.msg)
        except ValueError as error:  # NUL bytes in the source
            return Finding(1, 1, SYNTAX, str(error))
        except (RecursionError, MemoryError):
            return None  # too deeply nested for this check; not evidence of a syntax error
    return None


def _run_ruff(path: Path, text: str) -> tuple[list[dict], str | None]:
    try:
        from ruff.__main__ import find_ruff_bin

        binary = find_ruff_bin()
    except (ImportError, FileNotFoundError) as error:
        return [], f"ruff is not installed: {error}"
    # --isolated: the repository's own ruff configuration must not change what counts as fatal.
    command = [str(binary), "check", "--no-cache", "--isolated", "--exit-zero", "--output-format", "json",
               "--select", RUFF_SELECT, "--stdin-filename", str(path), "-"]
    # ruff needs nothing from the environment; passing none keeps secrets out of it.
    environment = {"PATH": host_path(), "LANG": "C.UTF-8"}
    try:
        completed = subprocess.run(command, input=text.encode("utf-8", "surrogatepass"), capture_output=True,
                                   timeout=RUFF_TIMEOUT_SECONDS, env=environment, check=False)
    except subprocess.TimeoutExpired:
        return [], f"ruff took longer than {RUFF_TIMEOUT_SECONDS} s"
    except OSError as error:
        return [], f"ruff could not start: {error}"
    try:
        diagnostics = json.loads(completed.stdout.decode("utf-8", "replace") or "[]")
    except json.JSONDecodeError:
        stderr = completed.stderr.decode("utf-8", "replace").strip()
        return [], f"ruff failed (exit {completed.returncode}): {stderr[:200]}"
    return [d for d in diagnostics if isinstance(d, dict)], None


# --- comparing before and after ----------------------------------------------------------------

def introduced(after: list[Finding], before: list[Finding], before_text: str | None,
               after_text: str) -> list[Finding]:
    """The findings of `after` that outnumber their kind in `before`.

    When a kind gained k occurrences, the k reported are preferably on lines whose text did not
    exist before the edit: those are the edit's own lines.
    """
    surplus = Counter(f.key for f in after)
    surplus.subtract(Counter(f.key for f in before))
    old_lines = set(before_text.split("\n")) if before_text is not None else set()
    new_lines = after_text.split("\n")

    def existed_before(finding: Finding) -> bool:
        index = finding.line - 1
        return 0 <= index < len(new_lines) and new_lines[index] in old_lines

    picked = []
    for finding in sorted(after, key=existed_before):  # stable: the edit's own lines first
        if surplus[finding.key] > 0:
            picked.append(finding)
            surplus[finding.key] -= 1
    return sorted(picked, key=lambda f: (f.line, f.column))
