"""Judging a command line against the command rules, with a real shell grammar (tree-sitter-bash).

A command line is allowed only when every simple command in it — across `;`, `&&`, `||`, `|`, `&`,
newlines, subshells, compound statements, and inside the wrappers that run other programs (`env`,
`timeout`, `xargs`, `find -exec`, `sh -c` ...) — is allowed by a rule and none is denied. Anything the
judge cannot see through statically is refused: command and process substitution, `eval`/`source`/
`exec`, parse errors, syntax it does not know, program names that come from expansions. The sandbox
is the real boundary; this judge keeps an injected instruction from doing more than the policy
intends, and explains each refusal so the model can adapt.

Shell functions are refused, not followed. A function shadows a program only for bash's own lookup:
`python3() { ls; }; env python3 -c ...` calls the real python3, and so do `command`, `timeout`, `nice`,
`nohup`, `xargs`, `find -exec`, a backgrounded definition, one removed by `unset -f`, and a new shell
given the function through `export -f` or a `BASH_FUNC_*` variable. Following bash's real lookup
through every wrapper would make the judge larger and easier to get wrong, and an agent's one-shot
command does not need functions. (Aliases, `enable` and `hash` were refused already.)

Words are compared by their value after quote removal (`'cu''rl'` and `c\\url` are `curl`). A word
whose value is only known at run time (`$VAR`, `~`) matches only a `*` pattern word, and one that
may become several words (an unquoted expansion or glob) only the final `*` of a rule. Deny rules
are checked the other way round: a word that *could* match makes the deny apply. A rule does not
reach the options of a program that run, load or write something unless it names them exactly;
what such an option runs is judged as a command, what it writes by the edit rules, and what any
command reads by read_deny (the history included).

Modules, each one job: words (bash words: unquoting, ANSI-C strings), grammar (the parser, node
kinds, a node's word), scan (the raw text's second opinion on substitutions and here-documents),
rules (patterns and matching), options (reading a program's options from a table), readers and
runners (the tables of the programs a policy allows), git (git's options and what it prints),
history (the read-denied paths in git's index and history), programs (variables, builtins,
wrappers, writers), sed, writers (programs that change the files they name), statements, wrappers,
arguments, paths and reads (the parts of CommandJudge), judge (CommandJudge, judge_command and the
collect-only entry point), outcome (the refusal and the findings a judgement carries).
"""

from __future__ import annotations

from gitbot.policy.judge.rules import CommandRule, compile_rule, split_pattern

__all__ = ["Collected", "CommandJudge", "CommandRule", "compile_rule", "judge_command", "knows_program",
           "literal_prefix_rules", "split_pattern"]
# The judge itself (tree-sitter and every program's tables) loads on first use: loading a policy, or
# running a check under it, needs only the rules' syntax.
_FROM_JUDGE = frozenset({"Collected", "CommandJudge", "judge_command", "knows_program", "literal_prefix_rules"})


def __getattr__(name: str):
    if name in _FROM_JUDGE:
        from gitbot.policy.judge import judge

        return getattr(judge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
