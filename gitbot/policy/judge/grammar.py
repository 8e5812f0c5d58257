"""The tree-sitter-bash parser (one per thread), the node kinds the judge treats specially, and the
value of a word node."""

from __future__ import annotations

import re
import threading

from tree_sitter import Node, Parser

from gitbot.policy.judge.outcome import deny, snippet
from gitbot.policy.judge.words import (
    BRACE_EXPANSION,
    Word,
    decode_ansi_c,
    unescape_double_quoted,
    unquote_bare,
)

_parser_local = threading.local()


def parser() -> Parser:
    parser = getattr(_parser_local, "parser", None)
    if parser is None:
        from gitbot.treesitter import bash_parser_language

        parser = _parser_local.parser = Parser(bash_parser_language())
    return parser


SUBSTITUTIONS = {"command_substitution": "command substitution", "process_substitution": "process substitution"}
REDIRECTS = {"file_redirect", "heredoc_redirect", "herestring_redirect"}
OUTPUT_OPERATORS = {">", ">>", ">|", "&>", "&>>", ">&"}
QUIET_OPERATORS = {"<", "<&", ">&-", "<&-"}
PUNCTUATION = {";", "&", "&&", "||", "|", "|&", "(", ")", "{", "}", "\n", "if", "then", "fi", "elif", "else",
               "do", "done", "while", "until", "for", "select", "in", "case", "esac", ";;", ";&", ";;&", "!",
               "function", "[[", "]]", "[", "]"}
SPECIAL_OUTPUTS = {"/dev/null", "/dev/stdout", "/dev/stderr"}
ARITHMETIC_OPERATORS = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"}


def node_text(node: Node) -> str:
    return node.text.decode("utf-8", errors="surrogateescape")


def first_error(root: Node) -> Node | None:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return node
        if node.has_error:
            stack.extend(reversed(node.children))
    return None


def heredoc_delimiter(start_text: str) -> str:
    return start_text.replace("'", "").replace('"', "").replace("\\", "")


def word_of(node: Node, *, word_start: bool = True) -> Word:
    kind = node.type
    text = node_text(node)
    if kind == "word":
        value, glob, tilde = unquote_bare(text, word_start=word_start)
        multi = glob or bool(BRACE_EXPANSION.search(re.sub(r"\\.", "__", text)))
        return Word(None if tilde else value, multi, text)
    if kind == "number":
        return Word(text, False, text)
    if kind == "raw_string":
        return Word(text[1:-1], False, text)
    if kind == "ansi_c_string":
        return Word(decode_ansi_c(text[2:-1]), False, text)
    if kind == "string":
        return double_quoted(node)
    if kind == "translated_string":
        inner = [child for child in node.named_children if child.type == "string"]
        if len(inner) != 1:
            deny(f"unsupported string `{snippet(text)}`")
        word = double_quoted(inner[0])
        return Word(word.value, word.multi, text)
    if kind == "concatenation":
        return concatenation(node)
    if kind in ("simple_expansion", "expansion"):
        return Word(None, True, text)
    if kind in SUBSTITUTIONS or kind == "arithmetic_expansion":
        return Word(None, True, text)
    deny(f"unsupported word `{snippet(text)}` ({kind})")
    raise AssertionError  # unreachable


def double_quoted(node: Node) -> Word:
    source = node.text
    start = node.start_byte
    parts: list[str] = []
    known = True
    multi = False
    position = start + 1
    for child in node.children:
        if child.type == '"':
            continue
        gap = source[position - start: child.start_byte - start].decode("utf-8", errors="surrogateescape")
        parts.append(unescape_double_quoted(gap))
        if child.type == "string_content":
            parts.append(unescape_double_quoted(node_text(child)))
        elif child.type in ("simple_expansion", "expansion"):
            known = False
            inner = node_text(child)
            if inner in ("$@", "${@}") or "[@]" in inner:
                multi = True  # "$@" and "${a[@]}" are one word per element
        elif child.type in SUBSTITUTIONS or child.type == "arithmetic_expansion":
            known = False
        elif child.type == "$" and not child.is_named:
            parts.append("$")  # a `$` that starts no expansion (`":$"`) is itself, in bash as here
        else:
            deny(f"unsupported syntax inside a double-quoted string: `{snippet(node_text(child))}`")
        position = child.end_byte
    tail = source[position - start: node.end_byte - start - 1].decode("utf-8", errors="surrogateescape")
    parts.append(unescape_double_quoted(tail))
    return Word("".join(parts) if known else None, multi, node_text(node))


def concatenation(node: Node) -> Word:
    parts: list[str] = []
    known = True
    multi = False
    skeleton: list[str] = []  # unquoted text with quoted parts blanked, for brace detection
    for index, child in enumerate(node.children):
        if not child.is_named:
            deny(f"unsupported word `{snippet(node_text(node))}`")
        if child.type == "word":
            text = node_text(child)
            value, glob, tilde = unquote_bare(text, word_start=index == 0)
            multi = multi or glob
            known = known and not tilde
            parts.append(value)
            skeleton.append(re.sub(r"\\.", "__", text))
        else:
            word = word_of(child, word_start=False)
            if word.value is None:
                known = False
            else:
                parts.append(word.value)
            multi = multi or word.multi
            skeleton.append("_" * max(1, len(word.text)))
    if BRACE_EXPANSION.search("".join(skeleton)):
        multi = True
    return Word("".join(parts) if known else None, multi, node_text(node))
