"""Where commands run: the one execution path for the agent's commands and for checks.

    runner = Runner(policy, repo)      # runner.py: sandboxed, unsandboxed with a warning, or refused
    runner.run_shell("pytest -q", 120) # the agent's command line (bash -c), capped for the model
    runner.run_check(["pytest"], 600)  # a check, before and after a fix, the same way

Modules: env (the allow-listed environment; the user's environment for a hook's first run;
keeping gitbot's own environ unreadable), bwrap (the probe and the bubblewrap command line),
mounts (git directories, host sockets, sanitized git config), readdeny (files the policy hides),
processes (process budget, stopping a command's whole group), command (running one process with
capped output: the one copy of the pump, the cap and the kill).

Nothing is imported here: a git hook's fast path imports only `sandbox.command` and `sandbox.env`.
"""
