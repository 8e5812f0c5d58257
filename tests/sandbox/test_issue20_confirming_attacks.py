"""Confirming red team on issue 20's doors (commit gate, nested-git guard): variants the earlier attack
tests do not cover. Each asserts the secure behaviour; those marked GOT THROUGH failed on main at 9635b40."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitbot.fixcheck.gate import why_not
from gitbot.policy import Policy
from tests.conftest import git, make_repo
from tests.sandbox.support import require_bwrap
from tests.sandbox.test_nested_git_attacks import PREPARE, users_commands

BLOB = b"100644"
PROTECTED = "gitbot's policy and instruction files are changed only by people"


@pytest.mark.parametrize("name", ["AGENTS\u200c.md", "AGENTS\u200d.md", "\ufeffAGENTS.md", "AGENTS.md\u200e"])
def test_agents_md_spelled_as_macos_reads_it_is_protected(name):
    # GOT THROUGH: why_not drops HFS-ignored code points for `.git` and `.gitbot` (parts are translated)
    # but compares the untranslated name with PROTECTED_FILES: on a Mac checkout this IS AGENTS.md.
    path = name.encode()
    assert why_not(path, BLOB, {path}, Policy(repo=Path("/tmp"))) == PROTECTED


@pytest.mark.parametrize("name", [".e\u200cnv", "\ufeff.env", ".env\u200d"])
def test_env_spelled_as_macos_reads_it_is_read_denied(name):
    # GOT THROUGH: read_deny is matched on the raw name; on a Mac checkout this name IS `.env`.
    path = name.encode()
    assert why_not(path, BLOB, {path}, Policy(repo=Path("/tmp"))) is not None


@pytest.mark.parametrize("name", [".ENV", ".env.", ".env ", "sub/.env", "GIT~1/config", ".g\u200citbot/p.toml",
                                  ".GITBOT/p.toml", "agents.MD"])
def test_held_case_and_trailing_spellings_are_stopped(name):
    path = name.encode()
    assert why_not(path, BLOB, {path}, Policy(repo=Path("/tmp"))) is not None


NEW_VARIANTS = {
    # a gitfile in directories made by the same command under a new top-level dir, escaping with ..
    "new top-level dir, relative gitdir via ..": "mkdir -p nt/a/b && echo 'gitdir: ../../../zevil' > nt/a/b/.git",
    # made, then the parent renamed within the same command
    "gitfile made, then its parent renamed": "mkdir -p t1/b && echo 'gitdir: ../../zevil' > t1/b/.git && mv t1 t2",
    # a whole git directory (not a gitfile) at a new nested .git, with core.worktree pointing back up
    "new nested .git dir with core.worktree": "mkdir -p nd && cp -r zevil nd/.git && "
        "printf '[core]\\n\\tworktree = ..\\n' >> nd/.git/config",
    # the gitfile named by an absolute path, in a directory whose name holds a newline
    "absolute gitdir, newline in the directory name": "mkdir -p \"$(printf 'n\\nl')\" && "
        "echo \"gitdir: $PWD/zevil\" > \"$(printf 'n\\nl')/.git\"",
}


@pytest.mark.slow
def test_new_variants_of_a_planted_gitfile_are_undone(tmp_path: Path):
    require_bwrap()
    from gitbot.sandbox.runner import Runner

    lib = make_repo(tmp_path / "lib", {"lib.py": "X = 1\n"})
    repo = make_repo(tmp_path / "repo", {"app.py": "print('app')\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(lib), "libsub")
    git(repo, "commit", "-q", "-m", "submodule")
    git(repo, "submodule", "deinit", "-q", "libsub")
    runner = Runner(Policy(repo=repo, sandbox_mode="required"), repo)
    prepare = PREPARE.replace("MARKER", str(tmp_path / "MARKER"))
    for name, attack in NEW_VARIANTS.items():
        with pytest.raises(Exception, match="git metadata"):
            runner.run_shell(prepare + attack, 60)
        for where in [repo, *(p for p in repo.rglob("*") if p.is_dir() and ".git" not in p.parts)]:
            users_commands(where)
        assert not (tmp_path / "MARKER").exists(), name
        leftover = [p for p in repo.rglob(".git") if p != repo / ".git" and ".git" not in p.relative_to(repo).parts[:-1]]
        assert not leftover, (name, leftover)
        subprocess.run(["rm", "-rf", "hook.sh", "zevil", "nt", "t1", "t2", "nd", "n\nl"], cwd=repo, check=False)


@pytest.mark.slow
def test_the_planted_git_message_shows_a_hostile_name_safely(tmp_path: Path):
    # GOT THROUGH (cosmetic): the gate shows paths with gate.shown(), but GitMetadataPlanted puts the
    # raw name in its message (for the model, the transcript and the terminal): an ESC sequence or a
    # newline a command put in a directory name reaches them as is.
    require_bwrap()
    from gitbot.sandbox.planted import GitMetadataPlanted
    from gitbot.sandbox.runner import Runner

    repo = make_repo(tmp_path / "repo", {"app.py": "print('app')\n"})
    runner = Runner(Policy(repo=repo, sandbox_mode="required"), repo)
    name = "\"$(printf 'e\\033[31mRED\\nX')\""
    with pytest.raises(GitMetadataPlanted) as raised:
        runner.run_shell(f"mkdir -p {name} && echo 'gitdir: x' > {name}/.git", 60)
    assert "\x1b" not in str(raised.value) and "RED\nX" not in str(raised.value)
    assert not [p for p in repo.rglob(".git") if p != repo / ".git"]
