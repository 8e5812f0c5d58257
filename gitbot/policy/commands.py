"""Judging a command line against the command rules, with a real shell grammar (tree-sitter-bash).

A command line is allowed only when every simple command in it — across `;`, `&&`, `||`, `|`, `&`,
newlines, subshells, compound statements, function bodies, and inside the wrappers that run other
programs (`env`, `timeout`, `xargs`, `find -exec`, `sh -c` ...) — is allowed by a rule and none is
denied. Anything the judge cannot see through statically is refused: command and process
substitution, `eval`/`source`/`exec`, parse errors, syntax it does not know, program names that
come from expansions. The sandbox is the real boundary; this judge keeps an injected instruction
from doing more than the policy intends, and explains each refusal so the model can adapt.

Words are compared by their value after quote removal (`'cu''rl'` and `c\\url` are `curl`). A word
whose value is only known at run time (`$VAR`, `~`) matches only a `*` pattern word, and one that
may become several words (an unquoted expansion or glob) only the final `*` of a rule. Deny rules
are checked the other way round: a word that *could* match makes the deny apply.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shlex
import threading
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

from tree_sitter import Node, Parser

from gitbot.policy.base import Decision
from gitbot.policy.files import GlobError, compile_glob, has_glob_chars

MAX_NESTING = 4  # sh -c inside sh -c ...: deeper than this is refused
MAX_COMMAND_CHARS = 100_000


class _Denied(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _deny(reason: str) -> None:
    raise _Denied(reason)


# ---------------------------------------------------------------------------------------------
# Rules


@dataclass(frozen=True)
class CommandRule:
    """One allow or deny pattern: words, each a glob; a final `*` word matches any remaining words."""

    pattern: str
    words: tuple[str, ...]
    rest: bool
    origin: str  # "commands.allow", "commands.deny", "the default allow list", "the run's check command"
    literal: bool = False  # words compared exactly (the check command may contain glob characters)

    @property
    def matches_everything(self) -> bool:
        return not self.words and self.rest and not self.literal

    @property
    def names_a_path(self) -> bool:
        return bool(self.words) and "/" in self.words[0]

    def word_matches(self, index: int, value: str) -> bool:
        pattern = self.words[index]
        if self.literal or not has_glob_chars(pattern):
            return pattern == value
        return compile_glob(pattern, path_mode=False).match(value) is not None

    def names_exactly(self, index: int) -> bool:
        return index < len(self.words) and (self.literal or not has_glob_chars(self.words[index]))

    def describe(self) -> str:
        return f"rule `{self.pattern}` ({self.origin})"


def split_pattern(pattern: str) -> list[str]:
    """The words of a rule pattern (shell-like quoting allowed). Raises ValueError when malformed."""
    try:
        words = shlex.split(pattern, comments=False, posix=True)
    except ValueError as exc:
        raise ValueError(f"cannot split pattern into words: {exc}") from None
    if not words:
        raise ValueError("empty pattern")
    for word in words:
        try:
            compile_glob(word, path_mode=False)
        except GlobError as exc:
            raise ValueError(f"invalid glob in word {word!r}: {exc}") from None
    return words


def compile_rule(pattern: str, origin: str) -> CommandRule:
    words = split_pattern(pattern)
    rest = words[-1] == "*"
    if rest:
        words = words[:-1]
    if words and "/" in words[0]:
        words[0] = _normalize_program_path(words[0])
    return CommandRule(pattern=pattern, words=tuple(words), rest=rest, origin=origin)


def literal_prefix_rules(command: str, origin: str) -> list[CommandRule]:
    """Rules that allow a known command line (the run's check command) and the same with more args.

    Each simple command of the line becomes an exact prefix rule; words that are not literal are
    dropped from the end, so the rule stays as narrow as the command itself."""
    rules = []
    for literal in _literal_simple_commands(command):
        words = [_normalize_program_path(literal[0]), *literal[1:]] if "/" in literal[0] else literal
        rules.append(CommandRule(pattern=shlex.join(words) + " *", words=tuple(words), rest=True,
                                 origin=origin, literal=True))
    return rules


def _normalize_program_path(path: str) -> str:
    return posixpath.normpath(path) if path.startswith("/") else "./" + posixpath.normpath(path)


# ---------------------------------------------------------------------------------------------
# Words


@dataclass(frozen=True)
class Word:
    # The word after quote removal, or None when it is only known at run time.
    value: str | None
    # True when the word may become zero or several words (an unquoted expansion, glob or brace).
    multi: bool = False
    text: str = ""  # as written, for messages

    @property
    def literal(self) -> bool:
        return self.value is not None and not self.multi


def _lit(value: str) -> Word:
    return Word(value, False, value)


UNKNOWN_INPUT = Word(None, True, "<input>")


def _may_start_with_dash(word: Word) -> bool:
    """Could the word (or one of the words it becomes) start with `-`, and so be read as an option?"""
    if word.literal:
        return word.value.startswith("-")
    text = word.text.lstrip("\"'")
    return not text or text[0] in "-$`\\{*?[~<"


_BRACE_EXPANSION = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_FD_VARIABLE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
_INTEGER = re.compile(r"-?[0-9]+")
_NUMERIC_PARAMETERS = {"$!", "$$", "$#", "$?", "${!}", "${$}", "${#}", "${?}"}
_ARRAY_KEY = re.compile(r"\[([^\]]*)\]\+?=")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.:/@%+,-]+")


def _unquote_bare(text: str, *, word_start: bool) -> tuple[str, bool, bool]:
    """(value, has_glob, has_tilde) of an unquoted word as bash would see it."""
    out: list[str] = []
    glob = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 < len(text):
                if text[i + 1] != "\n":  # backslash-newline is a line continuation
                    out.append(text[i + 1])
                i += 2
                continue
            out.append(c)
            i += 1
            continue
        if c in "*?[":
            glob = True
        out.append(c)
        i += 1
    return "".join(out), glob, word_start and text.startswith("~")


def _unescape_double_quoted(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


_ANSI_C_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
                  "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _decode_ansi_c(body: str) -> str:
    """The value of bash's $'...' string."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_C_SIMPLE:
            out.append(_ANSI_C_SIMPLE[nxt])
            i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1:]).group()
            out.append(chr(int(digits, 8) & 0xFF))
            i += 1 + len(digits)
        elif nxt in "xuU":
            size = {"x": 2, "u": 4, "U": 8}[nxt]
            match = re.match(f"[0-9a-fA-F]{{1,{size}}}", body[i + 2:])
            if not match:
                out.append("\\" + nxt)
                i += 2
            else:
                out.append(chr(min(int(match.group(), 16), 0x10FFFF)))
                i += 2 + len(match.group())
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    value = "".join(out)
    return value.split("\0", 1)[0]  # bash ends the string at a NUL


# ---------------------------------------------------------------------------------------------
# What the judge knows about particular programs

# Variables that change what runs or how a program loads code. Compared case-insensitively.
#
# A deny list, not an allow list, and on purpose: the names an agent sets for ordinary work are
# open-ended (`FOO=1 pytest`, `DEBUG=1`, `CI=true`, `TEST_DB=...`), so an allow list would either
# refuse most of them or grow into "anything but these" anyway. What makes a name dangerous follows
# a few conventions that patterns catch for programs nobody listed: search paths (`*PATH`, `*LIB`),
# extra options or flags a tool reads from the environment (`*OPT`, `*OPTS`, `*_OPTIONS`, `*FLAGS`),
# configuration files and directories (`*CONF`, `*CONFIG*`, `*RC`, `*RCFILE`, `*_HOME`), programs run
# in place of or around another (`*_WRAPPER`, `*_RUNNER`, `*_COMMAND`, `*_CMD`, `*_PROGRAM`, `*PAGER`,
# `*EDITOR`, `*ASKPASS`, `*_SHELL`, `*INIT`, `*PRELOAD*`), and whole families of build tools' settings
# (`GIT_*`, `CARGO_*`, `NPM_*`, `PIP_*`, `MAKE*`...). The sandbox's environment allow-list is the
# boundary for what a command inherits; this list is about what the agent's own assignments change.
DANGEROUS_VARIABLES = (
    # the shell itself
    "PATH", "IFS", "ENV", "BASH_*", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "GLOBIGNORE",
    "EXECIGNORE", "HOME", "TMPDIR", "TMP", "TEMP", "POSIXLY_CORRECT", "SHELL", "*_SHELL",
    # the dynamic loader and libc
    "LD_*", "DYLD_*", "*PRELOAD*", "GLIBC_TUNABLES", "MALLOC_*", "GCONV_PATH", "LOCPATH", "NLSPATH",
    "HOSTALIASES",
    # languages and build tools
    "PYTHON*", "PYTEST_PLUGINS", "COVERAGE_*", "PIP_*", "UV_*", "NODE_*", "NPM_*", "YARN_*", "COREPACK_*",
    "PERL*", "RUBY*", "GEM_*", "BUNDLE_*", "JAVA_*", "_JAVA_*", "JDK_*", "CLASSPATH", "RUST*", "CARGO_*",
    "GOROOT", "GOENV", "GOTOOLCHAIN", "GOPROXY", "GOEXPERIMENT", "LUA_*", "R_PROFILE*", "R_ENVIRON*",
    "PHP_INI_*", "CC", "CXX", "CPP", "LD", "AR", "AS", "NM", "RANLIB", "STRIP", "OBJCOPY", "FC", "F77",
    "MAKE*", "MFLAGS", "CMAKE_*", "CCACHE_*", "DISTCC_*",
    # tools that read options or configuration from the environment
    "GIT_*", "TAR_OPTIONS", "GZIP", "BZIP", "BZIP2", "XZ_DEFAULTS", "LESS*", "CURL_*", "WGETRC", "SSH_*",
    "OPENSSL_*", "SSL_*", "EMACS*", "SUDO_*",
    # conventions that cover many programs (last, so a family above names the reason)
    "*PATH", "*LIB", "*LIBS", "*OPT", "*OPTS", "*_OPTIONS", "*FLAGS", "*_WRAPPER", "*_RUNNER", "*RC",
    "*RCFILE", "*_RC", "*_HOME", "*CONF", "*_CONF_*", "*CONFIG*", "*_COMMAND", "*_CMD", "*_PROGRAM",
    "*PAGER", "*EDITOR", "VISUAL", "BROWSER", "*ASKPASS", "*INIT", "XDG_*",
)


@cache
def dangerous_variable(name: str) -> str | None:
    upper = name.upper()
    for pattern in DANGEROUS_VARIABLES:
        if compile_glob(pattern, path_mode=False).match(upper):
            return pattern
    return None


# Never allowed unless the policy allows `*`: each runs code the judge cannot see.
FORBIDDEN_BUILTINS = {
    "eval": "it runs a string as a command",
    "source": "it runs a file's contents as commands",
    ".": "it runs a file's contents as commands",
    "exec": "it replaces the shell or redirects all later output",
    "trap": "it runs a string as a command when a signal arrives",
    "enable": "it can load a builtin from a shared library",
    "hash": "it can change which file runs for a command name",
    "alias": "it changes what a command name runs",
    "coproc": "it runs a command in the background with pipes",
    "fc": "it re-runs commands from history through an editor",
    "complete": "it can run commands on completion",
    "bind": "it can bind keys to commands",
}

# Builtins with no effect at all: no rule is needed for them while their arguments hold no expansion.
NO_OP_BUILTINS = {"true", "false", ":"}

WRAPPERS = {"env", "timeout", "nice", "nohup", "stdbuf", "time", "command", "builtin", "xargs", "sh", "bash",
            "dash"}
SHELLS = {"sh", "bash", "dash"}


@dataclass(frozen=True)
class WrapperOptions:
    """A wrapper's options before the command it runs: they end at `--` or at the first word not
    starting with `-`, and one not listed is refused (`unknown`)."""

    flags: frozenset[str] = frozenset()  # options without a value
    with_value: frozenset[str] = frozenset()  # options whose value is the next word
    attached: re.Pattern[str] | None = None  # whole words that are an option with its value
    denied: re.Pattern[str] | None = None  # options refused with `denial`
    denial: str = ""
    describes_only: frozenset[str] = frozenset()  # the wrapper then runs nothing (`command -v`)
    unknown: str = "`{shown}`: {name} option `{value}` is not known"
    operands: int = 0  # words between the options and the command (timeout's duration)
    assignments_end_options: bool = False  # a NAME=... word known only at run time ends them (env)


def _options(text: str) -> frozenset[str]:
    return frozenset(text.split())


WRAPPER_OPTIONS = {
    "env": WrapperOptions(flags=_options("-i --ignore-environment -0 --null -v --debug -"),
                          with_value=_options("-u --unset"), attached=re.compile(r"--unset=.*|-u.+", re.DOTALL),
                          unknown="`{shown}`: env option `{value}` is not allowed (it changes how the command "
                                  "is found, split or where it runs)", assignments_end_options=True),
    "timeout": WrapperOptions(flags=_options("--preserve-status --foreground -v --verbose"),
                              with_value=_options("-s --signal -k --kill-after"),
                              attached=re.compile(r"--(signal|kill-after)=.*|-[sk].+", re.DOTALL), operands=1),
    "nice": WrapperOptions(with_value=_options("-n --adjustment"),
                           attached=re.compile(r"--adjustment=.*|-n?-?\d+", re.DOTALL)),
    "stdbuf": WrapperOptions(with_value=_options("-i -o -e"),
                             attached=re.compile(r"-[ioe].+|--(input|output|error)=.*")),
    "time": WrapperOptions(flags=_options("-p -v --verbose --portability -q --quiet"),
                           with_value=_options("-f --format"), attached=re.compile(r"--format=.*", re.DOTALL),
                           denied=re.compile(r"-o|--output|-a|--append|--output=.*", re.DOTALL),
                           denial="`{shown}`: `time {value}` writes a file; redirect its output instead"),
    "command": WrapperOptions(flags=_options("-p"), describes_only=_options("-v -V")),
}

# Builtins that set (or unset) variables named by their arguments: see NAME_BUILTINS.
VARIABLE_SETTING_BUILTINS = {"read", "mapfile", "readarray", "getopts", "printf", "wait", "unset", "declare",
                             "typeset", "local", "export", "readonly"}

# Programs whose non-option arguments are files they change: each is checked against the edit rules.
WRITERS_ALL_ARGS = {"tee", "rm", "rmdir", "touch", "mkdir", "truncate", "shred", "unlink", "mv", "chmod",
                    "chown", "chgrp"}
WRITERS_LAST_ARG = {"cp", "ln", "install"}
# chmod/chown/chgrp take a mode or owner first (not with --reference, nor chmod with a mode like -w).
WRITERS_LEADING_OPERAND = {"chmod", "chown", "chgrp"}

# The options of each writer (GNU coreutils), parsed as getopt_long does: short options bundle
# (`-vt.gitbot` is -v and -t .gitbot), a value may be attached, a long option may be abbreviated to
# any unique prefix (`--t=x`, `--targ x`) and options may follow operands. An option not listed is
# refused: the judge must know which words are files. Entries: `s|long`, `s` or `long`; a trailing
# `=` takes a value, `=?` an optional one (attached with `=` only).
_WRITER_OPTION_TABLE = {
    "tee": "a|append i|ignore-interrupts p output-error=? help version",
    "rm": "f|force i I interactive=? one-file-system no-preserve-root preserve-root=? r|recursive R d|dir "
          "v|verbose help version",
    "rmdir": "ignore-fail-on-non-empty p|parents v|verbose help version",
    "touch": "a c|no-create d|date= f h|no-dereference m r|reference= t= time= help version",
    "mkdir": "m|mode= p|parents v|verbose Z context=? help version",
    "truncate": "c|no-create o|io-blocks r|reference= s|size= help version",
    "shred": "f|force n|iterations= random-source= s|size= u remove=? v|verbose x|exact z|zero help version",
    "unlink": "help version",
    "mv": "backup=? b debug exchange f|force i|interactive n|no-clobber no-copy strip-trailing-slashes "
          "S|suffix= t|target-directory= T|no-target-directory u update=? v|verbose Z|context help version",
    "cp": "a|archive attributes-only backup=? b copy-contents d debug f|force i|interactive H l|link "
          "L|dereference n|no-clobber P|no-dereference p preserve=? no-preserve= parents R|recursive r "
          "reflink=? remove-destination sparse= strip-trailing-slashes s|symbolic-link S|suffix= "
          "t|target-directory= T|no-target-directory u update=? v|verbose keep-directory-symlink "
          "x|one-file-system Z context=? help version",
    "ln": "backup=? b d|directory F f|force i|interactive L|logical n|no-dereference P|physical r|relative "
          "s|symbolic S|suffix= t|target-directory= T|no-target-directory v|verbose help version",
    "install": "backup=? b c C|compare debug d|directory D g|group= m|mode= o|owner= p|preserve-timestamps "
               "s|strip strip-program= S|suffix= t|target-directory= T|no-target-directory v|verbose "
               "preserve-context Z context=? help version",
    "chmod": "c|changes f|silent quiet v|verbose no-preserve-root preserve-root reference= R|recursive "
             "dereference h|no-dereference H L P help version",
    "chown": "c|changes dereference h|no-dereference from= no-preserve-root preserve-root f|silent quiet "
             "reference= R|recursive v|verbose H L P help version",
    "chgrp": "c|changes dereference h|no-dereference no-preserve-root preserve-root f|silent quiet "
             "reference= R|recursive v|verbose H L P help version",
}
# Options that make a writer run another program.
WRITER_REFUSED_OPTIONS = {("install", "strip-program"): "runs the program it names"}
# `chmod -w file`, `chmod -rwx file`: GNU chmod reads an option made of these letters as the mode.
CHMOD_MODE_LETTERS = set("rwxXstugoa01234567,+-=")


@dataclass(frozen=True)
class _WriterOptions:
    short: dict[str, tuple[str, str]]  # letter -> (canonical name, "" | "=")
    long: dict[str, tuple[str, str]]  # name -> (canonical name, "" | "=" | "=?")


def _writer_options(table: str) -> _WriterOptions:
    short: dict[str, tuple[str, str]] = {}
    long: dict[str, tuple[str, str]] = {}
    for entry in table.split():
        argument = ""
        for suffix in ("=?", "="):
            if entry.endswith(suffix):
                entry, argument = entry[: -len(suffix)], suffix
                break
        letter, _, name = entry.partition("|") if "|" in entry else (
            (entry, "", "") if len(entry) == 1 else ("", "", entry))
        canonical = name or letter
        if letter:
            short[letter] = (canonical, argument)
        if name:
            long[name] = (canonical, argument)
    return _WriterOptions(short, long)


WRITER_OPTIONS = {program: _writer_options(table) for program, table in _WRITER_OPTION_TABLE.items()}


GIT_SAFE_GLOBAL_OPTIONS = {
    "-p", "--paginate", "-P", "--no-pager", "--bare", "--no-replace-objects", "--literal-pathspecs",
    "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--no-advice",
    "--html-path", "--man-path", "--info-path", "--version", "--help", "-v", "-h",
}
GIT_VALUE_GLOBAL_OPTIONS = {"-c", "--config-env", "-C", "--git-dir", "--work-tree", "--namespace",
                            "--super-prefix", "--exec-path"}
# Options that make git run a program or write a file of the caller's choosing.
GIT_SENSITIVE_PREFIXES = ("--upload-pack", "--receive-pack", "--exec", "--extcmd", "--open-files-in-pager",
                          "--output", "--template", "--separate-git-dir", "--config", "--tool",
                          "--ext-diff")
GIT_SENSITIVE_SHORT = {"grep": ("-O",), "rebase": ("-x",), "clone": ("-u", "-c"), "archive": ("-o",),
                       "format-patch": ("-o",), "fetch": ("-u",), "pull": ("-u",), "ls-remote": ("-u",),
                       "difftool": ("-x", "-t"), "mergetool": ("-t",)}
# Subcommands that run arbitrary commands or serve the repository.
GIT_EXEC_SUBCOMMANDS = {"bisect", "submodule", "filter-branch", "filter-repo", "instaweb", "daemon",
                        "web--browse", "shell", "upload-pack", "receive-pack", "http-backend", "credential",
                        "credential-store", "credential-cache", "archimport", "cvsimport", "cvsserver",
                        "svn", "p4", "send-email", "imap-send", "request-pull", "mergetool", "difftool"}
GIT_CONFIG_READ = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color",
                   "--get-colorbool", "-l", "--list", "get", "list"}
GIT_CONFIG_WRITE = {"--add", "--unset", "--unset-all", "--replace-all", "--rename-section",
                    "--remove-section", "-e", "--edit", "set", "unset", "rename-section", "remove-section",
                    "edit"}

FIND_EXEC_ACTIONS = {"-exec", "-execdir", "-ok", "-okdir"}
# find actions that change files, with how many arguments each takes.
FIND_EDIT_ACTIONS = {"-delete": 0, "-fprint": 1, "-fprint0": 1, "-fls": 1, "-fprintf": 2}


# ---------------------------------------------------------------------------------------------
# The parser


_parser_local = threading.local()


def _parser() -> Parser:
    parser = getattr(_parser_local, "parser", None)
    if parser is None:
        from gitbot.treesitter import bash_parser_language

        parser = _parser_local.parser = Parser(bash_parser_language())
    return parser


SUBSTITUTIONS = {"command_substitution": "command substitution", "process_substitution": "process substitution"}
REDIRECTS = {"file_redirect", "heredoc_redirect", "herestring_redirect"}
OUTPUT_OPERATORS = {">", ">>", ">|", "&>", "&>>", ">&"}
QUIET_OPERATORS = {"<", "<&", ">&-", "<&-"}
PUNCTUATION = {";", "&", "&&", "||", "|", "|&", "(", ")", "{", "}", "\n", "if", "then", "fi", "elif", "else",
               "do", "done", "while", "until", "for", "select", "in", "case", "esac", ";;", ";&", ";;&", "!",
               "function", "[[", "]]", "[", "]"}
SPECIAL_OUTPUTS = {"/dev/null", "/dev/stdout", "/dev/stderr"}
ARITHMETIC_OPERATORS = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"}


def _text(node: Node) -> str:
    return node.text.decode("utf-8", errors="surrogateescape")


def _snippet(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_raw_text(text: str) -> None:
    """Refuse characters where the grammar and bash might disagree about word boundaries."""
    if len(text) > MAX_COMMAND_CHARS:
        _deny(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    for ch in text:
        if ch in "\n\t ":
            continue
        category = unicodedata.category(ch)
        if category == "Cc" or category.startswith("Z"):
            _deny(f"the command contains the control or space character U+{ord(ch):04X}; "
                  f"bash and the parser may split words differently around it")
    for match in re.finditer(r"\\\n", text):
        start = match.start()
        backslashes = len(text[:start + 1]) - len(text[:start + 1].rstrip("\\"))
        if backslashes % 2 == 0:
            continue  # an escaped backslash followed by a newline, not a continuation
        before = text[start - backslashes] if start - backslashes >= 0 else " "
        after = text[match.end()] if match.end() < len(text) else " "
        if not before.isspace() and not after.isspace():
            _deny("a backslash-newline splits a word in two; write the word on one line")


_METACHARACTERS = " \t\n;&|()<>"


def _scan_substitutions(text: str) -> list[tuple[int, str]]:
    """Where bash would substitute a command (or evaluate arithmetic) in `text`, found without the
    grammar: (character offset, what) for every backtick, `$(`, `$[`, `<(` and `>(` that is not inside
    single quotes, `$'...'`, a comment or the body of a here-document with a quoted delimiter.

    A second opinion on the parse tree (tree-sitter reads `${x:-`cmd`}` as a plain word), so it
    errs towards finding too much: where bash's quoting is ambiguous (a single quote inside a
    `${...}` within double quotes, whose meaning depends on the operator) it refuses outright."""
    hits: list[tuple[int, str]] = []
    n = len(text)
    # Contexts: "top" (unquoted), "brace" (inside an unquoted ${...}), "dq" (double quotes),
    # "qbrace" (a ${...} inside double quotes), "arithmetic" (`((...))`). Single quotes and $'...'
    # are skipped whole.
    stack = ["top"]
    heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, quoted, strip leading tabs)
    i = 0
    while i < n:
        c = text[i]
        context = stack[-1]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            hits.append((i, "command substitution"))
            i = _escaped_end(text, i + 1, "`")
            continue
        if c == "$" and i + 1 < n:
            following = text[i + 1]
            if following == "(":
                arithmetic = text.startswith("((", i + 1)
                hits.append((i, "arithmetic expansion" if arithmetic else "command substitution"))
                i += 2
                continue
            if following == "[":
                hits.append((i, "arithmetic expansion"))
                i += 2
                continue
            if following == "{":
                stack.append("qbrace" if context in ("dq", "qbrace") else "brace")
                i += 2
                continue
            if following in "'\"" and context == "qbrace":
                _deny("a quote inside a ${...} within double quotes is not allowed (bash's quoting there "
                      "depends on the operator, so what it runs cannot be known); use a variable")
            if following == "'" and context in ("top", "brace"):
                i = _escaped_end(text, i + 2, "'")
                continue
        if c in "<>" and i + 1 < n and text[i + 1] == "(":
            hits.append((i, "process substitution"))
            i += 2
            continue
        if context in ("top", "brace"):
            if c == "'":
                end = text.find("'", i + 1)
                i = n if end < 0 else end + 1
                continue
            if c == '"':
                stack.append("dq")
            elif context == "brace":
                if c == "{":
                    stack.append("brace")
                elif c == "}":
                    stack.pop()
            elif c == "#" and (i == 0 or text[i - 1] in _METACHARACTERS):
                end = text.find("\n", i)
                i = n if end < 0 else end
                continue
            elif c == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
                i = _heredoc_operator(text, i, heredocs)
                continue
            elif c == "(" and text.startswith("((", i):
                stack.append("arithmetic")  # `((...))`: no quotes, comments or here-documents inside
                i += 2
                continue
            elif c == "\n" and heredocs:
                i = _heredoc_bodies(text, i + 1, heredocs, hits)
                heredocs.clear()
                continue
        elif context == "dq":
            if c == '"':
                stack.pop()
        elif context == "arithmetic":
            if text.startswith("))", i):
                stack.pop()
                i += 2
                continue
        else:  # qbrace
            if c == "'":
                _deny("a quote inside a ${...} within double quotes is not allowed (bash's quoting there "
                      "depends on the operator, so what it runs cannot be known); use a variable")
            if c == '"':
                stack.append("dq")
            elif c == "{":
                stack.append("qbrace")
            elif c == "}":
                stack.pop()
        i += 1
    if heredocs:
        _heredoc_bodies(text, n, heredocs, hits)
    return hits


def _escaped_end(text: str, i: int, closer: str) -> int:
    """The index after the unescaped `closer` that ends a body starting at i: the closing backtick of a
    `...` substitution (one hit is enough; the judge refuses the whole substitution) or the closing
    quote of a $'...' string. Backslash escapes the next character in both."""
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == closer:
            return i + 1
        i += 1
    return len(text)


def _heredoc_operator(text: str, i: int, heredocs: list[tuple[str, bool, bool]]) -> int:
    """Read `<<WORD` or `<<-WORD` at i; remember the here-document; return the index after WORD."""
    i += 2
    strip_tabs = i < len(text) and text[i] == "-"
    if strip_tabs:
        i += 1
    while i < len(text) and text[i] in " \t":
        i += 1
    delimiter: list[str] = []
    quoted = False
    while i < len(text) and text[i] not in _METACHARACTERS:
        c = text[i]
        if c in "'\"":
            end = text.find(c, i + 1)
            if end < 0:
                _deny("a here-document delimiter with an unterminated quote")
            delimiter.append(text[i + 1:end])
            quoted = True
            i = end + 1
        elif c == "\\":
            delimiter.append(text[i + 1:i + 2])
            quoted = True
            i += 2
        elif c == "$" and i + 1 < len(text) and text[i + 1] in "'\"":
            _deny("a here-document delimiter written with $'...' or $\"...\" is not supported")
        else:
            delimiter.append(c)
            i += 1
    if not delimiter:
        _deny("a here-document without a delimiter")
    heredocs.append(("".join(delimiter), quoted, strip_tabs))
    return i


def _heredoc_bodies(text: str, i: int, heredocs: list[tuple[str, bool, bool]],
                    hits: list[tuple[int, str]]) -> int:
    """Skip the bodies of the pending here-documents, which start at i, as bash reads them; scan the
    unquoted ones (bash expands them). Returns the index after the last delimiter line."""
    for delimiter, quoted, strip_tabs in heredocs:
        while i < len(text):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            line = text[i:end]
            start = i
            if not quoted:
                # bash joins a line ending in an unescaped backslash with the next before it compares
                # the line with the delimiter
                while end < len(text) and (len(line) - len(line.rstrip("\\"))) % 2 == 1:
                    following = text.find("\n", end + 1)
                    following = len(text) if following < 0 else following
                    line = line[:-1] + text[end + 1:following]
                    end = following
            i = end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
            if not quoted:
                body = text[start:end]
                k = 0
                while k < len(body):
                    if body[k] == "\\":
                        k += 2
                        continue
                    if body[k] == "`":
                        hits.append((start + k, "command substitution"))
                        k = _escaped_end(body, k + 1, "`")
                        continue
                    if body.startswith("$(", k):
                        kind = "arithmetic expansion" if body.startswith("$((", k) else "command substitution"
                        hits.append((start + k, kind))
                    elif body.startswith("$[", k):
                        hits.append((start + k, "arithmetic expansion"))
                    elif body.startswith(("<(", ">("), k):
                        hits.append((start + k, "process substitution"))
                    k += 1
    return min(i, len(text))


def _first_error(root: Node) -> Node | None:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return node
        if node.has_error:
            stack.extend(reversed(node.children))
    return None


def _heredoc_delimiter(start_text: str) -> str:
    return start_text.replace("'", "").replace('"', "").replace("\\", "")


# ---------------------------------------------------------------------------------------------
# The judge


@dataclass
class _Verdicts:
    """What one judgement has found so far."""

    allowed: list[str] = field(default_factory=list)
    commands: list[tuple[str | None, ...]] = field(default_factory=list)
    outputs: list[tuple[Word, str]] = field(default_factory=list)  # redirect targets, checked at the end
    edits: list[tuple[Word, str]] = field(default_factory=list)  # files a writer changes
    # (what a link points to, the directories a relative symlink target is resolved from, the command)
    links: list[tuple[Word, list[Word], str]] = field(default_factory=list)
    relative_programs: list[str] = field(default_factory=list)
    changes_directory: bool = False


class CommandJudge:
    def __init__(self, allow: Sequence[CommandRule], deny: Sequence[CommandRule], *,
                 check_edit: Callable[[str], Decision], repo: str | None = None, collect_only: bool = False,
                 check_read: Callable[[str], Decision] | None = None,
                 shelters: Callable[[str], str | None] | None = None):
        self.allow = list(allow)
        self.deny = list(deny)
        self.allow_all = any(rule.matches_everything for rule in self.allow)
        self.check_edit = check_edit
        # Reading rules (what a link may point to) and "which protected path lies below this
        # directory" (moving, removing or linking a parent of a protected path).
        self.check_read = check_read or (lambda _path: Decision(True, ""))
        self.shelters = shelters or (lambda _path: None)
        self.repo = repo
        # Walk and collect the simple commands without refusing anything (interactive checks).
        self.collect_only = collect_only
        # Functions defined at the top level of each script being judged (innermost last): calling
        # one runs its body, which was judged where it was defined.
        self._functions: list[set[str]] = []

    # -- entry point ---------------------------------------------------------------------------

    def judge(self, command: str) -> Decision:
        verdicts = _Verdicts()
        if not isinstance(command, str) or not command.strip():
            return Decision(False, "the command is empty")
        if self.allow_all and not self.deny:
            # Still parse, so the caller learns the simple commands; nothing here can refuse.
            with contextlib.suppress(_Denied):
                CommandJudge([], [], check_edit=self.check_edit, repo=self.repo,
                             collect_only=True)._script(command, 0, verdicts)
            return Decision(True, "allowed: commands.allow contains `*`, which allows every command",
                            tuple(verdicts.commands))
        try:
            self._script(command, 0, verdicts)
            self._check_outputs(verdicts)
        except _Denied as denial:
            return Decision(False, denial.reason, tuple(verdicts.commands))
        parts = "; ".join(verdicts.allowed) if verdicts.allowed else "it runs no program"
        return Decision(True, f"allowed: {parts}", tuple(verdicts.commands))

    # -- scripts and statements ------------------------------------------------------------------

    def _refuse(self, reason: str) -> None:
        """Refuse a construct the judge cannot see through, unless the policy allows `*`."""
        if not (self.allow_all or self.collect_only):
            _deny(reason)

    def _script(self, text: str, depth: int, verdicts: _Verdicts) -> None:
        if depth > MAX_NESTING:
            _deny(f"shells nested more than {MAX_NESTING} deep are not judged")
        _check_raw_text(text)
        tree = _parser().parse(text.encode("utf-8", errors="surrogateescape"))
        root = tree.root_node
        if root.has_error:
            error = _first_error(root)
            if error is not None:
                line, column = error.start_point
                what = "missing " + error.type if error.is_missing else f"near `{_snippet(_text(error), 30)}`"
                _deny(f"the command could not be parsed as shell (line {line + 1}, column {column + 1}: "
                      f"{what})")
            _deny("the command could not be parsed as shell")
        substitutions: list[Node] = []
        seen: set[int] = set()  # where the tree has substitutions, as byte offsets
        expansions: list[Node] = []
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type in SUBSTITUTIONS:
                self._refuse(f"{SUBSTITUTIONS[node.type]} `{_snippet(_text(node))}` is not allowed: "
                             f"its output becomes part of the command, so what runs cannot be judged "
                             f"beforehand; run the inner command on its own first")
                substitutions.append(node)
                seen.add(node.start_byte)
            elif node.type == "arithmetic_expansion":
                self._refuse(f"arithmetic expansion `{_snippet(_text(node))}` is not allowed "
                             f"(bash arithmetic can run commands through array subscripts)")
                seen.add(node.start_byte)
            elif node.type == "heredoc_redirect":
                self._check_heredoc(node)
            elif node.type in ("expansion", "subscript"):
                expansions.append(node)
            stack.extend(node.children)
        self._check_substitutions_in_text(text, seen)
        for node in expansions:  # after the substitutions, whose refusal says more
            if node.type == "expansion":
                self._check_expansion(node)
            else:
                self._check_subscript(node)
        self._functions.append(set())
        try:
            self._statement(root, depth, verdicts)
        finally:
            self._functions.pop()
        for node in substitutions:  # only reached when the policy allows `*`: deny rules still apply
            for child in node.named_children:
                self._statement(child, depth, verdicts)

    def _check_substitutions_in_text(self, text: str, seen: set[int]) -> None:
        """The lexer's second opinion: a substitution the tree did not show (`${x:-`cmd`}` parses
        as a plain word) is refused even when the policy allows `*`, since deny rules cannot be
        applied to a command the judge never saw."""
        hits = _scan_substitutions(text)
        if not hits:
            return
        encoded_up_to = 0
        byte_offset = 0
        for offset, kind in hits:
            byte_offset += len(text[encoded_up_to:offset].encode("utf-8", errors="surrogateescape"))
            encoded_up_to = offset
            if byte_offset in seen:
                continue  # the tree walk has dealt with it
            shown = _snippet(text[offset:], 40)
            reason = (f"{kind} is not allowed (found at {shown!r}): bash would run it, and the shell grammar does "
                      f"not show it as a substitution, so what runs cannot be judged")
            if self.allow_all:
                _deny(reason)
            self._refuse(reason)

    def _check_heredoc(self, node: Node) -> None:
        """Refuse a here-document whose end the grammar places later than bash would: the lines in
        between would run as commands without being judged."""
        start = end = body = None
        strip_tabs = False
        for child in node.children:
            if child.type == "heredoc_start":
                start = _text(child)
            elif child.type == "heredoc_end":
                end = _text(child)
            elif child.type == "heredoc_body":
                body = _text(child)
            elif child.type == "<<-":
                strip_tabs = True
        if start is None:
            _deny("a here-document without a delimiter")
        delimiter = _heredoc_delimiter(start)
        if end is not None and end.strip("\t") != delimiter:
            _deny(f"the here-document delimiter `{delimiter}` does not end where expected")
        for line in (body or "").split("\n"):
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                _deny(f"the here-document `{delimiter}` ends earlier in bash than it appears to; "
                      f"the lines after it would run as commands")

    def _statement(self, node: Node, depth: int, verdicts: _Verdicts) -> None:
        kind = node.type
        if not node.is_named:
            if kind not in PUNCTUATION:
                _deny(f"unsupported shell syntax `{_snippet(_text(node))}`")
            return
        if kind == "comment":
            return
        if kind in ("program", "list", "pipeline", "subshell", "negated_command", "do_group", "else_clause",
                    "elif_clause", "if_statement", "while_statement"):
            for child in node.children:
                self._statement(child, depth, verdicts)
        elif kind == "compound_statement":
            if node.children and node.children[0].type == "((":
                self._refuse(f"arithmetic command `{_snippet(_text(node))}` is not allowed "
                             f"(bash arithmetic can run commands through array subscripts)")
                return
            for child in node.children:
                self._statement(child, depth, verdicts)
        elif kind == "redirected_statement":
            for child in node.children:
                if child.type in REDIRECTS:
                    self._redirect(child, depth, verdicts)
                else:
                    self._statement(child, depth, verdicts)
        elif kind == "function_definition":
            name = None
            for index, child in enumerate(node.children):
                field_name = node.field_name_for_child(index)
                if field_name == "name":
                    name = _text(child)
                    continue
                if not child.is_named:
                    continue
                if child.type in REDIRECTS:
                    self._redirect(child, depth, verdicts)
                else:
                    self._statement(child, depth, verdicts)
            # Only a definition at the top level surely exists when later lines call it; one inside
            # a branch may not, and then the call runs a program of that name.
            if name and node.parent is not None and node.parent.type == "program" and self._functions:
                self._functions[-1].add(name)
        elif kind == "for_statement":
            self._for(node, depth, verdicts)
        elif kind == "case_statement":
            for index, child in enumerate(node.children):
                if node.field_name_for_child(index) == "value":
                    self._word(child)
                elif child.type == "case_item":
                    self._case_item(child, depth, verdicts)
                elif child.is_named and child.type != "comment":
                    _deny(f"unsupported syntax in a case statement: `{_snippet(_text(child))}`")
        elif kind == "c_style_for_statement":
            self._refuse(f"the arithmetic loop `{_snippet(_text(node))}` is not allowed "
                         f"(bash arithmetic can run commands through array subscripts)")
            for index, child in enumerate(node.children):
                if node.field_name_for_child(index) == "body":
                    self._statement(child, depth, verdicts)
        elif kind == "command":
            self._command(node, depth, verdicts)
        elif kind == "variable_assignment":
            self._assignment(node)
        elif kind == "variable_assignments":
            for child in node.named_children:
                self._assignment(child)
        elif kind == "declaration_command":
            self._declaration(node)
        elif kind == "unset_command":
            self._unset(node)
        elif kind == "test_command":
            self._test(node)
        else:
            _deny(f"unsupported shell syntax ({kind}): `{_snippet(_text(node))}`")

    def _for(self, node: Node, depth: int, verdicts: _Verdicts) -> None:
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "variable":
                self._check_variable(_text(child), f"the loop variable of `{_snippet(_text(node))}`")
            elif field_name == "value":
                self._word(child)
            elif field_name == "body":
                self._statement(child, depth, verdicts)
            elif child.is_named and child.type != "comment":
                _deny(f"unsupported syntax in a for loop: `{_snippet(_text(child))}`")

    def _case_item(self, node: Node, depth: int, verdicts: _Verdicts) -> None:
        for index, child in enumerate(node.children):
            if node.field_name_for_child(index) == "value":
                continue  # a pattern, never run
            self._statement(child, depth, verdicts)

    def _check_variable(self, name: str, where: str) -> None:
        if self.collect_only:
            return
        rule = dangerous_variable(name)
        if rule is not None:
            _deny(f"setting {name} ({where}) is not allowed: variables matching {rule} change what runs "
                  f"or how programs load code")

    def _assignment(self, node: Node, *, associative: bool = False) -> None:
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "value":
                if child.type == "array":
                    self._array_literal(node, child, associative=associative)
                continue
            if field_name != "name":
                continue
            if child.type == "variable_name":
                self._check_variable(_text(child), f"in `{_snippet(_text(node))}`")
            elif child.type == "subscript":
                name = child.child_by_field_name("name")
                if name is not None:
                    self._check_variable(_text(name), f"in `{_snippet(_text(node))}`")
                index_node = child.child_by_field_name("index")
                if index_node is None or index_node.type != "number":
                    self._refuse(f"the array assignment `{_snippet(_text(node))}` evaluates its subscript as "
                                 f"arithmetic; use a literal number")
            else:
                _deny(f"unsupported assignment `{_snippet(_text(node))}`")

    def _array_literal(self, assignment: Node, array: Node, *, associative: bool) -> None:
        """`a=([k]=v)`: for an indexed array bash evaluates k as arithmetic, and a bare name there
        expands that variable's value as arithmetic too (`x='a[$(cmd)]'; a=([x]=1)` runs cmd). Keys
        must be literal integers; plain literal words only where the array is surely associative
        (`declare -A m=([key]=v)`)."""
        for element in array.named_children:
            if element.type == "comment":
                continue
            text = _text(element)
            if not text.startswith("["):
                continue
            match = _ARRAY_KEY.match(text)
            key = match.group(1) if match else None
            if key is not None and (_INTEGER.fullmatch(key) or (associative and _PLAIN_KEY.fullmatch(key))):
                continue
            self._refuse(f"the array element `{_snippet(text, 40)}` in `{_snippet(_text(assignment))}` has a key "
                         f"bash evaluates as arithmetic; use literal integers (or `declare -A` for words)")

    def _declaration(self, node: Node) -> None:
        keyword = node.children[0].type if node.children else ""
        associative = any(child.type == "word" and _text(child).startswith("-") and "A" in _text(child)
                          for child in node.named_children)
        for child in node.named_children:
            if child.type == "variable_assignment":
                self._assignment(child, associative=associative)
            elif child.type == "variable_name":
                continue
            elif child.type == "word":
                flag = _text(child)
                if not flag.startswith(("-", "+")) or any(c not in "xrgaAlufp" for c in flag[1:]):
                    _deny(f"`{keyword} {flag}` is not allowed (only the flags -x -r -g -a -A -l -u -f -p; "
                          f"-n makes a name refer to another variable, -i evaluates arithmetic)")
            else:
                _deny(f"unsupported declaration `{_snippet(_text(node))}`")

    def _unset(self, node: Node) -> None:
        """`unset 'a[$i]'` evaluates the subscript as arithmetic: only plain names and flags.
        Removing a variable cannot make anything run; removing a function means a later call of
        that name runs the program instead."""
        for child in node.named_children:
            text = _text(child)
            if child.type == "variable_name" or (child.type == "word" and _NAME.fullmatch(text)):
                if self._functions:
                    self._functions[-1].discard(text)
            elif child.type == "word" and re.fullmatch(r"-[fvn]+", text):
                continue
            else:
                self._refuse(f"`unset {_snippet(text, 30)}` is not allowed: unset takes plain variable or "
                             f"function names (bash evaluates a subscript in a name as arithmetic)")

    def _test(self, node: Node) -> None:
        """`[[ ... ]]` evaluates the operands of -eq/-lt/... as arithmetic; -v and -R (in `[[ ]]` and in
        `[ ]`, the test builtin) look up array subscripts, evaluated as arithmetic: each can run
        commands hidden in a variable's value. `[ ... ]` compares integers without arithmetic."""
        double = bool(node.children) and node.children[0].type == "[["
        stack = list(node.children)
        while stack:
            child = stack.pop()
            if child.type == "test_operator":
                operator = _text(child)
                parent = child.parent
                if double and operator in ARITHMETIC_OPERATORS and parent is not None:
                    for operand in parent.named_children:
                        if operand.type not in ("number", "test_operator"):
                            self._refuse(f"`{_snippet(_text(parent))}` compares with {operator}, which "
                                         f"evaluates its operands as bash arithmetic; compare literal numbers "
                                         f"or use [ ... ]")
                elif operator in ("-v", "-R"):
                    self._refuse(f"`{operator}` in a test evaluates array subscripts as arithmetic; test the "
                                 f"value instead (`[ -n \"${{x+set}}\" ]`)")
            stack.extend(child.children)

    # -- redirections --------------------------------------------------------------------------

    def _redirect(self, node: Node, depth: int, verdicts: _Verdicts) -> None:
        if node.type == "herestring_redirect":
            return  # input only; substitutions inside were already refused
        if node.type == "heredoc_redirect":
            for child in node.named_children:
                if child.type in REDIRECTS:
                    self._redirect(child, depth, verdicts)
                elif child.type not in ("heredoc_start", "heredoc_body", "heredoc_end"):
                    # `cat <<EOF | grep x && ls`: what follows the delimiter on its line
                    self._statement(child, depth, verdicts)
            return
        operator = None
        destinations: list[Node] = []
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "destination":
                destinations.append(child)
            elif field_name == "descriptor":
                continue
            elif not child.is_named:
                operator = child.type
            else:
                _deny(f"unsupported redirection `{_snippet(_text(node))}`")
        if len(destinations) > 1:
            _deny(f"in `{_snippet(_text(node))}` the words after the redirection target are arguments of the "
                  f"command in bash; put redirections at the end of the command")
        if operator in QUIET_OPERATORS or operator is None:
            return
        if operator not in OUTPUT_OPERATORS:
            _deny(f"unsupported redirection operator `{operator}`")
        if not destinations:
            return
        destination = destinations[0]
        if operator == ">&" and (destination.type == "number" or _text(destination) == "-"):
            return  # duplicating a file descriptor, not a file
        verdicts.outputs.append((self._word(destination), _text(node)))

    def _check_outputs(self, verdicts: _Verdicts) -> None:
        for word, written in verdicts.outputs:
            if not word.literal:
                _deny(f"the redirection `{_snippet(written)}` writes to a path that is only known at run time")
            self._check_changed_path(word.value, f"the redirection `{_snippet(written)}`", verdicts)
        for word, written in verdicts.edits:
            if not word.literal:
                _deny(f"`{_snippet(written)}` changes files named by `{word.text}`, which is only known at run "
                      f"time (an expansion or glob); name the files literally")
            relative = self._check_changed_path(word.value, f"`{_snippet(written)}`", verdicts)
            if relative is not None:
                sheltered = self.shelters(relative)
                if sheltered:
                    _deny(f"`{_snippet(written)}` changes {relative} as a whole: {sheltered}")
        for source, directories, written in verdicts.links:
            self._check_link(source, directories, _snippet(written), verdicts)
        if verdicts.changes_directory and verdicts.relative_programs:
            _deny(f"`{verdicts.relative_programs[0]}` is a relative path and the command changes directory, "
                  f"so which file runs cannot be known")

    def _check_link(self, source: Word, directories: list[Word], written: str, verdicts: _Verdicts) -> None:
        """A link (symbolic or hard) must not point at anything the agent may not edit or read, nor
        at a directory above a protected path: writes through the link would reach it under a
        name the rules do not see. A relative symlink target is resolved from the link's directory
        (both the destination and its parent, since the destination may be a directory); a hard
        link's source, or `ln -r`'s, from the current one."""
        if not source.literal:
            _deny(f"`{written}` links to `{source.text}`, which is only known at run time; name it literally")
        target = source.value
        candidates = [target] if (target.startswith("/") or not directories) else []
        if not target.startswith("/"):
            for directory in directories:
                if not directory.literal:
                    _deny(f"`{written}` puts a link in `{directory.text}`, which is only known at run time")
                candidates.append(posixpath.join(directory.value, target))
                real_directory = self._real_relative(directory.value)
                if real_directory is not None:
                    candidates.append(posixpath.join(real_directory, target))
        for candidate in dict.fromkeys(candidates):
            what = f"`{written}` makes a link to {target!r}"
            relative = self._repository_relative(candidate, what, verdicts)
            for decision in (self.check_read(relative), self.check_edit(relative)):
                if not decision.allowed:
                    _deny(f"{what}, which leads to {relative or '.'}: {decision.reason}")
            sheltered = self.shelters(relative)
            if sheltered:
                _deny(f"{what}, which leads to {relative or '.'}: {sheltered}")

    def _real_relative(self, path: str) -> str | None:
        """Where a repository-relative directory really is (through symlinks), relative to the root."""
        if self.repo is None or path.startswith("/"):
            return None
        root = self.repo.rstrip("/") or "/"
        real = os.path.realpath(posixpath.join(root, path))
        if real != root and not real.startswith(root.rstrip("/") + "/"):
            return None
        return posixpath.relpath(real, root)

    def _repository_relative(self, path: str, what: str, verdicts: _Verdicts) -> str:
        if not path.startswith("/"):
            if verdicts.changes_directory:
                _deny(f"{what} with the relative path {path!r} after a change of directory, so where it leads "
                      f"cannot be known")
            normal = posixpath.normpath(path)
        elif self.repo is None:
            _deny(f"{what}: {path} is outside the repository")
            raise AssertionError  # unreachable
        else:
            root = self.repo.rstrip("/")
            normal = posixpath.normpath(path)
            if normal != root and not normal.startswith(root + "/"):
                _deny(f"{what}: {path} is outside the repository")
            normal = posixpath.relpath(normal, root)
        if normal == ".." or normal.startswith("../"):
            _deny(f"{what}: {path} leads outside the repository")
        return "" if normal == "." else normal

    def _check_changed_path(self, path: str, what: str, verdicts: _Verdicts) -> str | None:
        """Refuse a write the edit rules do not allow; the repository-relative path otherwise (None
        for /dev/null and the like)."""
        if path in SPECIAL_OUTPUTS:
            return None
        if not path.startswith("/"):
            if verdicts.changes_directory:
                _deny(f"{what} uses the relative path {path!r} after a change of directory, so where it writes "
                      f"cannot be known; use a path relative to the repository root without cd")
            relative = path
        elif self.repo is None:
            _deny(f"{what} writes to {path}, outside the repository")
        else:
            root = self.repo.rstrip("/")
            normal = posixpath.normpath(path)
            if normal != root and not normal.startswith(root + "/"):
                _deny(f"{what} writes to {path}, outside the repository (only paths inside it, or "
                      f"/dev/null, may be written)")
            relative = posixpath.relpath(normal, root)
        decision = self.check_edit(relative)
        if not decision.allowed:
            _deny(f"{what} would change {relative}: {decision.reason}")
        return relative

    # -- words ---------------------------------------------------------------------------------

    def _word(self, node: Node, *, word_start: bool = True) -> Word:
        kind = node.type
        text = _text(node)
        if kind == "word":
            value, glob, tilde = _unquote_bare(text, word_start=word_start)
            multi = glob or bool(_BRACE_EXPANSION.search(re.sub(r"\\.", "__", text)))
            return Word(None if tilde else value, multi, text)
        if kind == "number":
            return Word(text, False, text)
        if kind == "raw_string":
            return Word(text[1:-1], False, text)
        if kind == "ansi_c_string":
            return Word(_decode_ansi_c(text[2:-1]), False, text)
        if kind == "string":
            return self._double_quoted(node)
        if kind == "translated_string":
            inner = [child for child in node.named_children if child.type == "string"]
            if len(inner) != 1:
                _deny(f"unsupported string `{_snippet(text)}`")
            word = self._double_quoted(inner[0])
            return Word(word.value, word.multi, text)
        if kind == "concatenation":
            return self._concatenation(node)
        if kind in ("simple_expansion", "expansion"):
            return Word(None, True, text)
        if kind in SUBSTITUTIONS or kind == "arithmetic_expansion":
            return Word(None, True, text)
        _deny(f"unsupported word `{_snippet(text)}` ({kind})")
        raise AssertionError  # unreachable

    def _check_expansion(self, node: Node) -> None:
        """Refuse the forms of `${...}` that evaluate a variable's value as code or arithmetic:
        indirection (`${!x}` expands the variable x names, and `x='a[$(cmd)]'` runs cmd), the `@`
        transformations (`${x@P}` expands prompt escapes, command substitutions included), and
        substring offsets or lengths other than literal integers (they are arithmetic). Assigning a
        default (`${X:=...}`) is held to the same variable names as an assignment."""
        children = node.children
        kinds = [child.type for child in children]
        shown = _snippet(_text(node))
        if len(kinds) > 1 and kinds[1] == "!":
            inner = children[2:-1]
            inner_kinds = kinds[2:-1]
            allowed = (
                not inner  # ${!}: the last background process
                or inner_kinds in (["variable_name", "*"], ["variable_name", "@"])  # ${!prefix*}, ${!prefix@}
                or (inner_kinds == ["subscript"] and self._subscript_index(inner[0]) in ("@", "*"))  # ${!a[@]}
            )
            if not allowed:
                self._refuse(f"the indirect expansion `{shown}` is not allowed: it expands the variable "
                             f"whose name is in another variable, and bash evaluates a subscript in that "
                             f"name as arithmetic, which can run commands")
            return
        for index, kind in enumerate(kinds):
            if kind == "@" and not children[index].is_named:
                self._refuse(f"the transformation `{shown}` is not allowed: `${{var@OP}}` can expand prompt "
                             f"escapes and command substitutions hidden in the value")
            elif kind in ("=", ":=") and not children[index].is_named:
                target = children[1] if len(children) > 1 else None
                if target is not None and target.type == "subscript":
                    target = target.child_by_field_name("name")
                if target is not None and target.type == "variable_name":
                    self._check_variable(_text(target), f"in `{shown}`")
            elif kind == ":" and not children[index].is_named:
                for operand in children[index + 1:]:
                    if operand.type in (":", "}") and not operand.is_named:
                        continue
                    if operand.type != "number" or not _INTEGER.fullmatch(_text(operand).strip()):
                        self._refuse(f"the substring expansion `{shown}` has an offset or length that is not "
                                     f"a literal integer; bash evaluates it as arithmetic, which can run "
                                     f"commands hidden in a variable's value")
                break

    @staticmethod
    def _subscript_index(node: Node) -> str:
        index_node = node.child_by_field_name("index")
        return _text(index_node) if index_node is not None else ""

    def _check_subscript(self, node: Node) -> None:
        """`${a[$i]}` and `a[$i]=1` evaluate the subscript as arithmetic, which can run commands
        hidden in $i."""
        index_text = self._subscript_index(node)
        if not (index_text in ("@", "*") or index_text.isdigit()):
            parent = node.parent if node.parent is not None else node
            self._refuse(f"the subscript in `{_snippet(_text(parent))}` is evaluated as arithmetic; "
                         f"use a literal number")

    def _double_quoted(self, node: Node) -> Word:
        source = node.text
        start = node.start_byte
        parts: list[str] = []
        known = True
        multi = False
        position = start + 1
        for child in node.children:
            if child.type == '"':
                continue
            gap = source[position - start: child.start_byte - start].decode("utf-8", errors="surrogateescape")
            parts.append(_unescape_double_quoted(gap))
            if child.type == "string_content":
                parts.append(_unescape_double_quoted(_text(child)))
            elif child.type in ("simple_expansion", "expansion"):
                known = False
                inner = _text(child)
                if inner in ("$@", "${@}") or "[@]" in inner:
                    multi = True  # "$@" and "${a[@]}" are one word per element
            elif child.type in SUBSTITUTIONS or child.type == "arithmetic_expansion":
                known = False
            else:
                _deny(f"unsupported syntax inside a double-quoted string: `{_snippet(_text(child))}`")
            position = child.end_byte
        tail = source[position - start: node.end_byte - start - 1].decode("utf-8", errors="surrogateescape")
        parts.append(_unescape_double_quoted(tail))
        return Word("".join(parts) if known else None, multi, _text(node))

    def _concatenation(self, node: Node) -> Word:
        parts: list[str] = []
        known = True
        multi = False
        skeleton: list[str] = []  # unquoted text with quoted parts blanked, for brace detection
        for index, child in enumerate(node.children):
            if not child.is_named:
                _deny(f"unsupported word `{_snippet(_text(node))}`")
            if child.type == "word":
                text = _text(child)
                value, glob, tilde = _unquote_bare(text, word_start=index == 0)
                multi = multi or glob
                known = known and not tilde
                parts.append(value)
                skeleton.append(re.sub(r"\\.", "__", text))
            else:
                word = self._word(child, word_start=False)
                if word.value is None:
                    known = False
                else:
                    parts.append(word.value)
                multi = multi or word.multi
                skeleton.append("_" * max(1, len(word.text)))
        if _BRACE_EXPANSION.search("".join(skeleton)):
            multi = True
        return Word("".join(parts) if known else None, multi, _text(node))

    # -- simple commands -----------------------------------------------------------------------

    def _command(self, node: Node, depth: int, verdicts: _Verdicts) -> None:
        name_node: Node | None = None
        arguments: list[Node] = []
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if child.type == "variable_assignment" and name_node is None:
                self._assignment(child)
            elif field_name == "name":
                name_node = child
            elif field_name == "argument":
                if not child.is_named:
                    _deny(f"unsupported word `{_text(child)}` in `{_snippet(_text(node))}`")
                arguments.append(child)
            elif child.type in REDIRECTS:
                self._redirect(child, depth, verdicts)
            elif child.type == "comment":
                continue
            else:
                _deny(f"unsupported syntax in `{_snippet(_text(node))}`: `{_snippet(_text(child))}`")
        if name_node is None:
            return  # only assignments (and redirections)
        program = list(name_node.named_children)
        if len(program) != 1:
            _deny(f"unsupported command name `{_snippet(_text(name_node))}`")
        words = [self._word(program[0])] + [self._word(argument) for argument in arguments]
        self._simple(words, depth, verdicts)

    def _simple(self, words: list[Word], depth: int, verdicts: _Verdicts) -> None:
        """Judge one simple command given as words."""
        shown = _snippet(" ".join(word.text for word in words), 80)
        verdicts.commands.append(tuple(word.value if word.literal else None for word in words))
        program = words[0]
        if self.collect_only:
            self._collect_inner(words, depth, verdicts, shown)
            return
        if not program.literal:
            _deny(f"in `{shown}` the program name `{program.text}` is not a plain word (it contains an "
                  f"expansion, glob or ~), so what would run cannot be known")
        name = program.value
        if not name:
            _deny(f"`{shown}` has an empty program name")
        for word in words:
            if _FD_VARIABLE.fullmatch(word.text):
                _deny(f"`{word.text}` in `{shown}` would be a file-descriptor variable redirection; "
                      f"it is not supported")
        base = posixpath.basename(name) if "/" in name else name
        location = self._program_location(name)
        if location == "name" and name in FORBIDDEN_BUILTINS:
            self._refuse(f"`{name}` is not allowed ({shown}): {FORBIDDEN_BUILTINS[name]}")
        self._check_deny(words, base, shown)
        if location == "name" and self._functions and name in self._functions[-1]:
            verdicts.allowed.append(f"`{shown}` (a function defined above; its body was judged)")
            return
        if location == "name" and name in NO_OP_BUILTINS and all(word.value is not None for word in words[1:]):
            # With an expansion among its arguments `:` is not harmless: `: ${x:=...}` assigns,
            # and expanding is where bash runs what is hidden in a value. Then a rule must allow it.
            verdicts.allowed.append(f"`{shown}` (a builtin that does nothing)")
            return
        if base in ("cd", "pushd", "popd") and location == "name":
            verdicts.changes_directory = True
        if location == "repository" and not name.startswith("/"):
            verdicts.relative_programs.append(name)

        # Only a wrapper found by name is known to be that wrapper: a path could be any file.
        wrapper = location == "name" and base in WRAPPERS
        if wrapper and self._look_through(base, words, depth, verdicts, shown):
            return

        sensitive: dict[int, str] = {}
        if location in ("name", "system"):
            if base == "git":
                sensitive = self._git(words)
            elif base == "find":
                sensitive = self._find(words, depth, verdicts)
            elif base == "rg":
                sensitive = {i: f"`{w.text}` makes ripgrep run a program on each file"
                             for i, w in enumerate(words) if w.value is not None and w.value.startswith("--pre")}
            elif base == "sed":
                sensitive = self._sed(words, verdicts, shown)
            elif base in WRITERS_ALL_ARGS or base in WRITERS_LAST_ARG:
                self._writer(base, words, verdicts, shown)
            elif base == "dd":
                for word in words[1:]:
                    if word.value is None or word.multi:
                        _deny(f"`{shown}`: dd operand `{word.text}` is only known at run time")
                    if word.value.startswith("of="):
                        verdicts.edits.append((_lit(word.value[3:]), shown))
            if location == "name" and base in VARIABLE_SETTING_BUILTINS:
                self._variable_setting(base, words, shown)

        rule, why_not = self._find_allow(words, location, name, sensitive)
        if rule is None:
            if why_not:
                _deny(f"`{shown}` is not allowed: {why_not}")
            if location == "repository":
                _deny(f"`{shown}` runs {name}, a program inside the repository (which the agent can change); "
                      f"a rule for `{base}` does not cover it — a rule must name the path, e.g. `{name} *`")
            if location in ("system", "outside"):
                _deny(f"`{shown}` runs the program by path; give it by name (`{base}`) or name the path in a "
                      f"rule")
            _deny(f"`{shown}` is not allowed: no rule in commands.allow matches it")
        verdicts.allowed.append(f"`{shown}` by {rule.describe()}")

    def _collect_inner(self, words: list[Word], depth: int, verdicts: _Verdicts, shown: str) -> None:
        """In collect-only mode: record what wrappers run, refusing nothing."""
        name = words[0].value
        if not words[0].literal or not name or self._program_location(name) != "name":
            return
        base = posixpath.basename(name)
        try:
            if base in WRAPPERS:
                self._look_through(base, words, depth, verdicts, shown)
            elif base == "find":
                self._find(words, depth, verdicts)
        except _Denied:
            pass

    def _program_location(self, name: str) -> str:
        """'name' (looked up in PATH), 'repository' (a path inside the repository), 'system' (an
        absolute path outside it) or 'outside' (a relative path that leaves it)."""
        if "/" not in name:
            return "name"
        if name.startswith("/"):
            if self.repo is not None:
                root = self.repo.rstrip("/")
                normal = posixpath.normpath(name)
                if normal == root or normal.startswith(root + "/"):
                    return "repository"
            return "system"
        normal = posixpath.normpath(name)
        if normal == ".." or normal.startswith("../"):
            return "outside"
        return "repository"

    def _check_deny(self, words: list[Word], base: str, shown: str) -> None:
        forms = [words]
        if base != words[0].value:
            forms.append([_lit(base), *words[1:]])
        for rule in self.deny:
            for form in forms:
                if _possibly_matches(rule, form):
                    _deny(f"`{shown}` is denied by {rule.describe()}")

    def _find_allow(self, words: list[Word], location: str, name: str,
                    sensitive: dict[int, str]) -> tuple[CommandRule | None, str]:
        key = name if location == "name" else _normalize_program_path(name)
        if location == "repository" and name.startswith("/") and self.repo is not None:
            key = "./" + posixpath.relpath(posixpath.normpath(name), self.repo.rstrip("/"))
        match_words = [_lit(key), *words[1:]]
        why_not = ""
        for rule in self.allow:
            if rule.matches_everything:
                return rule, ""
            if rule.names_a_path != (location != "name"):
                continue
            matched, reason = _certainly_matches(rule, match_words, sensitive)
            if not matched:
                continue
            if not reason:
                return rule, ""
            why_not = why_not or reason
        return None, why_not

    # -- wrappers ------------------------------------------------------------------------------

    def _look_through(self, base: str, words: list[Word], depth: int, verdicts: _Verdicts, shown: str) -> bool:
        """Judge the command a wrapper runs. True when that settles it; False when the wrapper runs
        nothing else here (then the wrapper itself is held to the rules)."""
        if base in SHELLS:
            script = self._shell_script(words, shown)
            if script is None:
                return False
            self._script(script, depth + 1, verdicts)
            verdicts.allowed.append(f"`{shown}` (the inner command was judged)")
            return True
        unwrap = {"env": self._unwrap_env, "nohup": self._unwrap_nohup, "builtin": self._unwrap_builtin,
                  "xargs": self._unwrap_xargs}
        inner = unwrap[base](words, shown) if base in unwrap else self._unwrap_options(base, words, shown)
        if not inner:
            return False
        self._simple(inner, depth, verdicts)
        return True

    @staticmethod
    def _option_words(words: list[Word], shown: str, what: str) -> None:
        for word in words:
            if not word.literal:
                _deny(f"in `{shown}` the {what} argument `{word.text}` is only known at run time")

    def _unwrap_options(self, base: str, words: list[Word], shown: str) -> list[Word] | None:
        """The command a wrapper runs, after its options (walked as WRAPPER_OPTIONS[base] says)."""
        spec = WRAPPER_OPTIONS[base]
        i = 1
        while i < len(words):
            word = words[i]
            if spec.assignments_end_options and word.value is None and _ASSIGNMENT.match(word.text):
                break
            self._option_words([word], shown, base)
            value = word.value
            if value in spec.describes_only:
                return None  # only describes a name; judged as `command -v ...` itself
            if value == "--":
                i += 1
                break
            if value in spec.flags or (spec.attached and spec.attached.fullmatch(value)):
                i += 1
            elif value in spec.with_value:
                i += 2
            elif spec.denied and spec.denied.fullmatch(value):
                _deny(spec.denial.format(shown=shown, value=value))
            elif value.startswith("-"):
                _deny(spec.unknown.format(shown=shown, name=base, value=value))
            else:
                break
        return words[i + spec.operands:] or None

    def _unwrap_env(self, words: list[Word], shown: str) -> list[Word] | None:
        inner = self._unwrap_options("env", words, shown) or []
        while inner and (match := _ASSIGNMENT.match(inner[0].text)) and (
                inner[0].value is None or "=" in inner[0].value):
            self._check_variable(match.group(1), f"in `{shown}`")
            inner = inner[1:]
        return inner or None

    def _unwrap_nohup(self, words: list[Word], shown: str) -> list[Word] | None:
        i = 1
        if i < len(words) and words[i].value == "--":
            i += 1
        elif i < len(words) and words[i].value is not None and words[i].value.startswith("-"):
            return None  # --help / --version
        return words[i:] or None

    def _unwrap_builtin(self, words: list[Word], shown: str) -> list[Word] | None:
        return words[1:] or None

    def _unwrap_xargs(self, words: list[Word], shown: str) -> list[Word]:
        """xargs runs its command with words read from input appended (or, with -I, substituted)."""
        flags = {"-0", "--null", "-r", "--no-run-if-empty", "-t", "--verbose", "-x", "--exit", "--show-limits"}
        with_value = {"-a", "--arg-file", "-d", "--delimiter", "-E", "-L", "--max-lines", "-n", "--max-args",
                      "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var", "--eof"}
        replace: str | None = None
        i = 1
        while i < len(words):
            self._option_words([words[i]], shown, "xargs")
            value = words[i].value
            if value == "--":
                i += 1
                break
            if not value.startswith("-") or value == "-":
                break
            if value in ("-p", "--interactive", "-o", "--open-tty"):
                _deny(f"`{shown}`: xargs {value} is interactive")
            if value in flags:
                i += 1
            elif value == "-I" or value in with_value:
                if i + 1 >= len(words):
                    _deny(f"`{shown}`: xargs {value} needs a value")
                self._option_words([words[i + 1]], shown, "xargs")
                if value == "-I":
                    replace = words[i + 1].value
                if value == "--process-slot-var":
                    self._check_variable(words[i + 1].value, f"the --process-slot-var of `{shown}`")
                i += 2
            elif value.startswith("--"):
                option, has_equals, attached = value.partition("=")
                if option == "--replace":
                    replace = attached or "{}"
                elif option in with_value and has_equals:
                    if option == "--process-slot-var":
                        self._check_variable(attached, f"the --process-slot-var of `{shown}`")
                else:
                    _deny(f"`{shown}`: xargs option `{value}` is not known")
                i += 1
            elif value[1] == "I":
                replace = value[2:]
                i += 1
            elif value[1] == "i":
                replace = value[2:] or "{}"
                i += 1
            elif value[1] in "nLPsdaEel" or all(letter in "0rtx" for letter in value[1:]):
                i += 1
            else:
                _deny(f"`{shown}`: xargs option `{value}` is not known")
        inner = words[i:] or [_lit("echo")]
        if replace:
            # Each input line replaces the string inside these words, so their values are unknown.
            return [Word(None, False, w.text) if (w.value is not None and replace in w.value) else w
                    for w in inner]
        return [*inner, UNKNOWN_INPUT]

    def _shell_script(self, words: list[Word], shown: str) -> str | None:
        """The script of `sh -c '...'`, or None when the shell runs a file or reads stdin."""
        i = 1
        has_c = False
        safe_options = ("pipefail", "errexit", "nounset", "xtrace", "noglob", "verbose", "posix")
        while i < len(words):
            word = words[i]
            if not word.literal:
                if has_c:
                    break
                _deny(f"in `{shown}` the shell argument `{word.text}` is only known at run time")
            value = word.value
            if value in ("--norc", "--noprofile", "--posix", "-l", "--login", "--"):
                i += 1
                if value == "--":
                    break
                continue
            if value in ("-o", "+o"):
                if i + 1 >= len(words) or words[i + 1].value not in safe_options:
                    following = words[i + 1].text if i + 1 < len(words) else ""
                    _deny(f"`{shown}`: shell option `{value} {following}` is not allowed")
                i += 2
                continue
            if re.fullmatch(r"[-+][euxvcfo]+", value):
                has_c = has_c or "c" in value
                if value.endswith("o"):
                    if i + 1 >= len(words) or words[i + 1].value not in safe_options:
                        _deny(f"`{shown}`: shell option `{value}` is not allowed")
                    i += 2
                    continue
                i += 1
                continue
            if value.startswith(("-", "+")):
                _deny(f"`{shown}`: shell option `{value}` is not allowed (it could make the shell "
                      f"interactive, read startup files or change how the script is parsed)")
            break
        if not has_c:
            return None
        if i >= len(words):
            _deny(f"`{shown}`: -c without a command string")
        script = words[i]
        if not script.literal:
            _deny(f"in `{shown}` the command string `{script.text}` is only known at run time")
        return script.value

    # -- program-specific checks ---------------------------------------------------------------

    def _git(self, words: list[Word]) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        i = 1
        n = len(words)
        while i < n:
            word = words[i]
            if not word.literal:
                sensitive[i] = f"the git option `{word.text}` is only known at run time"
                i += 1
                continue
            value = word.value
            if not value.startswith("-"):
                break
            if value in GIT_VALUE_GLOBAL_OPTIONS:
                why = f"`git {value}` can make git run programs or use another repository; a rule must name it exactly"
                sensitive[i] = why
                if value != "--exec-path":
                    sensitive[i + 1] = why
                    i += 2
                else:
                    i += 1
                continue
            if value.startswith((*(option + "=" for option in GIT_VALUE_GLOBAL_OPTIONS), "-c", "-C")):
                sensitive[i] = f"`git {value}` can make git run programs; a rule must name it exactly"
            elif value not in GIT_SAFE_GLOBAL_OPTIONS and not value.startswith("--list-cmds="):
                sensitive[i] = f"the git option `{value}` is not known; a rule must name it exactly"
            i += 1
        if i >= n:
            return sensitive
        subcommand = words[i].value
        if subcommand in GIT_EXEC_SUBCOMMANDS:
            for j in range(i, n):
                sensitive[j] = f"`git {subcommand}` can run arbitrary programs; a rule must name the command exactly"
        if subcommand == "config" and not self._git_config_reads(words[i + 1:]):
            for j in range(i, n):
                sensitive[j] = "`git config` that writes configuration must be named exactly by a rule"
        short = GIT_SENSITIVE_SHORT.get(subcommand or "", ())
        for j in range(i + 1, n):
            word = words[j]
            if not word.literal:
                sensitive[j] = (f"`{word.text}` is only known at run time and could become an option that makes "
                                f"git run a program or write a file")
                continue
            value = word.value
            if value.startswith(GIT_SENSITIVE_PREFIXES) or "ext::" in value.lower() or \
                    any(value.startswith(option) for option in short):
                sensitive[j] = f"`{value}` makes git run a program or write a file; a rule must name it exactly"
        return sensitive

    @staticmethod
    def _git_config_reads(arguments: list[Word]) -> bool:
        values = [word.value for word in arguments]
        if any(value is None for value in values):
            return False
        if any(value in GIT_CONFIG_WRITE for value in values):
            return False
        return any(value in GIT_CONFIG_READ for value in values)

    def _find(self, words: list[Word], depth: int, verdicts: _Verdicts) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        i = 1
        n = len(words)
        while i < n:
            word = words[i]
            if not word.literal:
                _deny(f"the find argument `{word.text}` is only known at run time and could become an action "
                      f"such as -delete or -exec; quote it")
            value = word.value
            if value in FIND_EXEC_ACTIONS:
                j = i + 1
                while j < n and words[j].value not in (";", "+"):
                    j += 1
                if j >= n:
                    _deny(f"find {value} without a terminating `;` or `+`")
                batch = words[j].value == "+"
                inner = [Word(None, batch, w.text) if (w.value is not None and "{}" in w.value) else w
                         for w in words[i + 1:j]]
                if not inner:
                    _deny(f"find {value} without a command")
                self._simple(inner, depth, verdicts)
                i = j + 1
                continue
            if value in FIND_EDIT_ACTIONS:
                why = f"`find {value}` changes files; a rule must name `{value}` exactly"
                for k in range(i, min(n, i + 1 + FIND_EDIT_ACTIONS[value])):
                    sensitive[k] = why
                i += 1 + FIND_EDIT_ACTIONS[value]
                continue
            i += 1
        return sensitive

    def _sed(self, words: list[Word], verdicts: _Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        scripts: list[tuple[int, Word]] = []
        operands: list[tuple[int, Word]] = []
        script_from_option = False
        in_place = False
        plain_flags = ("--quiet", "--silent", "--regexp-extended", "--separate", "--unbuffered", "--null-data",
                       "--posix", "--debug", "--sandbox", "--follow-symlinks")
        i = 1
        n = len(words)
        options_done = False
        while i < n:
            word = words[i]
            value = word.value
            if options_done or not word.literal or not value.startswith("-") or value == "-":
                operands.append((i, word))
                i += 1
                continue
            if value == "--":
                options_done = True
            elif value in ("-e", "--expression"):
                script_from_option = True
                if i + 1 < n:
                    scripts.append((i + 1, words[i + 1]))
                i += 1
            elif value.startswith("--expression="):
                script_from_option = True
                scripts.append((i, Word(value.split("=", 1)[1], False, word.text)))
            elif value in ("-f", "--file") or value.startswith("--file="):
                script_from_option = True
                sensitive[i] = "`sed -f` runs a script file that cannot be checked; a rule must name it exactly"
                i += 0 if "=" in value else 1
            elif value.startswith("--in-place"):
                in_place = True
            elif value in ("-l", "--line-length"):
                i += 1
            elif value in plain_flags or value.startswith("--line-length="):
                pass
            elif value.startswith("--"):
                _deny(f"`{shown}`: sed option `{value}` is not known")
            else:
                for position, letter in enumerate(value[1:], start=1):
                    attached = value[position + 1:]
                    if letter == "i":
                        in_place = True
                        break  # the rest is a backup suffix
                    if letter == "e":
                        script_from_option = True
                        if attached:
                            scripts.append((i, Word(attached, False, word.text)))
                        elif i + 1 < n:
                            scripts.append((i + 1, words[i + 1]))
                            i += 1
                        break
                    if letter == "f":
                        script_from_option = True
                        sensitive[i] = "`sed -f` runs a script file that cannot be checked; a rule must name it"
                        if not attached:
                            i += 1
                        break
                    if letter == "l":
                        if not attached:
                            i += 1
                        break
                    if letter not in "nErsuzb":
                        _deny(f"`{shown}`: sed option `-{letter}` is not known")
            i += 1
        if not script_from_option and operands:
            scripts.append(operands.pop(0))
        for index, script in scripts:
            if not script.literal:
                sensitive[index] = f"the sed script `{script.text}` is only known at run time"
            elif not _sed_script_is_safe(script.value):
                sensitive[index] = (f"the sed script `{_snippet(script.value, 40)}` may run commands or write "
                                    f"files (the e, w or r commands or flags); a rule must name it exactly")
        if in_place:
            for _, file_word in operands:
                verdicts.edits.append((file_word, shown))
        return sensitive

    def _writer(self, base: str, words: list[Word], verdicts: _Verdicts, shown: str) -> None:
        options, operands, mode_given = self._writer_arguments(base, words, shown)
        target_directory = options.get("target-directory")
        sources: list[Word] = []
        if base in WRITERS_LEADING_OPERAND:
            targets = operands if ("reference" in options or mode_given) else operands[1:]
        elif base == "install" and "directory" in options:
            targets = operands
        elif base in WRITERS_LAST_ARG:
            if target_directory is not None:
                targets, sources = [target_directory], operands
            elif len(operands) > 1:
                targets, sources = operands[-1:], operands[:-1]
            elif base == "ln" and operands and operands[0].literal:
                # `ln -s a/b`: the link is ./b
                targets, sources = [_lit(posixpath.basename(operands[0].value.rstrip("/")) or ".")], operands
            else:
                targets = operands
        elif base == "mv":
            targets = operands + ([target_directory] if target_directory is not None else [])
        else:
            targets = operands
        for target in targets:
            verdicts.edits.append((target, shown))
        symbolic = (base == "ln" and "symbolic" in options) or (base == "cp" and "symbolic-link" in options)
        if base == "ln" or (base == "cp" and ("symbolic-link" in options or "link" in options)):
            # A link makes a protected file writable under another name, even one created earlier on
            # the same command line, which the path rules cannot see yet: judge what it points to.
            link_directories: list[Word] = []
            if symbolic and "relative" not in options:
                # a relative symlink target is resolved from the link's own directory
                if target_directory is not None:
                    link_directories = [target_directory]
                elif targets and targets[0].literal:
                    link_directories = [targets[0], _lit(posixpath.dirname(targets[0].value) or ".")]
                else:
                    link_directories = targets[:1]
            for source in sources:
                verdicts.links.append((source, link_directories, shown))

    def _writer_arguments(self, base: str, words: list[Word], shown: str
                          ) -> tuple[dict[str, Word], list[Word], bool]:
        """(options by canonical name with their values, operands, whether chmod got its mode as an
        option), parsed as GNU getopt_long would."""
        spec = WRITER_OPTIONS[base]
        options: dict[str, Word] = {}
        operands: list[Word] = []
        mode_given = False
        i = 1
        options_done = False
        while i < len(words):
            word = words[i]
            i += 1
            if options_done:
                operands.append(word)
                continue
            if not word.literal:
                if _may_start_with_dash(word):
                    _deny(f"`{shown}`: `{word.text}` is only known at run time and could become an option of "
                          f"{base} (such as -t DIR); put `--` before the file operands")
                operands.append(word)
                continue
            value = word.value
            if value == "--":
                options_done = True
                continue
            if not value.startswith("-") or value == "-":
                operands.append(word)
                continue
            if value.startswith("--"):
                written, has_value, attached = value[2:].partition("=")
                name = self._long_option(base, spec, written, shown)
                canonical, argument = spec.long[name]
                if (base, canonical) in WRITER_REFUSED_OPTIONS:
                    _deny(f"`{shown}`: {base} --{canonical} {WRITER_REFUSED_OPTIONS[(base, canonical)]}")
                if argument == "=":
                    if has_value:
                        options[canonical] = _lit(attached)
                    elif i < len(words):
                        options[canonical] = words[i]
                        i += 1
                    else:
                        _deny(f"`{shown}`: {base} --{name} needs a value")
                elif has_value and argument != "=?":
                    _deny(f"`{shown}`: {base} --{name} takes no value")
                else:
                    options[canonical] = _lit(attached)
                continue
            for position, letter in enumerate(value[1:], start=1):
                if base == "chmod" and letter in CHMOD_MODE_LETTERS and letter not in spec.short:
                    mode_given = True  # the rest of the word is the mode
                    break
                if letter not in spec.short:
                    _deny(f"`{shown}`: {base} option `-{letter}` is not known, so which words are files "
                          f"cannot be told")
                canonical, argument = spec.short[letter]
                if argument == "=":
                    attached = value[position + 1:]
                    if attached:
                        options[canonical] = _lit(attached)
                    elif i < len(words):
                        options[canonical] = words[i]
                        i += 1
                    else:
                        _deny(f"`{shown}`: {base} -{letter} needs a value")
                    break
                options[canonical] = _lit("")
        return options, operands, mode_given

    @staticmethod
    def _long_option(base: str, spec: _WriterOptions, written: str, shown: str) -> str:
        if written in spec.long:
            return written
        matches = sorted(name for name in spec.long if name.startswith(written))
        if len({spec.long[name] for name in matches}) == 1:
            return matches[0]
        if matches:
            _deny(f"`{shown}`: {base} option `--{written}` is ambiguous ({', '.join('--' + m for m in matches)})")
        _deny(f"`{shown}`: {base} option `--{written}` is not known, so which words are files cannot be told")
        raise AssertionError  # unreachable

    def _variable_setting(self, base: str, words: list[Word], shown: str) -> None:
        """The variables a builtin sets (or unsets) by name must be plain literal names: bash evaluates
        a subscript in a name (`read 'a[$(cmd)]'`) as arithmetic, which runs cmd."""
        spec = NAME_BUILTINS[base]
        names: list[Word] = []
        operands: list[Word] = []
        i = 1
        while i < len(words):
            word = words[i]
            value = word.value
            if not word.literal and word.text.strip('"') in _NUMERIC_PARAMETERS:
                operands.append(word)  # `wait $!`: a number is neither an option nor a name
                i += 1
                continue
            if not word.literal:
                if spec.options_end_at_operand and operands and not spec.names_from_operands:
                    break  # printf's arguments, getopts' arguments
                self._refuse(f"`{shown}`: `{word.text}` is only known at run time and {base} could take it as "
                             f"an option or a variable name")
                i += 1
                continue
            if operands and spec.options_end_at_operand:
                operands.append(word)
                i += 1
                continue
            if value == "--" and not operands:
                operands.extend(words[i + 1:])
                break
            if len(value) > 1 and value[0] in spec.option_signs and not operands:
                for position, letter in enumerate(value[1:], start=1):
                    if letter in spec.refused:
                        self._refuse(f"`{shown}`: `{base} -{letter}` {spec.refused[letter]}")
                    if letter in spec.with_value:
                        attached = value[position + 1:]
                        argument = _lit(attached) if attached else (words[i + 1] if i + 1 < len(words) else None)
                        if not attached:
                            i += 1
                        if letter in spec.name_options and argument is not None:
                            names.append(argument)
                        break
                    if letter not in spec.flags:
                        self._refuse(f"`{shown}`: {base} option `-{letter}` is not known")
                i += 1
                continue
            operands.append(word)
            i += 1
        if spec.names_from_operands:
            names.extend(operands)
        elif spec.name_operand is not None and len(operands) > spec.name_operand:
            names.append(operands[spec.name_operand])
        for word in names:
            if not word.literal:
                self._refuse(f"`{shown}`: the variable name `{word.text}` is only known at run time")
                continue
            name, has_value, assigned = word.value.partition("=")
            name = name[:-1] if has_value and name.endswith("+") else name
            if not _NAME.fullmatch(name):
                self._refuse(f"`{shown}`: `{_snippet(word.value, 30)}` is not a plain variable name (bash "
                             f"evaluates a subscript in a name as arithmetic, which can run commands)")
                continue
            if has_value and assigned.startswith("("):
                self._refuse(f"`{shown}`: an array assignment given as an argument is not judged; write it "
                             f"as `{base} {name}=(...)` directly")
            if has_value or base not in ("unset", "export"):
                self._check_variable(name, f"in `{shown}`")


@dataclass(frozen=True)
class _NameBuiltin:
    """How a builtin that takes variable names parses its words (bash's own getopt: options bundle,
    an option's value may be attached, and options end at the first operand)."""

    flags: str = ""
    with_value: str = ""
    name_options: str = ""  # options whose value is a variable name
    refused: dict[str, str] = field(default_factory=dict)
    names_from_operands: bool = False  # every operand is a name (or name=value)
    name_operand: int | None = None  # else: which operand is the name
    options_end_at_operand: bool = True
    option_signs: str = "-"


_DECLARE = _NameBuiltin(flags="xrgaAlufpIF", names_from_operands=True, option_signs="-+",
                        refused={"n": "makes a name refer to another variable", "i": "evaluates arithmetic",
                                 "c": "is not known", "t": "is not known"})
NAME_BUILTINS: dict[str, _NameBuiltin] = {
    "read": _NameBuiltin(flags="ers", with_value="adinNptu", name_options="a", names_from_operands=True),
    "mapfile": _NameBuiltin(flags="t", with_value="dnOsuc", name_operand=0,
                            refused={"C": "runs a command for each line"}),
    "readarray": _NameBuiltin(flags="t", with_value="dnOsuc", name_operand=0,
                              refused={"C": "runs a command for each line"}),
    "getopts": _NameBuiltin(name_operand=1),
    "printf": _NameBuiltin(with_value="v", name_options="v"),
    "wait": _NameBuiltin(flags="fn", with_value="p", name_options="p"),
    "unset": _NameBuiltin(flags="fvn", names_from_operands=True),
    "declare": _DECLARE,
    "typeset": _DECLARE,
    "local": _DECLARE,
    "export": _NameBuiltin(flags="fnp", names_from_operands=True),
    "readonly": _NameBuiltin(flags="aAfp", names_from_operands=True),
}


# ---------------------------------------------------------------------------------------------
# Matching


def _certainly_matches(rule: CommandRule, words: list[Word], sensitive: dict[int, str] | None = None
                       ) -> tuple[bool, str]:
    """Does the rule match every way these words could turn out? (matched, why a sensitive word
    keeps the match from counting)."""
    count = len(rule.words)
    if len(words) < count:
        return False, ""
    for index in range(count):
        word = words[index]
        if word.multi:
            return False, ""
        if word.value is None:
            if rule.literal or rule.words[index] != "*":
                return False, ""
        elif not rule.word_matches(index, word.value):
            return False, ""
    if len(words) > count and not rule.rest:
        return False, ""
    for index, why in sorted((sensitive or {}).items()):
        if not rule.names_exactly(index):
            return True, f"{why} (it matches {rule.describe()}, which does not name it)"
    return True, ""


def _possibly_matches(rule: CommandRule, words: list[Word]) -> bool:
    """Could these words, once expanded, match the rule? (Used for deny rules: fail closed.)"""
    pattern_count = len(rule.words)
    word_count = len(words)

    @cache
    def match(i: int, j: int) -> bool:
        if j == pattern_count:
            return rule.rest or all(words[k].multi for k in range(i, word_count))
        if i == word_count:
            return False
        word = words[i]
        if word.multi:
            return match(i + 1, j) or match(i, j + 1) or match(i + 1, j + 1)
        if word.value is None or rule.word_matches(j, word.value):
            return match(i + 1, j + 1)
        return False

    return match(0, 0)


def _sed_script_is_safe(script: str) -> bool:
    """True when a sed script only uses commands that neither run programs nor touch files.
    Anything this small parser does not understand counts as unsafe."""
    i = 0
    n = len(script)

    def skip_spaces(k: int) -> int:
        while k < n and script[k] in " \t":
            k += 1
        return k

    def regex_end(k: int, delimiter: str) -> int:
        """Index of the closing delimiter of a regex/replacement starting at k, or -1."""
        while k < n:
            c = script[k]
            if c == "\\":
                k += 2
                continue
            if c == "[":
                close = k + 1
                if close < n and script[close] == "^":
                    close += 1
                if close < n and script[close] == "]":
                    close += 1
                while close < n and script[close] != "]":
                    if script[close] == delimiter:
                        return -1  # ambiguous between sed dialects: refuse
                    close += 1
                k = close + 1
                continue
            if c == delimiter:
                return k
            if c == "\n":
                return -1
            k += 1
        return -1

    def address(k: int) -> int:
        if k < n and script[k].isdigit():
            while k < n and (script[k].isdigit() or script[k] == "~"):
                k += 1
        elif k < n and script[k] == "$":
            k += 1
        elif k < n and script[k] in "/\\":
            delimiter = "/"
            if script[k] == "\\":
                if k + 1 >= n:
                    return -1
                delimiter = script[k + 1]
                k += 1
            end = regex_end(k + 1, delimiter)
            if end < 0:
                return -1
            k = end + 1
            while k < n and script[k] in "IM":
                k += 1
        return k

    depth = 0
    while i < n:
        i = skip_spaces(i)
        if i >= n:
            break
        if script[i] in ";\n":
            i += 1
            continue
        if script[i] == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        i = address(i)
        if i < 0:
            return False
        if i < n and script[i] == ",":
            i += 1
            if i < n and script[i] in "+~":
                i += 1
                while i < n and script[i].isdigit():
                    i += 1
            else:
                i = address(i)
                if i < 0:
                    return False
        i = skip_spaces(i)
        while i < n and script[i] == "!":
            i = skip_spaces(i + 1)
        if i >= n:
            return False
        command = script[i]
        i += 1
        if command == "{":
            depth += 1
            continue
        if command == "}":
            depth -= 1
            if depth < 0:
                return False
            continue
        if command in "dDgGhHnNpPxz=F":
            continue
        if command in "qQlL":
            i = skip_spaces(i)
            while i < n and script[i].isdigit():
                i += 1
            continue
        if command in ":bTt":
            while i < n and script[i] not in ";\n":
                i += 1
            continue
        if command in "aic":
            # Text to insert: inert. It runs to the end of the line, continued by a trailing backslash.
            while i < n:
                if script[i] == "\\" and i + 1 < n:
                    i += 2
                    continue
                if script[i] == "\n":
                    break
                i += 1
            continue
        if command in "sy":
            if i >= n or script[i] in "\n\\":
                return False
            delimiter = script[i]
            end = regex_end(i + 1, delimiter)
            if end < 0:
                return False
            end2 = regex_end(end + 1, delimiter) if command == "y" else _replacement_end(script, end + 1,
                                                                                           delimiter)
            if end2 < 0:
                return False
            i = end2 + 1
            if command == "s":
                while i < n and script[i] not in ";\n}":
                    if script[i] not in "gpiImM0123456789 \t":
                        return False  # e (execute), w (write) or something unknown
                    i += 1
            continue
        return False  # e, w, W, r, R, v or unknown
    return depth == 0


def _replacement_end(script: str, k: int, delimiter: str) -> int:
    while k < len(script):
        if script[k] == "\\":
            k += 2
            continue
        if script[k] == delimiter:
            return k
        k += 1
    return -1


def _literal_simple_commands(command: str) -> list[list[str]]:
    """The literal leading words of each simple command in a command line (for check-command rules)."""
    judge = CommandJudge([], [], check_edit=lambda _path: Decision(True, ""), collect_only=True)
    verdicts = _Verdicts()
    try:
        judge._script(command, 0, verdicts)
    except _Denied:
        return []
    result = []
    for words in verdicts.commands:
        literal: list[str] = []
        for word in words:
            if word is None:
                break
            literal.append(word)
        if literal:
            result.append(literal)
    return result


def judge_command(command: str, allow: Sequence[CommandRule], deny: Sequence[CommandRule], *,
                  check_edit: Callable[[str], Decision], repo: str | None,
                  extra_allowed: Sequence[str] = (), check_read: Callable[[str], Decision] | None = None,
                  shelters: Callable[[str], str | None] | None = None) -> Decision:
    """The decision for one command line; `extra_allowed` are the run's check commands, allowed as
    written and with more arguments."""
    extra_rules: list[CommandRule] = []
    for check in extra_allowed:
        extra_rules.extend(literal_prefix_rules(check, "the run's check command"))
    judge = CommandJudge([*extra_rules, *allow], deny, check_edit=check_edit, repo=repo, check_read=check_read,
                         shelters=shelters)
    decision = judge.judge(command)
    is_check_command = any(command.strip() == check.strip() for check in extra_allowed if check.strip())
    if not decision.allowed and is_check_command and not _possibly_denied(command, deny):
        return Decision(True, "allowed: it is the run's check command", decision.commands)
    return decision


def _possibly_denied(command: str, deny: Sequence[CommandRule]) -> list[str]:
    """Deny rules that some simple command of the line could match (for the exact check command)."""
    judge = CommandJudge([], [], check_edit=lambda _path: Decision(True, ""), collect_only=True)
    verdicts = _Verdicts()
    try:
        judge._script(command, 0, verdicts)
    except _Denied as denial:
        return [denial.reason]
    found = []
    for values in verdicts.commands:
        words = [_lit(v) if v is not None else Word(None, True, "?") for v in values]
        forms = [words]
        if values and values[0] is not None and "/" in values[0]:
            forms.append([_lit(posixpath.basename(values[0])), *words[1:]])
        for rule in deny:
            if any(_possibly_matches(rule, form) for form in forms):
                found.append(rule.pattern)
    return found
