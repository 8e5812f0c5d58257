"""Branch, credential, commit and push against a real git server on loopback."""

from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager

import pytest

from gitbot import git as gitcmd
from gitbot.checkpoints import Checkpointer
from gitbot.fixcheck.changes import RunChanges
from gitbot.fixcheck.gate import GateClosed
from gitbot.forge import pull_request as prmod
from gitbot.forge.github.api import workflow_file
from gitbot.policy import Policy
from tests.forge.conftest import actions_checkout, run_git


@pytest.fixture
def work(seeded_github, tmp_path):
    return actions_checkout(seeded_github, tmp_path / "work")


@contextmanager
def a_run(work, run_id: str = "r"):
    """The checkpoints of a run: step 0 on the way in, the last step on the way out (what the body
    writes is the run's change)."""
    checkpoints = Checkpointer(work, run_id)
    checkpoints.take(0)
    yield
    checkpoints.take(1)


def commit_of(work, paths: list[str], *, run_id: str = "r", policy=None):
    """commit_changes as the Action calls it, for the run `run_id` (see a_run)."""
    return prmod.commit_changes(work, paths, changes=RunChanges(work, run_id), policy=policy or Policy(repo=work),
                                subject="s", body="b", run_id=run_id, model="m", unpushable=workflow_file)


def config_text(repo) -> str:
    return (repo / ".git" / "config").read_text()


@pytest.mark.slow
def test_the_checkout_credential_is_gone_inside_and_back_after(seeded_github, work):
    header = seeded_github.basic_auth_header()
    assert header in config_text(work)
    with prmod.checkout_credential_removed(work) as removed:
        assert removed == [f"http.{seeded_github.server_url}/.extraheader"]
        assert "extraheader" not in config_text(work).lower()
        assert header.split()[-1] not in run_git(work, "config", "--list")
    assert header in config_text(work)


@pytest.mark.slow
def test_a_checkout_v6_credentials_include_is_removed_too(seeded_github, work, tmp_path):
    run_git(work, "config", "--local", "--unset-all", f"http.{seeded_github.server_url}/.extraheader")
    creds = tmp_path / "runner-temp" / "git-credentials-1234.config"
    creds.parent.mkdir()
    creds.write_text(
        f'[http "{seeded_github.server_url}/"]\n\textraheader = {seeded_github.basic_auth_header()}\n'
    )
    run_git(work, "config", "--local", f"includeIf.gitdir:{work}/.git.path", str(creds))
    run_git(work, "config", "--local", "include.path", "harmless.inc")
    with prmod.checkout_credential_removed(work):
        text = config_text(work)
        assert str(creds) not in text and "harmless.inc" in text
        listed = run_git(work, "config", "--list", "--show-origin")
        assert seeded_github.token not in listed and "extraheader" not in listed
    assert str(creds) in config_text(work)


@pytest.mark.slow
def test_push_sends_the_token_only_for_that_command(seeded_github, work):
    auth = prmod.auth_env(seeded_github.token, seeded_github.server_url)
    with prmod.checkout_credential_removed(work):
        base = prmod.fetch(work, "main", auth=auth)
        prmod.start_branch(work, "gitbot/issue-7", base)
        with a_run(work, "r1"):
            (work / "stats.py").write_text("fixed\n")
        commit = prmod.commit_changes(
            work,
            ["stats.py"],
            changes=RunChanges(work, "r1"),
            policy=Policy(repo=work),
            subject="Fix #7: crash",
            body="Because.",
            run_id="r1",
            model="claude-sonnet-5-5",
        )
        with pytest.raises(prmod.GitError):  # without the header the server refuses
            prmod.push(work, "gitbot/issue-7", commit.sha, expected_tip=None, auth={})
        prmod.push(work, "gitbot/issue-7", commit.sha, expected_tip=None, auth=auth)
    assert seeded_github.branch_sha("gitbot/issue-7") == commit.sha
    # Only the checkout's own (restored) entry holds the token; the remote URL never did.
    assert seeded_github.token not in config_text(work)
    assert config_text(work).count(seeded_github.basic_auth_header()) == 1
    assert run_git(work, "remote", "get-url", "origin").strip() == seeded_github.clone_url
    author_and_subject = seeded_github.git_log("gitbot/issue-7", "%an <%ae>%n%s").splitlines()[:2]
    assert author_and_subject == [f"{gitcmd.BOT_NAME} <{gitcmd.BOT_EMAIL}>", "Fix #7: crash"]
    log = seeded_github.git_log("gitbot/issue-7", "%B")
    assert "Gitbot-Run: r1" in log and "Co-authored-by: claude-sonnet-5-5 <noreply@anthropic.com>" in log


@pytest.mark.slow
def test_the_lease_and_the_ownership_check(seeded_github, work):
    auth = prmod.auth_env(seeded_github.token, seeded_github.server_url)
    base = prmod.fetch(work, "main", auth=auth)
    prmod.start_branch(work, "gitbot/issue-7", base)
    with a_run(work, "r1"):
        (work / "a.txt").write_text("1\n")
    first = commit_of(work, ["a.txt"], run_id="r1")
    prmod.push(work, "gitbot/issue-7", first.sha, expected_tip=None, auth=auth)
    tip = prmod.fetch(work, "gitbot/issue-7", auth=auth)
    assert prmod.foreign_commits(work, tip, base) == []

    # A second run replaces gitbot's own commit, naming the tip it expects.
    prmod.start_branch(work, "gitbot/issue-7", base)
    with a_run(work, "r2"):
        (work / "a.txt").write_text("2\n")
    second = commit_of(work, ["a.txt"], run_id="r2")
    with pytest.raises(prmod.GitError):  # a stale expectation is refused
        prmod.push(work, "gitbot/issue-7", second.sha, expected_tip=base, auth=auth)
    prmod.push(work, "gitbot/issue-7", second.sha, expected_tip=tip, auth=auth)
    assert seeded_github.branch_sha("gitbot/issue-7") == second.sha

    # A person's commit on the branch (even one forging the trailer) makes it someone else's.
    run_git(work, "checkout", "-q", second.sha)
    (work / "b.txt").write_text("human\n")
    run_git(work, "add", "b.txt")
    run_git(work, "commit", "-q", "-m", "human fix", "--trailer", "Gitbot-Run: forged")
    run_git(work, "push", "-q", "origin", "HEAD:refs/heads/gitbot/issue-7")
    tip = prmod.fetch(work, "gitbot/issue-7", auth=auth)
    assert prmod.foreign_commits(work, tip, base) == [tip]


@pytest.mark.slow
def test_workflow_files_are_left_out_of_the_commit(seeded_github, work):
    with a_run(work):
        (work / ".github" / "workflows").mkdir(parents=True)
        (work / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
        (work / "stats.py").write_text("x\n")
    commit = commit_of(work, [".github/workflows/ci.yml", "stats.py"])
    assert commit.files == ["stats.py"] and commit.skipped == [".github/workflows/ci.yml"]


@pytest.mark.parametrize("name", ["-x", "a b", "a..b", "x@{1}", "refs/heads/../x", "a:b", ""])
def test_unusual_branch_names_are_refused(name):
    with pytest.raises(prmod.GitError):
        prmod.validate_branch(name)


@pytest.mark.slow
def test_git_gets_a_minimal_environment_never_a_copy_of_gitbots(work, monkeypatch):
    for name, value in {
        "ANTHROPIC_API_KEY": "sk-ant-api03-" + "k" * 30,
        "INPUT_GITHUB-TOKEN": "ghs_" + "t" * 36,
        "MY_DEPLOY_SECRET": "hunter2hunter2",
        "GIT_DIR": "/elsewhere",
        "UNRELATED": "x",
    }.items():
        monkeypatch.setenv(name, value)
    # A real git process prints the environment it was given (an alias runs a shell command).
    shown = prmod.git(work, "-c", "alias.showenv=!env", "showenv")
    names = {line.split("=", 1)[0] for line in shown.splitlines() if "=" in line}
    for leaked in ("ANTHROPIC_API_KEY", "INPUT_GITHUB-TOKEN", "MY_DEPLOY_SECRET", "GIT_DIR", "UNRELATED"):
        assert leaked not in names
    assert {"PATH", "GIT_TERMINAL_PROMPT", "GIT_AUTHOR_EMAIL"} <= names
    env = gitcmd.bot_env(prmod.auth_env("tok-en-value", "https://github.com"))
    assert env["GIT_CONFIG_KEY_0"] == "http.https://github.com/.extraheader"  # the token: only when asked


def test_the_policy_judges_every_changed_path():
    policy = Policy(
        edit_deny=(".git/**", ".github/workflows/**", ".github/actions/**", ".gitbot/**", ".ci/run")
    )
    paths = [
        "stats.py",
        ".gitbot/policy.toml",
        ".github/actions/deploy/action.yml",
        ".ci/run",
        ".github/workflows/ci.yml",
        "docs/guide.md",
    ]
    keep, left_out = prmod.partition_changes(paths, policy.check_edit, unpushable=workflow_file)
    assert keep == ["docs/guide.md", "stats.py"]
    by_policy = {item.path: item.reason for item in left_out if item.by_policy}
    assert set(by_policy) == {".gitbot/policy.toml", ".github/actions/deploy/action.yml", ".ci/run"}
    assert "edit_deny" in by_policy[".ci/run"]
    assert [item.path for item in left_out if not item.by_policy] == [".github/workflows/ci.yml"]


@pytest.mark.slow
def test_the_commit_message_carries_only_gitbots_trailers(seeded_github, work):
    with a_run(work, "r1"):
        (work / "stats.py").write_text("y\n")
    commit = prmod.commit_changes(
        work,
        ["stats.py"],
        changes=RunChanges(work, "r1"),
        policy=Policy(repo=work),
        subject="Fix #7: crash",
        body="gitbot's change for issue #7.",
        run_id="r1\nSigned-off-by: Mallory <m@evil.example>",
        model="claude-x\nCo-authored-by: Mallory <m@evil.example>",
    )
    message = run_git(work, "log", "-1", "--format=%B", commit.sha)
    trailers = run_git(work, "log", "-1", "--format=%(trailers:only,unfold)", commit.sha).split("\n")
    assert [t.split(":")[0] for t in trailers if t] == ["Gitbot-Run", "Co-authored-by"]
    assert "Signed-off-by" not in message and "Mallory" not in message


ODD_NAMES = [":(glob)*", ":nope", "*", "-rf", "--all", "new\nline", "-", ":", os.fsdecode(b"caf\xe9.txt")]


@pytest.mark.slow
def test_names_of_any_shape_are_committed_as_names_and_nothing_else(work):
    # Finding 1 of issue 20: `git add --all -- ':(glob)*'` staged the whole work tree, `:nope` sank it.
    with a_run(work):
        for name in ODD_NAMES:
            (work / os.fsencode(name).decode("utf-8", "surrogateescape")).write_bytes(b"")
        (work / "stats.py").write_text("fixed\n")
    for bystander in (".env", "gha-creds-1234.json", "notes.txt"):  # untracked, not the run's
        (work / bystander).write_text("DB_PASS=hunter2\n")
    made = commit_of(work, ["stats.py", *ODD_NAMES])
    tree = git_bytes(work, "ls-tree", "-r", "-z", "--name-only", made.sha)
    names = sorted(n for n in tree.split(b"\0") if n)
    assert names == sorted(os.fsencode(n) for n in ["stats.py", *ODD_NAMES, "README.md", "test_stats.py"])
    assert (work / ".env").read_text() == "DB_PASS=hunter2\n"  # the user's files are untouched
    assert b"?? .env\0" in git_bytes(work, "status", "--porcelain", "-z")  # and still untracked


def git_bytes(cwd, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True).stdout


@pytest.mark.slow
def test_the_gate_refuses_a_tree_with_a_path_the_run_did_not_change(work):
    (work / "extra.py").write_text("x = 1\n")  # an earlier step's, not the run's: never taken from the work tree
    with a_run(work):
        (work / "stats.py").write_text("fixed\n")
        (work / ".env").write_text("DB_PASS=hunter2\n")
    head = run_git(work, "rev-parse", "HEAD").strip()
    with pytest.raises(GateClosed) as closed:
        commit_of(work, ["stats.py", "extra.py", ".env"])
    where = str(closed.value)
    assert ".env (it matches files.read_deny)" in where and "extra.py" not in where
    assert "hunter2" not in where  # names, never content
    assert run_git(work, "rev-parse", "HEAD").strip() == head  # nothing was committed
    assert run_git(work, "diff", "--cached", "--name-only") == ""
