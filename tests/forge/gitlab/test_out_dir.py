"""The job's output directory stays gitbot's: planted symlinks are replaced, not written through; what gitbot
did not write is gone at the end; a user's directory is refused, never emptied; git ignores it for the run."""

from __future__ import annotations

import subprocess

import pytest

from gitbot.forge.gitlab import out_dir
from gitbot.forge.gitlab.ci_io import GitLabIO


def test_a_planted_symlink_is_replaced_never_written_through(tmp_path):
    victim, out = tmp_path / "victim.txt", tmp_path / "out"
    victim.write_text("precious\n")
    out.mkdir()
    for name in ("gitbot.env", "gitbot.env.partial", "summary.md", "summary.md.partial"):
        (out / name).symlink_to(victim)
    io = GitLabIO(environ={"GITBOT_OUTPUT_DIR": str(out)})
    io.set_outputs({"pr-url": "https://x/1"})
    io.write_summary("done")
    assert victim.read_text() == "precious\n"
    assert (
        not (out / "gitbot.env").is_symlink()
        and (out / "gitbot.env").read_text() == "GITBOT_PR_URL=https://x/1\n"
    )


def test_the_directory_itself_replaced_by_a_symlink_is_not_followed(tmp_path):
    elsewhere, out = tmp_path / "elsewhere", tmp_path / "out"
    elsewhere.mkdir()
    out.symlink_to(elsewhere)
    GitLabIO(environ={"GITBOT_OUTPUT_DIR": str(out)}).set_outputs({"status": "ok"})
    assert list(elsewhere.iterdir()) == [] and out.is_dir() and not out.is_symlink()


def test_the_end_leaves_only_what_gitbot_wrote_and_its_record(tmp_path):
    out, record = tmp_path / "out", tmp_path / "record"
    io = GitLabIO(environ={"GITBOT_OUTPUT_DIR": str(out)})
    io.set_outputs({"status": "ok"})
    (out / "planted.env").write_text("CI_API_V4_URL=https://attacker\n")
    (out / "gitbot-artifact").mkdir()
    (out / "gitbot-artifact" / "planted.txt").write_text("unscanned\n")
    (out / "summary.md").symlink_to(tmp_path / "nowhere")
    (record / "gitbot-artifact" / "runs").mkdir(parents=True)
    (record / "gitbot-artifact" / "runs" / "run.json").write_text("{}")
    io.finish(record)
    left = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    assert left == [".gitignore", "gitbot-artifact", "gitbot-artifact/runs", "gitbot-artifact/runs/run.json",
                    "gitbot.env"]  # fmt: skip
    assert not record.exists()


def test_a_directory_holding_someone_elses_files_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    assert "notes.txt" in out_dir.problem(tmp_path)
    assert out_dir.problem(tmp_path / "new") is None


@pytest.mark.slow  # git
def test_git_ignores_the_directory_in_the_work_tree_while_gitbot_runs(tmp_path):
    def git(*args):
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True
        ).stdout

    git("init", "-q")
    exclude = tmp_path / ".git" / "info" / "exclude"
    before = exclude.read_bytes()
    (tmp_path / ".gitbot-out").mkdir()
    (tmp_path / ".gitbot-out" / "planted.txt").write_text("x")
    with out_dir.excluded(tmp_path, tmp_path / ".gitbot-out"):
        assert ".gitbot-out" not in git("status", "--porcelain", "--untracked-files=all")
    assert exclude.read_bytes() == before and ".gitbot-out" in git("status", "--porcelain")
