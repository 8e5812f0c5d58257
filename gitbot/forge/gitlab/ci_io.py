"""Talking to a GitLab CI job: the job log on stdout, the summary and the outputs as files.

GitLab's log has no commands to switch off (nothing like `::add-mask::`), but it does interpret two
kinds of bytes a line may carry: ANSI escapes (ESC …), which the log viewer renders and which can
hide or recolour text, and carriage returns, which make the viewer overwrite the line. Its
collapsible sections are built from both (`ESC[0Ksection_start:TIME:NAME CR ESC[0K`). So every line
printed here — gitbot's own too, since its lines quote branch names, paths and logins — is redacted
of known secrets and has every control character written as a visible `\\x1b`, and the words
`section_start:`/`section_end:` are broken, so nothing in it can open or close a section or rewrite
a line. The only escapes in the log are the colours this module adds around a warning or error.

The runner masks masked CI/CD variables in the log on its own; redaction here also covers values it
does not know (the model key passed as a plain variable, the token's encoded forms).

The summary is a Markdown file and the outputs a dotenv file, both in the output directory
(`GITBOT_OUTPUT_DIR`, by default `$CI_PROJECT_DIR/.gitbot-out`): the component keeps them as
artifacts, the outputs as an `artifacts:reports:dotenv` report whose variables later jobs receive.
The directory holds a `.gitignore` of `*`. It may be inside the work tree, where the agent's commands
can write: out_dir.py says how gitbot writes there (never through a planted symlink), keeps it out of
commits and, at the end (finish), leaves in it only what gitbot wrote — a report the agent planted (a
dotenv file sets variables in later jobs) never survives, and the entry point writes one even when the
job fails unexpectedly.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gitbot.forge.gitlab import out_dir as files
from gitbot.forge.gitlab.out_dir import IGNORE_FILE, OUTPUTS_FILE, SUMMARY_FILE
from gitbot.forge.job_log import JobLog, flattened
from gitbot.textsafe import printable

DEFAULT_OUTPUT_DIR = ".gitbot-out"
# GitLab accepts a dotenv report only if it is small and every line is NAME=VALUE with an ASCII name;
# it refuses the whole report otherwise, so values are kept on one line and short.
DOTENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DOTENV_VALUE_LIMIT = 1024
OUTPUT_PREFIX = "GITBOT_"
_SECTION_WORD = re.compile(r"section_(start|end):", re.IGNORECASE)
_COLOURS = {"notice": "\x1b[36;1m", "warning": "\x1b[33;1m", "error": "\x1b[31;1m"}
_RESET = "\x1b[0m"


def output_dir(environ: dict[str, str]) -> Path | None:
    """Where the summary and the outputs go: GITBOT_OUTPUT_DIR, else .gitbot-out in the project dir; None
    outside a GitLab job (no project dir): then the log is all, and nothing lands in whatever directory
    `gitbot gitlab` was tried from."""
    chosen = environ.get("GITBOT_OUTPUT_DIR", "").strip()
    if chosen:
        return Path(chosen)
    project = environ.get("CI_PROJECT_DIR", "").strip()
    return Path(project) / DEFAULT_OUTPUT_DIR if project else None


def inert(text: str) -> str:
    """One line of the job log that cannot be anything but text: no escape, no carriage return, no
    section marker (the marker needs both, but a marker word left whole would still mislead a reader
    of the raw log)."""
    return _SECTION_WORD.sub(lambda m: f"section-{m.group(1)}:", printable(text))


def output_name(name: str) -> str:
    """The dotenv variable for one of the flow's outputs: `pr-url` → GITBOT_PR_URL."""
    return OUTPUT_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


class GitLabIO(JobLog):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.out_dir = output_dir(self.environ)
        self._outputs: dict[str, str] = {}
        self._summary = ""
        self._written: set[str] = set()

    # ---------------------------------------------------------------- the log: every line inert

    def _own_line(self, line: str) -> str:
        return inert(line)

    def _annotation(self, kind: str, message: str, title: str | None) -> str:
        words = f"{title}: {message}" if title else message
        return f"{_COLOURS[kind]}{kind}{_RESET} {inert(flattened(words))}"

    def _untrusted_lines(self, text: str) -> Iterator[str]:
        for line in text.split("\n"):
            yield inert(line.removesuffix("\r"))  # a CRLF line ending rewrites nothing

    # ---------------------------------------------------------------- the files

    def write_summary(self, markdown: str) -> None:
        """Append to the summary file (redacted), which the component keeps as an artifact. The whole file
        is rewritten each time: whatever was there is not this job's (a symlink included)."""
        text = self.secrets.redact(markdown)
        self._summary += text if text.endswith("\n") else text + "\n"
        self._write_file(SUMMARY_FILE, self._summary)

    def set_outputs(self, values: dict[str, str]) -> None:
        """Rewrite the dotenv report with every output set so far (a later value wins)."""
        for name, value in values.items():
            key = output_name(name)
            if not DOTENV_NAME.match(key):  # the flow's own names; a bad one is a bug here, not input
                raise ValueError(f"not a dotenv variable name: {key!r}")
            flat = printable(self.secrets.redact(str(value))).replace("\n", " ").replace("\t", " ")
            self._outputs[key] = flat[:DOTENV_VALUE_LIMIT]
        self._write_file(OUTPUTS_FILE, "".join(f"{key}={value}\n" for key, value in self._outputs.items()))

    @property
    def outputs_written(self) -> bool:
        return bool(self._outputs)

    def finish(self, record: Path | None) -> None:
        """The end of the job: the output directory holds only what gitbot wrote, and the run's record
        (prepared in `record`, outside the work tree)."""
        if self._summary:
            self._write_file(SUMMARY_FILE, self._summary)
        if self.out_dir is not None:
            files.tidy(self.out_dir, self._written, record)
        elif record is not None:
            shutil.rmtree(record, ignore_errors=True)

    def prepared(self) -> Path | None:
        """The output dir, made with its `.gitignore` before the run."""
        self._write_file(IGNORE_FILE, "*\n")
        return self.out_dir

    def _write_file(self, name: str, text: str) -> None:
        if self.out_dir is None:
            return
        if IGNORE_FILE not in self._written:
            files.write(self.out_dir, IGNORE_FILE, "*\n")
            self._written.add(IGNORE_FILE)
        files.write(self.out_dir, name, text)
        self._written.add(name)
