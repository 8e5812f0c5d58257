"""Where commands run: the one execution path for the agent's commands and for checks.

    runner = Runner(policy, repo)      # runner.py: sandboxed, unsandboxed with a warning, or refused
    runner.run_shell("pytest -q", 120) # the agent's command line (bash -c), capped for the model
    runner.run_check(["pytest"], 600)  # a check, before and after a fix, the same way

Modules: runner (the one decision, the one way to run), toolchain (what of the user's toolchain the
commands need: PATH, read-only mounts, masks, variables), layout (the file system inside: system
directories, scratch, toolchain, protected repository paths), mounts (git directories, host sockets),
gitconfig (git config without credentials, from git's own parse), scratch (one process's directories
in $TMPDIR, left behind by none), planted (what a command planted
that the user's git would read, undone after it), readdeny (files the policy hides: an
index kept up to date by directory change times, not a walk of every file per command),
bwrap (the probe and the bubblewrap command line), confine + helper (never root on the host; Landlock
and no capabilities without the sandbox), env (the allow-listed environment; the user's environment for
a hook's first run; keeping gitbot's own environ unreadable), processes (process budget, stopping a
command's whole group), command (running one process with capped output: the one copy of the pump,
the cap and the kill), diagnose (how a program resolves in the shell and in the sandbox; failures no
fix can solve), explain (`gitbot sandbox explain`).

Nothing is imported here: a git hook's fast path imports only `sandbox.command` and `sandbox.env`.
"""
