"""Judging a command line against the command rules, with a real shell grammar (tree-sitter-bash).

A command line is allowed only when every simple command in it — across `;`, `&&`, `||`, `|`, `&`,
newlines, subshells, compound statements, function bodies, and inside the wrappers that run other
programs (`env`, `timeout`, `xargs`, `find -exec`, `sh -c` ...) — is allowed by a rule and none is
denied. Anything the judge cannot see through statically is refused: command and process
substitution, `eval`/`source`/`exec`, parse errors, syntax it does not know, program names that
come from expansions. The sandbox is the real boundary; this judge keeps an injected instruction
from doing more than the policy intends, and explains each refusal so the model can adapt.

Words are compared by their value after quote removal (`'cu''rl'` and `c\\url` are `curl`). A word
whose value is only known at run time (`$VAR`, `~`) matches only a `*` pattern word, and one that
may become several words (an unquoted expansion or glob) only the final `*` of a rule. Deny rules
are checked the other way round: a word that *could* match makes the deny apply.

Modules, each one job: words (bash words: unquoting, ANSI-C strings), grammar (the parser, node
kinds, a node's word), scan (the raw text's second opinion on substitutions and here-documents),
rules (patterns and matching), programs (what the judge knows about particular programs), sed,
writers (programs that change the files they name), statements, wrappers and paths (the parts of
CommandJudge), judge (CommandJudge, judge_command and the collect-only entry point), outcome (the
refusal and the findings a judgement carries).
"""

from __future__ import annotations

from gitbot.policy.judge.judge import Collected, CommandJudge, judge_command, literal_prefix_rules
from gitbot.policy.judge.rules import CommandRule, compile_rule, split_pattern

__all__ = ["Collected", "CommandJudge", "CommandRule", "compile_rule", "judge_command",
           "literal_prefix_rules", "split_pattern"]
