"""The read-deny index: the files the sandbox hides, kept up to date without walking the whole tree.

It must say exactly what a full walk says after any change (the property test), find a denied file
created an instant after it looked, and read again only directories that changed."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest

from gitbot.policy import Policy
from gitbot.sandbox import readdeny
from gitbot.sandbox.readdeny import DeniedFiles, read_denied_files


def git_repo(path: Path) -> Path:
    """A work tree as the index sees one: a `.git` directory is all it looks at (no git needed)."""
    (path / ".git").mkdir(parents=True)
    return path


def write(repo: Path, relpath: str, text: str = "x\n") -> None:
    (repo / relpath).parent.mkdir(parents=True, exist_ok=True)
    (repo / relpath).write_text(text)


def full_walk(repo: Path, policy: Policy) -> list[str]:
    return sorted(read_denied_files(repo, policy))


def test_a_denied_file_created_right_after_a_look_is_found_by_the_next(tmp_path: Path):
    repo = git_repo(tmp_path / "repo")
    write(repo, "src/app/main.py")
    index = DeniedFiles(repo, Policy(repo=repo))
    assert index.current() == []
    # No pause: the file system's clock may not have ticked since the listing (a "racy" directory).
    write(repo, "src/app/.env")
    assert index.current() == ["src/app/.env"]
    (repo / "src/app/.env").unlink()
    assert index.current() == []


def test_a_change_in_the_same_clock_tick_as_the_look_is_found(tmp_path: Path, monkeypatch):
    # This machine's file system stamps in nanoseconds; many keep whole seconds (ext4 with small
    # inodes, FAT: 2 s). Seen through such a clock, a file created in the same second as the listing
    # leaves its directory's stamp exactly as it was.
    real_lstat = os.lstat

    def whole_seconds(path, *args, **kwargs):
        st = real_lstat(path, *args, **kwargs)
        fields = list(st)
        coarse = os.stat_result(fields[:7] + [int(st.st_atime), int(st.st_mtime), int(st.st_ctime)])
        return _Coarse(coarse, st.st_ctime_ns // 10**9 * 10**9, st.st_mtime_ns // 10**9 * 10**9)

    repo = git_repo(tmp_path / "repo")
    monkeypatch.setattr(os, "lstat", whole_seconds)
    index = DeniedFiles(repo, Policy(repo=repo))
    while time.time() % 1 > 0.9:  # room for all of it in the same second
        time.sleep(0.05)
    write(repo, "src/app/main.py")
    assert index.current() == []
    write(repo, "src/app/.env")
    assert int(os.path.getctime(repo / "src/app")) == int(time.time())
    assert index.current() == ["src/app/.env"]


class _Coarse:
    """An lstat result whose nanosecond stamps are whole seconds, as such a file system reports them."""

    def __init__(self, st: os.stat_result, ctime_ns: int, mtime_ns: int):
        self._st, self.st_ctime_ns, self.st_mtime_ns = st, ctime_ns, mtime_ns

    def __getattr__(self, name):
        return getattr(self._st, name)


def test_setting_a_directorys_mtime_back_does_not_hide_a_new_file(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0)  # every directory trusted by its stamp
    repo = git_repo(tmp_path / "repo")
    write(repo, "config/settings.toml")
    before = os.stat(repo / "config")
    index = DeniedFiles(repo, Policy(repo=repo))
    assert index.current() == []
    write(repo, "config/.env.production")
    os.utime(repo / "config", ns=(before.st_atime_ns, before.st_mtime_ns))  # what `touch -d` can do
    assert os.stat(repo / "config").st_mtime_ns == before.st_mtime_ns
    assert index.current() == ["config/.env.production"]


def test_a_directory_moved_into_the_tree_is_read_whole(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0)
    repo = git_repo(tmp_path / "repo")
    write(repo, "a/b/notes.txt")
    outside = tmp_path / "elsewhere"
    write(outside, "deep/er/server.pem")
    write(outside, "deep/id_rsa")
    index = DeniedFiles(repo, Policy(repo=repo))
    assert index.current() == []
    os.rename(outside / "deep", repo / "a" / "b" / "deep")
    assert sorted(index.current()) == ["a/b/deep/er/server.pem", "a/b/deep/id_rsa"]
    os.rename(repo / "a" / "b" / "deep", repo / "moved")
    assert sorted(index.current()) == ["moved/er/server.pem", "moved/id_rsa"]
    # A directory replaced by a symlink to it: nothing is reached through a symlink (its target is
    # listed where it is).
    os.rename(repo / "moved", tmp_path / "gone")
    (repo / "moved").symlink_to(tmp_path / "gone")
    assert index.current() == []


def test_only_directories_that_changed_are_read_again(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0)
    repo = git_repo(tmp_path / "repo")
    for n in range(20):
        write(repo, f"pkg{n}/mod/file.py")
    index = DeniedFiles(repo, Policy(repo=repo))
    index.current()
    read = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: read.append(path) or real_scandir(path))
    assert index.current() == []
    assert read == []
    write(repo, "pkg7/mod/.netrc")
    assert index.current() == ["pkg7/mod/.netrc"]
    assert read == [f"{os.path.realpath(repo)}/pkg7/mod"]


def test_the_index_is_kept_for_the_next_process_and_only_for_the_same_rules(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0)
    repo = git_repo(tmp_path / "repo")
    write(repo, "one/.env")
    write(repo, "two/readme.md")
    policy = Policy(repo=repo)
    assert DeniedFiles(repo, policy).current() == ["one/.env"]
    store = repo / ".git" / "gitbot" / readdeny.STORE_NAME
    assert store.is_file()
    # What happened while no gitbot ran is found by the next one.
    write(repo, "two/deploy.key")
    read = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: read.append(path) or real_scandir(path))
    assert sorted(DeniedFiles(repo, policy).current()) == ["one/.env", "two/deploy.key"]
    assert read == [f"{os.path.realpath(repo)}/two"]
    # Other rules: the stored decisions do not apply.
    other = Policy(repo=repo, read_deny=("**/*.md",))
    assert DeniedFiles(repo, other).current() == ["two/readme.md"]
    # A damaged store is no store.
    store.write_text('{"version": 1, "root": 5')
    assert sorted(DeniedFiles(repo, policy).current()) == ["one/.env", "two/deploy.key"]
    stored = json.loads(store.read_text())
    stored["dirs"]["one"][2] = []  # a store that lies about a directory whose stamp moved on is re-read
    write(repo, "one/other.txt")
    store.write_text(json.dumps(stored))
    assert sorted(DeniedFiles(repo, policy).current()) == ["one/.env", "two/deploy.key"]


def test_a_policy_with_its_own_read_rules_is_asked_about_every_file(tmp_path: Path):
    class DenyByName(Policy):
        def check_read(self, relpath):
            from gitbot.policy.base import Decision

            return Decision("private" not in relpath, "test rule")

    repo = git_repo(tmp_path / "repo")
    write(repo, "docs/private-notes.txt")
    write(repo, ".env")
    index = DeniedFiles(repo, DenyByName(repo=repo))
    assert index.current() == ["docs/private-notes.txt"]
    assert not (repo / ".git" / "gitbot" / readdeny.STORE_NAME).exists()  # its rules are code: nothing kept


@pytest.mark.parametrize("trusted", [False, True], ids=["racy", "stamps-trusted"])
def test_the_index_says_what_a_full_walk_says_after_any_changes(tmp_path: Path, monkeypatch, trusted: bool):
    if trusted:
        # Stamps older than a few clock ticks are trusted, and each round waits that long before it looks:
        # the walks that find nothing moved (the index kept as it is), those that take up the first pass's
        # lstat() results, and listings that take up earlier decisions all meet the full walk here.
        monkeypatch.setattr(readdeny, "RACY_SECONDS", 0.02)
    repo = git_repo(tmp_path / "repo")
    policy = Policy(repo=repo, read_deny=(*Policy().read_deny, "secrets/**", "**/build/*.log"))
    rng = random.Random(15)
    names = ["a", "b", "secrets", "build", ".hidden", "node_modules"]
    files = ["main.py", ".env", "x.pem", "out.log", "README.md", ".env.local", "id_rsa.pub"]
    index = DeniedFiles(repo, policy)
    for _round in range(40 if trusted else 60):  # (each trusted round waits out the racy window)
        for _change in range(rng.randint(1, 4)):
            directory = "/".join(rng.choice(names) for _ in range(rng.randint(0, 3)))
            path = repo / directory / rng.choice(files) if directory else repo / rng.choice(files)
            action = rng.random()
            if action < 0.5:
                path.parent.mkdir(parents=True, exist_ok=True)
                if not path.parent.is_symlink() and not path.is_dir():
                    path.write_text("x")
            elif action < 0.7 and path.is_file():
                path.unlink()
            elif action < 0.85 and (repo / directory).is_dir() and directory:
                target = repo / rng.choice(names)
                if not target.exists():
                    os.rename(repo / directory, target)
            elif directory and not (repo / directory).exists() and (repo / directory).parent.is_dir():
                (repo / directory).symlink_to(repo / rng.choice(names))
        if trusted:
            time.sleep(0.03)
        assert sorted(index.current()) == full_walk(repo, policy)
        if trusted and _round % 3 == 0:
            assert sorted(index.current()) == full_walk(repo, policy)  # nothing moved since: kept as it is


def test_too_many_denied_files_fail_closed(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(readdeny, "MAX_MASKED_FILES", 3)
    repo = git_repo(tmp_path / "repo")
    index = DeniedFiles(repo, Policy(repo=repo))
    for n in range(3):
        write(repo, f"k{n}.pem")
    assert len(index.current()) == 3
    write(repo, "k3.pem")
    with pytest.raises(readdeny.SandboxRefusal, match="more than 3 files .* read_deny"):
        index.current()


def test_a_git_directory_below_the_root_is_no_hiding_place(tmp_path: Path):
    # Only the repository's own .git is read-only to commands; a nested repository's, or any directory
    # a command names `.git`, is writable: a directory holding a denied file moved into one stays denied.
    repo = git_repo(tmp_path / "repo")
    write(repo, "config/.env")
    write(repo, "vendor/lib/.git/objects/info/packs")
    index = DeniedFiles(repo, Policy(repo=repo))
    assert index.current() == ["config/.env"]
    (repo / "stash" / ".git").mkdir(parents=True)
    os.rename(repo / "config", repo / "stash" / ".git" / "config")
    os.rename(repo / "vendor/lib/.git/objects", repo / "vendor/lib/.git/objects.old")
    write(repo, "vendor/lib/.git/deploy.pem")
    assert sorted(index.current()) == ["stash/.git/config/.env", "vendor/lib/.git/deploy.pem"]
    assert sorted(read_denied_files(repo, Policy(repo=repo))) == ["stash/.git/config/.env", "vendor/lib/.git/deploy.pem"]
    write(repo, ".git/gitbot/x.pem")  # the repository's own: read-only to commands, and not walked
    assert ".git/gitbot/x.pem" not in index.current()


def _deeper_than_a_path_can_name(top: Path) -> tuple[int, str]:
    """A chain of directories under `top` whose full path is longer than PATH_MAX (made step by step,
    as `cd` lets a command do); (an open descriptor of the deepest, its path relative to `top`)."""
    name, parts = "d" * 200, []
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    while len(str(top)) + len(parts) * (len(name) + 1) < 4200:
        os.mkdir(name, dir_fd=fd)
        deeper = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd, parts = deeper, [*parts, name]
    return fd, "/".join(parts)


@pytest.mark.parametrize("trusted", [False, True], ids=["racy", "stamps-trusted"])
def test_a_directory_too_deep_to_name_is_reported_unreadable_by_its_parent(tmp_path: Path, monkeypatch,
                                                                          trusted: bool):
    if trusted:
        monkeypatch.setattr(readdeny, "RACY_SECONDS", 0.02)
    repo = git_repo(tmp_path / "repo")
    write(repo, "config/.env")
    index = DeniedFiles(repo, Policy(repo=repo))
    assert index.current() == ["config/.env"] and index.unreadable == []
    fd, deep = _deeper_than_a_path_can_name(repo)
    try:
        os.rename(repo / "config", "config", dst_dir_fd=fd)  # what `cd deep/...; mv $top/config .` does
    finally:
        os.close(fd)
    time.sleep(0.03 if trusted else 0)
    assert index.current() == []
    # The deepest directory that still has a name, which holds the one that has none.
    [unreadable] = index.unreadable
    assert f"{deep}/config/.env".startswith(unreadable + "/") and len(str(repo / unreadable)) < 4096
    assert len(str(repo / deep)) > 4096
    # Still so when nothing moved, and when only another directory did (its parent holds what it held).
    assert index.current() == [] and index.unreadable == [unreadable]
    write(repo, "notes.txt")
    time.sleep(0.03 if trusted else 0)
    assert index.current() == [] and index.unreadable == [unreadable]


def test_an_index_kept_by_another_gitbot_is_not_used(tmp_path: Path, monkeypatch):
    # The same rules, read by other code (before an upgrade that matches letter case as the policy
    # does): its decisions about directories that have not changed since are not this gitbot's.
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0)
    repo = git_repo(tmp_path / "repo")
    write(repo, "conf/.ENV")
    policy = Policy(repo=repo)
    with monkeypatch.context() as other:
        other.setattr(readdeny, "_code_fingerprint", lambda: 12345)
        other.setattr(readdeny, "_matcher", lambda policy: (tuple(policy.read_deny), lambda rel: rel.endswith(".env")))
        assert DeniedFiles(repo, policy).current() == []
    assert (repo / ".git" / "gitbot" / readdeny.STORE_NAME).is_file()
    assert DeniedFiles(repo, policy).current() == ["conf/.ENV"]


def test_names_no_encoding_can_spell_are_found_again_from_the_stored_index(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0)
    repo = git_repo(tmp_path / "repo")
    odd = [os.fsdecode(b"caf\xe9\xff.pem"), "two\nlines/.env", os.fsdecode(b"d\x80ir/id_rsa")]
    for relpath in odd:
        write(repo, relpath)
    write(repo, "plain.txt")
    assert sorted(DeniedFiles(repo, Policy(repo=repo)).current()) == sorted(odd)
    read = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: read.append(path) or real_scandir(path))
    found = DeniedFiles(repo, Policy(repo=repo)).current()  # the next process, from the store alone
    assert read == [] and sorted(found) == sorted(odd)
    assert all(os.path.isfile(os.path.join(repo, path)) for path in found)


def test_a_walk_that_finds_nothing_moved_still_sees_the_next_change_anywhere(tmp_path: Path, monkeypatch):
    # The first pass compares every directory's stamp with the last walk's; when all are the same the
    # index stands. Each kind of change after such a walk must move a stamp it compares.
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0.02)
    repo = git_repo(tmp_path / "repo")
    write(repo, "a/b/c/main.py")
    write(repo, "a/.env")
    write(repo, "docs/x.md")
    index = DeniedFiles(repo, Policy(repo=repo))
    index.current()
    time.sleep(0.03)
    assert index.current() == ["a/.env"]  # stamps trusted from here on
    assert index.current() == ["a/.env"]
    write(repo, "a/b/c/id_rsa")  # deep down
    time.sleep(0.03)
    assert sorted(index.current()) == ["a/.env", "a/b/c/id_rsa"]
    assert sorted(index.current()) == ["a/.env", "a/b/c/id_rsa"]
    os.link(repo / "a/.env", repo / "docs/copy.txt")  # another name of a denied file, elsewhere
    time.sleep(0.03)
    assert sorted(index.current()) == ["a/.env", "a/b/c/id_rsa", "docs/copy.txt"]
    assert index.hard_links == {"docs/copy.txt": "a/.env"}
    (repo / "docs/copy.txt").unlink()
    os.rename(repo / "a/b", repo / "b")  # a directory moved up
    time.sleep(0.03)
    assert sorted(index.current()) == ["a/.env", "b/c/id_rsa"]
    assert index.hard_links == {}
    (repo / "a/.env").unlink()
    (repo / "a/.env").mkdir()  # a file that becomes a directory of the same name
    write(repo, "a/.env/notes.txt")
    time.sleep(0.03)
    assert sorted(index.current()) == ["b/c/id_rsa"]


def test_links_above_denied_names_and_fifos_at_them_are_noted_and_kept_for_the_next_process(tmp_path: Path,
                                                                                           monkeypatch):
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0)
    repo = git_repo(tmp_path / "repo")
    write(repo, "public/index.html")
    os.symlink("public", repo / ".docker")  # above `**/.docker/config.json`
    os.symlink("public", repo / "lib")  # above nothing a rule names
    os.mkfifo(repo / ".env")
    os.mkfifo(repo / "pipe")
    policy = Policy(repo=repo)
    index = DeniedFiles(repo, policy)
    assert index.current() == [".env"]  # the FIFO hidden (a secrets manager may serve one); a link judged by its target
    assert index.denied_links == {".docker": "public"}
    assert index.denied_pipes == {".env": os.lstat(repo / ".env").st_ino}
    again = DeniedFiles(repo, policy)  # from the stored index
    assert again.current() == [".env"] and again.denied_links == index.denied_links \
        and again.denied_pipes == index.denied_pipes
    # The listing read again takes up its decisions (kept from its second read on), yet a link's "above a denied
    # name" is not its name's: a regular file `.docker` is no denied file, and a regular `.env` is.
    write(repo, "new.txt")
    assert index.current() == [".env"] and index.denied_links == {".docker": "public"}
    os.unlink(repo / ".docker")
    write(repo, ".docker")
    os.unlink(repo / ".env")
    write(repo, ".env")
    assert index.current() == [".env"] and index.denied_links == {} and index.denied_pipes == {}


@pytest.mark.parametrize(("target", "real"), [("dockercfg", "dockercfg/config.json"), (".", "config.json")])
def test_a_file_denied_by_its_name_through_a_users_link_above_it_is_found_by_its_real_path(tmp_path: Path,
                                                                                        monkeypatch, target, real):
    # `**/.docker/config.json` and the user's `.docker -> dockercfg`: a command reads the token as
    # dockercfg/config.json, a path no rule names; the sandbox hides the real path (bwrap, Landlock).
    monkeypatch.setattr(readdeny, "RACY_SECONDS", 0)
    repo = git_repo(tmp_path / "repo")
    write(repo, real)
    write(repo, "dockercfg/other.json")
    os.symlink(target, repo / ".docker")
    index = DeniedFiles(repo, Policy(repo=repo))
    assert index.current() == [real]
    os.unlink(repo / real)  # found again as the tree changes
    assert index.current() == []
    write(repo, real)
    assert index.current() == [real]
    monkeypatch.setattr(readdeny, "MAX_LINKED_ENTRIES", 1)  # too many to list each time: hidden whole
    write(repo, "dockercfg/more.json")
    fresh = DeniedFiles(repo, Policy(repo=repo), store=False)
    fresh.current()
    assert fresh.unreadable == [os.path.dirname(real)]
