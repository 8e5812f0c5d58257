"""Test runners, linters and build tools (the programs `gitbot policy init` allows): the options that
make them run another program, load a plugin or configuration, or write or delete a path.

What these programs run by design (the tests, a Makefile's recipes, package.json's scripts, build.rs)
is the agent's own code, which a rule for them allows on purpose; and configuration they read from
files the agent may edit (pyproject.toml's `addopts`, `.npmrc`, the Makefile) is not seen by the judge:
there the sandbox's read-only mounts of the protected directories are the boundary. Part of
CommandJudge.
"""

from __future__ import annotations

from gitbot.policy.judge.options import EXACT, GNU, GO, Syntax, table, walk
from gitbot.policy.judge.outcome import Read, TreeWrite, Verdicts
from gitbot.policy.judge.words import Word, lit

PYTHON = table("W= X= check-hash-based-pycs= c=:ends m=:ends")
# pytest: argparse with `@FILE` arguments; older versions accepted abbreviated long options.
PYTEST_SYNTAX = Syntax(fromfile="@")
PYTEST = table(
    "p= basetemp=:write junitxml=:write junit-xml=:write resultlog=:write result-log=:write report-log=:write "
    "json-report-file=:write html=:write log-file=:write debug=? o= override-ini= c=:load config-file=:load "
    "rootdir= confcutdir= pdbcls=:load W= pythonwarnings= cov-report= cov-config=:load pastebin=:named "
    "k= m= maxfail= tb= r= durations= durations-min= deselect= ignore= ignore-glob= import-mode= capture= "
    "log-level= log-format= log-date-format= log-cli-level= log-cli-format= log-cli-date-format= "
    "log-file-level= log-file-format= log-file-date-format= log-file-mode= doctest-glob= doctest-report= "
    "cov=? n|numprocesses= dist= maxprocesses= color= code-highlight= junit-prefix= x|exitfirst "
    "rs|reruns= timeout= randomly-seed= "
    # Flags that are a prefix of an option above: listed, so that they are not read as its abbreviation.
    "pdb trace co collect-only")
# `-o NAME=VALUE` settings that only change what is reported or selected.
PYTEST_SAFE_INI = {"console_output_style", "log_cli", "log_cli_level", "log_level", "log_format", "markers",
                   "xfail_strict", "filterwarnings", "python_files", "python_classes", "python_functions",
                   "testpaths", "norecursedirs", "junit_family", "junit_suite_name", "junit_logging",
                   "asyncio_mode", "asyncio_default_fixture_loop_scope", "timeout", "empty_parameter_set_mark",
                   "verbosity_assertions", "verbosity_test_cases", "truncation_limit_lines",
                   "truncation_limit_chars", "minversion", "strict_markers", "strict"}
PYTEST_WRITE_INI = {"cache_dir", "log_file", "junit_xml"}
MYPY = table(
    "config-file=:load cache-dir=:write python-executable=:run junit-xml=:write html-report=:write "
    "xml-report=:write txt-report=:write linecount-report=:write linecoverage-report=:write "
    "lineprecision-report=:write any-exprs-report=:write cobertura-xml-report=:write memory-xml-report=:write "
    "xslt-html-report=:write xslt-txt-report=:write custom-typeshed-dir=:load shadow-file=2:read "
    "install-types:named python-version= platform= p|package= m|module= c|command= exclude= follow-imports= "
    "always-true= always-false= package-root= enable-error-code= disable-error-code= junit-format= "
    "find-occurrences=")
RUFF = table(
    "config=:load cache-dir=:write o|output-file=:write watch:named stdin-filename= select= extend-select= "
    "ignore= extend-ignore= per-file-ignores= extend-per-file-ignores= fixable= extend-fixable= unfixable= "
    "extend-unfixable= exclude= extend-exclude= target-version= line-length= output-format= "
    "dummy-variable-rgx= extension= range= exit-non-zero-on-fix exit-non-zero-on-format")
RUFF_FIXES = {"--fix", "--unsafe-fixes", "--fix-only", "--add-noqa"}
PYTHON_SOURCES = (".py", ".pyi", ".ipynb")
MAKE = table(
    "f|file=:load makefile=:load C|directory=:load I|include-dir=:load E|eval=:load o|old-file= assume-old= "
    "W|what-if= new-file= assume-new= j|jobs=? l|load-average=? O|output-sync=? debug=? jobserver-auth= "
    "jobserver-style= shuffle=? t|touch:named")
# Variables on make's command line that change how every recipe runs, not just what it is given.
MAKE_VARIABLES = {"SHELL", "MAKESHELL", ".SHELLFLAGS", "MAKEFLAGS", "MFLAGS", "MAKEFILES", "MAKE",
                  "MAKEOVERRIDES", "GNUMAKEFLAGS", "MAKE_RESTARTS", ".DEFAULT_GOAL", "MAKEFILE_LIST",
                  ".RECIPEPREFIX", ".EXTRA_PREREQS"}
# npm and yarn read any `--key=value` as configuration (script-shell, node-options, userconfig ...):
# only these are known to change nothing about what runs.
NPM_SAFE = {"--silent", "-s", "--quiet", "-q", "--loglevel", "--if-present", "--workspaces", "--ws",
            "--workspace", "-w", "--include-workspace-root", "--color", "--no-color", "--json", "--parseable",
            "--offline", "--prefer-offline", "--verbose", "-d", "--foreground-scripts", "--ignore-scripts"}
NPM_SCRIPTS = {"test", "t", "tst", "run", "run-script", "rum", "urn"}
GO_OPTIONS = table(
    "exec=:run toolexec=:run vettool=:run o=:write coverprofile=:write cpuprofile=:write memprofile=:write "
    "blockprofile=:write mutexprofile=:write trace=:write outputdir=:write fuzzcachedir=:write pkgdir=:write "
    "modfile=:load overlay=:load ldflags=:load gcflags=:load asmflags=:load gccgoflags=:load C=:load "
    "run= bench= benchtime= count= cpu= covermode= coverpkg= list= p= parallel= shuffle= skip= tags= timeout= "
    "mod= compiler= buildmode= buildvcs= installsuffix= pgo= fuzz= fuzztime= fuzzminimizetime= json=? "
    "args:ends")
CARGO = table(
    "config=:load Z=:load manifest-path=:read target-dir=:write artifact-dir=:write out-dir=:write "
    "lockfile-path=:write message-format= color= j|jobs= features= F= p|package= exclude= target= profile= "
    "bin= example= test= bench= timings=? C=:load")
# tox and nox run the sessions their configuration names (tox.ini, noxfile.py: the project's own files);
# these options load another configuration, run another program, or write outside their usual place.
TOX = table("c|conf=:load root=:load x|override=:load installpkg=:run discover=:run workdir=:write "
            "result-json=:write report-json=:write e= m= f= p|parallel=? r|recreate q|quiet v|verbose")
NOX = table("f|noxfile=:load envdir=:write report=:write s|session= sessions= k|keywords= t|tags= p|python= "
            "pythons= extra-python= extra-pythons= force-python= default-venv-backend= force-venv-backend= "
            "r|reuse-existing-virtualenvs R no-venv l|list")
# tar: options that run a program, and the archive, which it reads or (creating) writes.
TAR = table(
    "to-command=:run I=:run use-compress-program=:run checkpoint-action=:named info-script=:run F=:run "
    "new-volume-script=:run rsh-command=:run rmt-command=:run f|file= C|directory= T|files-from=:read "
    "X|exclude-from=:read g|listed-incremental=:write index-file=:write volno-file=:write "
    "exclude= transform= xform= owner= group= mode= mtime= b|blocking-factor= L|tape-length= H|format= "
    "K|starting-file= N|newer= after-date= newer-mtime= V|label= checkpoint=? occurrence=? "
    "x|extract:named get:named remove-files:named")
TAR_CREATE = set("cruA")


class Runners:
    """How CommandJudge reads test runners, linters and build tools (see judge.py)."""

    def _runner_python(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        found = walk(words, 1, PYTHON, Syntax(permute=False))
        for index, option, values in found.options:
            value = values[0].value if values and values[0].literal else None
            shown_value = values[0].text if values else ""
            if option.name == "-X" and value is not None and value.startswith("pycache_prefix="):
                verdicts.edits.append((lit(value.partition("=")[2]), shown))
            elif option.name == "-X" and (value is None or value.startswith("presite")):
                sensitive[index] = f"`python -X {shown_value}` can load a module; a rule must name it exactly"
            elif option.name == "-W" and _warning_imports(value):
                sensitive[index] = (f"`python -W {shown_value}` imports the warning category's module; a rule "
                                    f"must name it exactly")
            elif option.name == "-m" and value in ("pytest", "mypy", "ruff"):
                separate = index + 1 < len(words) and values[0] is words[index + 1]
                first = index + 1 + separate  # the module's own arguments start here
                inner = getattr(self, f"_runner_{value}")([lit(value), *words[first:]], depth, verdicts, shown)
                sensitive.update({position + first - 1: why for position, why in inner.items()})
        return sensitive

    def _runner_pytest(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        found = walk(words, 1, PYTEST, PYTEST_SYNTAX)
        self._apply_options(found, words, depth, verdicts, shown, sensitive, "pytest")
        for index, option, values in found.options:
            value = values[0].value if values and values[0].literal else None
            span = range(index, index + 1 + len(values))
            name = option.name
            if name == "-p" and not (value or "").startswith("no:"):
                _mark(sensitive, span, f"`pytest -p {values[0].text if values else ''}` loads a plugin module; "
                                       f"a rule must name it exactly")
            elif name in ("-o", "--override-ini"):
                key, _, setting = (value or "").partition("=")
                if key in PYTEST_WRITE_INI:
                    verdicts.edits.append((lit(setting), shown))
                elif key not in PYTEST_SAFE_INI:
                    _mark(sensitive, span, f"`pytest {name} {values[0].text if values else ''}` changes a setting "
                                           f"that can load code or write files; a rule must name it exactly")
            elif name == "--debug":
                verdicts.edits.append((lit(value or "pytestdebug.log"), shown))
            elif name == "--rootdir" and values:
                # The cache goes below the root directory.
                verdicts.edits.append((_below(values[0], ".pytest_cache"), shown))
            elif name == "--confcutdir" and values:
                # conftest.py files are loaded from every directory up to this one: it must be in the repository.
                verdicts.edits.append((_below(values[0], "conftest.py"), shown))
            elif name in ("-W", "--pythonwarnings") and _warning_imports(value):
                _mark(sensitive, span, f"`pytest {name} {values[0].text if values else ''}` imports the warning "
                                       f"category's module; a rule must name it exactly")
            elif name == "--cov-report" and value and ":" in value:
                verdicts.edits.append((lit(value.partition(":")[2]), shown))
        return sensitive

    def _runner_mypy(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        found = walk(words, 1, MYPY, Syntax(fromfile="@"))
        self._apply_options(found, words, depth, verdicts, shown, sensitive, "mypy")
        # mypy shows source lines with its errors: the files it checks are read.
        for _, word in found.operands:
            verdicts.reads.append(Read(word, shown, recursive=True, suffixes=(".py", ".pyi")))
        return sensitive

    def _runner_ruff(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        subcommand = words[1].value if len(words) > 1 and words[1].literal else None
        found = walk(words, 2 if subcommand and not subcommand.startswith("-") else 1, RUFF, EXACT)
        self._apply_options(found, words, depth, verdicts, shown, sensitive, "ruff")
        values = {word.value.partition("=")[0] for word in words if word.literal}
        writes = (subcommand == "format" and not values & {"--check", "--diff"}) or (
            subcommand in ("check", None) and values & RUFF_FIXES and "--diff" not in values)
        paths = [word for _, word in found.operands] or [lit(".")]
        if subcommand in ("check", "format", None) or (subcommand or "").startswith("-"):
            for word in paths:
                verdicts.reads.append(Read(word, shown, recursive=True, suffixes=PYTHON_SOURCES))
                if writes:
                    verdicts.tree_writes.append(TreeWrite(word, shown, PYTHON_SOURCES))
        return sensitive

    def _runner_make(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        found = walk(words, 1, MAKE, GNU)
        self._apply_options(found, words, depth, verdicts, shown, sensitive, "make")
        for index, word in found.operands:
            name = (word.value or word.text).partition("=")[0].rstrip(":+?!")
            if "=" in (word.value or word.text) and (name in MAKE_VARIABLES or not word.literal):
                sensitive[index] = (f"`make {word.text}` changes how every recipe runs; a rule must name it "
                                    f"exactly")
        return sensitive

    def _runner_tox(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        self._apply_options(walk(words, 1, TOX, GNU), words, depth, verdicts, shown, sensitive, "tox")
        return sensitive

    def _runner_nox(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        self._apply_options(walk(words, 1, NOX, GNU), words, depth, verdicts, shown, sensitive, "nox")
        return sensitive

    def _runner_npm(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        return _package_manager("npm", words)

    def _runner_yarn(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        return _package_manager("yarn", words)

    def _runner_go(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        subcommand = words[1].value if len(words) > 1 else None
        if subcommand in ("generate", "tool", "env", "work", "get", "install"):
            _mark(sensitive, range(1, len(words)), f"`go {subcommand}` runs or installs programs or changes go's "
                                                   f"configuration; a rule must name the command exactly")
        found = walk(words, 2, GO_OPTIONS, GO)
        self._apply_options(found, words, depth, verdicts, shown, sensitive, f"go {subcommand}")
        if subcommand == "fmt":
            for word in [word for _, word in found.operands] or [lit(".")]:
                verdicts.tree_writes.append(TreeWrite(word, shown, (".go",)))
        return sensitive

    def _runner_cargo(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        start = 2 if len(words) > 2 and (words[1].value or "").startswith("+") else 1
        subcommand = words[start].value if len(words) > start else None
        if subcommand in ("install", "publish", "login", "owner", "yank", "uninstall"):
            _mark(sensitive, range(start, len(words)), f"`cargo {subcommand}` installs or publishes; a rule must "
                                                       f"name the command exactly")
        found = walk(words, start + 1, CARGO, EXACT)
        self._apply_options(found, words, depth, verdicts, shown, sensitive, f"cargo {subcommand}")
        values = {word.value for word in words if word.literal}
        if subcommand in ("fmt", "fix") or (subcommand == "clippy" and "--fix" in values):
            verdicts.tree_writes.append(TreeWrite(lit("."), shown, (".rs",)))
        return sensitive

    def _runner_tar(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> dict[int, str]:
        sensitive: dict[int, str] = {}
        words = list(words)
        # The old style `tar czf out.tar dir`: the first word is the options without their dash.
        if len(words) > 1 and words[1].literal and words[1].value[:1].isalpha():
            words[1] = Word("-" + words[1].value, False, words[1].text)
        found = walk(words, 1, TAR, GNU)
        self._apply_options(found, words, depth, verdicts, shown, sensitive, "tar")
        letters = "".join(word.value[1:] for word in words[1:] if word.literal and word.value.startswith("-")
                          and not word.value.startswith("--"))
        long_names = {word.value.partition("=")[0] for word in words[1:] if word.literal}
        creates = bool(set(letters) & TAR_CREATE) or bool(long_names & {"--create", "--append", "--update",
                                                                        "--concatenate"})
        for index, option, values in found.options:
            if option.name in ("-f", "--file") and values:
                archive = values[0]
                if archive.literal and ":" in archive.value and "--force-local" not in long_names:
                    _mark(sensitive, range(index, index + 2), f"`tar -f {archive.value}` names a remote archive; "
                                                              f"a rule must name it exactly")
                elif creates:
                    verdicts.edits.append((archive, shown))
                else:
                    verdicts.reads.append(Read(archive, shown))
            if option.name in ("-C", "--directory"):
                verdicts.changes_directory = True
        if creates:
            for _, word in found.operands:
                verdicts.reads.append(Read(word, shown, recursive=True))
        return sensitive


def _mark(sensitive: dict[int, str], positions: range, why: str) -> None:
    for position in positions:
        sensitive[position] = why


def _warning_imports(value: str | None) -> bool:
    """Does a warnings filter (`action:message:category:module:lineno`) name a category that Python
    imports from a module (`ignore::pkg.Warning`)? Unknown values are assumed to."""
    if value is None:
        return True
    fields = value.split(":")
    return len(fields) > 2 and "." in fields[2]


def _below(directory: Word, name: str) -> Word:
    if not directory.literal:
        return directory
    return lit(directory.value.rstrip("/") + "/" + name)


def _package_manager(program: str, words: list[Word]) -> dict[int, str]:
    """npm/yarn: a script from package.json runs (the rule allows that); options before `--` are
    configuration, of which only a few are known to be harmless."""
    sensitive: dict[int, str] = {}
    for index in range(1, len(words)):
        word = words[index]
        if word.literal and word.value == "--":
            break
        if not word.literal:
            if word.text.lstrip("\"'")[:1] in "-$`\\{*?[~":
                sensitive[index] = f"`{word.text}` is only known at run time and could become {program} configuration"
            continue
        if word.value.startswith("-") and word.value.partition("=")[0] not in NPM_SAFE:
            sensitive[index] = (f"`{program} {word.value}` sets configuration that can change what runs (a shell, "
                                f"node options, another config file); a rule must name it exactly")
    return sensitive

