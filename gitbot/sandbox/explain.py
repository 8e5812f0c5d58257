"""`gitbot sandbox explain -- CMD`: how CMD resolves in the user's shell and in the sandbox, and exactly
what the sandbox shows, masks, protects and hides. The first thing to run when a check behaves
differently under gitbot than in the shell."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from gitbot.policy.rebuildable import rebuildable_here
from gitbot.sandbox import diagnose, layout
from gitbot.sandbox.runner import Runner
from gitbot.sandbox.toolchain import SYSTEM_DIRS


def _section(title: str, lines: list[str]) -> list[str]:
    return [f"{title}:", *(f"  {line}" for line in lines or ["(none)"]), ""]


def hidden_top_level(shown: list[str]) -> list[str]:
    """Top-level host directories the sandbox does not show (beyond the fresh /tmp, /proc, /dev)."""
    try:
        names = sorted(os.listdir("/"))
    except OSError:
        return []
    found = []
    for name in names:
        path = f"/{name}"
        if path in SYSTEM_DIRS or path in ("/proc", "/dev", "/tmp") or not os.path.isdir(path):
            continue
        partly = [m for m in shown if m.startswith(path + "/")]
        found.append(f"{path}" + (f" (except {', '.join(partly)})" if partly else ""))
    return found


def confinement_name(runner: Runner) -> str:
    if runner.sandboxed:
        return "bubblewrap (namespaces)"
    if runner.contained:
        return "Landlock and seccomp, without namespaces (bubblewrap cannot start here)"
    return "none"


def guarantees(runner: Runner) -> list[str]:
    """What the confinement in use guarantees, and what it leaves to the command policy."""
    if runner.sandboxed:
        return ["reads: the system, your toolchain and the repository; read_deny files masked; the rest of the host hidden",
                "writes: the repository only; .git and the protected paths read-only",
                "no network unless the policy allows it; its own PID namespace; never root on the host",
                "the command policy: what runs in the sandbox is judged as the README's Policy section says"]
    if runner.contained:
        return [("reads (Landlock): the system, your toolchain, /proc and the repository; read_deny files unreadable "
                "by any name (a rule follows the file, not the path); $HOME and the rest of the host unreadable"),
                ("writes (Landlock): the repository only, not .git, the protected paths or read_deny files, and no "
                "entry made, removed or renamed at its top level or beside a read_deny file; a fresh $HOME and $TMPDIR"),
                ("no socket but netlink unless the policy allows the network; no ptrace, no reading another process's "
                "memory or environment, no mounts or namespaces, no io_uring or bpf (seccomp); no new privileges"),
                ("less than bubblewrap: the other processes are visible in /proc, git's history is not filtered, and "
                "the command policy keeps its allow-list, as without a sandbox")]
    return ["none: only the allow-listed environment and the command policy's allow-list"]


def rebuildable_lines(real_repo: str, runner: Runner) -> list[str]:
    """The rebuildable directories here now, each with what a run does with it. What else a run's start
    cannot capture (an ignored directory of over 1,000 files, a file over the size cap) stays read-only."""
    if not runner.policy.sandbox_rebuildable:
        return ["none: [sandbox] rebuildable is empty, so what a run cannot capture stays read-only"]
    on_path = set(runner.toolchain.protected)
    lines = []
    for directory in rebuildable_here(real_repo, runner.policy.sandbox_rebuildable):
        if any(directory == d or directory.startswith(d + "/") or d.startswith(directory + "/") for d in on_path):
            lines.append(f"{directory}/ (but a toolchain directory on PATH in it is protected: read-only)")
        else:
            lines.append(f"{directory}/")
    return lines


def explain(argv: list[str], repo: Path, policy) -> tuple[str, bool]:
    """The report, and whether the command can start where gitbot runs checks."""
    runner = Runner(policy, repo)
    view = runner.toolchain
    real_repo = os.path.realpath(repo)
    program = argv[0]
    user_path = runner.user_environ.get("PATH", "")
    problem = None if runner.refusal else diagnose.cannot_start(program, real_repo, user_path, view, real_repo,
                                                                runner.sandboxed)
    lines = [f"gitbot sandbox explain -- {shlex.join(argv)}", f"repository: {real_repo}", f"policy: {policy.source}",
             f"commands run: {runner.receipt_line}", ""]
    lines += _section(f"Confinement: {confinement_name(runner)}", guarantees(runner))
    how = diagnose.shell_and_sandbox(program, real_repo, user_path, view, real_repo).splitlines()
    if not runner.refusal:
        checked = runner.run_shell(f"command -v {shlex.quote(program)} || echo '(not found)'", 30).output.strip()
        how.append(f"  checked inside: `command -v {program}` → {checked}")
    lines += [f"How `{program}` resolves:", *how, ""]
    if problem:
        lines += ["It cannot start there:", *(f"  {line}" for line in problem.splitlines()), ""]
    lines += _section("PATH inside (your order)", view.path)
    lines += _section("Left off PATH", [f"{entry}: {why}" for entry, why in view.dropped])
    shown = [f"{d} (system)" for d in SYSTEM_DIRS if os.path.lexists(d)]
    shown += [f"{m.dest} → {m.source} (link: {m.why})" if m.link else f"{m.dest} ({m.why})" for m in view.mounts]
    lines += _section("Shown read-only", shown)
    lines += _section("Masked inside what is shown (credentials)", [*view.masked, *view.masked_dirs])
    protected = [*layout.ALWAYS_PROTECTED_DIRS, *layout.ALWAYS_PROTECTED_FILES,
                 *(d for d in runner.policy.file_rules.protected_directories() if d.split("/")[0] != ".git")]
    lines += _section("Writable", [f"{real_repo} (the repository; its .git read-only, gitbot's store hidden)",
                                   "/tmp, /var/tmp, /run and $HOME: empty, fresh for every command"])
    lines += _section("Protected in the repository (read-only, not editable, cannot be created or moved)",
                      sorted(dict.fromkeys(protected)))
    lines += _section("Rebuildable ([sandbox] rebuildable, empty unless you opt in): ignored build output a run "
                      "leaves writable when too big to capture at its start. What the agent writes there is not "
                      "restored, is in no diff, and runs on your machine when your tools use it",
                      rebuildable_lines(real_repo, runner))
    hidden = hidden_top_level([m.dest for m in view.mounts])
    if view.home and not any(entry.split(" ")[0] == view.home for entry in hidden):
        hidden.insert(0, f"{view.home} ($HOME; except what is listed above)")
    lines += _section("Hidden (not there at all; /tmp, /var/tmp and /run are fresh and empty)", hidden)
    variables = [f"{name}={value}" for name, value in sorted(view.variables.items())]
    lines += _section("Toolchain variables passed (besides PATH, HOME, LANG and gitbot's fixed settings)", variables)
    lines.append("Add a directory with `[sandbox] read_only = [\"/path\"]` in .gitbot/policy.toml.")
    return "\n".join(lines), problem is None and not runner.refusal
