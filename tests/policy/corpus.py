"""What the command corpus is judged with: the case type, the policies and the repositories.

Placeholders in a case's command: `{REPO}` the repository's absolute path, `{BLOB}` the object id of a
read-denied file's content in the history of the "secrets" repository."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import git, make_repo

ALLOW = (
    "python -m pytest *", "pytest *", "ruff check *", "git diff *", "git status *", "git log *", "git show *",
    "git config *", "git config user.name gitbot", "git -c core.pager=cat log *", "ls *", "cat *", "grep *",
    "echo *", "find *", "find build -name *.pyc -delete", "head *", "tail *", "wc *", "sort *", "rm *", "tee *",
    "sed *", "mv *", "cd *", "./scripts/test.sh *", "read *",
)
DENY = ("git push *", "curl *", "wget *", "sudo *")

# Further policies some cases are judged under (the one a bypass was found with); the default is
# ALLOW/DENY above. Every policy keeps the default file rules (edit_deny has .git/**,
# .github/workflows/** and .gitbot/**; read_deny has .env, .env.* and keys).
POLICIES = {
    "corpus": {"command_allow": ALLOW, "command_deny": DENY},
    "ruff-only": {"command_allow": ("ruff check *",)},
    "defaults": {},
    "writers": {"command_allow": ("cp *", "mv *", "ln *", "install *", "chmod *", "chown *", "touch *", "rm *",
                                  "mkdir *", "tee *", "echo *", "cat *", "truncate *")},
    "tools": {"command_allow": ("rg *", "go *", "make *", "cargo *", "npm *", "pip *", "pytest *", "python *",
                                "perl *", "ruby *", "java *", "tar *", "git status *", "env *", "ls *")},
    # A strict policy: only the test suite may run.
    "strict": {"command_allow": ("python -m pytest *",)},
    # What `gitbot policy init` writes for a project with every kind of check, plus pagers and tar.
    "runners": {"command_allow": ("ls *", "cat *", "head *", "tail *", "wc *", "nl *", "grep *", "rg *", "find *",
                                  "tree *", "file *", "stat *", "du *", "sort *", "uniq *", "cut *", "tr *", "diff *",
                                  "cmp *", "jq *", "cd *", "echo *", "git status *", "git diff *", "git log *",
                                  "git show *", "git grep *", "git blame *", "python -m pytest *", "pytest *",
                                  "ruff check *", "ruff format *", "mypy *", "npm test *", "npm run test *",
                                  "npm run lint *", "yarn test *", "make test *", "make lint *", "go test *",
                                  "go vet *", "go build *", "cargo test *", "cargo check *", "cargo clippy *",
                                  "cargo build *", "tar *", "less *", "more *")},
    "shells": {"command_allow": ("bash *", "sh *", "ls *", "cat *", "echo *"), "command_deny": ("curl *",)},
    "gitall": {"command_allow": ("git *",)},
}


@dataclass(frozen=True)
class Case:
    command: str
    allowed: bool
    reason: str = ""  # a fragment the decision's reason must contain
    extra: tuple[str, ...] = ()  # the run's check command(s)
    policy: str = "corpus"  # a key of POLICIES
    repo: str = "plain"  # a key of REPOSITORIES
    sandboxed: bool = False  # judged as a run in the sandbox judges it (issue 22)


A, D = True, False

ORDINARY_FILES = {
    "README.md": "# demo\n", "a.txt": "b\na\n", "b.txt": "a\nb\n", "a.csv": "x,1\ny,2\n", "list.txt": "a.txt\n",
    "files.txt": "a.txt\n", "package.json": '{"name": "demo", "scripts": {"test": "true"}}\n',
    "src/app.py": "print('app')\n", "src/util.py": "X = 1\n", "tests/test_app.py": "def test_x():\n    pass\n",
    "sub/a": "a\n", "x": "x\n", "a": "a\n", "b": "b\n",
    ".github/workflows/helper.py": "print('ci')\n", ".gitbot/policy.toml": "[commands]\n",
}
SECRET = "TOKEN=corpus-secret-0000"


def _plain(path: Path) -> dict[str, str]:
    """Ordinary files, no git repository, nothing read_deny protects."""
    for name, content in ORDINARY_FILES.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(content)
    return {}


def _secrets(path: Path) -> dict[str, str]:
    """Ordinary files; a read-denied file committed and then deleted (so only in the history), one in
    a stash, and an untracked .env in the work tree."""
    make_repo(path, {**ORDINARY_FILES, "deploy/.env.production": SECRET + "\n"})
    blob = git(path, "rev-parse", "HEAD:deploy/.env.production").strip()
    git(path, "rm", "-q", "deploy/.env.production")
    git(path, "commit", "-q", "-m", "remove the secret")
    (path / "src" / "app.py").write_text("print('app, changed')\n")
    git(path, "commit", "-q", "-am", "change the app")
    (path / "notes").mkdir()
    # Content of its own: git lists a blob under the first path it meets it at, so a stashed copy of
    # deploy/.env.production would be listed under either name, by the order of the walk.
    (path / "notes" / ".env.stash").write_text(SECRET + " (stashed)\n")
    git(path, "stash", "push", "-q", "-u", "--", "notes/.env.stash")
    (path / ".env").write_text(SECRET + "\n")
    return {"BLOB": blob}


def _tracked(path: Path) -> dict[str, str]:
    """A read-denied file that is tracked now (a test certificate)."""
    make_repo(path, {**ORDINARY_FILES, "certs/dev.pem": "-----BEGIN PRIVATE KEY-----\n"})
    return {}


def _links(path: Path) -> dict[str, str]:
    """Ordinary files and a symlink that leads outside the repository (which read_deny covers)."""
    _plain(path)
    (path / "out").symlink_to("/etc/hostname")
    return {}


REPOSITORIES = {"plain": _plain, "secrets": _secrets, "tracked": _tracked, "links": _links}


def build_repositories(root: Path) -> dict[str, tuple[Path, dict[str, str]]]:
    """Each repository under `root`, with the values of its placeholders."""
    return {name: (root / name, build(root / name)) for name, build in REPOSITORIES.items()}


def command_of(case: Case, repo: Path, values: dict[str, str]) -> str:
    command = case.command.replace("{REPO}", os.path.realpath(repo))
    for name, value in values.items():
        command = command.replace("{" + name + "}", value)
    return command
