"""What gitbot remembers between processes, and how it knows a memory is its own: the per-machine
directory ($XDG_CACHE_HOME/gitbot: the probe, sanitized git configs) and a fingerprint of the code that
made a memory, so that one kept by another gitbot (before an upgrade that decides differently) is not
trusted."""

from __future__ import annotations

import os
import zlib

_FINGERPRINTS: dict[tuple[str, ...], int | None] = {}
# Directories this process's commands can write (the repositories they run in): nothing remembered
# there is trusted, since a command could have written it (a forged probe result, a forged config copy).
_WRITABLE_BY_COMMANDS: set[str] = set()


def writable_by_commands(directory: str | os.PathLike) -> None:
    """Note a directory commands can write; a cache directory inside it is not used (`user_cache_dir`)."""
    _WRITABLE_BY_COMMANDS.add(os.path.realpath(directory))


def user_cache_dir() -> str | None:
    """$XDG_CACHE_HOME/gitbot (default ~/.cache/gitbot): what gitbot remembers per machine and user.
    Commands never see it (the sandbox's home is empty); None when there is none, or when it lies where
    commands can write (an $XDG_CACHE_HOME inside the repository): then nothing is remembered."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.environ.get("HOME", "")
        if not os.path.isabs(home) or home == "/":
            return None
        base = os.path.join(home, ".cache")
    path = os.path.join(base, "gitbot")
    real = os.path.realpath(path)
    if any(real == directory or real.startswith(directory.rstrip("/") + "/") for directory in _WRITABLE_BY_COMMANDS):
        return None
    return path


def code_fingerprint(*sources: str) -> int | None:
    """A CRC of these source files, read once per process; None when one cannot be read (then nothing
    remembered is trusted)."""
    if sources not in _FINGERPRINTS:
        crc: int | None = 0
        try:
            for source in sources:
                with open(source, "rb") as handle:
                    crc = zlib.crc32(handle.read(), crc)
        except (OSError, TypeError):
            crc = None
        _FINGERPRINTS[sources] = crc
    return _FINGERPRINTS[sources]
