"""What a command makes at or above a read_deny name that the host would later write a secret through: a
symlink at a directory a rule names on the way to a denied file (`.docker` for `**/.docker/config.json`),
a FIFO or a socket at a denied name. Found by the read-deny walk (readdeny.py), set aside after the command
(planted.py); the user's own, there before, stay. Real files in a throwaway repository; the command's
part is done here, between the guard's `before` and `after`."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox.planted import SET_ASIDE, CommandUndone, GitMetadataGuard
from gitbot.sandbox.readdeny import DeniedFiles
from tests.conftest import make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return Path(os.path.realpath(make_repo(tmp_path / "repo", {"README.md": "# project\n", "public/index.html": "hi\n"})))


def guarded(repo: Path, **policy) -> tuple[GitMetadataGuard, DeniedFiles]:
    index = DeniedFiles(repo, Policy(repo=repo, **policy), store=False)
    index.current()
    return GitMetadataGuard(str(repo)), index


def command(repo: Path, does, **policy) -> CommandUndone | None:
    """Run the guard around `does(repo)` (what a command does); the CommandUndone it raised, or None."""
    guard, index = guarded(repo, **policy)
    guard.before(index)
    does(repo)
    try:
        guard.after(index)
    except CommandUndone as exc:
        return exc
    return None


def set_aside(repo: Path) -> list[str]:
    store = repo / ".git" / "gitbot" / SET_ASIDE
    return sorted(path.name.partition("-")[2] for path in store.iterdir()) if store.is_dir() else []


@pytest.mark.parametrize("link", [".docker", "sub/.docker", ".Docker"])  # (read_deny matches case-insensitively)
def test_a_symlink_a_command_makes_at_a_directory_a_rule_names_is_set_aside(repo, link):
    def does(repo):
        (repo / link).parent.mkdir(exist_ok=True)
        os.symlink(os.path.relpath(repo / "public", (repo / link).parent), repo / link)

    undone = command(repo, does)
    assert undone is not None and link in str(undone)
    assert not os.path.lexists(repo / link) and set_aside(repo) == [link.replace("/", "%")]


def test_a_symlink_at_a_directory_only_a_leading_double_star_reaches_stays(repo):
    # `**/.env` matches below any directory: what the host writes through `lib/.env` lands at `public/.env`,
    # itself denied. So a link a command makes at `lib` is no directory on the way to a denied file.
    undone = command(repo, lambda repo: os.symlink("public", repo / "lib"))
    assert undone is None and os.path.islink(repo / "lib")


def test_a_path_specific_rule_of_the_users_names_its_directories_too(repo):
    def does(repo):
        (repo / "config").mkdir()
        os.symlink("../public", repo / "config" / "keys")

    undone = command(repo, does, read_deny=("config/keys/*.json",))
    assert undone is not None and not os.path.lexists(repo / "config" / "keys")


def test_a_users_own_directory_symlink_above_a_denied_name_stays_and_is_put_back_when_re_pointed(repo):
    (repo / "dockercfg").mkdir()
    os.symlink("dockercfg", repo / ".docker")
    assert command(repo, lambda repo: (repo / "README.md").write_text("changed\n")) is None
    assert os.readlink(repo / ".docker") == "dockercfg"

    def re_point(repo):
        os.unlink(repo / ".docker")
        os.symlink("public", repo / ".docker")

    assert command(repo, re_point) is not None
    assert os.readlink(repo / ".docker") == "dockercfg"


def bind_socket(path: Path) -> None:
    with contextlib.closing(socket.socket(socket.AF_UNIX)) as listener:
        listener.bind(str(path))


@pytest.mark.parametrize(("name", "make"), [(".env", os.mkfifo), ("config/id_rsa", os.mkfifo), (".npmrc", bind_socket)])
def test_a_fifo_or_socket_a_command_makes_at_a_denied_name_is_set_aside(repo, name, make):
    def does(repo):
        (repo / name).parent.mkdir(exist_ok=True)
        make(repo / name)

    undone = command(repo, does)
    assert undone is not None and "FIFO or socket" in str(undone) and name in str(undone)
    assert "git metadata" not in str(undone)
    assert not os.path.lexists(repo / name) and set_aside(repo) == [name.replace("/", "%")]


def test_a_fifo_at_a_name_no_rule_denies_stays(repo):
    assert command(repo, lambda repo: os.mkfifo(repo / "pipe")) is None
    assert stat.S_ISFIFO(os.lstat(repo / "pipe").st_mode)


def test_a_users_own_fifo_at_a_denied_name_stays_but_one_a_command_swaps_in_goes(repo):
    os.mkfifo(repo / ".env")  # (a secrets manager serves `.env` this way)
    assert command(repo, lambda repo: (repo / "README.md").write_text("changed\n")) is None
    assert stat.S_ISFIFO(os.lstat(repo / ".env").st_mode)

    def swap(repo):
        os.rename(repo / ".env", repo / "users-fifo")
        os.mkfifo(repo / ".env")

    assert command(repo, swap) is not None
    assert not os.path.lexists(repo / ".env")


@pytest.mark.parametrize("make", [lambda path: os.symlink("../public/x.json", path), os.mkfifo])
def test_what_a_command_makes_at_a_denied_name_through_a_users_link_above_it_is_set_aside(repo, make):
    # The user's `.docker -> dockercfg`: the host's `docker login` writes dockercfg/config.json, so a command's
    # link (or FIFO) there would carry the token to public/ (or to the next command) as one at .docker would.
    (repo / "dockercfg").mkdir()
    os.symlink("dockercfg", repo / ".docker")
    undone = command(repo, lambda repo: make(repo / "dockercfg" / "config.json"))
    assert undone is not None and "dockercfg/config.json" in str(undone)
    assert not os.path.lexists(repo / "dockercfg" / "config.json") and os.readlink(repo / ".docker") == "dockercfg"
