"""What gitbot remembers between processes, and how it knows a memory is its own: the per-machine
directory ($XDG_CACHE_HOME/gitbot: the probe, sanitized git configs) and a fingerprint of the code that
made a memory, so that one kept by another gitbot (before an upgrade that decides differently) is not
trusted."""

from __future__ import annotations

import os
import zlib

_FINGERPRINTS: dict[tuple[str, ...], int | None] = {}


def user_cache_dir() -> str | None:
    """$XDG_CACHE_HOME/gitbot (default ~/.cache/gitbot): what gitbot remembers per machine and user.
    Commands never see it (the sandbox's home is empty)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.environ.get("HOME", "")
        if not os.path.isabs(home) or home == "/":
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "gitbot")


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
