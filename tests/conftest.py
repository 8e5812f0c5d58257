"""Shared fixtures: real temporary git repositories and the environment for real subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

GIT_IDENTITY = {"GIT_AUTHOR_NAME": "Test User", "GIT_AUTHOR_EMAIL": "test@example.invalid",
                "GIT_COMMITTER_NAME": "Test User", "GIT_COMMITTER_EMAIL": "test@example.invalid"}

BUGGY_MODULE = '''"""Small statistics helpers."""


def mean(values):
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / (len(values) - 1)
'''

TEST_MODULE = '''import unittest

from stats import mean


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3]), 2)


if __name__ == "__main__":
    unittest.main()
'''

FIX_DIFF = ("<<<<<<< SEARCH\n    return sum(values) / (len(values) - 1)\n=======\n"
            "    return sum(values) / len(values)\n>>>>>>> REPLACE")


def git(repo: Path, *args: str) -> str:
    # GIT_* from a surrounding hook (GIT_DIR, GIT_INDEX_FILE) must never point git at another repository.
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(GIT_IDENTITY)
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, content in (files or {}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    if files:
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def buggy_repo(tmp_path: Path) -> Path:
    """A real git repository whose unit test fails because of a one-line bug."""
    return make_repo(tmp_path / "repo", {"stats.py": BUGGY_MODULE, "test_stats.py": TEST_MODULE})


def gitbot_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for running `python -m gitbot` as a real subprocess (no real keys leak in)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "GITHUB_", "INPUT_", "OPENAI_", "AWS_", "GOOGLE_", "CLOUD_ML_"))}
    env.update(GIT_IDENTITY)
    # The cloud SDKs' credential chains end at a metadata server on the network: never in tests.
    env.update({"AWS_EC2_METADATA_DISABLED": "true", "NO_GCE_CHECK": "True"})
    env.update(extra or {})
    return env


def run_gitbot(args: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gitbot", *args], capture_output=True, text=True,
                          env=gitbot_env(env), cwd=cwd, timeout=timeout, check=False)


@pytest.fixture
def gitbot_in_process(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture):
    """`run_gitbot`'s twin for tests about what a command decides, not about its process: `gitbot.cli.main`
    in this worker, with the environment `run_gitbot` would give the subprocess and the output captured at
    the file descriptors (the checks it runs write there). A subprocess spends most of its time importing
    the provider SDKs; the import is paid once per worker here."""
    from gitbot.cli import main

    def run(args: list[str], *, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        wanted = gitbot_env(env)
        with monkeypatch.context() as scoped:
            for name in set(os.environ) - set(wanted):
                scoped.delenv(name)
            for name, value in wanted.items():
                scoped.setenv(name, value)
            if cwd is not None:
                scoped.chdir(cwd)
            capfd.readouterr()  # what an earlier call printed is not this one's output
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse's errors exit 2, as the command line does
                code = exit_.code if isinstance(exit_.code, int) else 2
            sys.stdout.flush()
            sys.stderr.flush()
            out, err = capfd.readouterr()
        return subprocess.CompletedProcess(["gitbot", *args], code, out, err)

    return run


@pytest.fixture(autouse=True, scope="session")
def _own_cache_home(tmp_path_factory):
    """gitbot remembers the sandbox probe under $XDG_CACHE_HOME: the tests' own, probed for real once."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield


@pytest.fixture(autouse=True)
def _guard_the_checkout():
    """Tests must work in temporary directories: fail loudly if one touches this checkout's git data."""
    root = Path(__file__).resolve().parent.parent
    head = root / ".git" / "HEAD"
    before = head.read_bytes() if head.exists() else None
    yield
    after = head.read_bytes() if head.exists() else None
    assert before == after, "a test changed or removed the checkout's .git — tests must use tmp_path"
