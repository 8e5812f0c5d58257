"""read_deny for commands where a path is not what it seems: through a symlink and `..`, through
/proc, from a directory the command changed to."""

from __future__ import annotations

import os

from gitbot.policy import Policy


def test_a_symlink_before_dotdot_is_followed_as_the_kernel_does(tmp_path):
    (tmp_path / "private" / "inner").mkdir(parents=True)
    (tmp_path / "private" / "notes.txt").write_text("secret\n")
    (tmp_path / "notes.txt").write_text("public\n")
    os.symlink("private/inner", tmp_path / "link")
    policy = Policy(read_deny=("private/**",), command_allow=("cat *",), repo=tmp_path)
    assert policy.check_command("cat notes.txt").allowed
    # Lexically `link/../notes.txt` is notes.txt; the kernel goes through the link: private/notes.txt.
    decision = policy.check_command("cat link/../notes.txt")
    assert not decision.allowed and "private/notes.txt" in decision.reason


def test_proc_paths_lead_back_into_the_repository(tmp_path):
    (tmp_path / ".env").write_text("TOKEN=x\n")
    policy = Policy(command_allow=("cat *", "cd *"), repo=tmp_path)
    for command in ("cat /proc/self/cwd/.env", f"cat /proc/1/root{os.path.realpath(tmp_path)}/.env",
                    "cat /proc/self/cwd/sub/../.env", "cd sub && cat /proc/self/cwd/../.env"):
        decision = policy.check_command(command)
        assert not decision.allowed and ".env" in decision.reason, command
    assert policy.check_command("cat /proc/self/status").allowed  # not the repository


def test_after_cd_a_relative_name_is_held_to_every_denied_file_it_could_name(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "secrets.yml").write_text("x\n")
    policy = Policy(read_deny=("config/secrets.yml",), command_allow=("cat *", "cd *"), repo=tmp_path)
    assert not policy.check_command("cat config/secrets.yml").allowed
    decision = policy.check_command("cd config && cat secrets.yml")
    assert not decision.allowed and "config/secrets.yml" in decision.reason
    assert policy.check_command("cd config && cat other.yml").allowed
    name = os.path.basename(os.path.realpath(tmp_path))
    decision = policy.check_command(f"cd .. && cat {name}/config/secrets.yml")
    assert not decision.allowed and "config/secrets.yml" in decision.reason


def test_what_git_lists_is_cached_but_each_policy_applies_its_own_rules(tmp_path):
    from tests.conftest import git, make_repo

    repo = make_repo(tmp_path / "r", {"notes/plan.txt": "x\n", "src/a.py": "a\n"})
    git(repo, "rm", "-q", "notes/plan.txt")
    git(repo, "commit", "-q", "-m", "gone")
    lenient = Policy(command_allow=("git log *",), repo=repo)
    strict = Policy(command_allow=("git log *",), read_deny=("notes/**",), repo=repo)
    assert lenient.check_command("git log -p").allowed
    decision = strict.check_command("git log -p")
    assert not decision.allowed and "notes" in decision.reason
    assert lenient.check_command("git log -p").allowed
    assert strict.check_command("git log -p -- src").allowed
    # A new commit moves a ref: what git lists is asked again.
    (repo / "notes").mkdir()
    (repo / "notes" / "late.txt").write_text("y\n")
    git(repo, "add", "notes/late.txt")
    git(repo, "commit", "-q", "-m", "late")
    decision = strict.check_command("git log -p -- notes/late.txt")
    assert not decision.allowed and "notes/late.txt" in decision.reason


def test_a_secret_git_keeps_under_two_names_is_seen_under_both(tmp_path):
    # git lists a blob (or tree) it meets again under another path only once: a stashed copy of a
    # deleted secret, or the same directory kept twice, was missing from the judge's list of history
    # paths, and `git log -p --all -- <that other name>` printed the secret.
    from tests.conftest import git, make_repo

    secret = "TOKEN=kept-twice\n"
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n", "deploy/.env.production": secret,
                                         "backup/deploy/.env.production": secret})
    git(repo, "rm", "-q", "-r", "deploy", "backup")
    git(repo, "commit", "-q", "-m", "remove the secrets")
    (repo / "notes").mkdir()
    (repo / "notes" / ".env.stash").write_text(secret)
    git(repo, "stash", "push", "-q", "-u", "--", "notes/.env.stash")
    policy = Policy(repo=repo)
    for command in ("git log -p --all -- notes", "git log -p --all -- backup", "git log -p --all -- deploy"):
        decision = policy.check_command(command)
        assert not decision.allowed and "read_deny" in decision.reason, (command, decision.reason)
    assert policy.check_command("git log -p --all -- README.md").allowed
