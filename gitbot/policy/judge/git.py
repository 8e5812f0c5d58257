"""git: the options that make it run a program, load configuration, use another repository or write a
file, and the subcommands that print file contents (which read_deny must reach, history included).

Global options (`-c`, `--config-env`, `--exec-path=DIR`, `-C`, `--git-dir` ...) and subcommands that run
arbitrary programs (`bisect run`, `submodule foreach`, `difftool` ...), configuration writes and
subcommands git does not ship (aliases, `git-NAME` programs on PATH) must be named exactly by a rule.
For the subcommands that print contents, options are read from a table: `--output=FILE` is a write
judged by the edit rules, `grep -O`/`--open-files-in-pager` runs a program judged as a command,
`--ext-diff`/`--textconv` run configured programs (a rule must name them), `-O`/`--orderfile` reads a
file. What they print is then judged against read_deny (see `history.py`).
"""

from __future__ import annotations

from gitbot.policy.judge.options import Table, Walk, table, walk
from gitbot.policy.judge.outcome import HistoryRead, Read, Verdicts
from gitbot.policy.judge.words import Word, lit

GIT_SAFE_GLOBAL_OPTIONS = {
    "-p", "--paginate", "-P", "--no-pager", "--bare", "--no-replace-objects", "--literal-pathspecs",
    "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--no-advice",
    "--html-path", "--man-path", "--info-path", "--version", "--help", "-v", "-h",
}
# git's own options that run programs (`-c alias.x=!cmd`, `--exec-path=DIR`) or point it at another
# repository, whose configuration can run programs.
GIT_VALUE_GLOBAL_OPTIONS = {"-c", "--config-env", "-C", "--git-dir", "--work-tree", "--namespace",
                            "--super-prefix", "--exec-path"}

# Options that make a subcommand outside the content table run a program or write a file.
GIT_SENSITIVE_PREFIXES = ("--upload-pack", "--receive-pack", "--exec", "--extcmd", "--open-files-in-pager",
                          "--output", "--template", "--separate-git-dir", "--config", "--tool", "--ext-diff",
                          "--textconv")
GIT_SENSITIVE_SHORT = {"rebase": ("-x",), "clone": ("-u", "-c"), "fetch": ("-u",), "pull": ("-u",),
                       "ls-remote": ("-u",), "difftool": ("-x", "-t"), "mergetool": ("-t",)}
# Subcommands that run arbitrary commands or serve the repository.
GIT_EXEC_SUBCOMMANDS = {"bisect", "submodule", "filter-branch", "filter-repo", "instaweb", "daemon",
                        "web--browse", "shell", "upload-pack", "receive-pack", "http-backend", "credential",
                        "credential-store", "credential-cache", "archimport", "cvsimport", "cvsserver",
                        "svn", "p4", "send-email", "imap-send", "request-pull", "mergetool", "difftool",
                        "for-each-repo", "hook", "maintenance", "quiltimport", "subtree", "fsmonitor--daemon"}
# Every subcommand git 2.39 ships (`git --list-cmds=main`), less the ones above: any other word is an
# alias from the configuration or a `git-NAME` program on PATH, which the judge cannot see.
_SHIPPED = """
add am annotate apply archive blame branch bugreport bundle cat-file check-attr check-ignore check-mailmap
check-ref-format checkout checkout-index cherry cherry-pick clean clone column commit commit-graph commit-tree
config count-objects describe diagnose diff diff-files diff-index diff-tree fast-export fast-import fetch
fetch-pack fmt-merge-msg for-each-ref format-patch fsck fsck-objects gc get-tar-commit-id grep hash-object help
index-pack init init-db interpret-trailers log ls-files ls-remote ls-tree mailinfo mailsplit merge merge-base
merge-file merge-index merge-one-file merge-tree mktag mktree multi-pack-index mv name-rev notes pack-objects
pack-redundant pack-refs patch-id prune prune-packed pull push range-diff read-tree rebase reflog remote repack
replace rerere reset restore rev-list rev-parse revert rm send-pack shortlog show show-branch show-index show-ref
sparse-checkout stage stash status stripspace switch symbolic-ref tag unpack-file unpack-objects update-index
update-ref update-server-info var verify-commit verify-pack verify-tag version whatchanged worktree write-tree
"""
GIT_SUBCOMMANDS = set(_SHIPPED.split()) | GIT_EXEC_SUBCOMMANDS
GIT_CONFIG_READ = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color",
                   "--get-colorbool", "-l", "--list", "get", "list"}
GIT_CONFIG_WRITE = {"--add", "--unset", "--unset-all", "--replace-all", "--rename-section",
                    "--remove-section", "-e", "--edit", "set", "unset", "rename-section", "remove-section",
                    "edit"}

# The options of the diff machinery (diff, log, show, stash show, diff-tree ...) that take a value
# or do something the judge must follow.
_DIFF = (
    "output=:write ext-diff:named textconv:named O=:read orderfile=:read U=? unified=? M=? C=? B=? l=? "
    "S= G= I= find-object= ignore-matching-lines= diff-filter= src-prefix= dst-prefix= line-prefix= "
    "output-indicator-new= output-indicator-old= output-indicator-context= word-diff-regex= anchored= "
    "diff-algorithm= skip-to= rotate-to= inter-hunk-context= stat-width= stat-name-width= stat-count= "
    "stat-graph-width= ws-error-highlight= color-moved-ws= submodule=? ignore-submodules=? stat=? dirstat=? "
    "abbrev=? relative=? color=? color-words=? color-moved=? word-diff=? find-renames=? find-copies=? "
    "break-rewrites=? "
)
_REVISIONS = (
    "n= max-count= skip= since= after= until= before= author= committer= grep= grep-reflog= format= pretty=? "
    "encoding= date= decorate=? decorate-refs= decorate-refs-exclude= notes=? show-notes=? exclude= glob= "
    "branches=? tags=? remotes=? min-parents= max-parents= L= since-as-filter= expand-tabs=? show-linear-break=? "
    "diff-merges= stdin:named "
)
GIT_CONTENT_TABLES: dict[str, Table] = {
    "diff": table(_DIFF + "no-index"),
    "log": table(_DIFF + _REVISIONS),
    "whatchanged": table(_DIFF + _REVISIONS),
    "reflog": table(_DIFF + _REVISIONS),
    "show": table(_DIFF + _REVISIONS),
    "diff-tree": table(_DIFF + _REVISIONS),
    "diff-index": table(_DIFF),
    "diff-files": table(_DIFF),
    "range-diff": table(_DIFF + _REVISIONS + "creation-factor="),
    "format-patch": table(_DIFF + _REVISIONS + "o|output-directory=:write stdout subject-prefix= "
                          "cover-letter-format= reroll-count= v= start-number= suffix= from=? to= cc= "
                          "in-reply-to= add-header= signature= signature-file=:read base= interdiff= "
                          "range-diff= filename-max-length= description-file=:read cover-from-description= "
                          "thread=?"),
    "grep": table("O=?:run open-files-in-pager=?:run f=:read e= A= after-context= B= before-context= C= "
                  "context= m= max-count= max-depth= threads= color=? exclude-standard untracked no-index "
                  "cached textconv:named"),
    "blame": table("L= S=:read contents=:read ignore-rev= ignore-revs-file=:read since= date= abbrev=? "
                   "C=? M=? encoding= incremental"),
    "annotate": table("L= S=:read contents=:read ignore-rev= ignore-revs-file=:read since= date= abbrev=? "
                      "C=? M=? encoding="),
    "cat-file": table("textconv:named filters:named path= batch=? batch-check=? batch-command=? "
                      "batch-all-objects:named"),
    "archive": table("o|output=:write remote=:named exec=:named prefix= format= add-file=:read "
                     "add-virtual-file= l|list"),
    "stash": table(_DIFF + "m= message= pathspec-from-file=:read"),
    # fast-export prints every blob of the history it exports; merge-tree prints merged contents;
    # unpack-file writes a blob to a file.
    "fast-export": table("export-marks=:write import-marks=:read import-marks-if-exists=:read anonymize-map= "
                         "signed-tags= signed-commits= tag-of-filtered-object= refspec= reencode= "
                         "mark-tags no-data"),
    "merge-tree": table("merge-base= X= strategy-option= stdin:named"),
    "unpack-file": table(""),
}
# Flags that make the diff machinery print file contents, and those that make it print none.
PATCH_FLAGS = {"-p", "-u", "--patch", "--patch-with-stat", "--patch-with-raw", "-W", "--function-context",
               "--cc", "-c", "--binary", "--check", "--full-index", "-U", "--unified", "--word-diff",
               "--color-words", "-L", "--combined-all-paths", "--raw-patch"}
NO_PATCH_FLAGS = {"-s", "--no-patch", "--stat", "--numstat", "--shortstat", "--dirstat", "--summary",
                  "--name-only", "--name-status", "--raw", "--compact-summary", "-q", "--quiet", "--no-data"}
# Default output of each content subcommand: True when it prints contents unless told not to.
PATCH_BY_DEFAULT = {"diff": True, "show": True, "log": False, "whatchanged": False, "reflog": False,
                    "diff-tree": False, "diff-index": False, "diff-files": False, "range-diff": True,
                    "format-patch": True, "stash": False, "fast-export": True, "merge-tree": True}
CAT_FILE_CONTENT = {"-p", "blob", "tree", "commit", "tag", "--textconv", "--filters", "--batch",
                    "--batch-command"}


def config_reads(arguments: list[Word]) -> bool:
    values = [word.value for word in arguments]
    if any(value is None for value in values):
        return False
    if any(value in GIT_CONFIG_WRITE for value in values):
        return False
    return any(value in GIT_CONFIG_READ for value in values)


def _sensitive_option(value: str, subcommand: str) -> bool:
    """Is this option of a subcommand outside the content table one that runs a program or writes a
    file? Long options count when abbreviated too (git's parse-options accepts any unique prefix)."""
    if value.startswith(GIT_SENSITIVE_PREFIXES) or "ext::" in value.lower():
        return True
    written = value.partition("=")[0]
    if written.startswith("--") and len(written) > 3 and any(
            prefix.startswith(written) for prefix in GIT_SENSITIVE_PREFIXES):
        return True
    return any(value.startswith(option) for option in GIT_SENSITIVE_SHORT.get(subcommand, ()))


class Git:
    """How CommandJudge reads a git command line (see judge.py)."""

    def _git(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        literal_pathspecs = False
        # Whether git may run in another repository than the top-level one the sandbox's filtered store
        # covers (a submodule after `cd`, `-C sub`): its history is not filtered, so what it prints from
        # there is held to read_deny as any read is.
        elsewhere = verdicts.changes_directory
        i = 1
        n = len(words)
        # git's own options (before the subcommand) are compared whole: git.c does not abbreviate them.
        while i < n:
            word = words[i]
            if not word.literal:
                sensitive[i] = f"the git option `{word.text}` is only known at run time"
                i += 1
                continue
            value = word.value
            if not value.startswith("-"):
                break
            if value == "--literal-pathspecs":
                literal_pathspecs = True
            if value.startswith(("-C", "--git-dir", "--work-tree")):
                elsewhere = True
            if value in GIT_VALUE_GLOBAL_OPTIONS:
                why = f"`git {value}` can make git run programs or use another repository; a rule must name it exactly"
                sensitive[i] = why
                if value != "--exec-path":
                    sensitive[i + 1] = why
                    i += 1
            elif value.startswith((*(option + "=" for option in GIT_VALUE_GLOBAL_OPTIONS), "-c", "-C")):
                sensitive[i] = f"`git {value}` can make git run programs; a rule must name it exactly"
            elif value not in GIT_SAFE_GLOBAL_OPTIONS and not value.startswith("--list-cmds="):
                sensitive[i] = f"the git option `{value}` is not known; a rule must name it exactly"
            i += 1
        if i >= n:
            return sensitive
        at, command = i, words[i]
        subcommand = command.value if command.literal else None
        rest = words[at + 1:]
        if subcommand is None:
            sensitive[at] = f"the git subcommand `{command.text}` is only known at run time"
            return sensitive
        if subcommand not in GIT_SUBCOMMANDS:
            sensitive[at] = (f"`git {subcommand}` is not a git subcommand, so it is an alias or a `git-{subcommand}` "
                             f"program, which can run anything; a rule must name it exactly")
        if subcommand in GIT_EXEC_SUBCOMMANDS:
            for j in range(at, len(words)):
                sensitive[j] = f"`git {subcommand}` can run arbitrary programs; a rule must name the command exactly"
        if subcommand == "config" and not config_reads(rest):
            for j in range(at, len(words)):
                sensitive[j] = "`git config` that writes configuration must be named exactly by a rule"
        for j in range(at + 1, len(words)):
            if words[j].literal and "ext::" in words[j].value.lower():
                sensitive[j] = f"`{words[j].value}` names git's ext:: transport, which runs a command"
        if subcommand in GIT_CONTENT_TABLES and not (subcommand == "stash" and (
                not rest or rest[0].value != "show")):
            self._git_content(subcommand, words, at, depth, verdicts, shown, sensitive, literal_pathspecs,
                              over_store=not elsewhere)
            return sensitive
        for j in range(at + 1, len(words)):
            word = words[j]
            if not word.literal:
                sensitive[j] = (f"`{word.text}` is only known at run time and could become an option that makes "
                                f"git run a program or write a file")
            elif _sensitive_option(word.value, subcommand):
                sensitive[j] = f"`{word.value}` makes git run a program or write a file; a rule must name it exactly"
            elif not word.value.startswith("-"):
                # A path named to git add, mv, checkout ...: a read-denied one is not for git either.
                verdicts.reads.append(Read(word, shown))
        return sensitive

    def _git_content(self, subcommand: str, words: list[Word], at: int, depth: int, verdicts: Verdicts,
                     shown: str, sensitive: dict[int, str], literal_pathspecs: bool, *, over_store: bool) -> None:
        """A subcommand that prints file contents: its options judged, what it prints held to read_deny.
        `over_store`: git reads the top-level repository, whose history the sandbox may filter (then its
        REV:PATH, blame and -L reads are `history` reads, which that sandbox does not hold to read_deny)."""
        start = at + 2 if subcommand == "stash" else at + 1
        found = walk(words, start, GIT_CONTENT_TABLES[subcommand])
        self._apply_options(found, words, depth, verdicts, shown, sensitive, f"git {subcommand}")
        for index in found.unknown_at:
            sensitive[index] = (f"`{words[index].text}` is only known at run time and could become an option "
                                f"that makes git run a program or write a file")
        # Operands before `--` are revisions (or paths, when no revision has that name); after it, paths.
        separator = next((i for i in range(start, len(words)) if words[i].literal and words[i].value == "--"),
                         len(words))
        revisions = [word for index, word in found.operands if index < separator]
        pathspecs = [word for index, word in found.operands if index > separator]
        if subcommand == "archive":
            revisions, pathspecs = revisions[:1], revisions[1:] + pathspecs  # TREE-ISH [PATH...]
        for _, option, values in found.options:
            if option.name == "-L" and values and values[0].literal and ":" in values[0].value:
                # -L START,END:FILE or -L :FUNCTION:FILE prints that file's lines through history
                verdicts.reads.append(Read(lit(values[0].value.rpartition(":")[2]), shown, history=over_store))
        if subcommand == "blame" or subcommand == "annotate":
            # The file blamed is printed line by line: the last operand, or the one after `--`.
            named = pathspecs[-1:] or revisions[-1:]
            for word in named:
                verdicts.reads.append(Read(word, shown, history=over_store))
            return
        objects: list[str] = []
        for word in revisions:
            if not word.literal:
                continue
            revision, colon, path = word.value.partition(":")
            if colon and not word.value.startswith(":/"):
                # REV:PATH (or :PATH, :N:PATH, the index): the blob at PATH, from the root (or ./ from here)
                if revision.isdigit() and path.partition(":")[1]:
                    path = path.partition(":")[2]
                verdicts.reads.append(Read(Word(path, False, word.text), shown, rooted=not path.startswith("./"),
                                           history=over_store))
            elif subcommand in ("show", "cat-file", "archive", "diff", "grep", "unpack-file") and \
                    _object_id(word.value):
                objects.append(word.value)
        if subcommand in ("show", "diff", "cat-file") and revisions and all(
                word.literal and ":" in word.value and not word.value.startswith(":/") for word in revisions):
            # Only REV:PATH objects: what is printed is those paths (a blob, or a tree's names), each
            # judged as a read above; nothing else of the history is.
            return
        if subcommand in ("cat-file", "unpack-file"):
            printing = subcommand == "unpack-file" or any(word.literal and word.value in CAT_FILE_CONTENT
                                                          for word in words[start:])
            if not printing:
                return
            # Commits and trees print no file contents; a blob named by id is refused (history.py).
            verdicts.history.append(HistoryRead(shown, "history", (), literal_pathspecs, tuple(objects),
                                                contents=False))
            return
        if subcommand in PATCH_BY_DEFAULT and not self._prints_patch(subcommand, words[start:], found):
            if objects and subcommand == "show":
                verdicts.history.append(HistoryRead(shown, "history", (), literal_pathspecs, tuple(objects),
                                                    restricts=False, contents=False))
            return
        scope = "history"
        if subcommand == "diff" and not revisions and not found.given("--cached", "--staged", "--merge-base"):
            scope = "tracked"
        if subcommand == "diff" and any(word.literal and word.value == "--no-index" for word in words[start:]):
            for word in revisions + pathspecs:
                verdicts.reads.append(Read(word, shown, recursive=True))
            return
        if subcommand == "grep":
            scope = "tracked" if len(revisions) <= 1 else "history"
            if any(word.literal and word.value in ("--untracked", "--no-index") for word in words[start:]):
                scope = "files"
        if subcommand == "format-patch" and not any(word.literal and word.value == "--stdout"
                                                    for word in words[start:]):
            for j in range(at, len(words)):
                sensitive[j] = ("`git format-patch` writes a file for each commit, which the judge cannot name; "
                                "use --stdout, or a rule must name the command exactly")
        verdicts.history.append(HistoryRead(shown, scope, tuple(pathspecs), literal_pathspecs, tuple(objects)))

    @staticmethod
    def _prints_patch(subcommand: str, arguments: list[Word], found: Walk) -> bool:
        values = {word.value.partition("=")[0] for word in arguments if word.literal}
        values |= {word.value[:2] for word in arguments if word.literal and word.value[:2] in ("-U", "-L")}
        if values & PATCH_FLAGS:
            return True
        if values & NO_PATCH_FLAGS:
            return False
        return PATCH_BY_DEFAULT[subcommand]


def _object_id(value: str) -> bool:
    """Could this revision name an object by its id (a blob among them)?"""
    name = value.split("^", 1)[0].split("~", 1)[0]
    return 4 <= len(name) <= 64 and all(c in "0123456789abcdefABCDEF" for c in name)
