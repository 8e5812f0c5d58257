"""What gitbot allows when a repository has no policy file (and what `gitbot policy init` writes)."""

from __future__ import annotations

# Secrets that commonly sit in a checkout. `**/` also covers the repository root.
DEFAULT_READ_DENY: tuple[str, ...] = (
    "**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx",
    "**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*",
    "**/.netrc", "**/.pypirc", "**/.git-credentials",
    # Registry, environment and cloud-state credentials: a token printed in pieces (`cut -d_ -f3 .npmrc`)
    # has no shape a scanner knows, so only not reading the file keeps it from the model.
    "**/.npmrc", "**/.envrc", "**/.docker/config.json", "**/*.tfstate",
    # google-github-actions/auth writes its credentials file into the workspace.
    "**/gha-creds-*.json",
)
DEFAULT_EDIT_ALLOW: tuple[str, ...] = ("**",)
# CI definitions run with the repository's secrets, and .gitbot holds this very policy.
DEFAULT_EDIT_DENY: tuple[str, ...] = (".git/**", ".github/workflows/**", ".gitbot/**")

# What a reviewer uses to look at a repository. Each program's options that run, load or write something
# are still judged (policy/judge/readers.py and git.py), reads are held to read_deny and writes to the
# edit rules. The run's check command is added to these for the run that needs it.
DEFAULT_COMMAND_ALLOW: tuple[str, ...] = (
    # files and their contents
    "ls *", "cat *", "head *", "tail *", "wc *", "nl *", "grep *", "rg *", "find *", "tree *", "file *", "stat *",
    "du *", "sort *", "uniq *", "cut *", "tr *", "diff *", "cmp *", "jq *",
    # names, paths and the shell's own
    "pwd *", "cd *", "echo *", "printf *", "test *", "which *", "basename *", "dirname *", "realpath *",
    # git, reading only
    "git status *", "git diff *", "git log *", "git show *", "git blame *", "git grep *", "git ls-files *",
    "git ls-tree *", "git rev-parse *", "git shortlog *", "git describe *", "git merge-base *",
    "git branch --list *", "git branch --show-current", "git tag --list *",
)
DEFAULT_COMMAND_DENY: tuple[str, ...] = ()

# Inside the sandbox the sandbox is the boundary (no network, writes only to the repository minus the
# protected paths, read_deny files masked, $HOME and /tmp private), so a command runs unless a deny rule
# refuses it ("deny-list"); "allow-list" holds sandboxed commands to commands.allow as well. The
# allow-list always governs commands that run without the sandbox.
DEFAULT_SANDBOXED_COMMANDS = "deny-list"
SANDBOXED_COMMANDS = ("deny-list", "allow-list")

DEFAULT_SANDBOX_MODE = "auto"
SANDBOX_MODES = ("required", "auto", "off")
DEFAULT_NETWORK = False

# `[sandbox] rebuildable` (policy/rebuildable.py): ignored build directories left writable, and not
# restored, when a run's start cannot capture them. Empty: opt-in. Issue 22's promise is that what a run
# cannot restore is read-only; a writable, unrestorable build directory is a way for the agent's code to
# run on the user's host later, unreviewed (a `.pth` in a venv, `node_modules/.bin/*`, a binary in
# `target/`, a `.pyc`, a wheel in `dist/`), and no diff shows it. Only the user can accept that.
DEFAULT_REBUILDABLE: tuple[str, ...] = ()

DEFAULT_POLICY_PATH = ".gitbot/policy.toml"
