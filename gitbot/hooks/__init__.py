"""Git hooks: install, uninstall, and run the configured checks at pre-commit or pre-push.

Modules: config (.gitbot/config.toml; on the fast path), run (the hook at commit or push time: the
fast path imports only the standard library pieces it needs, the agent only when a check fails and
may be fixed), script (the /bin/sh script written into the hooks directory), install (install and
uninstall, keeping the hook that was there before).
"""

from __future__ import annotations


def main(argv: list[str]) -> int:
    """The installed hook script's entry (`from gitbot.hooks import main`): kept here, importing nothing
    until called, so hooks installed by any version of gitbot keep working."""
    from gitbot.hooks.run import main as run_main

    return run_main(argv)
