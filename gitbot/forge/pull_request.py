"""The git side of a pull request: the bot branch, the credential, one commit, the push, the PR.

Rules this module enforces (the agent never pushes; gitbot's own process does, after the run):
- The token reaches git only for the one command that needs it (fetch or push), as an
  `http.<server>/.extraheader` passed through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/`GIT_CONFIG_VALUE_0`:
  never in a URL, never written to `.git/config`, never on a command line (where `ps` would show it),
  and sent only to the forge's server.
- The credential `actions/checkout` persisted (an `http.…extraheader` in `.git/config`, or, since
  checkout v6, an include of a credentials file) is removed while gitbot works, and put back after.
- Only the bot branch is pushed, only to `origin`, with `--force-with-lease` naming the tip gitbot
  expects; an existing branch is replaced only when every commit on it is gitbot's own.
- Every git command runs with hooks off: a hook is code from the repository, which the agent edited.
- Every git command gets a minimal environment (PATH, HOME, the locale, proxies and CA settings, the
  bot identity), never a copy of gitbot's own: no secret reaches a git process but the token of the
  one command that needs it.
- Only the changed paths the run's policy lets the agent edit are committed, and the commit gate
  (fixcheck/gate.py) checks the exact tree before it is committed; the commit message is gitbot's own (never the model's words: they could close other issues or forge trailers).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitbot import git as gitcmd
from gitbot.errors import GitError
from gitbot.fixcheck import gate
from gitbot.forge.interface import Forge, PullData
from gitbot.git import BOT_EMAIL

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitbot.fixcheck.changes import RunChanges
    from gitbot.policy.model import Policy

RUN_TRAILER = "Gitbot-Run"
MODEL_EMAIL = "noreply@anthropic.com"
CREDENTIAL_KEYS = r"^(http\.(.*\.)?extraheader|include\.path|includeif\..*\.path)$"


class BranchNotOurs(GitError):
    """The bot branch holds commits gitbot did not make: it is not overwritten."""


def git(repo: Path, *args: str, env: dict[str, str] | None = None, input: str | None = None,
        check: bool = True) -> str:
    """`git ARGS` as the bot: its identity, a minimal environment (`env`: the token's configuration, for
    fetch and push only), no hooks of the repository's."""
    return gitcmd.run(["-c", "core.hooksPath=/dev/null", *args], cwd=repo, env=gitcmd.bot_env(env),
                      input=input.encode("utf-8") if input is not None else None,
                      ok=(0,) if check else range(256)).stdout.decode("utf-8", "replace")


def auth_env(token: str, server_url: str, user: str = "x-access-token") -> dict[str, str]:
    """Configuration for one git process: the token as a header, scoped to the forge's server. `user`
    is the name the forge expects with a token (GitHub: x-access-token; GitLab: oauth2, or
    gitlab-ci-token for a CI job token)."""
    pair = base64.b64encode(f"{user}:{token}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"http.{server_url.rstrip('/')}/.extraheader",
        "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {pair}",
    }


# ---------------------------------------------------------------- the persisted checkout credential


def _credential_entries(repo: Path) -> list[tuple[str, str]]:
    out = git(repo, "config", "--local", "--null", "--get-regexp", CREDENTIAL_KEYS, check=False)
    entries = []
    for item in out.split("\0"):
        if not item:
            continue
        key, _, value = item.partition("\n")
        if key.startswith("include"):
            # An include matters only when the file it names carries a credential (checkout v6).
            target = Path(os.path.expanduser(value))
            target = target if target.is_absolute() else repo / ".git" / target
            try:
                if "extraheader" not in target.read_text(encoding="utf-8", errors="replace").lower():
                    continue
            except OSError:
                continue
        entries.append((key, value))
    return entries


@contextmanager
def checkout_credential_removed(repo: Path) -> Iterator[list[str]]:
    """While inside, `.git/config` holds no credential; on the way out, what was there is put back."""
    entries = _credential_entries(repo)
    for key, value in entries:
        git(repo, "config", "--local", "--fixed-value", "--unset-all", key, value)
    try:
        yield [key for key, _ in entries]
    finally:
        for key, value in entries:
            git(repo, "config", "--local", "--add", key, value)


# ---------------------------------------------------------------- branch, commit, push


def validate_branch(name: str) -> str:
    """A branch name from an event is data: it must be a plain, valid branch name."""
    if name.startswith("-") or not re.fullmatch(r"[\w./+@-]+", name) or "@{" in name:
        raise GitError(f"refusing an unusual branch name: {name!r}")
    if gitcmd.run(["check-ref-format", "--branch", name], cwd=None, ok=range(256)).returncode != 0:
        raise GitError(f"not a valid branch name: {name!r}")
    return name


def fetch(repo: Path, branch: str, *, auth: dict[str, str]) -> str | None:
    """Fetch origin's branch; its tip, or None when origin has no such branch."""
    validate_branch(branch)
    remote_ref = f"refs/heads/{branch}"
    listed = git(repo, "ls-remote", "origin", remote_ref, env=auth).split()
    if not listed:
        return None
    git(
        repo,
        "fetch",
        "--no-tags",
        "--quiet",
        "origin",
        f"+{remote_ref}:refs/remotes/origin/{branch}",
        env=auth,
    )
    return listed[0]


def fetch_refs(repo: Path, refs: dict[str, str], *, auth: dict[str, str]) -> dict[str, str | None]:
    """Fetch several of origin's refs (remote ref -> local ref) in one round trip each for listing and
    fetching; returns each remote ref's tip, or None when origin has no such ref."""
    listed = git(repo, "ls-remote", "origin", *refs, env=auth).split("\n")
    tips: dict[str, str | None] = dict.fromkeys(refs)
    for line in listed:
        sha, _, name = line.partition("\t")
        if name in tips:
            tips[name] = sha
    wanted = [f"+{remote}:{local}" for remote, local in refs.items() if tips[remote]]
    if wanted:
        git(repo, "fetch", "--no-tags", "--quiet", "origin", *wanted, env=auth)
    return tips


def start_branch(repo: Path, branch: str, start: str) -> None:
    """Check out `branch` at `start` (the work tree is a fresh checkout: nothing is lost)."""
    git(repo, "checkout", "--quiet", "-B", branch, start)


def foreign_commits(repo: Path, tip: str, base: str) -> list[str]:
    """Commits on `tip` and not on `base` that gitbot did not make (author and trailer both checked)."""
    out = git(
        repo,
        "log",
        f"--format=%H%x00%ae%x00%(trailers:key={RUN_TRAILER},valueonly,separator=)%x1e",
        tip,
        "--not",
        base,
    )
    foreign = []
    for record in out.split("\x1e"):
        record = record.strip()
        if not record:
            continue
        sha, email, run = ([*record.split("\0"), "", ""])[:3]
        if email != BOT_EMAIL or not run.strip():
            foreign.append(sha)
    return foreign


@dataclass(frozen=True)
class Commit:
    sha: str
    files: list[str]
    skipped: list[str]  # changed but left out: files the forge would run as CI configuration


@dataclass(frozen=True)
class LeftOut:
    path: str
    reason: str
    by_policy: bool  # True: the policy does not allow editing it; False: the forge's rule (forge.unpushable)


def partition_changes(
    paths: list[str],
    check_edit: Callable[[str], Any] | None,
    ignored_before: frozenset[bytes] = frozenset(),
    unpushable: Callable[[str], str | None] | None = None,
) -> tuple[list[str], list[LeftOut]]:
    """The changed paths that may be committed, and those left out with the reason.

    The agent's file tools already ask the policy, but its commands (a script, `sed -i`, a generator)
    can write anywhere the sandbox lets them: every path is judged again here, by the run's policy.
    `ignored_before` (gate.ignored_untracked() before the agent started): files an earlier step left,
    ignored, which the run only un-ignored; never committed. `unpushable` (the forge's): why a path is
    never pushed (CI configuration a pushed branch would run), or None."""
    keep: list[str] = []
    left_out: list[LeftOut] = []
    for path in sorted(dict.fromkeys(paths)):
        if gate.was_ignored(os.fsencode(path), ignored_before):
            left_out.append(LeftOut(path, gate.IGNORED_BEFORE, by_policy=True))
            continue
        reason = unpushable(path) if unpushable is not None else None
        if reason:
            left_out.append(LeftOut(path, reason, by_policy=False))
            continue
        decision = check_edit(path) if check_edit is not None else None
        if decision is not None and not decision.allowed:
            left_out.append(LeftOut(path, decision.reason, by_policy=True))
        else:
            keep.append(path)
    return keep, left_out


def _trailer_value(text: str) -> str:
    """One word of plain characters: a value cannot start another line (another trailer)."""
    first = (text.split() or [""])[0]
    return re.sub(r"[^\w.:@/+-]", "", first)[:100] or "unknown"


def commit_message(subject: str, body: str, *, run_id: str, model: str) -> str:
    subject = " ".join(subject.split()) or "gitbot change"
    body = body.strip()
    trailers = (
        f"{RUN_TRAILER}: {_trailer_value(run_id)}\nCo-authored-by: {_trailer_value(model)} <{MODEL_EMAIL}>\n"
    )
    return f"{subject}\n\n{body}\n\n{trailers}" if body else f"{subject}\n\n{trailers}"


def commit_changes(
    repo: Path, paths: list[str], *, changes: RunChanges, policy: Policy, subject: str, body: str,
    run_id: str, model: str, unpushable: Callable[[str], str | None] | None = None
) -> Commit | None:
    """One commit of `paths` (as the run's last checkpoint has them: never the work tree, where the
    check after the agent and earlier workflow steps write too) on top of HEAD, by the bot, co-authored by
    the model; HEAD's branch moves to it, the work tree is left as it is. `subject` and `body` must be
    gitbot's own text (see `partition_changes` for choosing `paths`).

    The tree is built with plumbing from the names themselves (fixcheck/gate.py: never a pathspec, so
    a file named `:(glob)*` adds itself and nothing else), and the commit gate sees it before any commit
    exists: GateClosed when it holds a path the run did not change (`run_changed`, from its
    checkpoints) or may not publish under `policy`, or when git cannot build it. What `unpushable` (the
    forge's rule) names is never in the tree, whoever chose `paths`."""
    skipped = sorted(p for p in paths if unpushable is not None and unpushable(p))
    wanted = [os.fsencode(p) for p in paths if p not in skipped]
    if not wanted:
        return None
    env = gitcmd.bot_env()
    base = git(repo, "rev-parse", "--verify", "HEAD^{commit}").strip()
    try:
        tree = gate.build_tree(repo, base, wanted, changes, env)
    except gitcmd.GitCommandError as exc:
        raise gate.GateClosed([gate.Stopped("the change", f"git could not build its tree: {exc}")]) from None
    staged = [os.fsdecode(path) for _mode, path in gate.tree_changes(repo, base, tree, env)]
    if not staged:
        return None
    gate.require_open(repo, base, tree, run_changed=changes.names(), policy=policy, env=env)
    message = commit_message(subject, body, run_id=run_id, model=model)
    sha = git(repo, "commit-tree", "--no-gpg-sign", tree, "-p", base, "-F", "-", input=message).strip()
    git(repo, "reset", "--quiet", sha)  # as `git commit` would leave it: the branch at the commit, the index too
    return Commit(sha, staged, skipped)


def added_text(repo: Path, base: str, head: str) -> str:
    """The diff from `base` to `head` with binary files as text, for the secret scan."""
    done = gitcmd.run(["-c", "core.hooksPath=/dev/null", "diff", "--text", "--no-color", "--no-ext-diff",
                       "--no-textconv", "--no-renames", base, head], cwd=repo, env=gitcmd.bot_env())
    return done.stdout.decode("utf-8", "replace")


def push(repo: Path, branch: str, sha: str, *, expected_tip: str | None, auth: dict[str, str]) -> None:
    """Push `sha` to origin's `branch`, only if the branch is still at `expected_tip` (None: absent)."""
    validate_branch(branch)
    lease = f"--force-with-lease=refs/heads/{branch}:{expected_tip or ''}"
    git(repo, "push", "--quiet", "--no-verify", lease, "origin", f"{sha}:refs/heads/{branch}", env=auth)


def diff_text(repo: Path, base: str, head: str) -> str:
    return git(repo, "diff", "--no-color", "--no-ext-diff", "-M", base, head)


# ---------------------------------------------------------------- the pull request


def open_or_update_pull(
    forge: Forge, *, branch: str, base: str, title: str, body: str, draft: bool
) -> tuple[PullData, bool]:
    """The open PR from `branch`, edited, or a new one. Returns (pull request, created)."""
    existing = forge.open_pull(branch)
    if existing is not None:
        return forge.update_pull(existing.number, title=title, body=body), False
    return forge.create_pull(branch=branch, base=base, title=title, body=body, draft=draft), True
