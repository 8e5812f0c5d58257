"""Read what failed out of a check's output: pytest, unittest, `path:line:col: message` tools, or a tail.

Each parser returns None when the output is not its format; `parse_output` tries them in order
(pytest, unittest, diagnostics) and falls back to the tail of the output. Paths under the
repository root are made relative so the agent can open them directly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# The tail kept by the generic fallback.
GENERIC_TAIL_LINES = 80
# A single failure's excerpt is cut to this many characters (head and tail kept).
EXCERPT_CHARS = 2400


@dataclass(frozen=True)
class Failure:
    kind: str  # "failed", "error", "collection error", "error", "warning" … (what the tool calls it)
    name: str  # test id, or the rule code, or the file for diagnostics
    message: str = ""
    path: str | None = None
    line: int | None = None
    column: int | None = None
    excerpt: str = ""  # the part of the output about this failure

    @property
    def location(self) -> str:
        if not self.path:
            return ""
        return self.path + (f":{self.line}" if self.line else "") + (f":{self.column}" if self.column else "")


@dataclass
class ParsedOutput:
    format: str  # "pytest", "unittest", "diagnostics", "generic"
    failures: list[Failure] = field(default_factory=list)
    summary: str = ""  # the tool's own closing line, e.g. "2 failed, 1 passed in 0.03s"
    tail: str = ""  # generic: the last lines of output


def strip_ansi(text: str) -> str:
    return ANSI_ESCAPE.sub("", text).replace("\r\n", "\n")


def parse_output(output: str, root: Path | None = None) -> ParsedOutput:
    text = strip_ansi(output)
    relative = _relativizer(root)
    for parser in (parse_pytest, parse_unittest, parse_diagnostics):
        parsed = parser(text, relative)
        if parsed is not None and parsed.failures:
            return parsed
    lines = text.rstrip("\n").splitlines()
    return ParsedOutput(format="generic", tail="\n".join(lines[-GENERIC_TAIL_LINES:]))


def _relativizer(root: Path | None):
    prefixes = []
    if root is not None:
        for candidate in {str(root), str(Path(root).resolve())}:
            prefixes.append(candidate.rstrip("/") + "/")

    def relative(path: str) -> str:
        path = path.strip()
        for prefix in prefixes:
            if path.startswith(prefix):
                return path[len(prefix):]
        return path.removeprefix("./")

    return relative


def cut(text: str, limit: int = EXCERPT_CHARS) -> str:
    """Head and tail of `text` within `limit` characters; the middle is where the least is lost."""
    text = text.strip("\n")
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head - 40
    return f"{text[:head]}\n[… {len(text) - head - tail:,} characters cut …]\n{text[-tail:]}"


# ---------------------------------------------------------------- pytest

PYTEST_BANNER_LOOSE = re.compile(r"^=+ (.+?) =+$")
PYTEST_SECTION = re.compile(r"^_{3,} (.+?) _{3,}$")
# A node id may hold spaces only inside its [parameters]: tests/t.py::test_p[a b]
PYTEST_NODEID = r"(?:[^\s\[]|\[[^\]]*\])+"
PYTEST_SUMMARY_ITEM = re.compile(rf"^(FAILED|ERROR|XPASS\(strict\)) ({PYTEST_NODEID})(?: - (.*))?$")
# A failed subtest (pytest 9's `subtests` fixture, unittest's subTest): its message and/or parameters come
# first:  SUBFAILED(i=1) t.py::test_x - …   SUBFAILED[custom msg] (i=(1, 2)) t.py::T::test_y - …
PYTEST_SUBFAILED = re.compile(rf"^SUBFAILED((?:\[[^\]]*\])? ?(?:\(.*?\))?) ({PYTEST_NODEID}::{PYTEST_NODEID})"
                              r"(?: - (.*))?$")
# The parent of failed subtests, reported as a failure of its own.
PYTEST_SUBTESTS_PARENT = re.compile(r"^contains \d+ failed subtests?$")
PYTEST_FINAL = re.compile(r"^(?:=+ )?((?:\d+ (?:subtests? )?(?:failed|passed|errors?|skipped|xfailed|xpassed|"
                          r"warnings?|deselected|rerun)(?:, )?)+ in [\d.]+s(?: \([^)]*\))?)(?: =+)?$")
PYTEST_NO_TESTS = re.compile(r"^(?:=+ )?(no tests ran in [\d.]+s)(?: =+)?$")
# "tests/test_x.py:5: AssertionError" (--tb=long/auto), "tests/test_x.py:5: in test_x" (--tb=short)
TRACEBACK_LOCATION = re.compile(r"^(\S[^:\n]*?\.py):(\d+): (.*)$")
SETUP_ERROR_FILE = re.compile(r"^file (.+?), line (\d+)$")
PYTEST_E_LINE = re.compile(r"^E\s+(.*)$")


def parse_pytest(text: str, relative) -> ParsedOutput | None:
    lines = text.splitlines()
    banners = [(i, m.group(1)) for i, line in enumerate(lines) if (m := PYTEST_BANNER_LOOSE.match(line))]
    has_pytest_banner = any(name in ("FAILURES", "ERRORS", "short test summary info") or
                            name.startswith("test session starts") for _, name in banners)
    summary = ""
    for line in reversed(lines):
        if m := (PYTEST_FINAL.match(line) or PYTEST_NO_TESTS.match(line)):
            summary = m.group(1)
            break
    if not has_pytest_banner and not summary:
        return None

    sections = _pytest_sections(lines, banners)
    summary_items = _pytest_short_summary(lines, banners)
    line_blocks = _pytest_line_blocks(lines, banners)  # --tb=line
    failures: list[Failure] = []
    used_sections: set[str] = {title for title, body in sections.items()
                               if PYTEST_SUBTESTS_PARENT.match(body.strip())}
    for kind, nodeid, message, subtest in summary_items:
        title, body = _match_section(sections, kind, nodeid, subtest)
        if title:
            used_sections.add(title)
        elif line_blocks:
            body = _take_line_block(line_blocks, message)
        name = f"{nodeid} {subtest}" if subtest else nodeid
        failure = _pytest_failure(kind, nodeid, message, body, relative, name=name)
        failures.append(failure)
    # Sections with no summary line (pytest -rN, or a summary cut from the output): still failures.
    for title, body in sections.items():
        if title in used_sections:
            continue
        kind, nodeid = _kind_from_section_title(title)
        failures.append(_pytest_failure(kind, nodeid, "", body, relative))
    if not summary_items:  # --tb=line without a short summary: one failure per location line
        for block in line_blocks:
            m = TRACEBACK_LOCATION.match(block.splitlines()[-1])
            failures.append(_pytest_failure("failed", relative(m.group(1)) if m else "failure", "", block,
                                            relative))
    return ParsedOutput(format="pytest", failures=failures, summary=summary)


def _pytest_line_blocks(lines: list[str], banners: list[tuple[int, str]]) -> list[str]:
    """With --tb=line each failure is its `E` lines and one `path:line: message` line, no section titles."""
    blocks: list[str] = []
    for index, (start, name) in enumerate(banners):
        if name not in ("FAILURES", "ERRORS"):
            continue
        end = banners[index + 1][0] if index + 1 < len(banners) else len(lines)
        region = lines[start + 1:end]
        if any(PYTEST_SECTION.match(line) for line in region):
            continue  # long/short/native tracebacks: sections with titles, read by _pytest_sections
        current: list[str] = []
        for line in region:
            if PYTEST_SUBTESTS_PARENT.match(line.strip()):
                current = []
                continue
            current.append(line)
            if TRACEBACK_LOCATION.match(line):
                blocks.append("\n".join(current))
                current = []
    return blocks


def _take_line_block(blocks: list[str], message: str) -> str:
    """The first --tb=line block whose location line ends with the summary's message (which pytest may
    have cut to the terminal width); removed from `blocks`."""
    wanted = message.strip().removesuffix("...").strip()
    for index, block in enumerate(blocks):
        m = TRACEBACK_LOCATION.match(block.splitlines()[-1])
        said = m.group(3).strip() if m else ""
        if wanted and (said == wanted or said.startswith(wanted)):
            return blocks.pop(index)
    return ""


def _pytest_sections(lines: list[str], banners: list[tuple[int, str]]) -> dict[str, str]:
    """Title of each `____ name ____` block inside the FAILURES and ERRORS banners → its text."""
    sections: dict[str, str] = {}
    for index, (start, name) in enumerate(banners):
        if name not in ("FAILURES", "ERRORS"):
            continue
        end = banners[index + 1][0] if index + 1 < len(banners) else len(lines)
        title, body = None, []
        for line in lines[start + 1:end]:
            m = PYTEST_SECTION.match(line)
            # "_ _ _ _" separators between frames of one traceback are not titles.
            if m and not set(m.group(1)) <= {"_", " "}:
                if title is not None:
                    sections[title] = "\n".join(body)
                title, body = m.group(1), []
            elif title is not None:
                body.append(line)
        if title is not None:
            sections[title] = "\n".join(body)
    return sections


def _pytest_short_summary(lines: list[str], banners: list[tuple[int, str]]) -> list[tuple[str, str, str, str]]:
    """(kind, node id, message, subtest description) of each line of the short test summary. The
    parent of failed subtests ("contains 2 failed subtests") is left out: its subtests are listed."""
    items = []
    starts = [i for i, name in banners if name == "short test summary info"]
    # Without the banner (pytest -q -rN prints none) FAILED/ERROR lines can still stand alone.
    scan = lines[starts[-1] + 1:] if starts else lines
    for line in scan:
        if m := PYTEST_SUMMARY_ITEM.match(line):
            kind = {"FAILED": "failed", "ERROR": "error", "XPASS(strict)": "xpass (strict)"}[m.group(1)]
            items.append((kind, m.group(2), m.group(3) or "", ""))
        elif m := PYTEST_SUBFAILED.match(line):
            items.append(("subtest failed", m.group(2), m.group(3) or "", m.group(1).strip()))
    with_subtests = {nodeid for kind, nodeid, _, _ in items if kind == "subtest failed"}
    return [item for item in items
            if not (item[1] in with_subtests and item[0] == "failed" and PYTEST_SUBTESTS_PARENT.match(item[2]))]


def _section_title_for(kind: str, nodeid: str, subtest: str = "") -> list[str]:
    """The titles pytest gives the section of a summary item."""
    parts = nodeid.split("::")
    if len(parts) == 1:  # a module: collection error
        return [f"ERROR collecting {nodeid}"]
    dotted = ".".join(parts[1:])
    if subtest:
        return [f"{dotted} {subtest}", f"{parts[-1]} {subtest}"]
    if kind == "error":
        return [f"ERROR at setup of {dotted}", f"ERROR at teardown of {dotted}", dotted]
    return [dotted, parts[-1]]


def _match_section(sections: dict[str, str], kind: str, nodeid: str, subtest: str = "") -> tuple[str | None, str]:
    for title in _section_title_for(kind, nodeid, subtest):
        if title in sections:
            return title, sections[title]
    return None, ""


def _kind_from_section_title(title: str) -> tuple[str, str]:
    if title.startswith("ERROR collecting "):
        return "collection error", title.removeprefix("ERROR collecting ")
    for prefix in ("ERROR at setup of ", "ERROR at teardown of "):
        if title.startswith(prefix):
            return "error", title.removeprefix(prefix)
    return "failed", title


def _pytest_failure(kind: str, nodeid: str, message: str, body: str, relative, *, name: str = "") -> Failure:
    if kind == "error" and "::" not in nodeid:
        kind = "collection error"
    path, line = None, None
    body_lines = body.splitlines()
    # The last location line is where the exception surfaced; prefer one under the repository.
    locations = [(relative(m.group(1)), int(m.group(2))) for b in body_lines
                 if (m := TRACEBACK_LOCATION.match(b))]
    inside = [loc for loc in locations if not loc[0].startswith("/")]
    if inside:
        path, line = inside[-1]
    elif locations and "::" not in nodeid:
        path, line = locations[-1]
    # Only frames outside the repository (the standard library's unittest under --tb=line): the test's
    # own file says more than unittest/case.py:715.
    elif m := next((SETUP_ERROR_FILE.match(b) for b in body_lines if SETUP_ERROR_FILE.match(b)), None):
        path, line = relative(m.group(1)), int(m.group(2))
    if path is None:
        path = relative(nodeid.split("::")[0])
    if not message:
        e_lines = [m.group(1) for b in body_lines if (m := PYTEST_E_LINE.match(b))]
        message = e_lines[0] if e_lines else ""
    return Failure(kind=kind, name=name or nodeid, message=message.strip(), path=path, line=line,
                   excerpt=cut(body) if body.strip() else "")


# ---------------------------------------------------------------- unittest

UNITTEST_RULE = "=" * 70
UNITTEST_DASHES = "-" * 70
# "FAIL: test_x (pkg.mod.Class.test_x)", then for a subTest its message and/or parameters:
# "… [custom message]", "… (i=1)", "… [message] (i=(1, 2))".
UNITTEST_HEADER = re.compile(r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (\S+)(?: \(([^()\s]+)\))?(?: (\[.*|\(.*))?$")
UNITTEST_FRAME = re.compile(r'^\s*File "(.+?)", line (\d+), in (.+)$')
UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s$")
UNITTEST_RESULT = re.compile(r"^(FAILED \(.*\)|OK(?: \(.*\))?)$")


def parse_unittest(text: str, relative) -> ParsedOutput | None:
    lines = text.splitlines()
    ran = next((i for i in range(len(lines) - 1, -1, -1) if UNITTEST_RAN.match(lines[i])), None)
    if ran is None:
        return None
    result = next((line for line in lines[ran + 1:] if UNITTEST_RESULT.match(line)), "")
    summary = lines[ran] + (f" — {result}" if result else "")
    failures = []
    i = 0
    while i < len(lines):
        if lines[i] == UNITTEST_RULE and i + 2 < len(lines) and (m := UNITTEST_HEADER.match(lines[i + 1])):
            # Python 3.11+: "test_x (pkg.mod.Class.test_x)"; older: "test_x (pkg.mod.Class)".
            method, where, subtest = m.group(2), m.group(3) or "", m.group(4) or ""
            test_id = where if where.endswith("." + method) else (f"{where}.{method}" if where else method)
            if subtest:
                test_id = f"{test_id} {subtest}"
            j = i + 2
            while j < len(lines) and lines[j] != UNITTEST_DASHES:
                j += 1  # a docstring line may stand between the header and the dashes
            k = j + 1
            while k < len(lines) and lines[k] not in (UNITTEST_RULE, UNITTEST_DASHES):
                k += 1
            body = "\n".join(lines[j + 1:k])
            failures.append(_unittest_failure(m.group(1), test_id, body, relative))
            i = k
            continue
        i += 1
    return ParsedOutput(format="unittest", failures=failures, summary=summary)


def _unittest_failure(kind_word: str, test_id: str, body: str, relative) -> Failure:
    frames = [(relative(m.group(1)), int(m.group(2))) for line in body.splitlines()
              if (m := UNITTEST_FRAME.match(line))]
    inside = [f for f in frames if not f[0].startswith("/")]
    path, line = (inside or frames or [(None, None)])[-1]
    message_lines = [line for line in body.splitlines() if line.strip() and not line.startswith(" ")]
    message = message_lines[-1] if message_lines else ""
    kind = {"FAIL": "failed", "ERROR": "error", "UNEXPECTED SUCCESS": "unexpected success"}[kind_word]
    if test_id.startswith("unittest.loader._FailedTest"):
        kind = "import error"
    return Failure(kind=kind, name=test_id, message=message, path=path, line=line, excerpt=cut(body))


# ---------------------------------------------------------------- path:line:col diagnostics

# ruff --output-format=concise, flake8, pycodestyle, pylint (parseable), mypy, gcc-style tools:
#   pkg/calc.py:1:8: F401 [*] `os` imported but unused
#   pkg/calc.py:9: error: Incompatible return value type  [return-value]
DIAGNOSTIC = re.compile(r"^(?P<path>[^\s:][^:\n]*?):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<msg>\S.*)$")
# pyright / basedpyright:   /abs/pkg/calc.py:9:12 - error: Type "…" is not assignable …
PYRIGHT = re.compile(r"^\s+(?P<path>\S.*?):(?P<line>\d+):(?P<col>\d+) - (?P<sev>error|warning|information): "
                     r"(?P<msg>.*)$")
# ruff's default ("full") format and rustc-like tools put the location under the message:
#   F401 [*] `os` imported but unused
#    --> pkg/calc.py:1:8
ARROW_LOCATION = re.compile(r"^\s*-->\s*(?P<path>\S.*?):(?P<line>\d+)(?::(?P<col>\d+))?\s*$")
MYPY_SEVERITY = re.compile(r"^(error|warning|note): (.*)$")
DIAGNOSTIC_EXCERPT_CHARS = 700
# Lines that end a tool's report and are not diagnostics.
DIAGNOSTIC_SUMMARY = re.compile(r"^(Found \d+ errors?.*|Success: .*|\d+ errors?, \d+ warnings?.*"
                                r"|All checks passed!|\[\*\] \d+ fixable.*"
                                r"|\d+ files? (?:would be )?reformatted.*)$")


def parse_diagnostics(text: str, relative) -> ParsedOutput | None:
    lines = text.splitlines()
    failures: list[Failure] = []
    summary = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if DIAGNOSTIC_SUMMARY.match(line.strip()):
            summary = (summary + " " + line.strip()).strip()
            i += 1
            continue
        m = PYRIGHT.match(line) or DIAGNOSTIC.match(line)
        arrow = None if m else ARROW_LOCATION.match(line)
        if m is None and arrow is None:
            i += 1
            continue
        # The lines that belong to this diagnostic: indented continuation / code frame, up to a blank line
        # or the next diagnostic.
        j = i + 1
        while j < len(lines) and lines[j].strip() and not DIAGNOSTIC.match(lines[j]) \
                and not PYRIGHT.match(lines[j]) and not DIAGNOSTIC_SUMMARY.match(lines[j].strip()):
            if ARROW_LOCATION.match(lines[j]) or (j + 1 < len(lines) and ARROW_LOCATION.match(lines[j + 1])):
                break
            j += 1
        if m is not None:
            failure = _diagnostic_failure(m, relative, "\n".join(lines[i:j]))
            if failure is not None:
                failures.append(failure)
            elif failures and MYPY_SEVERITY.match(m.group("msg")):  # a mypy note: context for the last error
                last = failures[-1]
                failures[-1] = Failure(**{**last.__dict__, "excerpt": cut(last.excerpt + "\n" + line,
                                                                          DIAGNOSTIC_EXCERPT_CHARS)})
        else:
            message = _previous_nonblank(lines, i)
            start = i - 1 if i > 0 and lines[i - 1].strip() else i
            code = message.partition(" ")[0]
            name = code.rstrip(":") if re.fullmatch(r"[A-Za-z][\w-]*\d*:?", code) else "diagnostic"
            failures.append(Failure(kind="error", name=name, message=message,
                                    path=relative(arrow.group("path")), line=int(arrow.group("line")),
                                    column=int(arrow.group("col")) if arrow.group("col") else None,
                                    excerpt=cut("\n".join(lines[start:j]), DIAGNOSTIC_EXCERPT_CHARS)))
        i = j
    if not failures:
        return None
    # Errors first: a type checker's warnings rarely fail the check.
    failures.sort(key=lambda f: f.kind != "error")
    return ParsedOutput(format="diagnostics", failures=failures, summary=summary)


def _previous_nonblank(lines: list[str], index: int) -> str:
    for k in range(index - 1, -1, -1):
        if lines[k].strip():
            return lines[k].strip()
    return ""


def _diagnostic_failure(m: re.Match, relative, block: str) -> Failure | None:
    msg = m.group("msg").strip()
    path = relative(m.group("path"))
    if any(ch.isspace() for ch in path):
        return None  # prose that happens to contain "x:1: y", not a path
    if "sev" in m.groupdict() and m.groupdict().get("sev"):
        kind = m.group("sev")
        if kind == "information":
            return None
    elif sev := MYPY_SEVERITY.match(msg):
        kind, msg = sev.group(1), sev.group(2)
        if kind == "note":
            return None
    else:
        kind = "error"
    code = msg.split(" ", 1)[0]
    name = code if re.fullmatch(r"[A-Z]+\d+", code) else path
    # mypy ends the message with "[return-value]", pyright with "(reportReturnType)", maybe on a wrapped line.
    if name == path and (rule := re.search(r"\[([a-z][a-z-]+)\]$|\((report\w+)\)$", block, re.MULTILINE)):
        name = rule.group(1) or rule.group(2)
    return Failure(kind=kind, name=name, message=msg, path=path, line=int(m.group("line")),
                   column=int(m.group("col")) if m.group("col") else None,
                   excerpt=cut(block, DIAGNOSTIC_EXCERPT_CHARS))
