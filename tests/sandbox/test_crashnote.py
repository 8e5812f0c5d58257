"""Crash notes (sandbox/crashnote.py): the next gitbot undoes what a command of one that died mid-command left
at the protected paths, only for notes of processes that are gone, and says so. Real files, real git
repositories; no command is run (the runner's own path is tests/redteam/test_after_attacks.py's)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gitbot.sandbox import crashnote, created
from gitbot.sandbox.planted import SET_ASIDE
from tests.conftest import make_repo

PROTECTED = [".gitbot", "AGENTS.md"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# project\n", "CLAUDE.md": "be nice\n"})


def note_of_a_dead_gitbot(repo: Path, seen: created.Watch) -> Path:
    """What a gitbot that died mid-command left: its note, under a pid no process has (pid_max is below 2**22)."""
    note = crashnote.CrashNote(str(repo))
    note.write(seen)
    dead = Path(note.directory) / f"{2 ** 22 + 7}-123-0.json"
    os.rename(note.path, dead)
    return dead


def test_what_a_dead_gitbots_command_made_is_set_aside_and_said(repo, capsys):
    os.symlink("CLAUDE.md", repo / "AGENTS.md")
    dead = note_of_a_dead_gitbot(repo, created.watch(str(repo), PROTECTED))
    (repo / ".gitbot").mkdir()  # what the command made before gitbot died
    (repo / ".gitbot" / "policy.toml").write_text('[sandbox]\nmode = "off"\n')
    os.unlink(repo / "AGENTS.md")
    (repo / "AGENTS.md").write_text("push to main\n")

    said = crashnote.recover(repo)

    assert not os.path.lexists(repo / ".gitbot") and os.readlink(repo / "AGENTS.md") == "CLAUDE.md"
    kept = sorted(p.name for p in (repo / ".git" / "gitbot" / SET_ASIDE).iterdir())
    assert [name.endswith(".gitbot") for name in kept].count(True) == 1 and len(kept) == 2
    assert len(said) == 1 and ".gitbot" in said[0] and "AGENTS.md" in said[0]
    assert said[0] in capsys.readouterr().err
    assert not dead.exists()


def test_a_running_gitbots_note_is_left_alone(repo):
    note = crashnote.CrashNote(str(repo))
    note.write(created.watch(str(repo), PROTECTED))
    (repo / ".gitbot").mkdir()  # (its command, still running, or the user's)
    assert crashnote.recover(repo) == [] and (repo / ".gitbot").is_dir() and os.path.exists(note.path)
    note.remove()
    assert not os.path.exists(note.path)


def test_a_note_is_rewritten_only_when_the_watch_changes(repo):
    note = crashnote.CrashNote(str(repo))
    note.write(created.watch(str(repo), PROTECTED))
    written = os.stat(note.path).st_ino
    note.write(created.watch(str(repo), PROTECTED))
    assert os.stat(note.path).st_ino == written
    (repo / "AGENTS.md").write_text("x\n")
    note.write(created.watch(str(repo), PROTECTED))
    assert os.stat(note.path).st_ino != written
    assert json.loads(Path(note.path).read_text())["missing"] == [".gitbot"]
    note.remove()


@pytest.mark.parametrize("missing", ["../outside", "/etc/passwd"])
def test_a_note_naming_a_path_outside_the_repository_is_ignored(repo, tmp_path, missing):
    outside = tmp_path / "outside"
    outside.write_text("keep\n")
    dead = note_of_a_dead_gitbot(repo, created.Watch(missing=[missing]))
    assert crashnote.recover(repo) == [] and outside.read_text() == "keep\n" and not dead.exists()

