"""The job token the runner leaves in the clone's config: gone while gitbot works, back afterwards."""

from __future__ import annotations

import subprocess

import pytest

from gitbot.forge.gitlab.checkout import clone_credentials_removed
from gitbot.sandbox.contain import credentials_readable

pytestmark = pytest.mark.slow  # real git

JOB_TOKEN = "glcbt-64_jobTokenValue0123456789"


def config(repo, *args):
    return subprocess.run(
        ["git", "-C", str(repo), "config", "--local", *args], capture_output=True, text=True, check=False
    )


def test_the_runners_credentials_are_out_of_the_config_inside_and_restored_after(tmp_path):
    repo = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    url = f"https://gitlab-ci-token:{JOB_TOKEN}@gitlab.example.com/acme/widgets.git"
    config(repo, "remote.origin.url", url)
    config(repo, "credential.https://gitlab.example.com.helper", "store --file /tmp/x")
    config(repo, "remote.mirror.url", "https://gitlab.example.com/acme/mirror.git")
    before = (repo / ".git" / "config").read_text()
    assert credentials_readable(repo)
    with clone_credentials_removed(repo) as taken:
        text = (repo / ".git" / "config").read_text()
        assert JOB_TOKEN not in text and "helper" not in text
        assert (
            config(repo, "remote.origin.url").stdout.strip() == "https://gitlab.example.com/acme/widgets.git"
        )
        assert (
            config(repo, "remote.mirror.url").stdout.strip() == "https://gitlab.example.com/acme/mirror.git"
        )
        assert not credentials_readable(repo)
        assert sorted(taken) == ["credential.https://gitlab.example.com.helper", "remote.origin"]
    assert config(repo, "remote.origin.url").stdout.strip() == url
    assert (
        config(repo, "--get", "credential.https://gitlab.example.com.helper").stdout.strip()
        == "store --file /tmp/x"
    )
    assert sorted(before.splitlines()) == sorted((repo / ".git" / "config").read_text().splitlines())


def test_a_clone_without_credentials_is_left_alone(tmp_path):
    repo = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    config(repo, "remote.origin.url", "https://gitlab.example.com/acme/widgets.git")
    before = (repo / ".git" / "config").read_text()
    with clone_credentials_removed(repo) as taken:
        assert taken == []
    assert (repo / ".git" / "config").read_text() == before


def test_a_url_rewrite_carrying_the_token_is_out_while_gitbot_works(tmp_path):
    repo = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    rewrite = f"url.https://gitlab-ci-token:{JOB_TOKEN}@gitlab.example.com/.insteadOf"
    config(repo, rewrite, "https://gitlab.example.com/")
    before = (repo / ".git" / "config").read_text()
    with clone_credentials_removed(repo) as taken:
        assert JOB_TOKEN not in (repo / ".git" / "config").read_text() and len(taken) == 1
    # Back as it was (git writes the variable name it is given in lower case: the same key to git).
    assert (repo / ".git" / "config").read_text().lower() == before.lower()
