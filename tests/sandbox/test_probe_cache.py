"""The sandbox probe, remembered per machine: a success is reused until anything it depended on changes,
a failure never is, and a command bubblewrap could not set up makes the next process probe again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox import bwrap
from gitbot.sandbox.bwrap import SandboxStatus
from gitbot.sandbox.runner import Runner
from tests.sandbox.support import require_bwrap


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(bwrap, "_PROBE_RESULT", None)
    return tmp_path / "cache" / "gitbot" / bwrap.PROBE_CACHE_NAME


def forget_the_process_copy(monkeypatch) -> None:
    monkeypatch.setattr(bwrap, "_PROBE_RESULT", None)  # what a new gitbot process starts with


def probes_run(monkeypatch) -> list[SandboxStatus]:
    ran: list[SandboxStatus] = []
    real = bwrap._probe
    monkeypatch.setattr(bwrap, "_probe", lambda: ran.append(real()) or ran[-1])
    return ran


@pytest.mark.slow
def test_a_success_is_reused_by_the_next_process_until_the_machine_changes(cache_home: Path, monkeypatch, tmp_path):
    require_bwrap()
    setting = tmp_path / "max_user_namespaces"
    setting.write_text("1000\n")
    monkeypatch.setattr(bwrap, "_PROBE_SYSCTLS", (*bwrap._PROBE_SYSCTLS, str(setting)))
    ran = probes_run(monkeypatch)
    forget_the_process_copy(monkeypatch)
    first = bwrap.probe()
    assert first.available and len(ran) == 1 and cache_home.is_file()
    forget_the_process_copy(monkeypatch)
    again = bwrap.probe()
    assert len(ran) == 1  # not run again
    assert (again.available, again.bwrap, again.features) == (first.available, first.bwrap, first.features)
    # A user-namespace setting changed (`sysctl -w`): the remembered success does not apply.
    setting.write_text("0\n")
    forget_the_process_copy(monkeypatch)
    bwrap.probe()
    assert len(ran) == 2
    # Another bubblewrap (an upgrade: the same path, another file) is another machine.
    import shutil

    copy = tmp_path / "bwrap"
    shutil.copy2(first.bwrap, copy)
    assert bwrap._machine_key(str(copy)) not in (None, bwrap._machine_key(first.bwrap))


def test_a_failure_is_not_remembered(cache_home: Path, monkeypatch):
    broken = SandboxStatus(False, "bubblewrap does not work here: setting up uid map: Permission denied",
                           "/usr/bin/bwrap", "setting up uid map: Permission denied")
    cache_home.parent.mkdir(parents=True)
    cache_home.write_text(json.dumps({"key": "stale", "bwrap": "/usr/bin/bwrap", "features": []}))
    monkeypatch.setattr(bwrap, "_bwrap_path", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(bwrap, "_machine_key", lambda path: "this machine")
    calls = []
    monkeypatch.setattr(bwrap, "_probe", lambda: calls.append(1) or broken)
    assert not bwrap.probe().available
    assert not cache_home.exists()  # the machine may be fixed any moment: the next process probes again
    forget_the_process_copy(monkeypatch)
    bwrap.probe()
    assert len(calls) == 2


def test_a_remembered_probe_with_other_contents_is_not_trusted(cache_home: Path, monkeypatch):
    monkeypatch.setattr(bwrap, "_bwrap_path", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(bwrap, "_machine_key", lambda path: "this machine")
    fresh = SandboxStatus(True, "bubblewrap works", "/usr/bin/bwrap", "", frozenset({"disable-userns"}))
    monkeypatch.setattr(bwrap, "_probe", lambda: fresh)
    cache_home.parent.mkdir(parents=True)
    for stored in ('{"key": "this machine", "bwrap"', json.dumps({"key": "another machine", "bwrap": "/usr/bin/bwrap",
                                                                   "features": []})):
        cache_home.write_text(stored)
        forget_the_process_copy(monkeypatch)
        assert bwrap.probe() is fresh


@pytest.mark.slow
def test_a_command_bubblewrap_could_not_set_up_makes_the_next_process_probe_again(cache_home: Path, monkeypatch,
                                                                                   tmp_path: Path):
    status = require_bwrap()
    bwrap.probe()  # remembered for the machine
    assert cache_home.is_file()
    # Now bubblewrap fails as it does when AppArmor starts refusing it user namespaces.
    failing = tmp_path / "tools" / "bwrap"
    failing.parent.mkdir()
    failing.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    failing.chmod(0o755)
    failing.parent.chmod(0o755)
    tmp_path.chmod(0o755)
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.setattr(bwrap, "_PROBE_RESULT", SandboxStatus(True, "bubblewrap works", str(failing), "",
                                                               status.features))
    run = Runner(Policy(repo=repo), repo).run_check(["true"], 30)
    assert run.exit_code == 1 and "setting up uid map" in run.output
    assert not cache_home.exists()


@pytest.mark.slow
def test_a_probe_remembered_by_another_gitbot_is_not_trusted(cache_home: Path, monkeypatch):
    # Another gitbot (before an upgrade that looks for a new bubblewrap feature) remembered what it knew
    # to look for on this very machine: its features are not this one's, so the sandbox would lose a flag.
    status = require_bwrap()
    if "disable-userns" not in status.features:
        pytest.skip("this bubblewrap has no --disable-userns")
    with monkeypatch.context() as other:
        other.setattr(bwrap, "code_fingerprint", lambda *sources: 12345)  # its probe was other code
        key = bwrap._machine_key(status.bwrap)
    cache_home.parent.mkdir(parents=True, exist_ok=True)
    cache_home.write_text(json.dumps({"key": key, "bwrap": status.bwrap, "features": ["size"]}))
    forget_the_process_copy(monkeypatch)
    assert "disable-userns" in bwrap.probe().features
    argv = bwrap.wrap(["true"], cache_home.parent, network=False)
    assert "--disable-userns" in argv


@pytest.mark.slow
def test_a_cache_directory_inside_the_repository_is_never_trusted(tmp_path: Path, monkeypatch):
    # Issue 20: with $XDG_CACHE_HOME inside the repository, a command could plant the probe's memory.
    require_bwrap()
    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    monkeypatch.setenv("XDG_CACHE_HOME", str(repo / ".cache"))
    runner = Runner(Policy(repo=repo, sandbox_mode="required"), repo)
    real = bwrap.probe()
    key = bwrap._machine_key(real.bwrap)
    # What a command could write there: a success, with features this bubblewrap may not have.
    forged = json.dumps({"key": key, "bwrap": real.bwrap, "features": ["size", "disable-userns"]})
    run = runner.run_shell(f"mkdir -p .cache/gitbot && printf '%s' '{forged}' > .cache/gitbot/"
                           f"{bwrap.PROBE_CACHE_NAME}", 60)
    assert run.exit_code == 0 and (repo / ".cache" / "gitbot" / bwrap.PROBE_CACHE_NAME).is_file()
    assert bwrap._remembered(real.bwrap, key) is None
    forget_the_process_copy(monkeypatch)
    ran = probes_run(monkeypatch)
    bwrap.probe()
    assert len(ran) == 1  # probed for real, not read from the repository
    assert not any(p.name.startswith("config-") for p in (repo / ".cache").rglob("*"))  # no config copies kept there
