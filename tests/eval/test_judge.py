"""The judge's own safety: putting the held-back tests back never acts outside the tree."""

from __future__ import annotations

import os

import pytest

from gitbot.eval.instances import Instance
from gitbot.eval.resolve import judge, put_back_tests
from gitbot.eval.workspace import InstanceProblem
from tests.conftest import git, make_repo

NEW_TEST = ("diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\nindex 0000000..e69de29\n"
            "--- /dev/null\n+++ b/tests/test_new.py\n@@ -0,0 +1 @@\n+def test_new(): pass\n")


@pytest.mark.slow
def test_a_link_the_agent_put_in_place_of_a_test_directory_cannot_make_the_judge_delete_outside(tmp_path):
    repo = make_repo(tmp_path / "repo", {"m.py": "x = 1\n", "tests/test_old.py": "def test_old(): pass\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    victim_dir = tmp_path / "home"
    victim_dir.mkdir()
    victim = victim_dir / "test_new.py"
    victim.write_text("the user's file\n")
    instance = Instance("i", "r", base, "", NEW_TEST, ["tests/test_new.py::test_new"])
    # The agent's tree: tests/ replaced by a link to a directory outside the repository.
    git(repo, "rm", "-rq", "tests")
    os.symlink(victim_dir, repo / "tests")
    with pytest.raises(InstanceProblem, match="symbolic link"):
        put_back_tests(repo, instance, base)
    assert victim.read_text() == "the user's file\n"


@pytest.mark.slow
def test_the_judge_reports_such_a_patch_as_not_resolved_and_touches_nothing_outside(tmp_path):
    repo = make_repo(tmp_path / "repo", {"m.py": "x = 1\n", "tests/test_old.py": "def test_old(): pass\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    victim_dir = tmp_path / "home"
    victim_dir.mkdir()
    (victim_dir / "test_new.py").write_text("the user's file\n")
    link_patch = (f"diff --git a/tests b/tests\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n"
                  f"+++ b/tests\n@@ -0,0 +1 @@\n+{victim_dir}\n\\ No newline at end of file\n"
                  "diff --git a/tests/test_old.py b/tests/test_old.py\ndeleted file mode 100644\n"
                  "--- a/tests/test_old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-def test_old(): pass\n")
    instance = Instance("i", "r", base, "", NEW_TEST, ["tests/test_new.py::test_new"])
    verdict = judge(repo, instance, base, link_patch, policy=None)
    assert not verdict.resolved and "symbolic link" in verdict.why
    assert (victim_dir / "test_new.py").read_text() == "the user's file\n"
