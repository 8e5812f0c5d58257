"""Which files GitLab would run as CI/CD configuration of a pushed branch: the root file, .gitlab/, and
every file it includes locally, followed through their includes, in any quoting or list style."""

from __future__ import annotations

from pathlib import Path

from gitbot.forge.gitlab.ci_config import read


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_local_includes_are_followed_and_remote_or_other_projects_files_are_not(tmp_path):
    write(tmp_path, {
        ".gitlab-ci.yml": (
            "include:\n"
            "  - local: 'ci/build.yml'\n"
            "  - '/ci/deploy.yaml'\n"
            "  - local: ci/jobs/*.yml\n"
            "  - remote: 'https://example.com/ci/remote.yml'\n"
            "  - project: group/other\n    file: /templates/theirs.yml\n"
            "  - component: $CI_SERVER_FQDN/g/c/gitbot@1.0\n"
        ),
        "ci/build.yml": "include: { local: ci/more.yml }\nbuild:\n  script: make\n",
        "ci/more.yml": "x:\n  script: true\n",
        "ci/deploy.yaml": "deploy:\n  script: true\n",
        "ci/jobs/a.yml": "include:\n  - local: ci/from-glob.yml\n",
        "ci/from-glob.yml": "",
        "config/settings.yml": "debug: false\n",
    })
    config = read(tmp_path, None)
    for path in (".gitlab-ci.yml", "ci/build.yml", "ci/more.yml", "ci/deploy.yaml", "ci/jobs/a.yml",
                 "ci/jobs/added-later.yml", "ci/from-glob.yml", ".gitlab/ci/anything.yml"):
        assert config.holds(path), path
    for path in ("config/settings.yml", "stats.py", "ci/remote.yml", "README.md"):
        assert not config.holds(path), path


def test_a_configured_path_counts_and_a_symlink_or_a_path_outside_is_not_read(tmp_path):
    outside = tmp_path / "outside.yml"
    outside.write_text("include: { local: secret-target.yml }\n")
    repo = tmp_path / "repo"
    write(repo, {"ci/main.yml": "include:\n  - local: ../outside.yml\n  - local: ci/linked.yml\n"})
    (repo / "ci" / "linked.yml").symlink_to(outside)
    config = read(repo, "ci/main.yml")
    assert config.holds("ci/main.yml") and config.holds(".gitlab-ci.yml") and config.holds("ci/linked.yml")
    assert not config.holds("secret-target.yml")  # the symlink's target was not read as configuration
