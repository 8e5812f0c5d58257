"""A repository's git config without credentials, for the sandbox to show in its place.

actions/checkout stores the job token as `http.<url>.extraheader`; people put tokens in remote URLs,
credential helpers and cookie files. The sandbox binds a sanitized copy over each git config file it
shows. The copy is built from what git itself parses (`git config --file F --list -z`), not from the
text, so every syntax git accepts is covered the same way git reads it: a key on the section header
line (`[http] extraheader = …`), subsections, old-style `[section.sub]`, continuation lines, quoting,
any letter case, `[include]`/`[includeIf]`. Then the entries are written back out in order.
A file git cannot parse is replaced by an empty one (git inside would fail on it anyway).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading

from gitbot.host_programs import program
from gitbot.sandbox.remembered import code_fingerprint, user_cache_dir
from gitbot.sandbox.scratch import process_directory

# Entries dropped whole: sections that hold or pull in credentials, and keys whose name says it.
DROPPED_SECTIONS = frozenset({"credential", "include", "includeif"})
DROPPED_KEYS = frozenset({"extraheader", "cookiefile", "askpass", "helper", "password", "token",
                          "proxyauthmethod", "sslkeypasswordprotected"})
DROPPED_KEY_HINTS = ("password", "token", "secret")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*)://([^/@\s\"'\]]*)@")
GIT_TIMEOUT_SECONDS = 10


def _strip_userinfo(match: re.Match[str]) -> str:
    # scheme://user:password@host and http(s)://token@host lose the userinfo; ssh://git@host keeps its
    # user name (not a secret).
    scheme, userinfo = match.group(1), match.group(2)
    if ":" in userinfo or scheme.lower() in ("http", "https", "ftp", "ftps"):
        return f"{scheme}://"
    return match.group(0)


def without_userinfo(text: str) -> str:
    return _URL_USERINFO.sub(_strip_userinfo, text)


def parse_entries(path: str, *, text: str | None = None) -> list[tuple[str, str | None]] | None:
    """(key, value) as git reads them from the file at `path` (or from `text`, with path "-"; git reads
    it from its standard input), or None when git cannot parse it. Includes are listed as keys, never
    followed."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent"}
    try:
        completed = subprocess.run([program("git"), "config", "--no-includes", "--file", path, "--list", "-z"],
                                   capture_output=True, env=env, timeout=GIT_TIMEOUT_SECONDS, check=False,
                                   input=(text or "").encode("utf-8", "surrogateescape"))
    except (OSError, subprocess.TimeoutExpired):
        return None
    if completed.returncode != 0:
        return None
    entries = []
    for record in completed.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not record:
            continue
        key, newline, value = record.partition("\n")
        entries.append((key, value if newline else None))
    return entries


def _split_key(key: str) -> tuple[str, str | None, str]:
    section, _, rest = key.partition(".")
    if "." not in rest:
        return section, None, rest
    subsection, _, name = rest.rpartition(".")
    return section, subsection, name


def _dropped(section: str, name: str) -> bool:
    section, name = section.lower(), name.lower()
    return section in DROPPED_SECTIONS or name in DROPPED_KEYS or any(hint in name for hint in DROPPED_KEY_HINTS)


def _quoted(text: str) -> str:
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
               .replace("\b", "\\b"))
    return f'"{escaped}"'


def render(entries: list[tuple[str, str | None]], *, sanitize: bool = True) -> str:
    """The entries as a config file git reads back the same way; with `sanitize`, only those that carry
    no credentials, with userinfo taken out of URLs."""
    lines: list[str] = []
    current: tuple[str, str | None] | None = None
    for key, value in entries:
        section, subsection, name = _split_key(key)
        if sanitize:
            if not section or not name or _dropped(section, name):
                continue
            subsection = without_userinfo(subsection) if subsection is not None else None
            value = without_userinfo(value) if value is not None else None
        if (section, subsection) != current:
            current = (section, subsection)
            lines.append(f"[{section}]" if subsection is None else f"[{section} {_quoted(subsection)}]")
        lines.append(f"\t{name}" if value is None else f"\t{name} = {_quoted(value)}")
    return "".join(line + "\n" for line in lines)


def sanitize_git_config(text: str) -> str:
    """`text`, a git config file's content, without credentials (empty when git cannot parse it)."""
    entries = parse_entries("-", text=text)
    return render(entries) if entries is not None else ""


_LOCK = threading.Lock()
_CACHE: dict[tuple, str | None] = {}
# Sanitized copies kept for the next gitbot process, under $XDG_CACHE_HOME/gitbot: a config file changed
# less than this long ago is not kept (a change in the same clock tick would keep its stamp).
KEPT_COPIES_DIR = "gitconfig"
KEPT_COPIES_MAX = 32
RACY_SECONDS = 2.5


def sanitized_copy(path: str) -> str | None:
    """A file holding the config at `path` without credentials, to bind over it; None when the file
    needs no change (nothing git reads from it is dropped or rewritten). Cached by the file's identity
    and change time: one `git config` per file and run, and none while the file stays as it was (the
    copy is kept for the next process; a kept copy is always bound, so it never uncovers the file)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    identity = (path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    with _LOCK:
        if identity in _CACHE:
            return _CACHE[identity]
    kept = _kept_path(identity)
    if kept is not None and os.path.isfile(kept):
        with _LOCK:
            _CACHE[identity] = kept
        return kept
    entries = parse_entries(path)
    content = render(entries) if entries is not None else ""
    if entries is not None and content == render(entries, sanitize=False):
        target = None
    else:
        # Readable by the sandbox's user (another uid when gitbot runs as root): it holds only what is
        # left after sanitizing. Bound into every sandbox of this process, so kept until it exits.
        directory = process_directory("gitconfig")
        fd, target = tempfile.mkstemp(dir=directory, prefix="config-")
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(content)
        os.chmod(target, 0o644)
    import time

    if kept is not None and info.st_ctime_ns < time.time_ns() - int(RACY_SECONDS * 1e9):
        _keep(kept, content)
    with _LOCK:
        _CACHE[identity] = target
    return target


def _kept_path(identity: tuple) -> str | None:
    import zlib

    base = user_cache_dir()
    if base is None:
        return None
    path, *stamp = identity
    name = f"{zlib.crc32(os.fsencode(path)):08x}-" + "-".join(str(part) for part in stamp)
    # Named by the code that made it too: a copy kept by another gitbot (one that dropped less, before an
    # upgrade) is never this one's.
    code = code_fingerprint(__file__)
    if code is None:
        return None
    return os.path.join(base, KEPT_COPIES_DIR, f"{name}-{code:08x}")


def _keep(target: str, content: str) -> None:
    directory = os.path.dirname(target)
    temporary = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        with open(temporary, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(content)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
        kept = sorted(os.scandir(directory), key=lambda entry: entry.stat().st_mtime_ns)
        for entry in kept[:max(0, len(kept) - KEPT_COPIES_MAX)]:
            os.unlink(entry.path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
