"""The CI job's log, the part of JobIO both forges print the same way.

Every line is redacted of known secrets first, before anything reshapes it: a known value that spans
lines (a cloud credential's JSON, a PEM key) is only found whole. Then gitbot's own lines (info, the
annotations) are kept to one line, so nothing embedded in them (a branch name, a login) starts a line
of its own, and text gitbot did not write (`untrusted`) is printed line by line. What each forge does
with a line is its own: GitHub switches its workflow commands off around untrusted text and encodes an
annotation into a workflow command; GitLab, whose log has no commands, makes every line inert.
"""

from __future__ import annotations

import os
import sys
from contextlib import AbstractContextManager, nullcontext
from typing import TextIO

from gitbot.secrets import Secrets


def flattened(text: str) -> str:
    """Carriage returns and newlines as spaces: a log viewer starts, or rewrites, a line at either."""
    return text.replace("\r", " ").replace("\n", " ")


class JobLog:
    """The log lines of a CI job on stdout, and the job's environment as gitbot found it (secrets are out of
    os.environ while it works; a provider's cloud credentials are read from here). A forge's JobIO adds
    `_annotation(kind, message, title)` (the line of a notice, warning or error; message and title already
    redacted) and `_untrusted_lines(text)` (redacted text gitbot did not write, as the lines to print)."""

    def __init__(
        self,
        secrets: Secrets | None = None,
        *,
        stdout: TextIO | None = None,
        environ: dict[str, str] | None = None,
    ):
        self.secrets = secrets or Secrets()
        self.stdout = stdout or sys.stdout
        self.environ = dict(os.environ if environ is None else environ)

    def info(self, text: str) -> None:
        """One line gitbot wrote itself."""
        self._write(self._own_line(flattened(self.secrets.redact(text))))

    def notice(self, message: str, *, title: str | None = None) -> None:
        self._annotate("notice", message, title)

    def warning(self, message: str, *, title: str | None = None) -> None:
        self._annotate("warning", message, title)

    def error(self, message: str, *, title: str | None = None) -> None:
        self._annotate("error", message, title)

    def untrusted(self, text: str, *, heading: str | None = None) -> None:
        """Text gitbot did not write (the model's words, tool output, a check's log), line by line."""
        if heading:
            self.info(heading)
        with self.commands_stopped():
            for line in self._untrusted_lines(self.secrets.redact(text)):
                self._write(line)

    def commands_stopped(self) -> AbstractContextManager[None]:
        """Inside, the CI obeys no command printed in the log (a log without commands needs nothing)."""
        return nullcontext()

    # ---------------------------------------------------------------- what a forge says

    def _own_line(self, line: str) -> str:
        """One of gitbot's own lines, already redacted and on one line, as printed."""
        return line

    def _annotate(self, kind: str, message: str, title: str | None) -> None:
        redacted_title = self.secrets.redact(title) if title else None
        self._write(self._annotation(kind, self.secrets.redact(message), redacted_title))

    def _write(self, line: str) -> None:
        self.stdout.write(line + "\n")
        self.stdout.flush()
