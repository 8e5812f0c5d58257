"""Talking to the GitHub Actions runner: workflow commands on stdout and the environment files.

Everything printed goes through the run's `Secrets.redact` first, and every secret is registered
with `::add-mask::` before the first other line (the runner masks registered values in the log).
Text that gitbot did not write itself (the model's words, tool output, issue text) is printed only
inside a `::stop-commands::<random token>` block, so a line such as `::add-mask::` or `::error::`
inside it is shown, not obeyed. Outputs use a random heredoc delimiter that the value cannot
contain. The job summary stays under the runner's 1 MiB limit.
"""

from __future__ import annotations

import secrets as _secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gitbot.forge.job_log import JobLog

# The runner refuses a step summary over 1 MiB (1024 * 1024 bytes); keep a margin for the note.
SUMMARY_LIMIT_BYTES = 1024 * 1024 - 4096
SUMMARY_TRUNCATED_NOTE = "\n\n> The summary was cut to fit GitHub's 1 MiB step summary limit.\n"


def escape_data(text: str) -> str:
    """A workflow command's message: %, CR and LF are encoded (the runner decodes them)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (title=…): also ':' and ',' are encoded."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


class ActionsIO(JobLog):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._masked: set[str] = set()

    # ---------------------------------------------------------------- log lines

    def mask_secrets(self) -> None:
        """Register every known secret with the runner. Call before printing anything else."""
        for value in sorted(self.secrets.values):
            self.mask(value)

    def mask(self, value: str) -> None:
        if not value or value in self._masked:
            return
        self._masked.add(value)
        self.secrets.add(value)
        # The runner masks per line, so a multi-line secret is registered line by line.
        for line in value.splitlines():
            if line.strip():
                self._write(f"::add-mask::{line}")

    @contextmanager
    def commands_stopped(self) -> Iterator[None]:
        """Inside, the runner obeys no workflow command: for anything the model, a tool or a check prints.
        The token is random, so text inside cannot end the block early."""
        token = _secrets.token_hex(16)
        self._write(f"::stop-commands::{token}")
        try:
            yield
        finally:
            self._write(f"::{token}::")

    @contextmanager
    def group(self, title: str) -> Iterator[None]:
        self._write(f"::group::{escape_data(self.secrets.redact(title))}")
        try:
            yield
        finally:
            self._write("::endgroup::")

    def _annotation(self, kind: str, message: str, title: str | None) -> str:
        props = f" title={escape_property(title)}" if title else ""
        return f"::{kind}{props}::{escape_data(message)}"

    def _untrusted_lines(self, text: str) -> list[str]:
        # Printed inside commands_stopped, so a line is shown as it is.
        return text.splitlines()

    # ---------------------------------------------------------------- environment files

    def set_outputs(self, values: dict[str, str]) -> None:
        """Append `name<<DELIM … DELIM` entries to $GITHUB_OUTPUT (nothing to do outside Actions)."""
        path = self.environ.get("GITHUB_OUTPUT")
        if not path:
            return
        with open(path, "a", encoding="utf-8") as f:
            for name, value in values.items():
                value = self.secrets.redact(str(value))
                delimiter = f"ghadelimiter_{_secrets.token_hex(12)}"
                while delimiter in value:  # astronomically unlikely; the docs require it never happen
                    delimiter = f"ghadelimiter_{_secrets.token_hex(12)}"
                f.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")

    def write_summary(self, markdown: str) -> None:
        """Append to $GITHUB_STEP_SUMMARY, cut to stay under the runner's 1 MiB limit."""
        path = self.environ.get("GITHUB_STEP_SUMMARY")
        if not path:
            return
        text = self.secrets.redact(markdown)
        existing = Path(path).stat().st_size if Path(path).exists() else 0
        room = SUMMARY_LIMIT_BYTES - existing
        data = text.encode("utf-8")
        if len(data) > room:
            keep = max(0, room - len(SUMMARY_TRUNCATED_NOTE.encode()))
            text = data[:keep].decode("utf-8", "ignore") + SUMMARY_TRUNCATED_NOTE
        with open(path, "a", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
