"""Is it the environment? How a program resolves in the user's shell and in the sandbox, and whether a
failing check failed for a reason no change to the repository can fix.

Money is never spent on a problem the model cannot fix: a check whose program is not found, cannot
execute, or whose own tool or interpreter is missing (`python3 -m no_such_checker`) stops before the
first model request, with a message that shows what differs between the user's shell and the sandbox.
`gitbot sandbox explain` prints the same resolution for any command.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

from gitbot.sandbox.env import under
from gitbot.sandbox.toolchain import ToolchainView, shebang_interpreter

MAX_HOPS = 6
PYTHON_NAME = re.compile(r"^python[0-9.]*$")
# What bubblewrap prints when it cannot execute the program (then it exits 1).
BWRAP_EXEC_FAILED = "bwrap: execvp "


@dataclass
class Resolution:
    program: str
    steps: list[str]  # human-readable hops: PATH lookup, links, shims, #! interpreters
    final: str | None  # the file that really runs (None: not found)

    def describe(self) -> str:
        if self.final is None:
            return f"`{self.program}` is not found"
        return " → ".join(self.steps)


def pyenv_root_of(path: str) -> str | None:
    """The pyenv root a shim belongs to, when `path` is one."""
    directory = os.path.dirname(path)
    while directory not in ("/", ""):
        if os.path.isfile(os.path.join(directory, "libexec", "pyenv")):
            return directory if under(path, os.path.join(directory, "shims")) or "shims" in path else None
        directory = os.path.dirname(directory)
    return None


def pyenv_version(root: str, cwd: str, environ: dict[str, str]) -> tuple[str, str]:
    """(version, where it was chosen) the way pyenv chooses: PYENV_VERSION, a `.python-version` in the
    directory or a parent, then $PYENV_ROOT/version, else "system"."""
    if environ.get("PYENV_VERSION"):
        return environ["PYENV_VERSION"].split(":")[0], "PYENV_VERSION"
    directory = os.path.realpath(cwd)
    while True:
        candidate = os.path.join(directory, ".python-version")
        if os.path.isfile(candidate):
            return _first_word(candidate), candidate
        if directory == "/":
            break
        directory = os.path.dirname(directory)
    global_file = os.path.join(root, "version")
    if os.path.isfile(global_file):
        return _first_word(global_file) or "system", global_file
    return "system", "the default"


def _first_word(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                words = line.split("#", 1)[0].split()
                if words:
                    return words[0]
    except OSError:
        pass
    return ""


def resolve(program: str, path_value: str, cwd: str, environ: dict[str, str] | None = None) -> Resolution:
    """Follow `program` from a PATH lookup through symlinks, pyenv shims and `#!` lines to the file
    that really runs."""
    environ = dict(os.environ if environ is None else environ)
    if os.sep in program:
        found = program if os.path.isabs(program) else os.path.join(cwd, program)
        if not os.path.exists(found):
            return Resolution(program, [], None)
    else:
        found = shutil.which(program, path=path_value)
        if found is None:
            return Resolution(program, [], None)
    steps = [found]
    current = found
    for _ in range(MAX_HOPS):
        real = os.path.realpath(current)
        if real != current:
            steps.append(real)
            current = real
        root = pyenv_root_of(current)
        if root is not None:
            version, chosen = pyenv_version(root, cwd, environ)
            name = os.path.basename(current)
            target = os.path.join(root, "versions", version, "bin", name)
            if version == "system":
                rest = ":".join(p for p in path_value.split(":") if not under(p, root))
                target = shutil.which(name, path=rest) or target
            steps.append(f"pyenv {version} (chosen by {chosen}): {target}")
            if not os.path.exists(target):
                return Resolution(program, steps, None)
            current = target
            continue
        interpreter = shebang_interpreter(current)
        if interpreter and os.path.basename(interpreter) != "env" and interpreter not in steps:
            steps.append(f"#! {interpreter}")
            if not os.path.exists(interpreter):
                return Resolution(program, steps, None)
            current = interpreter
            continue
        break
    return Resolution(program, steps, current)


# ---------------------------------------------------------------------------------------------


def hidden_part(resolution: Resolution, view: ToolchainView, repo: str) -> str | None:
    """The first file on the way that the sandbox does not show, if any."""
    for step in resolution.steps:
        path = step.split(": ", 1)[-1] if step.startswith("pyenv ") else step.removeprefix("#! ")
        if os.path.isabs(path) and not view.visible(os.path.realpath(path), repo):
            return path
    return None


def compare(program: str, cwd: str, user_path: str, view: ToolchainView, repo: str,
            environ: dict[str, str] | None = None) -> tuple[Resolution, Resolution, str | None]:
    """(in the user's shell, in the sandbox, the first file on the sandbox's way that it hides)."""
    outside = resolve(program, user_path, cwd, environ)
    inside = resolve(program, view.path_value, cwd, {**(environ or os.environ), **view.variables})
    return outside, inside, hidden_part(inside, view, repo) if inside.final else None


def shell_and_sandbox(program: str, cwd: str, user_path: str, view: ToolchainView, repo: str,
                      environ: dict[str, str] | None = None) -> str:
    outside, inside, hidden = compare(program, cwd, user_path, view, repo, environ)
    lines = [f"  in your shell:  {outside.describe()}", f"  in the sandbox: {inside.describe()}"]
    if hidden:
        lines.append(f"  the sandbox does not show {hidden}; add it to [sandbox] read_only in the policy if the "
                     f"check needs it")
    dropped = [f"{entry} ({why})" for entry, why in view.dropped if shutil.which(program, path=entry)]
    if dropped:
        lines.append(f"  left off the sandbox's PATH: {', '.join(dropped)}")
    return "\n".join(lines)


def cannot_start(program: str, cwd: str, user_path: str, view: ToolchainView, repo: str,
                 sandboxed: bool) -> str | None:
    """Why `program` cannot start where the commands run (before running it), or None."""
    _outside, inside, hidden = compare(program, cwd, user_path, view, repo)
    if inside.final is None or (sandboxed and hidden):
        return (f"the check command `{program}` cannot start where gitbot runs checks and the agent's commands:\n"
                f"{shell_and_sandbox(program, cwd, user_path, view, repo)}")
    if not os.access(inside.final, os.X_OK) or os.path.isdir(inside.final):
        return f"the check command `{program}` is not an executable file ({inside.final})"
    return None


def environment_problem(argv: list[str], exit_code: int | None, output: str, cwd: str, repo: str,
                        user_path: str, view: ToolchainView) -> str | None:
    """Why a failed check run failed for a reason the repository cannot fix (its program or its own
    tool is missing, or it could not execute), or None when the failure may be the code's."""
    if exit_code is None or exit_code == 0:
        return None
    text = output.strip()
    head = "\n".join(text.splitlines()[:5])
    program = argv[0]
    if text.startswith(BWRAP_EXEC_FAILED) and "\n" not in text:
        why = f"it cannot be executed in the sandbox ({text})"
    elif exit_code == 127 and re.search(r"(?i)(not found|no such file)", head):
        why = f"a program it runs is not found ({head.splitlines()[0]})"
    elif exit_code == 126 and re.search(r"(?i)(permission denied|cannot execute|exec format)", head):
        why = f"a program it runs cannot be executed ({head.splitlines()[0]})"
    else:
        module = missing_check_module(argv, text, repo)
        if module is None:
            return None
        why = (f"its own tool is not installed: the interpreter has no module `{module}`, and the repository "
               f"does not contain it")
    return (f"`{' '.join(argv)}` failed because {why}. No change to the repository can fix that, so no model "
            f"is asked to.\n{shell_and_sandbox(program, cwd, user_path, view, repo)}\n"
            f"  `gitbot sandbox explain -- {' '.join(argv)}` shows what the sandbox shows and hides.")


def missing_check_module(argv: list[str], output: str, repo: str) -> str | None:
    """For `python -m MODULE …`: MODULE, when the interpreter says it has no such module and the
    repository has none of that name either."""
    if not PYTHON_NAME.match(os.path.basename(argv[0])) or "-m" not in argv[1:]:
        return None
    position = argv.index("-m", 1)
    if position + 1 >= len(argv):
        return None
    module = argv[position + 1]
    top = module.split(".")[0]
    said = re.search(rf"No module named {re.escape(module)}\b|No module named '{re.escape(top)}(\.|')", output)
    if not said:
        return None
    for base in (repo, os.path.join(repo, "src")):
        if os.path.exists(os.path.join(base, top)) or os.path.exists(os.path.join(base, top + ".py")):
            return None
    return module
