"""What a judgement produces on the way: the refusal it raises and the findings it collects."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitbot.policy.judge.words import Word


class Denied(Exception):
    """A refusal: why, and which rule refused (empty: the judge itself, which cannot see through
    the command; judge.py fills in the rule of each later check)."""

    def __init__(self, reason: str, rule: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.rule = rule


def deny(reason: str, rule: str = "") -> None:
    raise Denied(reason, rule)


def snippet(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Read:
    """A path a command reads, to be held to read_deny once the whole line is known."""

    word: Word
    shown: str  # the command, for messages
    recursive: bool = False  # a directory is searched: every file below it is read
    hidden: bool = True  # ... hidden files too (ripgrep skips them unless told)
    suffixes: tuple[str, ...] = ()  # ... only files with these endings (ruff, mypy)
    rooted: bool = False  # relative to the repository root whatever the directory (git's REV:PATH)
    # Printed from git's history or index (REV:PATH, blame, -L): where the sandbox shows a store without
    # read_deny's blobs (sandbox/filtered_store.py), git prints a placeholder, so nothing to predict.
    history: bool = False
    # What a recursive search skips by name (grep's --include, --exclude, --exclude-dir: base names
    # matched as fnmatch globs), and whether it follows symlinks it meets below (`grep -r` does not).
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    exclude_dirs: tuple[str, ...] = ()
    follows_links: bool = True


@dataclass(frozen=True)
class HistoryRead:
    """A git command that prints file contents from the history, the index or the work tree."""

    shown: str
    scope: str  # "tracked" (the index and the work tree), "history" (every commit too), "files" (untracked too)
    pathspecs: tuple[Word, ...]  # the paths after `--`
    literal_pathspecs: bool  # git --literal-pathspecs
    objects: tuple[str, ...] = ()  # revisions given by object id (a blob among them is refused)
    restricts: bool = True  # False: no pathspec limits what it prints (git cat-file -p)
    contents: bool = True  # False: only the objects named by id matter


@dataclass(frozen=True)
class TreeWrite:
    """A program that rewrites files below a directory (ruff format, ruff --fix): the files of these
    kinds that lie there must all be editable."""

    word: Word
    shown: str
    suffixes: tuple[str, ...]


@dataclass
class Verdicts:
    """What one judgement has found so far."""

    allowed: list[str] = field(default_factory=list)
    commands: list[tuple[str | None, ...]] = field(default_factory=list)
    # Indexes into `commands` of those whose standard input is not the terminal: a heredoc, a here-string,
    # `< file`, or a pipe from an earlier command (so `python - <<EOF` is a script, not a session).
    fed: set[int] = field(default_factory=set)
    outputs: list[tuple[Word, str]] = field(default_factory=list)  # redirect targets, checked at the end
    edits: list[tuple[Word, str]] = field(default_factory=list)  # files a writer changes
    # (what a link points to, the directories a relative symlink target is resolved from, the command)
    links: list[tuple[Word, list[Word], str]] = field(default_factory=list)
    relative_programs: list[str] = field(default_factory=list)
    changes_directory: bool = False
    leaves_repository: bool = False  # ... perhaps to a directory outside the repository
    reads: list[Read] = field(default_factory=list)  # files and directories read
    history: list[HistoryRead] = field(default_factory=list)  # contents printed by git
    tree_writes: list[TreeWrite] = field(default_factory=list)
    # The reads git commands make (REV:PATH, blame, -L): in the sandbox the work tree's read-denied
    # files are masked but git's object store is not, so these are still held to read_deny there.
    git_reads: list[Read] = field(default_factory=list)
