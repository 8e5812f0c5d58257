"""What kind of work a shell command an agent typed does: a small, explicit classifier.

Kinds (one per command line):
  read   reading and inspecting: cat, sed -n, grep, find, ls, head, wc, diff, git-free inspection
  run    running the tests or the program: python script.py, python -c, pytest, tox, make test, bin/test
  setup  setting up the environment: pip install, conda, apt-get, npm install, python setup.py develop
  edit   editing via the shell: sed -i, a redirect into a file, cat <<EOF > f, tee, rm, mv, cp, patch
  git    git commands
  other  anything else (echo, cd alone, true, sleep ...)

A line with several simple commands takes the strongest kind among them, in the order
setup > edit > run > git > read > other: `cat > t.py <<EOF ... EOF && python t.py` writes a file
(edit), `cd /testbed && python t.py` runs the program (run). The rules look at words, not at what
the programs do, so they are deliberately plain (tests/test_agent_corpus.py pins them).
"""

from __future__ import annotations

import posixpath
import re
import shlex

KINDS = ("read", "run", "setup", "edit", "git", "other")
_STRENGTH = {"setup": 5, "edit": 4, "run": 3, "git": 2, "read": 1, "other": 0}

READERS = {"cat", "head", "tail", "sed", "grep", "egrep", "fgrep", "rg", "ag", "find", "ls", "tree", "wc", "nl",
           "awk", "gawk", "less", "more", "file", "stat", "diff", "cmp", "pwd", "which", "type", "du", "sort",
           "uniq", "cut", "tr", "xxd", "od", "hexdump", "realpath", "readlink", "basename", "dirname", "column",
           "jq", "strings", "md5sum", "sha256sum", "whereis", "locate", "printenv", "env", "uname", "id", "whoami",
           "date", "df", "ps", "fold", "rev", "comm", "paste", "expand", "zcat", "bat", "look", "tac"}
RUNNERS = {"python", "python2", "python3", "pytest", "py.test", "tox", "nox", "make", "node", "npm", "npx", "yarn",
           "cargo", "go", "django-admin", "sphinx-build", "mypy", "flake8", "ruff", "pylint", "black", "isort",
           "coverage", "ipython", "bash", "sh", "java", "javac", "gcc", "cc", "rustc", "pyflakes", "pycodestyle",
           "runtests.py", "test", "manage.py"}
SETUP = {"pip", "pip3", "conda", "mamba", "apt", "apt-get", "yum", "dnf", "apk", "brew", "poetry", "pipenv",
         "virtualenv", "pyenv", "uv", "source"}
WRITERS = {"tee", "rm", "mv", "cp", "patch", "touch", "mkdir", "rmdir", "truncate", "ln", "chmod", "install",
           "dd", "unzip", "tar"}
# Words that run the next words as a command: skipped to find the real program.
WRAPPERS = {"timeout", "nice", "nohup", "time", "command", "exec", "xargs", "sudo", "stdbuf", "env"}
SEPARATORS = {";", "&&", "||", "|", "&", "\n", "(", ")", "|&", ";;"}

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_SETUP_PYTHON = re.compile(r"(?:^|\s)(setup\.py\s+(develop|install|build_ext|egg_info)|-m\s+pip\b|-m\s+venv\b|"
                           r"-m\s+ensurepip\b)")


def strip_heredocs(command: str) -> tuple[str, bool]:
    """The command without its here-document bodies (their text is data, not words), and whether it had one."""
    lines = command.split("\n")
    out: list[str] = []
    pending: list[str] = []
    found = False
    for line in lines:
        if pending:
            if line.strip() == pending[0]:
                pending.pop(0)
            continue
        out.append(line)
        for match in _HEREDOC.finditer(line):
            pending.append(match.group(2))
            found = True
    return "\n".join(out), found


def tokens(command: str) -> list[str]:
    """Shell-ish words with the control operators as their own tokens; [] when it cannot be split."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"  # newlines separate commands: punctuation
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return []


def simple_commands(command: str) -> list[list[str]]:
    body, _ = strip_heredocs(command)
    # whole-line comments (inline ones are rare in agents' commands and only add words)
    body = "\n".join(line for line in body.replace("\\\n", " ").split("\n") if not line.lstrip().startswith("#"))
    words = tokens(body)
    if not words and body.strip():
        # Unbalanced quotes: fall back to whitespace words per line, good enough to name programs.
        words = [w for line in body.split("\n") for w in (line.split() + ["\n"])]
    commands: list[list[str]] = [[]]
    for word in words:
        if word in SEPARATORS or (word and set(word) <= set(";&|()\n")):
            commands.append([])
        else:
            commands[-1].append(word)
    return [c for c in commands if c]


def _redirect_target(words: list[str]) -> bool:
    """Whether the words write a file through `>`/`>>` (not /dev/null, not another descriptor)."""
    for i, word in enumerate(words[:-1]):
        target = words[i + 1]
        if word in (">", ">>") and not target.startswith("&") and target not in _NOT_FILES:
            return True
    return False


_NOT_FILES = ("/dev/null", "/dev/stderr", "/dev/stdout")
_SHELL_WORDS = {"cd", "pushd", "popd", "true", "false", "echo", "printf", "sleep", ":", "set", "unset", "exit",
                "wait", "[", "[[", "if", "then", "fi", "do", "done", "for", "while", "else", "in", "kill", "trap"}


def _program(words: list[str]) -> tuple[str, list[str]]:
    """The program a simple command runs (after assignments and wrappers) as written, and its arguments."""
    i = 0
    while i < len(words):
        word = words[i]
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word):
            i += 1
            continue
        if posixpath.basename(word) in WRAPPERS and i + 1 < len(words):
            i += 1
            # their own options and a duration (`timeout 30`, `nice -n 5`)
            while i < len(words) and (words[i].startswith("-") or re.fullmatch(r"[0-9.]+[smhd]?", words[i])):
                i += 1
            continue
        return word, words[i + 1:]
    return "", []


def _in_place(name: str, args: list[str]) -> bool:
    if name == "sed":
        return any(a == "-i" or (a.startswith("-i") and a != "-in") or a.startswith("--in-place") for a in args)
    return name == "perl" and any(a.startswith("-") and not a.startswith("--") and "i" in a for a in args)


def classify_simple(words: list[str]) -> str:
    written, args = _program(words)
    name = posixpath.basename(written)
    if _redirect_target(words):
        return "edit"
    if "/" in written and not written.startswith(("/usr/", "/bin/")):
        return "run"  # a program of the project's, by its path: ./tests/runtests.py, bin/test
    if not name or name in _SHELL_WORDS:
        return "other"
    if name == "git":
        sub = next((a for a in args if not a.startswith("-")), "")
        return "edit" if sub == "apply" else "git"
    if _in_place(name, args):
        return "edit"
    if name.startswith("pip") and args[:1] and args[0] in ("show", "list", "freeze", "index", "check"):
        return "read"
    if name in SETUP or name.startswith("pip"):
        return "setup"
    if name in ("npm", "yarn", "pnpm") and args[:1] and args[0] in ("install", "ci", "i", "add"):
        return "setup"
    if name in ("cargo", "go") and args[:1] and args[0] in ("install", "get", "fetch", "mod"):
        return "setup"
    if name.startswith("python") or name in ("pypy", "pypy3"):
        return "setup" if _SETUP_PYTHON.search(" ".join(args)) else "run"
    if name in WRITERS:
        return "edit"
    if name in RUNNERS or name.endswith((".py", ".sh")):
        return "run"
    if name in READERS:
        return "read"
    return "other"


def classify(command: str) -> str:
    """The kind of one command line (see the module docstring)."""
    body, heredoc = strip_heredocs(command)
    kinds = [classify_simple(words) for words in simple_commands(command)]
    if heredoc and re.search(r"<<-?\s*['\"]?\w+['\"]?\s*>>?\s*\S|>>?\s*\S+\s*<<", body):
        kinds.append("edit")
    if not kinds:
        return "other"
    return max(kinds, key=_STRENGTH.__getitem__)
