"""The user's toolchain, as the sandbox shows it: the PATH in the user's order, and exactly the
directories that PATH's programs need to start, read-only.

Most developers install their tools under $HOME (pyenv, uv, conda, nvm/fnm, rustup/cargo, asdf/mise,
`pip install --user`) or in a project venv, and a check must run with the same interpreter inside the
sandbox as in their shell. So the view is computed from the user's environment, without running
anything:

- every PATH entry is kept, in order, except relative ones (they mean "the repository") and entries
  inside the repository that do not exist yet (the agent could create them and plant a `grep`);
- a PATH entry inside the repository (an activated `.venv/bin`, `node_modules/.bin`) is kept only
  because it existed before the run: its toolchain directory (`.venv`, `node_modules`) is *protected*:
  read-only in the sandbox and not editable by the file tools, so the agent cannot plant a program
  there that a later command or the verification would run;
- a PATH entry the sandbox hides (under $HOME, /tmp, /opt, /run …) gets its toolchain root mounted:
  the whole manager root for shim-based managers (pyenv, rbenv, asdf, mise), CARGO_HOME plus
  RUSTUP_HOME for rustup's proxies, a conda base and env, otherwise the install prefix (the parent of
  `bin/`) — never $HOME itself or a directory holding the repository, whose `bin/` alone is mounted;
- programs in those entries that are symlinks or scripts lead on to their targets and `#!`
  interpreters (a venv's `python` → a pyenv or uv Python; `~/.local/bin/ruff` → a uv tool venv),
  whose prefixes are mounted too; a venv's `pyvenv.cfg` `home` likewise;
- user site-packages (`$PYTHONUSERBASE/lib/pythonX.Y`, default `~/.local`) and version-selection
  files (`.python-version`, `.tool-versions`, … in $HOME and the repository's parents) are mounted;
- credential files inside a mounted directory (`~/.cargo/credentials.toml`, an install's `etc/npmrc`,
  …) are masked, and everything else in $HOME stays hidden.

The policy's `[sandbox] read_only` adds directories. `gitbot sandbox explain -- CMD` prints the view.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from gitbot.sandbox.env import under

# Visible read-only in every sandbox: the system. Everything else on the host is hidden unless the
# toolchain or the policy's read_only needs it.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/nix", "/snap", "/sys")
# Variables that select or locate a toolchain: passed through when set (their values are paths or
# version names, not secrets). Paths inside the repository only when protected (see `variables`).
TOOLCHAIN_VARIABLES = (
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_EXE", "CONDA_PYTHON_EXE", "PYENV_ROOT",
    "PYENV_VERSION", "RBENV_ROOT", "RBENV_VERSION", "RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN", "NVM_DIR",
    "NVM_BIN", "NVM_INC", "FNM_DIR", "FNM_MULTISHELL_PATH", "VOLTA_HOME", "ASDF_DIR", "ASDF_DATA_DIR",
    "MISE_DATA_DIR", "GOROOT", "GOPATH", "GOMODCACHE", "GOFLAGS", "JAVA_HOME", "SDKMAN_DIR", "PYTHONUSERBASE",
    "UV_PYTHON_INSTALL_DIR", "UV_TOOL_DIR", "pythonLocation", "Python_ROOT_DIR", "Python3_ROOT_DIR",
    "LD_LIBRARY_PATH", "PKG_CONFIG_PATH",
)
# Of those, the ones naming a toolchain directory to mount when the sandbox would hide it.
DIRECTORY_VARIABLES = ("VIRTUAL_ENV", "CONDA_PREFIX", "PYENV_ROOT", "RBENV_ROOT", "RUSTUP_HOME", "CARGO_HOME",
                       "NVM_DIR", "VOLTA_HOME", "ASDF_DIR", "ASDF_DATA_DIR", "MISE_DATA_DIR", "GOROOT", "GOPATH",
                       "GOMODCACHE", "JAVA_HOME", "SDKMAN_DIR", "UV_PYTHON_INSTALL_DIR", "pythonLocation")
# Files that select a version, looked for in $HOME and the repository's parent directories.
VERSION_FILES = (".python-version", ".tool-versions", ".node-version", ".nvmrc", ".ruby-version",
                 ".go-version", ".java-version")
# Names of files that hold credentials: masked inside any mounted toolchain directory.
CREDENTIAL_FILES = frozenset({
    "credentials", "credentials.toml", "credentials.json", ".credentials", ".credentials.json", ".npmrc", "npmrc",
    ".yarnrc", ".yarnrc.yml", ".pypirc", "pip.conf", ".netrc", "_netrc", ".git-credentials", "auth.json",
    "settings.xml", "settings-security.xml", "gradle.properties", "hosts.yml", ".env", ".pgpass", "id_rsa",
    "id_ed25519", "id_ecdsa", "id_dsa", ".docker", ".ssh", ".aws", ".gnupg",
})
# How deep to look for them, and directories not worth entering (large, and holding no credentials).
CREDENTIAL_SCAN_DEPTH = 3
CREDENTIAL_SCAN_BUDGET = 5000
CREDENTIAL_SCAN_SKIP = frozenset({"lib", "lib64", "include", "share", "pkgs", "node_modules", "registry", "git",
                                  "toolchains", "downloads", "man", "site-packages", "__pycache__", "src"})
BIN_NAMES = ("bin", "sbin", "Scripts", ".bin", "shims", "condabin")
FOLLOW_DEPTH = 4  # symlink / #! hops followed from a PATH program to what it needs
FOLLOW_SCAN_DEPTH = 3  # how deep inside a mounted root to look for bin/ directories
SHEBANG_BYTES = 256


@dataclass(frozen=True)
class Mount:
    source: str  # the real path on the host (for a link: what the link says)
    dest: str  # where it appears in the sandbox (the source's own path, or a link's path)
    why: str  # for `gitbot sandbox explain`
    link: bool = False  # a symlink recreated inside (a PATH entry reached through a hidden link)


@dataclass
class ToolchainView:
    path: list[str] = field(default_factory=list)  # PATH inside, in the user's order
    mounts: list[Mount] = field(default_factory=list)  # read-only
    masked: list[str] = field(default_factory=list)  # credential files inside mounts: /dev/null
    protected: list[str] = field(default_factory=list)  # repository-relative toolchain dirs
    variables: dict[str, str] = field(default_factory=dict)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (PATH entry, why)
    masked_dirs: list[str] = field(default_factory=list)  # credential directories inside mounts: empty
    home: str = ""

    @property
    def path_value(self) -> str:
        return ":".join(self.path) or "/usr/local/bin:/usr/bin:/bin"

    def elsewhere(self, repo: str | os.PathLike) -> ToolchainView:
        """The view for commands run outside `repo` (a temporary worktree): the protected toolchain
        directories of `repo` on PATH are mounted read-only where they are."""
        import dataclasses

        real = os.path.realpath(repo)
        extra = [Mount(os.path.join(real, rel), os.path.join(real, rel), "the repository's toolchain directory")
                 for rel in self.protected if os.path.isdir(os.path.join(real, rel))]
        return dataclasses.replace(self, mounts=[*self.mounts, *extra], protected=[])

    def visible(self, path: str, repo: str) -> bool:
        """Whether `path` (a real path) can be seen in the sandbox."""
        return system_visible(path) or under(path, repo) or \
            any(under(path, m.dest) for m in self.mounts if not m.link)


_SYSTEM_PREFIXES = tuple(f"{directory}/" for directory in SYSTEM_DIRS)


def system_visible(path: str) -> bool:
    return path in SYSTEM_DIRS or path.startswith(_SYSTEM_PREFIXES)


def _real(path: str) -> str:
    return os.path.realpath(path)


class _Builder:
    def __init__(self, environ: dict[str, str], repo: str, extra_read_only: tuple[str, ...]):
        self.environ = environ
        # Real paths asked for again and again (every program of a PATH directory shares its parents):
        # each directory is resolved once per build.
        self._reals: dict[str, str] = {}
        self._resolving: set[str] = set()
        self.repo = self.real(repo)
        self.home = self.real(environ.get("HOME") or os.path.expanduser("~"))
        self.view = ToolchainView(home=self.home)
        self.extra_read_only = extra_read_only
        self._followed: set[str] = set()
        self.scan_roots: list[str] = []  # every directory asked for: where credential files are looked for
        # Directories never shown whole: they hold far more than programs (the home, a CI job's temp
        # directory with the step scripts and the files that set its environment).
        self.shared = {self.home, os.path.join(self.home, ".local"), "/tmp", "/var/tmp", "/dev/shm"}
        if environ.get("RUNNER_TEMP"):
            self.shared.add(self.real(environ["RUNNER_TEMP"]))

    def real(self, path: str) -> str:
        """os.path.realpath(path), with the parent directory's real path remembered for this build."""
        found = self._reals.get(path)
        if found is not None:
            return found
        parent, name = os.path.split(path)
        if not os.path.isabs(path) or name in ("", ".", "..") or any(
                part in ("", ".", "..") for part in parent.split("/")[1:]) and parent != "/":
            found = os.path.realpath(path)  # not a plain absolute path: the real thing, uncached parts
        else:
            real_parent = self.real(parent) if parent != "/" else "/"
            candidate = os.path.join(real_parent, name)
            found = self._through_link(candidate, real_parent, path) if os.path.islink(candidate) else candidate
        self._reals[path] = found
        return found

    def _through_link(self, link: str, real_parent: str, asked: str) -> str:
        try:
            target = os.readlink(link)
        except OSError:
            return os.path.realpath(link)
        if asked in self._resolving or any(part in (".", "..") for part in target.split("/")):
            return os.path.realpath(link)  # a loop, or `..` (which applies after the links): the real thing
        self._resolving.add(asked)
        try:
            return self.real(target if os.path.isabs(target) else os.path.join(real_parent, target))
        finally:
            self._resolving.discard(asked)

    # ------------------------------------------------------------------ mounting

    def mount(self, source: str, why: str, dest: str | None = None) -> None:
        real = self.real(source)
        dest = dest or real
        if dest == real and os.path.isdir(real) and real not in self.scan_roots:
            self.scan_roots.append(real)
        if not os.path.exists(real) or real == "/" or (dest == real and system_visible(real)):
            return
        if under(dest, self.repo) or (under(self.repo, real) and real != self.repo):
            return  # the repository is bound whole; a directory holding it is not shown
        if real in self.shared or any(under(directory, real) for directory in self.shared if directory != "/"):
            return  # never $HOME, a job's temp directory (or what holds them)
        mounts = self.view.mounts
        if dest == real and any(m.dest == m.source and under(real, m.source) for m in mounts):
            return  # already visible through a mount that holds it
        if dest == real:
            mounts[:] = [m for m in mounts if not (m.dest == m.source and under(m.source, real))]
        mounts.append(Mount(real, dest, why))

    def prefix_of(self, directory: str) -> str:
        """The install prefix a bin directory belongs to: its parent, unless that is $HOME, a shared
        user prefix (~/.local), a top-level directory or holds the repository."""
        real = self.real(directory)
        if os.path.basename(real) not in BIN_NAMES:
            return real
        parent = os.path.dirname(real)
        if parent in self.shared or os.path.dirname(parent) == "/" or parent == "/" or under(self.repo, parent):
            return real
        return parent

    def manager_root(self, directory: str) -> tuple[str, str] | None:
        """(root, what) when `directory` belongs to a toolchain manager whose root a program needs."""
        real = self.real(directory)
        candidate = real
        while candidate not in ("/", self.home, ""):
            if os.path.isfile(os.path.join(candidate, "libexec", "pyenv")):
                return candidate, "pyenv root"
            if os.path.isfile(os.path.join(candidate, "libexec", "rbenv")):
                return candidate, "rbenv root"
            if os.path.isdir(os.path.join(candidate, "shims")) and os.path.isdir(os.path.join(candidate, "installs")):
                return candidate, "asdf/mise data directory"
            if os.path.isdir(os.path.join(candidate, "conda-meta")):
                base = os.path.dirname(os.path.dirname(candidate))
                if os.path.basename(os.path.dirname(candidate)) == "envs" and \
                        os.path.isdir(os.path.join(base, "conda-meta")):
                    return base, "conda installation"
                return candidate, "conda prefix"
            candidate = os.path.dirname(candidate)
        if os.path.basename(real) == "bin" and (os.path.exists(os.path.join(real, "rustup")) or
                                               os.path.exists(os.path.join(real, "cargo"))):
            return os.path.dirname(real), "cargo home"
        return None

    def add_toolchain_dir(self, directory: str, why: str, *, manager: bool = True) -> None:
        """Mount what a hidden directory of programs needs: with `manager`, the whole root of the
        toolchain manager it belongs to (shims need it), else the install prefix."""
        managed = self.manager_root(directory) if manager else None
        if managed is not None:
            root, what = managed
            self.mount(root, f"{what} ({why})")
            if what == "cargo home":
                rustup = self.environ.get("RUSTUP_HOME") or os.path.join(self.home, ".rustup")
                self.mount(rustup, f"rustup toolchains (for the proxies in {directory})")
            if what == "asdf/mise data directory":
                self.mount_file(os.path.join(self.home, ".tool-versions"), "global tool versions")
            return
        self.mount(self.prefix_of(directory), why)

    def mount_file(self, path: str, why: str) -> None:
        if os.path.isfile(path) and not os.path.islink(path):
            self.mount(path, why)

    # ------------------------------------------------------------------ following programs

    def follow(self, program: str, why: str, depth: int = 0) -> None:
        """Make `program` (a path) runnable: mount where its symlinks lead, and its #! interpreter's."""
        if depth > FOLLOW_DEPTH or program in self._followed:
            return
        self._followed.add(program)
        real = self.real(program)
        if not os.path.isfile(real):
            return
        if not self.view.visible(real, self.repo):
            self.add_toolchain_dir(os.path.dirname(real), why, manager=False)
        venv_cfg = os.path.join(os.path.dirname(os.path.dirname(program)), "pyvenv.cfg")
        if os.path.basename(program).startswith("python") and os.path.isfile(venv_cfg):
            self.follow_venv(os.path.dirname(os.path.dirname(program)), why, depth)
        interpreter = shebang_interpreter(real)
        if interpreter:
            if os.path.basename(interpreter) == "env":
                return  # `#!/usr/bin/env X`: X is found on PATH, which is handled entry by entry
            self.follow(interpreter, f"interpreter of {program}", depth + 1)

    def follow_venv(self, venv: str, why: str, depth: int) -> None:
        config = read_pyvenv_cfg(os.path.join(venv, "pyvenv.cfg"))
        home = config.get("home")
        if home and os.path.isabs(home):
            for name in ("python3", "python"):
                candidate = os.path.join(home, name)
                if os.path.exists(candidate):
                    self.follow(candidate, f"base interpreter of {venv}", depth + 1)
                    break
        if config.get("include-system-site-packages", "").lower() == "true":
            self.add_user_site()

    def scan_programs(self, directory: str, why: str) -> None:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            try:
                if entry.is_symlink() or entry.is_file():
                    self.follow(entry.path, why)
            except OSError:
                continue

    # ------------------------------------------------------------------ the whole view

    def build(self) -> ToolchainView:
        view = self.view
        for entry in self.environ.get("PATH", "").split(":"):
            self.add_path_entry(entry)
        view.path = list(dict.fromkeys(view.path))
        self.protect_own_prefix()
        for name in DIRECTORY_VARIABLES:
            value = self.environ.get(name)
            if value and os.path.isabs(value) and os.path.isdir(value) and not under(self.real(value), self.repo):
                self.mount(value, f"${name}")
        self.follow_links_in_mounts()
        self.add_user_site()
        self.add_version_files()
        for path in self.extra_read_only:
            expanded = os.path.expanduser(path)
            if os.path.isabs(expanded) and os.path.exists(expanded):
                self.mount(expanded, "[sandbox] read_only in the policy")
        self.add_variables()
        shown = [m.source for m in view.mounts if not m.link]
        found = [path for path in credential_files(self.scan_roots) if any(under(path, root) for root in shown)]
        view.masked = [path for path in found if not os.path.isdir(path)]
        view.masked_dirs = [path for path in found if os.path.isdir(path)]
        return view

    def follow_links_in_mounts(self) -> None:
        """Programs inside a mounted toolchain root may lead elsewhere (a pyenv-virtualenv version whose
        `bin/python` links to another install, a conda env's interpreter): follow those too, for a few
        rounds, since what they lead to is mounted and may lead further."""
        scanned: set[str] = set()
        for _ in range(3):
            roots = [m.source for m in self.view.mounts if not m.link and m.dest == m.source and m.source not in scanned]
            if not roots:
                return
            for root in roots:
                scanned.add(root)
                for program in programs_under(root):
                    self.follow(program, f"a program in {root}")

    def hidden_in_repo(self, path: str) -> bool:
        """A path inside the repository that is not a protected toolchain directory."""
        real = self.real(path)
        if not under(real, self.repo):
            return False
        return not any(under(real, os.path.join(self.repo, relative)) for relative in self.view.protected)

    def add_path_entry(self, entry: str) -> None:
        view = self.view
        if not entry.startswith("/"):
            view.dropped.append((entry or "(empty)", "a relative PATH entry means the repository"))
            return
        real = self.real(entry)
        in_repo = under(real, self.repo) or under(os.path.normpath(entry), self.repo)
        if in_repo:
            if not os.path.isdir(real) or not under(real, self.repo):
                view.dropped.append((entry, "inside the repository, and it did not exist when the run started"))
                return
            prefix = self.prefix_of(real)
            if prefix == self.repo or not under(prefix, self.repo) or os.path.islink(prefix):
                prefix = real
            if prefix == self.repo:
                view.dropped.append((entry, "the repository itself: anything written there would run"))
                return
            relative = os.path.relpath(prefix, self.repo)
            if relative.split("/", 1)[0] == ".git":
                view.dropped.append((entry, "inside .git"))
                return
            if relative not in view.protected:
                view.protected.append(relative)
            view.path.append(entry)
            self.scan_programs(real, f"PATH entry {entry}")
            return
        if not os.path.isdir(real):
            view.dropped.append((entry, "does not exist"))
            return
        view.path.append(entry)
        if system_visible(real) and system_visible(os.path.normpath(entry)):
            return
        self.add_toolchain_dir(real, f"PATH entry {entry}")
        self.add_links_on_the_way(os.path.normpath(entry), f"PATH entry {entry}")
        if not system_visible(real):
            self.scan_programs(real, f"PATH entry {entry}")

    def protect_own_prefix(self) -> None:
        """gitbot's own interpreter prefix, when it lies in the repository (installed into its `.venv` and
        started as `.venv/bin/gitbot`, so not on PATH): the user's next gitbot runs what its
        site-packages hold at start-up (a `.pth`), unsandboxed, with the API key and the forge token in
        its environment. Protected like a toolchain directory on PATH, whatever `[sandbox] rebuildable` says."""
        for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
            real = self.real(prefix)
            if real == self.repo or not under(real, self.repo) or not os.path.isdir(real):
                continue
            relative = os.path.relpath(real, self.repo)
            if relative.split("/", 1)[0] != ".git" and relative not in self.view.protected:
                self.view.protected.append(relative)

    def add_links_on_the_way(self, path: str, why: str) -> None:
        """Symlinks on the way to `path` that the sandbox would not show (fnm's per-shell links under
        /run): recreated inside, pointing where they point (their targets are mounted)."""
        current = "/"
        for part in path.strip("/").split("/"):
            current = os.path.join(current, part)
            if os.path.islink(current):
                if not self.view.visible(current, self.repo) and not any(m.dest == current for m in self.view.mounts):
                    self.view.mounts.append(Mount(os.readlink(current), current, f"{why} (a link)", link=True))
                current = self.real(current)

    def add_user_site(self) -> None:
        base = self.environ.get("PYTHONUSERBASE") or os.path.join(self.home, ".local")
        lib = os.path.join(base, "lib")
        try:
            names = sorted(os.listdir(lib))
        except OSError:
            return
        found = False
        for name in names:
            site = os.path.join(lib, name, "site-packages")
            if name.startswith("python") and os.path.isdir(site):
                self.mount(os.path.join(lib, name), "user site-packages (pip install --user)")
                found = True
        if found:
            self.view.variables.setdefault("PYTHONUSERBASE", base)

    def add_version_files(self) -> None:
        directories = [self.home]
        parent = os.path.dirname(self.repo)
        while parent not in ("/", ""):
            directories.append(parent)
            parent = os.path.dirname(parent)
        for directory in dict.fromkeys(directories):
            if system_visible(directory):
                continue
            for name in VERSION_FILES:
                self.mount_file(os.path.join(directory, name), "version selection")

    def add_variables(self) -> None:
        view = self.view
        for name in TOOLCHAIN_VARIABLES:
            value = self.environ.get(name)
            if not value:
                continue
            if name in ("LD_LIBRARY_PATH", "PKG_CONFIG_PATH"):
                kept = [p for p in value.split(":") if p.startswith("/") and not self.hidden_in_repo(p)]
                if kept:
                    view.variables[name] = ":".join(kept)
                continue
            if os.path.isabs(value) and self.hidden_in_repo(value):
                continue
            view.variables[name] = value
        for name, value in (("PYENV_ROOT", self.root_of("pyenv root")), ("CARGO_HOME", self.root_of("cargo home"))):
            if value:
                view.variables.setdefault(name, value)
        if "CARGO_HOME" in view.variables:
            rustup = self.environ.get("RUSTUP_HOME") or os.path.join(self.home, ".rustup")
            if os.path.isdir(rustup):
                view.variables.setdefault("RUSTUP_HOME", rustup)

    def root_of(self, what: str) -> str | None:
        for mount in self.view.mounts:
            if mount.why.startswith(what):
                return mount.dest
        return None


def build_view(environ: dict[str, str] | None = None, repo: str | os.PathLike = ".",
               extra_read_only: tuple[str, ...] | list[str] = ()) -> ToolchainView:
    """The toolchain view for commands run in `repo` from an environment like `environ` (the user's)."""
    return _Builder(dict(os.environ if environ is None else environ), os.fspath(repo), tuple(extra_read_only)).build()


# ---------------------------------------------------------------------------------------------


def shebang_interpreter(path: str) -> str | None:
    """The interpreter a `#!` script names (absolute), or None."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(SHEBANG_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    word = line.split()[0] if line.split() else ""
    return word if word.startswith("/") else None


def read_pyvenv_cfg(path: str) -> dict[str, str]:
    values = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, sep, value = line.partition("=")
                if sep:
                    values[key.strip().lower()] = value.strip()
    except OSError:
        pass
    return values


def _bounded_walk(roots: list[str], max_depth: int) -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
    """(directory, its entries) for the roots and the directories below them, at most `max_depth` levels
    deep, never through symlinks or into CREDENTIAL_SCAN_SKIP, and within CREDENTIAL_SCAN_BUDGET entries
    in all: a toolchain root can be a whole home directory's worth of files."""
    budget = CREDENTIAL_SCAN_BUDGET
    stack = [(root, 0) for root in roots]
    while stack and budget > 0:
        directory, depth = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        budget -= len(entries)
        yield directory, entries
        for entry in entries:
            try:
                if depth + 1 < max_depth and entry.is_dir(follow_symlinks=False) and \
                        entry.name not in CREDENTIAL_SCAN_SKIP:
                    stack.append((entry.path, depth + 1))
            except OSError:
                continue


def programs_under(root: str) -> list[str]:
    """Symlinks and `pyvenv.cfg`-carrying interpreters in the `bin/` directories of a toolchain root,
    up to FOLLOW_SCAN_DEPTH below it (root/versions/X/bin), within a budget."""
    found: list[str] = []
    for directory, entries in _bounded_walk([root], FOLLOW_SCAN_DEPTH + 1):
        if os.path.basename(directory) in BIN_NAMES:
            for entry in entries:
                try:
                    if entry.is_symlink() or entry.name.startswith("python"):
                        found.append(entry.path)
                except OSError:
                    continue
    return found


def credential_files(roots: list[str]) -> list[str]:
    """Files (and directories) named like credentials inside the mounted toolchain directories."""
    return sorted(entry.path for _, entries in _bounded_walk(roots, CREDENTIAL_SCAN_DEPTH)
                  for entry in entries if entry.name in CREDENTIAL_FILES)
