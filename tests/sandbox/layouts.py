"""Building real toolchain layouts under a temporary HOME (shared by the sandbox and fix-check tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REAL_PYTHON = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
WHO_AM_I = "import os, sys; print('python', sys.executable, sys.prefix)"
PYENV_EXEC = """#!/bin/sh
# pyenv-like `pyenv exec PROGRAM ARGS`: PYENV_VERSION, else .python-version here or above, else $PYENV_ROOT/version
[ "$1" = exec ] || exit 2
shift; program=$1; shift
version=$PYENV_VERSION
if [ -z "$version" ]; then
  dir=$PWD
  while :; do
    if [ -f "$dir/.python-version" ]; then version=$(head -n 1 "$dir/.python-version"); break; fi
    [ "$dir" = / ] && break
    dir=$(dirname "$dir")
  done
fi
[ -n "$version" ] || version=$(head -n 1 "$PYENV_ROOT/version")
exec "$PYENV_ROOT/versions/$version/bin/$program" "$@"
"""
SHIM = """#!/bin/sh
export PYENV_ROOT="{root}"
exec "{root}/libexec/pyenv" exec "${{0##*/}}" "$@"
"""


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def venv(prefix: Path, marker: str, source: str | None = None) -> Path:
    """A real virtual environment of the real interpreter, with a module only it has (`source`, or one
    that says it was imported)."""
    subprocess.run([REAL_PYTHON, "-m", "venv", "--without-pip", str(prefix)], check=True, capture_output=True)
    site = next(prefix.glob("lib/python3*/site-packages"))
    (site / f"{marker}.py").write_text(source or f"print('{marker} imported')\n")
    return prefix


def python_version() -> str:
    """X.Y of the real interpreter (for user site-packages paths)."""
    return subprocess.run([REAL_PYTHON, "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
                          capture_output=True, text=True, check=True).stdout.strip()


def pyenv_root(home: Path, versions: dict[str, str], global_version: str, source: str | None = None) -> Path:
    """A pyenv-like root under `home`: each version a venv of the real interpreter with its marker
    module, a global version file, `libexec/pyenv` and `python3`/`python` shims."""
    root = home / ".pyenv"
    for version, marker in versions.items():
        venv(root / "versions" / version, marker, source)
    (root / "version").write_text(global_version + "\n")
    executable(root / "libexec" / "pyenv", PYENV_EXEC)
    for name in ("python3", "python"):
        executable(root / "shims" / name, SHIM.format(root=root))
    return root
