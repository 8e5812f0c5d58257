"""The .git/config the sandbox shows: every credential git would read is gone, whatever the syntax, and
everything else reads back the same. Checked with git's own parser (`git config --file`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gitbot.sandbox import gitconfig

# Each line a syntax git accepts; PLANTED marks a credential that must not survive.
HOSTILE_CONFIG = (
    "[core]\n\trepositoryformatversion = 0\n\tbare\n"
    "[http] extraheader = AUTHORIZATION: basic PLANTED01\n"  # a key on the section header line
    "\tsslVerify = false\n"
    '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic PLANTED02\n'
    '[HTTP "https://ghe.example/"]\n\tExtraHeader = PLANTED03\n'  # any letter case
    "[http]\n\textraHeader = AUTHORIZATION: \\\n basic PLANTED04\n"  # a continuation line
    "[remote.origin]\n\turl = https://x-access-token:PLANTED05@github.com/o/r.git\n"  # old-style subsection
    '[remote "mirror"]\n\turl = https://PLANTED06@gitlab.example/o/r.git\n'
    '\tpushurl = "https://bot:PLANTED07@example.com/o/r.git"\n'
    '[remote "ssh"]\n\turl = ssh://git@github.com/o/r.git\n'
    "[include]\n\tpath = /home/runner/creds-PLANTED08\n"
    '[includeIf "gitdir:/"]\n\tpath = /home/runner/more-PLANTED09\n'
    "[credential]\n\thelper = store --file /home/runner/PLANTED10\n"
    '[credential "https://github.com"]\n\tusername = PLANTED11\n'
    '[url "https://user:PLANTED12@github.com/"]\n\tinsteadOf = https://github.com/\n'
    "[http]\n\tcookieFile = /home/runner/.cookies-PLANTED13\n"
    "[http] proxy = http://proxyuser:PLANTED14@proxy.example:3128\n"
    "[core] askPass = /usr/local/bin/askpass-PLANTED15\n"
    "[user]\n\tname = \"A # semicolon; name\"  ; a comment\n\temail = a@example.com\n"
    "\tsigningkey = \"tab\\there\"\n"
    '[branch "main"]\n\tremote = origin\n'
    "; [http] extraheader = not an entry, a comment\n"
)


def git_config(path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent"}
    return subprocess.run(["git", "config", "--file", str(path), *args], capture_output=True, text=True, env=env,
                          check=False)


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    path = tmp_path / "config"
    path.write_text(HOSTILE_CONFIG)
    return path


def test_git_reads_every_planted_credential_from_the_original(hostile):
    # The payloads are real configuration, as git reads it: what the sanitizer must take out.
    listed = git_config(hostile, "--list", "--no-includes").stdout
    for number in range(1, 16):
        assert f"PLANTED{number:02d}" in listed, number


def test_no_credential_survives_and_everything_else_reads_back_the_same(hostile, tmp_path):
    clean = tmp_path / "clean"
    clean.write_text(gitconfig.sanitize_git_config(HOSTILE_CONFIG))
    listed = git_config(clean, "--list").stdout
    assert "PLANTED" not in clean.read_text() and "PLANTED" not in listed
    for key in ("core.repositoryformatversion", "http.sslverify", "user.name", "user.email", "user.signingkey",
                "branch.main.remote", "remote.ssh.url"):
        assert git_config(clean, "--get", key).stdout == git_config(hostile, "--get", key).stdout, key
    assert git_config(clean, "--bool", "--get", "core.bare").stdout.strip() == "true"
    assert git_config(clean, "--get", "remote.origin.url").stdout.strip() == "https://github.com/o/r.git"
    assert git_config(clean, "--get", "remote.mirror.pushurl").stdout.strip() == "https://example.com/o/r.git"
    assert git_config(clean, "--get", "url.https://github.com/.insteadof").stdout.strip() == "https://github.com/"
    assert git_config(clean, "--get", "http.proxy").stdout.strip() == "http://proxy.example:3128"
    for key in ("http.extraheader", "http.cookiefile", "core.askpass", "credential.helper", "include.path"):
        assert git_config(clean, "--get-all", key).returncode == 1, key


def test_a_config_git_cannot_parse_is_replaced_by_an_empty_one(tmp_path):
    broken = tmp_path / "config"
    broken.write_text("[http\n\textraheader = PLANTED\n")
    assert git_config(broken, "--list").returncode != 0
    copy = gitconfig.sanitized_copy(str(broken))
    assert copy is not None and Path(copy).read_text() == ""


def test_a_config_without_credentials_is_shown_as_it_is(tmp_path):
    plain = tmp_path / "config"
    plain.write_text('[core]\n\tbare = false\n[remote "origin"]\n\turl = https://github.com/o/r.git\n')
    assert gitconfig.sanitized_copy(str(plain)) is None
    plain.write_text(plain.read_text() + "[http] extraheader = AUTHORIZATION: basic PLANTED\n")
    copy = gitconfig.sanitized_copy(str(plain))
    assert copy is not None and "PLANTED" not in Path(copy).read_text()
    assert "https://github.com/o/r.git" in Path(copy).read_text()


def test_a_sanitized_copy_is_kept_for_the_next_process_until_the_file_changes(hostile, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(gitconfig, "RACY_SECONDS", 0)
    first = gitconfig.sanitized_copy(str(hostile))
    assert first is not None and "PLANTED" not in Path(first).read_text()
    monkeypatch.setattr(gitconfig, "_CACHE", {})  # what the next gitbot process starts with
    real_parse = gitconfig.parse_entries
    monkeypatch.setattr(gitconfig, "parse_entries", lambda path: pytest.fail("git parsed an unchanged file again"))
    kept = gitconfig.sanitized_copy(str(hostile))
    assert kept != first and Path(kept).read_text() == Path(first).read_text()
    # The file changes (a new token, the same size even): its stamp moves on, git reads it again.
    hostile.write_text(HOSTILE_CONFIG.replace("PLANTED01", "PLANTED99"))
    monkeypatch.setattr(gitconfig, "_CACHE", {})
    parsed = []
    monkeypatch.setattr(gitconfig, "parse_entries", lambda path: parsed.append(path) or real_parse(path))
    again = gitconfig.sanitized_copy(str(hostile))
    assert parsed == [str(hostile)] and "PLANTED" not in Path(again).read_text()


def test_a_kept_copy_is_always_bound_and_a_file_changed_just_now_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    plain = tmp_path / "config"
    plain.write_text('[core]\n\tbare = false\n')
    assert gitconfig.sanitized_copy(str(plain)) is None
    kept_dir = tmp_path / "cache" / "gitbot" / gitconfig.KEPT_COPIES_DIR
    assert not kept_dir.exists()  # changed within RACY_SECONDS: the same tick could hide the next change
    monkeypatch.setattr(gitconfig, "RACY_SECONDS", 0)
    monkeypatch.setattr(gitconfig, "_CACHE", {})
    assert gitconfig.sanitized_copy(str(plain)) is None
    monkeypatch.setattr(gitconfig, "_CACHE", {})
    # From the kept copy, the file is covered even though it needed no change: whatever the cache
    # directory holds can never uncover the real file.
    kept = gitconfig.sanitized_copy(str(plain))
    assert kept is not None and Path(kept).parent == kept_dir
    assert git_config(Path(kept), "--bool", "--get", "core.bare").stdout.strip() == "false"


def test_a_copy_kept_by_a_gitbot_that_dropped_less_is_not_used(hostile, tmp_path, monkeypatch):
    # Upgraded, gitbot drops a key it used to keep: the copy the old one kept for this very file (same
    # stamp) still holds it, and must not be bound in place of what the new one would write.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(gitconfig, "RACY_SECONDS", 0)
    with monkeypatch.context() as old:
        old.setattr(gitconfig, "code_fingerprint", lambda *sources: 12345)  # the old gitbot's source
        before = gitconfig.sanitized_copy(str(hostile))
    assert "signingkey" in Path(before).read_text()
    assert any((tmp_path / "cache" / "gitbot" / gitconfig.KEPT_COPIES_DIR).iterdir())
    monkeypatch.setattr(gitconfig, "_CACHE", {})
    monkeypatch.setattr(gitconfig, "DROPPED_KEYS", gitconfig.DROPPED_KEYS | {"signingkey"})
    after = gitconfig.sanitized_copy(str(hostile))
    assert "signingkey" not in Path(after).read_text()
    assert git_config(Path(after), "--get", "user.email").stdout.strip() == "a@example.com"


def test_the_sanitized_copies_of_a_process_are_removed_when_it_exits(hostile, tmp_path):
    # One directory per gitbot process (a hook on every commit): gone with it, not left in /tmp.
    code = ("import sys; from gitbot.sandbox import gitconfig; "
            "copy = gitconfig.sanitized_copy(sys.argv[1]); print(copy)")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code, str(hostile)], env=env, capture_output=True, text=True,
                          check=True, cwd=Path(__file__).parents[2])
    copy = Path(done.stdout.strip())
    assert copy.name.startswith("config-") and copy.parent.parent == tmp_path
    assert not copy.parent.exists()
