"""What the judge knows about particular programs: dangerous variables, builtins that run code,
the wrappers and their options, the writers and their options, git's and find's risky options."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from gitbot.policy.files import compile_glob
from gitbot.policy.judge.words import Word

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
class WriterOptions:
    short: dict[str, tuple[str, str]]  # letter -> (canonical name, "" | "=")
    long: dict[str, tuple[str, str]]  # name -> (canonical name, "" | "=" | "=?")


def _writer_options(table: str) -> WriterOptions:
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
    return WriterOptions(short, long)


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


@dataclass(frozen=True)
class NameBuiltin:
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


_DECLARE = NameBuiltin(flags="xrgaAlufpIF", names_from_operands=True, option_signs="-+",
                        refused={"n": "makes a name refer to another variable", "i": "evaluates arithmetic",
                                 "c": "is not known", "t": "is not known"})
NAME_BUILTINS: dict[str, NameBuiltin] = {
    "read": NameBuiltin(flags="ers", with_value="adinNptu", name_options="a", names_from_operands=True),
    "mapfile": NameBuiltin(flags="t", with_value="dnOsuc", name_operand=0,
                            refused={"C": "runs a command for each line"}),
    "readarray": NameBuiltin(flags="t", with_value="dnOsuc", name_operand=0,
                              refused={"C": "runs a command for each line"}),
    "getopts": NameBuiltin(name_operand=1),
    "printf": NameBuiltin(with_value="v", name_options="v"),
    "wait": NameBuiltin(flags="fn", with_value="p", name_options="p"),
    "unset": NameBuiltin(flags="fvn", names_from_operands=True),
    "declare": _DECLARE,
    "typeset": _DECLARE,
    "local": _DECLARE,
    "export": NameBuiltin(flags="fnp", names_from_operands=True),
    "readonly": NameBuiltin(flags="aAfp", names_from_operands=True),
}


def git_sensitive(words: list[Word]) -> dict[int, str]:
    n = len(words)
    sensitive: dict[int, str] = {}
    i = 1
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
    if subcommand == "config" and not git_config_reads(words[i + 1:]):
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


def git_config_reads(arguments: list[Word]) -> bool:
    values = [word.value for word in arguments]
    if any(value is None for value in values):
        return False
    if any(value in GIT_CONFIG_WRITE for value in values):
        return False
    return any(value in GIT_CONFIG_READ for value in values)
