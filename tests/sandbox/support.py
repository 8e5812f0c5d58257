"""Shared by the sandbox tests: a sandbox test that cannot run is a failure, not a skip."""

from __future__ import annotations

import os

import pytest

from gitbot.sandbox.bwrap import SandboxStatus, probe

ALLOW_NO_BWRAP = "GITBOT_ALLOW_NO_BWRAP"


def require_bwrap() -> SandboxStatus:
    status = probe()
    if status.available:
        return status
    if os.environ.get(ALLOW_NO_BWRAP) == "1":
        pytest.skip(f"bubblewrap does not work here ({status.description}); skipped because {ALLOW_NO_BWRAP}=1")
    pytest.fail(f"bubblewrap does not work here ({status.description}). The sandbox tests must run for real: "
                f"install bubblewrap and allow unprivileged user namespaces, or set {ALLOW_NO_BWRAP}=1 to skip "
                f"them explicitly.", pytrace=False)


def processes_with(marker: str) -> list[str]:
    """Command lines of running (non-zombie) processes that contain `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        if marker in cmdline and stat[stat.rindex(b")") + 2:][:1] != b"Z" and "pytest" not in cmdline:
            found.append(cmdline)
    return found


def warm_hand_overs(monkeypatch) -> list[str]:
    """The commands a warm sandbox (gitbot/sandbox/warm.py) is handed from now on, in order."""
    from gitbot.sandbox import warm

    commands: list[str] = []
    go = warm.WarmSandbox.go

    def spy(self, command):
        process = go(self, command)
        if process is not None:
            commands.append(command)
        return process

    monkeypatch.setattr(warm.WarmSandbox, "go", spy)
    return commands
