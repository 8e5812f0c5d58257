"""The command judge: one simple command's decision (program location, deny rules, the programs it
knows, the allow rule that matches), the judgement of a whole line, and the entry points."""

from __future__ import annotations

import glob
import posixpath
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from tree_sitter import Node

from gitbot.policy.base import Decision
from gitbot.policy.judge.arguments import Arguments, program_family
from gitbot.policy.judge.git import Git
from gitbot.policy.judge.gitdir import GitDir
from gitbot.policy.judge.grammar import REDIRECTS, node_text, word_of
from gitbot.policy.judge.instead import instead_for
from gitbot.policy.judge.outcome import Denied, Read, Verdicts, deny, snippet
from gitbot.policy.judge.paths import Paths
from gitbot.policy.judge.programs import (
    FORBIDDEN_BUILTINS,
    NO_OP_BUILTINS,
    SHELLS,
    VARIABLE_SETTING_BUILTINS,
    WRAPPERS,
    WRITERS_ALL_ARGS,
    WRITERS_LAST_ARG,
    dangerous_variable,
)
from gitbot.policy.judge.readers import READERS
from gitbot.policy.judge.reads import UNSET, Reads
from gitbot.policy.judge.rules import CommandRule, certainly_matches, normalize_program_path, possibly_matches
from gitbot.policy.judge.runners import Runners
from gitbot.policy.judge.sed import sed_sensitive
from gitbot.policy.judge.statements import Statements
from gitbot.policy.judge.words import FD_VARIABLE, Word, lit
from gitbot.policy.judge.wrappers import Wrappers
from gitbot.policy.judge.writers import writer_edits


@dataclass(frozen=True)
class Collected:
    """The simple commands of a command line (literal words; None where a word is only known at run
    time), and why the walk stopped early (a parse error, say), if it did."""

    commands: tuple[tuple[str | None, ...], ...]
    unreadable: str | None


class CommandJudge(Statements, Wrappers, Paths, Reads, Git, GitDir, Arguments, Runners):
    """One judgement's worth of state: the rules, the file-rule callbacks, and the functions the
    script being judged has defined. The walk itself lives in the mixins (statements, wrappers,
    arguments, runners, git, paths, reads); this class holds the entry points and the decision for
    one simple command."""

    def __init__(self, allow: Sequence[CommandRule], deny: Sequence[CommandRule], *,
                 check_edit: Callable[[str], Decision], repo: str | None = None, collect_only: bool = False,
                 check_read: Callable[[str], Decision] | None = None,
                 shelters: Callable[[str], str | None] | None = None,
                 denied_files: Callable[[], tuple[str, ...] | None] | None = None,
                 denied_name: Callable[[str], bool] | None = None, sandboxed: bool = False,
                 judge_history: bool = True):
        self.allow = list(allow)
        self.deny = list(deny)
        # In the sandbox (under commands.sandboxed = "deny-list") a command runs unless a deny rule
        # refuses it: the judge walks the line as it does for an allow list of `*`.
        self.sandboxed = sandboxed
        self.allow_all = sandboxed or any(rule.matches_everything for rule in self.allow)
        self.check_edit = check_edit
        # Reading rules (what a link may point to) and "which protected path lies below this
        # directory" (moving, removing or linking a parent of a protected path).
        self.check_read = check_read or (lambda _path: Decision(True, ""))
        self.shelters = shelters or (lambda _path: None)
        self.repo = repo
        # Walk and collect the simple commands without refusing anything (interactive checks).
        self.collect_only = collect_only
        # The repository's read-denied files (None: too many to list), asked for when needed.
        self.denied_files = denied_files
        # Whether read_deny covers a path by its name alone (a path in git's history, not on disk).
        self.denied_name = denied_name or (lambda path: not self.check_read(path).allowed)
        # False where the sandbox hides read_deny's blobs from git's object store: nothing to predict.
        self.judge_history = judge_history
        self._listing = UNSET

    def judge(self, command: str) -> Decision:
        verdicts = Verdicts()
        if not isinstance(command, str) or not command.strip():
            return refusal(command, Denied("the command is empty", RULE_JUDGE), ())
        if self.allow_all and not self.deny and not self.sandboxed:
            # Still parse, so the caller learns the simple commands; nothing here can refuse.
            return Decision(True, "allowed: commands.allow contains `*`, which allows every command",
                            CommandJudge.collect(command).commands, rule="commands.allow `*`")
        if self.sandboxed:
            return self._judge_sandboxed(command, verdicts)
        try:
            self._script(command, 0, verdicts)
            self._phase(self._check_outputs, verdicts, RULE_EDIT)
            if self.judge_history:
                self._phase(self._check_reads, verdicts, RULE_READ)
            else:  # git prints read_deny's blobs as a placeholder there: only what is read from disk is judged
                self._phase(self._check_reads, replace(verdicts, reads=[r for r in verdicts.reads if not r.history]),
                            RULE_READ)
            self._phase(self._check_tree_writes, verdicts, RULE_EDIT)
            if self.judge_history:
                self._phase(self._check_history, verdicts, RULE_HISTORY)
        except Denied as denial:
            return refusal(command, denial, tuple(verdicts.commands))
        parts = "; ".join(verdicts.allowed) if verdicts.allowed else "it runs no program"
        return Decision(True, f"allowed: {parts}", tuple(verdicts.commands), rule=RULE_ALLOW,
                        fed=frozenset(verdicts.fed))

    def _judge_sandboxed(self, command: str, verdicts: Verdicts) -> Decision:
        """In the sandbox the effects are enforced where they happen (no network, writes only to the
        repository minus its protected paths, read_deny files masked, $HOME and /tmp private), so
        what is left to judge is commands.deny, and reads of git's history (below)."""
        try:
            self._script(command, 0, verdicts)
            if self.judge_history:  # False where the sandbox shows a store without read_deny's blobs
                self._sandboxed_history_rule(verdicts)
        except Denied as denial:
            if denial.rule or self.deny:
                return refusal(command, denial, tuple(verdicts.commands))
            # Nothing a deny rule could match was missed: what the judge cannot see through, bash can
            # still run, inside the sandbox.
            return Decision(True, f"allowed: it runs in the sandbox and commands.deny is empty (the judge "
                                  f"could not look inside: {denial.reason})", CommandJudge.collect(command).commands,
                            rule=RULE_SANDBOX)
        return Decision(True, "allowed: it runs in the sandbox (commands.sandboxed = \"deny-list\") and no "
                              "commands.deny rule matches it", tuple(verdicts.commands), rule=RULE_SANDBOX,
                        fed=frozenset(verdicts.fed))

    def _sandboxed_history_rule(self, verdicts: Verdicts) -> None:
        """Where the sandbox shows git's real object store (no filtered store: sandbox/filtered_store.py),
        the git commands the agent types are still held to read_deny for what they print from the
        history and the index."""
        git_reads = Verdicts(reads=verdicts.git_reads, changes_directory=verdicts.changes_directory)
        self._phase(self._check_reads, git_reads, RULE_HISTORY)
        self._phase(self._check_history, verdicts, RULE_HISTORY)

    @staticmethod
    def _phase(check: Callable[[Verdicts], None], verdicts: Verdicts, rule: str) -> None:
        """Run one of the checks made after the walk; its refusals are by `rule`."""
        try:
            check(verdicts)
        except Denied as denial:
            raise Denied(denial.reason, denial.rule or rule) from None

    @classmethod
    def collect(cls, command: str) -> Collected:
        """The simple commands of a command line, wrappers looked through, without judging them:
        nothing is refused that the walk can get past."""
        judge = cls([], [], check_edit=lambda _path: Decision(True, ""), collect_only=True)
        verdicts = Verdicts()
        try:
            judge._script(command, 0, verdicts)
        except Denied as denial:
            return Collected(tuple(verdicts.commands), denial.reason)
        return Collected(tuple(verdicts.commands), None)

    def _refuse(self, reason: str) -> None:
        """Refuse a construct the judge cannot see through, unless the policy allows `*`."""
        if not (self.allow_all or self.collect_only):
            deny(reason)

    def _check_variable(self, name: str, where: str) -> None:
        if self.collect_only or (self.sandboxed and not name.upper().startswith("GIT_")):
            # In the sandbox a variable changes only what runs there; git's may still point git at
            # other objects, which the history rule must see.
            return
        rule = dangerous_variable(name)
        if rule is not None and self.sandboxed:
            deny(f"setting {name} ({where}) is not allowed: it can point git at objects the history rule "
                 f"does not see", RULE_HISTORY)
        if rule is not None:
            deny(f"setting {name} ({where}) is not allowed: variables matching {rule} change what runs "
                 f"or how programs load code")

    def _command(self, node: Node, depth: int, verdicts: Verdicts) -> None:
        name_node: Node | None = None
        arguments: list[Node] = []
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if child.type == "variable_assignment" and name_node is None:
                self._assignment(child)
            elif field_name == "name":
                name_node = child
            elif field_name == "argument":
                if not child.is_named:
                    deny(f"unsupported word `{node_text(child)}` in `{snippet(node_text(node))}`")
                arguments.append(child)
            elif child.type in REDIRECTS:
                self._redirect(child, depth, verdicts)
            elif child.type == "comment":
                continue
            else:
                deny(f"unsupported syntax in `{snippet(node_text(node))}`: `{snippet(node_text(child))}`")
        if name_node is None:
            return  # only assignments (and redirections)
        program = list(name_node.named_children)
        if len(program) != 1:
            deny(f"unsupported command name `{snippet(node_text(name_node))}`")
        words = [word_of(program[0])] + [self._option_glob(argument, verdicts) for argument in arguments]
        self._simple(words, depth, verdicts)

    def _option_glob(self, node: Node, verdicts: Verdicts) -> Word:
        """An unquoted glob that starts with `-` (`--include=*.py`) is an option whatever it expands to.
        Bash leaves it as written when no file matches, which the judge can tell from the repository
        while nothing in the line has run yet and no `cd` moved it: then it is that literal option
        (grep's include filter, say). Otherwise it is refused rather than guessed (finding 20.4)."""
        word = word_of(node)
        if not word.multi or word.value is None or not word.value.startswith("-") or self.collect_only \
                or self.sandboxed or node.type != "word" or any(c in node_text(node) for c in "\\{$'\""):
            return word
        if self.repo is not None and not verdicts.commands and not verdicts.changes_directory:
            if not glob.glob(word.value, root_dir=self.repo):
                return lit(word.value)
            deny(f"the unquoted glob `{word.text}` matches files in the repository, whose names would become "
                 f"options; quote it (`'{word.text}'`)")
        deny(f"the unquoted glob `{word.text}` starts with `-`, and what it expands to cannot be known once an "
             f"earlier command has run or changed directory; quote it (`'{word.text}'`)")

    def _simple(self, words: list[Word], depth: int, verdicts: Verdicts) -> None:
        """Judge one simple command given as words."""
        shown = snippet(" ".join(word.text for word in words), 80)
        verdicts.commands.append(tuple(word.value if word.literal else None for word in words))
        program = words[0]
        if self.collect_only:
            self._collect_inner(words, depth, verdicts, shown)
            return
        if not program.literal:
            if self.sandboxed and not self.deny:
                verdicts.allowed.append(f"`{shown}` (in the sandbox)")
                return
            deny(f"in `{shown}` the program name `{program.text}` is not a plain word (it contains an "
                 f"expansion, glob or ~), so what would run cannot be known")
        name = program.value
        if not name:
            deny(f"`{shown}` has an empty program name")
        for word in words:
            if FD_VARIABLE.fullmatch(word.text):
                deny(f"`{word.text}` in `{shown}` would be a file-descriptor variable redirection; "
                     f"it is not supported")
        base = posixpath.basename(name) if "/" in name else name
        location = self._program_location(name)
        if location == "name" and name in FORBIDDEN_BUILTINS:
            self._refuse(f"`{name}` is not allowed ({shown}): {FORBIDDEN_BUILTINS[name]}")
        self._check_deny(words, base, shown)
        if self.sandboxed:
            self._in_sandbox(words, base, location, depth, verdicts, shown)
            return
        if location == "name" and name in NO_OP_BUILTINS and all(word.value is not None for word in words[1:]):
            # With an expansion among its arguments `:` is not harmless: `: ${x:=...}` assigns,
            # and expanding is where bash runs what is hidden in a value. Then a rule must allow it.
            verdicts.allowed.append(f"`{shown}` (a builtin that does nothing)")
            return
        if location == "name" or (location == "system" and base == "find"):
            self._check_git_dir(base, words, verdicts, shown)
        if base in ("cd", "pushd", "popd") and location == "name":
            verdicts.changes_directory = True
            verdicts.leaves_repository = verdicts.leaves_repository or self._may_leave(base, words)
        if location == "repository" and not name.startswith("/"):
            verdicts.relative_programs.append(name)

        # Only a wrapper found by name is known to be that wrapper: a path could be any file.
        wrapper = location == "name" and base in WRAPPERS
        if wrapper and self._look_through(base, words, depth, verdicts, shown):
            return

        sensitive: dict[int, str] = {}
        if location in ("name", "system"):
            sensitive = self._known_program(base, words, depth, verdicts, shown)
            if location == "name" and base in VARIABLE_SETTING_BUILTINS:
                self._variable_setting(base, words, shown)
        if not (location in ("name", "system") and knows_program(base)) or program_family(base) in RUNS_CODE:
            # A program the judge has no row for, or one that hands its words to code it runs (a
            # script, a test, a recipe): any word that names a read-denied file is taken to be read
            # (`awk 1 .env`, `./script .env`, `python3 tool.py --input=.env`).
            for word in words[1:]:
                if word.literal:
                    value = word.value.partition("=")[2] if word.value.startswith("-") else word.value
                    if value:
                        verdicts.reads.append(Read(lit(value), shown))
        if base in SHELLS:
            # A shell without -c runs a script file or its input, which the judge cannot read: only a
            # rule that names the whole command allows it (and a bare shell reading its input, none).
            why = f"`{base}` without -c runs a script the judge cannot see; a rule must name the command exactly"
            sensitive = {index: why for index in range(1, max(2, len(words)))}

        rule, why_not = self._find_allow(words, location, name, sensitive)
        if rule is None:
            if why_not:
                deny(f"`{shown}` is not allowed: {why_not}", RULE_ALLOW)
            if location == "repository":
                deny(f"`{shown}` runs {name}, a program inside the repository (which the agent can change); "
                     f"a rule for `{base}` does not cover it — a rule must name the path, e.g. `{name} *`")
            if location in ("system", "outside"):
                deny(f"`{shown}` runs the program by path; give it by name (`{base}`) or name the path in a "
                     f"rule")
            deny(f"`{shown}` is not allowed: no rule in commands.allow matches it", RULE_ALLOW)
        verdicts.allowed.append(f"`{shown}` by {rule.describe()}")

    def _in_sandbox(self, words: list[Word], base: str, location: str, depth: int, verdicts: Verdicts,
                    shown: str) -> None:
        """One simple command in the sandbox, past the deny rules: the walk goes on only into what it
        runs (wrappers, `find -exec`, `sh -c`), for the deny rules, and into git, for the history rule."""
        if location == "name" and base in WRAPPERS and self._look_through(base, words, depth, verdicts, shown):
            return
        if location in ("name", "system") and base == "find":
            self._find(words, depth, verdicts, shown)
        if location in ("name", "system") and base == "git":
            first = len(verdicts.reads)
            self._git(words, depth, verdicts, shown)
            verdicts.git_reads.extend(verdicts.reads[first:])
        verdicts.allowed.append(f"`{shown}` (in the sandbox)")

    def _known_program(self, base: str, words: list[Word], depth: int, verdicts: Verdicts,
                       shown: str) -> dict[int, str]:
        """What the judge knows about this program's arguments: the words a rule must name exactly
        (by index, with why), after queueing its reads, writes and the programs it runs."""
        if base == "git":
            return self._git(words, depth, verdicts, shown)
        if base == "find":
            return self._find(words, depth, verdicts, shown)
        if base == "sed":
            return sed_sensitive(words, verdicts, shown)
        if base in WRITERS_ALL_ARGS or base in WRITERS_LAST_ARG:
            writer_edits(base, words, verdicts, shown)
            return {}
        if base == "dd":
            for word in words[1:]:
                if word.value is None or word.multi:
                    deny(f"`{shown}`: dd operand `{word.text}` is only known at run time")
                if word.value.startswith("of="):
                    verdicts.edits.append((lit(word.value[3:]), shown))
                if word.value.startswith("if="):
                    verdicts.reads.append(Read(lit(word.value[3:]), shown))
            return {}
        return self._program_arguments(base, words, depth, verdicts, shown)

    def _may_leave(self, base: str, words: list[Word]) -> bool:
        """Could this cd end up outside the repository (then a relative path may name a file of it
        from above)? Only `cd DIR` with a literal DIR inside the repository surely cannot."""
        operands = [word for word in words[1:] if not (word.literal and word.value.startswith("-")
                                                       and word.value != "-")]
        if base != "cd" or len(operands) != 1 or not operands[0].literal:
            return True
        target = operands[0].value
        if target.startswith("/"):
            root = (self.repo or "").rstrip("/")
            return self.repo is None or not (target == root or target.startswith(root + "/"))
        normal = posixpath.normpath(target)
        return target == "-" or normal == ".." or normal.startswith("../")

    def _collect_inner(self, words: list[Word], depth: int, verdicts: Verdicts, shown: str) -> None:
        """In collect-only mode: record what wrappers run, refusing nothing."""
        name = words[0].value
        if not words[0].literal or not name or self._program_location(name) != "name":
            return
        base = posixpath.basename(name)
        try:
            if base in WRAPPERS:
                self._look_through(base, words, depth, verdicts, shown)
            elif base == "find":
                self._find(words, depth, verdicts, shown)
        except Denied:
            pass

    def _program_location(self, name: str) -> str:
        """'name' (looked up in PATH), 'repository' (a path inside the repository), 'system' (an
        absolute path outside it) or 'outside' (a relative path that leaves it)."""
        if "/" not in name:
            return "name"
        if name.startswith("/"):
            if self.repo is not None:
                root = self.repo.rstrip("/")
                normal = posixpath.normpath(name)
                if normal == root or normal.startswith(root + "/"):
                    return "repository"
            return "system"
        normal = posixpath.normpath(name)
        if normal == ".." or normal.startswith("../"):
            return "outside"
        return "repository"

    def _check_deny(self, words: list[Word], base: str, shown: str) -> None:
        forms = [words]
        if base != words[0].value:
            forms.append([lit(base), *words[1:]])
        for rule in self.deny:
            for form in forms:
                if possibly_matches(rule, form):
                    deny(f"`{shown}` is denied by {rule.describe()}", f"commands.deny `{rule.pattern}`")

    def _find_allow(self, words: list[Word], location: str, name: str,
                    sensitive: dict[int, str]) -> tuple[CommandRule | None, str]:
        key = name if location == "name" else normalize_program_path(name)
        if location == "repository" and name.startswith("/") and self.repo is not None:
            key = "./" + posixpath.relpath(posixpath.normpath(name), self.repo.rstrip("/"))
        match_words = [lit(key), *words[1:]]
        why_not = ""
        for rule in self.allow:
            if rule.matches_everything:
                return rule, ""
            if rule.names_a_path != (location != "name"):
                continue
            matched, reason = certainly_matches(rule, match_words, sensitive)
            if not matched:
                continue
            if not reason:
                return rule, ""
            why_not = why_not or reason
        return None, why_not


# What decided (Decision.rule): a rule of the policy, or the judge itself when it cannot see what a
# command would do.
RULE_ALLOW = "commands.allow"
RULE_EDIT = "files.edit_allow/edit_deny"
RULE_READ = "files.read_deny"
RULE_HISTORY = "files.read_deny (git's history)"
RULE_SANDBOX = "sandbox"
RULE_JUDGE = "judge"


def refusal(command: str, denial: Denied, commands: tuple[tuple[str | None, ...], ...]) -> Decision:
    """The Decision for a refusal: its reason, the rule that refused and what to do instead."""
    rule = denial.rule or RULE_JUDGE
    return Decision(False, denial.reason, commands, rule=rule,
                    instead=instead_for(command, denial.reason, rule, commands))


# Programs with a row whose words may still be read by the code they run.
RUNS_CODE = {"python", "pytest", "make", "npm", "yarn", "go", "cargo"}


def knows_program(name: str) -> bool:
    """Does the judge have a row for this program: what its options run, load, write and read?"""
    family = program_family(name)
    return (family in READERS or hasattr(Runners, f"_runner_{family}") or name in WRAPPERS
            or name in WRITERS_ALL_ARGS or name in WRITERS_LAST_ARG or name in ("git", "find", "sed", "dd"))


def literal_prefix_rules(command: str, origin: str) -> list[CommandRule]:
    """Rules that allow a known command line (the run's check command) and the same with more args.

    Each simple command of the line becomes an exact prefix rule; words that are not literal are
    dropped from the end, so the rule stays as narrow as the command itself."""
    rules = []
    for literal in _literal_simple_commands(command):
        words = [normalize_program_path(literal[0]), *literal[1:]] if "/" in literal[0] else literal
        rules.append(CommandRule(pattern=shlex.join(words) + " *", words=tuple(words), rest=True,
                                 origin=origin, literal=True))
    return rules


def _literal_simple_commands(command: str) -> list[list[str]]:
    """The literal leading words of each simple command in a command line (for check-command rules)."""
    collected = CommandJudge.collect(command)
    if collected.unreadable is not None:
        return []
    result = []
    for words in collected.commands:
        literal: list[str] = []
        for word in words:
            if word is None:
                break
            literal.append(word)
        if literal:
            result.append(literal)
    return result


def judge_command(command: str, allow: Sequence[CommandRule], deny: Sequence[CommandRule], *,
                  check_edit: Callable[[str], Decision], repo: str | None,
                  extra_allowed: Sequence[str] = (), check_read: Callable[[str], Decision] | None = None,
                  shelters: Callable[[str], str | None] | None = None,
                  denied_files: Callable[[], tuple[str, ...] | None] | None = None,
                  denied_name: Callable[[str], bool] | None = None, sandboxed: bool = False,
                  judge_history: bool = True) -> Decision:
    """The decision for one command line; `extra_allowed` are the run's check commands, allowed as
    written and with more arguments; `denied_files` lists the repository's read-denied files;
    `sandboxed`: it runs in the sandbox under a deny-list (Policy.check_command decides that);
    `judge_history`: whether what git prints from the history is held to read_deny (not where the
    sandbox's filtered object store hides it)."""
    extra_rules: list[CommandRule] = []
    for check in extra_allowed:
        extra_rules.extend(literal_prefix_rules(check, "the run's check command"))
    judge = CommandJudge([*extra_rules, *allow], deny, check_edit=check_edit, repo=repo, check_read=check_read,
                         shelters=shelters, denied_files=denied_files, denied_name=denied_name,
                         sandboxed=sandboxed, judge_history=judge_history)
    decision = judge.judge(command)
    is_check_command = any(command.strip() == check.strip() for check in extra_allowed if check.strip())
    if not decision.allowed and is_check_command and not _possibly_denied(command, deny):
        return Decision(True, "allowed: it is the run's check command", decision.commands,
                        rule="the run's check command")
    return decision


def _possibly_denied(command: str, deny: Sequence[CommandRule]) -> list[str]:
    """Deny rules that some simple command of the line could match (for the exact check command)."""
    collected = CommandJudge.collect(command)
    if collected.unreadable is not None:
        return [collected.unreadable]
    found = []
    for values in collected.commands:
        words = [lit(v) if v is not None else Word(None, True, "?") for v in values]
        forms = [words]
        if values and values[0] is not None and "/" in values[0]:
            forms.append([lit(posixpath.basename(values[0])), *words[1:]])
        for rule in deny:
            if any(possibly_matches(rule, form) for form in forms):
                found.append(rule.pattern)
    return found
