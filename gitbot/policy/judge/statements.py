"""The shell's statements: parsing a script, walking its compound statements, and refusing the
constructs that run code the judge cannot see (substitutions, arithmetic, indirect expansions,
dangerous assignments, here-documents that end elsewhere in bash). Part of CommandJudge."""

from __future__ import annotations

import re

from tree_sitter import Node

from gitbot.policy.judge.grammar import (
    ARITHMETIC_OPERATORS,
    OUTPUT_OPERATORS,
    PUNCTUATION,
    QUIET_OPERATORS,
    REDIRECTS,
    SUBSTITUTIONS,
    first_error,
    heredoc_delimiter,
    node_text,
    parser,
    word_of,
)
from gitbot.policy.judge.outcome import Read, Verdicts, deny, snippet
from gitbot.policy.judge.programs import NAME_BUILTINS
from gitbot.policy.judge.scan import check_raw_text, scan_substitutions, word_splitting_continuations
from gitbot.policy.judge.words import (
    ARRAY_KEY,
    INTEGER,
    NUMERIC_PARAMETERS,
    PLAIN_KEY,
    VARIABLE_NAME,
    Word,
    lit,
)

MAX_NESTING = 4  # sh -c inside sh -c ...: deeper than this is refused


class Statements:
    """The statement walk of CommandJudge (see judge.py)."""

    def _script(self, text: str, depth: int, verdicts: Verdicts) -> None:
        if depth > MAX_NESTING:
            deny(f"shells nested more than {MAX_NESTING} deep are not judged")
        check_raw_text(text)
        tree = parser().parse(text.encode("utf-8", errors="surrogateescape"))
        root = tree.root_node
        if root.has_error:
            error = first_error(root)
            if error is not None:
                line, column = error.start_point
                what = "missing " + error.type if error.is_missing else f"near `{snippet(node_text(error), 30)}`"
                deny(f"the command could not be parsed as shell (line {line + 1}, column {column + 1}: "
                     f"{what})")
            deny("the command could not be parsed as shell")
        self._check_continuations(text, root)
        substitutions: list[Node] = []
        seen: set[int] = set()  # where the tree has substitutions, as byte offsets
        expansions: list[Node] = []
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type in SUBSTITUTIONS:
                self._refuse(f"{SUBSTITUTIONS[node.type]} `{snippet(node_text(node))}` is not allowed: "
                             f"its output becomes part of the command, so what runs cannot be judged "
                             f"beforehand; run the inner command on its own first")
                substitutions.append(node)
                seen.add(node.start_byte)
            elif node.type == "arithmetic_expansion":
                self._refuse(f"arithmetic expansion `{snippet(node_text(node))}` is not allowed "
                             f"(bash arithmetic can run commands through array subscripts)")
                seen.add(node.start_byte)
            elif node.type == "heredoc_redirect":
                self._check_heredoc(node)
            elif node.type in ("expansion", "subscript"):
                expansions.append(node)
            stack.extend(node.children)
        self._check_substitutions_in_text(text, seen)
        for node in expansions:  # after the substitutions, whose refusal says more
            if node.type == "expansion":
                self._check_expansion(node)
            else:
                self._check_subscript(node)
        self._statement(root, depth, verdicts)
        for node in substitutions:  # only reached when the policy allows `*`: deny rules still apply
            for child in node.named_children:
                self._statement(child, depth, verdicts)

    @staticmethod
    def _check_continuations(text: str, root: Node) -> None:
        """A backslash-newline inside a word is refused (bash joins the parts, the grammar may not),
        except inside single quotes, where both characters are literal in bash and in the grammar."""
        for offset in word_splitting_continuations(text):
            at = len(text[:offset].encode("utf-8", errors="surrogateescape"))
            node = root.descendant_for_byte_range(at, at + 1)
            if node is None or node.type not in ("raw_string", "comment"):
                deny("a backslash-newline splits a word in two; write the word on one line")

    def _check_substitutions_in_text(self, text: str, seen: set[int]) -> None:
        """The lexer's second opinion: a substitution the tree did not show (`${x:-`cmd`}` parses
        as a plain word) is refused even when the policy allows `*`, since deny rules cannot be
        applied to a command the judge never saw."""
        hits = scan_substitutions(text)
        if not hits:
            return
        encoded_up_to = 0
        byte_offset = 0
        for offset, kind in hits:
            byte_offset += len(text[encoded_up_to:offset].encode("utf-8", errors="surrogateescape"))
            encoded_up_to = offset
            if byte_offset in seen:
                continue  # the tree walk has dealt with it
            shown = snippet(text[offset:], 40)
            reason = (f"{kind} is not allowed (found at {shown!r}): bash would run it, and the shell grammar does "
                      f"not show it as a substitution, so what runs cannot be judged")
            if self.allow_all:
                deny(reason)
            self._refuse(reason)

    def _check_heredoc(self, node: Node) -> None:
        """Refuse a here-document whose end the grammar places later than bash would: the lines in
        between would run as commands without being judged."""
        start = end = body = None
        strip_tabs = False
        for child in node.children:
            if child.type == "heredoc_start":
                start = node_text(child)
            elif child.type == "heredoc_end":
                end = node_text(child)
            elif child.type == "heredoc_body":
                body = node_text(child)
            elif child.type == "<<-":
                strip_tabs = True
        if start is None:
            deny("a here-document without a delimiter")
        delimiter = heredoc_delimiter(start)
        if end is not None and end.strip("\t") != delimiter:
            deny(f"the here-document delimiter `{delimiter}` does not end where expected")
        for line in (body or "").split("\n"):
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                deny(f"the here-document `{delimiter}` ends earlier in bash than it appears to; "
                     f"the lines after it would run as commands")

    def _statement(self, node: Node, depth: int, verdicts: Verdicts) -> None:
        kind = node.type
        if not node.is_named:
            if kind not in PUNCTUATION:
                deny(f"unsupported shell syntax `{snippet(node_text(node))}`")
            return
        if kind == "comment":
            return
        if kind == "pipeline":
            first = next((child for child in node.children if child.is_named), None)
            for child in node.children:
                before = len(verdicts.commands)
                self._statement(child, depth, verdicts)
                if child is not first:
                    verdicts.fed.update(range(before, len(verdicts.commands)))
        elif kind in ("program", "list", "subshell", "negated_command", "do_group", "else_clause",
                      "elif_clause", "if_statement", "while_statement"):
            for child in node.children:
                self._statement(child, depth, verdicts)
        elif kind == "compound_statement":
            if node.children and node.children[0].type == "((":
                self._refuse(f"arithmetic command `{snippet(node_text(node))}` is not allowed "
                             f"(bash arithmetic can run commands through array subscripts)")
                return
            for child in node.children:
                self._statement(child, depth, verdicts)
        elif kind == "redirected_statement":
            before = len(verdicts.commands)
            for child in node.children:
                if child.type in REDIRECTS:
                    self._redirect(child, depth, verdicts)
                else:
                    self._statement(child, depth, verdicts)
            if any(feeds_stdin(child) for child in node.children):
                verdicts.fed.update(range(before, len(verdicts.commands)))
        elif kind == "function_definition":
            # Refused rather than followed: a function shadows a program for bash's own lookup only,
            # while env, timeout, xargs, find -exec, `command` ... start the real program, and a new
            # shell inherits exported functions. Following bash's rules through every wrapper is
            # more judge than an agent's one-shot command needs. The body is still walked so that
            # its own refusals (and deny rules, when the policy allows `*`) come first.
            name = node.child_by_field_name("name")
            for index, child in enumerate(node.children):
                if node.field_name_for_child(index) == "name" or not child.is_named:
                    continue
                if child.type in REDIRECTS:
                    self._redirect(child, depth, verdicts)
                else:
                    self._statement(child, depth, verdicts)
            self._refuse(f"defining the shell function `{node_text(name) if name is not None else '?'}` is not "
                         f"allowed: a function can stand in for a program's name, so what runs could not be "
                         f"judged by the name; run the commands themselves")
        elif kind == "for_statement":
            self._for(node, depth, verdicts)
        elif kind == "case_statement":
            for index, child in enumerate(node.children):
                if node.field_name_for_child(index) == "value":
                    word_of(child)
                elif child.type == "case_item":
                    self._case_item(child, depth, verdicts)
                elif child.is_named and child.type != "comment":
                    deny(f"unsupported syntax in a case statement: `{snippet(node_text(child))}`")
        elif kind == "c_style_for_statement":
            self._refuse(f"the arithmetic loop `{snippet(node_text(node))}` is not allowed "
                         f"(bash arithmetic can run commands through array subscripts)")
            for index, child in enumerate(node.children):
                if node.field_name_for_child(index) == "body":
                    self._statement(child, depth, verdicts)
        elif kind == "command":
            before = len(verdicts.commands)
            self._command(node, depth, verdicts)
            if any(child.type == "herestring_redirect" for child in node.children):
                verdicts.fed.update(range(before, len(verdicts.commands)))
        elif kind == "variable_assignment":
            self._assignment(node)
        elif kind == "variable_assignments":
            for child in node.named_children:
                self._assignment(child)
        elif kind == "declaration_command":
            self._declaration(node)
        elif kind == "unset_command":
            self._unset(node)
        elif kind == "test_command":
            self._test(node)
        else:
            deny(f"unsupported shell syntax ({kind}): `{snippet(node_text(node))}`")

    def _for(self, node: Node, depth: int, verdicts: Verdicts) -> None:
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "variable":
                self._check_variable(node_text(child), f"the loop variable of `{snippet(node_text(node))}`")
            elif field_name == "value":
                word_of(child)
            elif field_name == "body":
                self._statement(child, depth, verdicts)
            elif child.is_named and child.type != "comment":
                deny(f"unsupported syntax in a for loop: `{snippet(node_text(child))}`")

    def _case_item(self, node: Node, depth: int, verdicts: Verdicts) -> None:
        for index, child in enumerate(node.children):
            if node.field_name_for_child(index) == "value":
                continue  # a pattern, never run
            self._statement(child, depth, verdicts)

    def _assignment(self, node: Node, *, associative: bool = False) -> None:
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "value":
                if child.type == "array":
                    self._array_literal(node, child, associative=associative)
                continue
            if field_name != "name":
                continue
            if child.type == "variable_name":
                self._check_variable(node_text(child), f"in `{snippet(node_text(node))}`")
            elif child.type == "subscript":
                name = child.child_by_field_name("name")
                if name is not None:
                    self._check_variable(node_text(name), f"in `{snippet(node_text(node))}`")
                index_node = child.child_by_field_name("index")
                if index_node is None or index_node.type != "number":
                    self._refuse(f"the array assignment `{snippet(node_text(node))}` evaluates its subscript as "
                                 f"arithmetic; use a literal number")
            else:
                deny(f"unsupported assignment `{snippet(node_text(node))}`")

    def _array_literal(self, assignment: Node, array: Node, *, associative: bool) -> None:
        """`a=([k]=v)`: for an indexed array bash evaluates k as arithmetic, and a bare name there
        expands that variable's value as arithmetic too (`x='a[$(cmd)]'; a=([x]=1)` runs cmd). Keys
        must be literal integers; plain literal words only where the array is surely associative
        (`declare -A m=([key]=v)`)."""
        for element in array.named_children:
            if element.type == "comment":
                continue
            text = node_text(element)
            if not text.startswith("["):
                continue
            match = ARRAY_KEY.match(text)
            key = match.group(1) if match else None
            if key is not None and (INTEGER.fullmatch(key) or (associative and PLAIN_KEY.fullmatch(key))):
                continue
            self._refuse(f"the array element `{snippet(text, 40)}` in `{snippet(node_text(assignment))}` has a key "
                         f"bash evaluates as arithmetic; use literal integers (or `declare -A` for words)")

    def _declaration(self, node: Node) -> None:
        keyword = node.children[0].type if node.children else ""
        associative = any(child.type == "word" and node_text(child).startswith("-") and "A" in node_text(child)
                          for child in node.named_children)
        for child in node.named_children:
            if child.type == "variable_assignment":
                self._assignment(child, associative=associative)
            elif child.type == "variable_name":
                continue
            elif child.type == "word":
                flag = node_text(child)
                if not flag.startswith(("-", "+")) or any(c not in "xrgaAlufp" for c in flag[1:]):
                    deny(f"`{keyword} {flag}` is not allowed (only the flags -x -r -g -a -A -l -u -f -p; "
                         f"-n makes a name refer to another variable, -i evaluates arithmetic)")
            else:
                deny(f"unsupported declaration `{snippet(node_text(node))}`")

    def _unset(self, node: Node) -> None:
        """`unset 'a[$i]'` evaluates the subscript as arithmetic: only plain names and flags.
        Removing a variable cannot make anything run."""
        for child in node.named_children:
            text = node_text(child)
            if child.type == "variable_name" or (child.type == "word" and VARIABLE_NAME.fullmatch(text)) or child.type == "word" and re.fullmatch(r"-[fvn]+", text):
                continue
            else:
                self._refuse(f"`unset {snippet(text, 30)}` is not allowed: unset takes plain variable or "
                             f"function names (bash evaluates a subscript in a name as arithmetic)")

    def _test(self, node: Node) -> None:
        """`[[ ... ]]` evaluates the operands of -eq/-lt/... as arithmetic; -v and -R (in `[[ ]]` and in
        `[ ]`, the test builtin) look up array subscripts, evaluated as arithmetic: each can run
        commands hidden in a variable's value. `[ ... ]` compares integers without arithmetic."""
        double = bool(node.children) and node.children[0].type == "[["
        stack = list(node.children)
        while stack:
            child = stack.pop()
            if child.type == "test_operator":
                operator = node_text(child)
                parent = child.parent
                if double and operator in ARITHMETIC_OPERATORS and parent is not None:
                    for operand in parent.named_children:
                        if operand.type not in ("number", "test_operator"):
                            self._refuse(f"`{snippet(node_text(parent))}` compares with {operator}, which "
                                         f"evaluates its operands as bash arithmetic; compare literal numbers "
                                         f"or use [ ... ]")
                elif operator in ("-v", "-R"):
                    self._refuse(f"`{operator}` in a test evaluates array subscripts as arithmetic; test the "
                                 f"value instead (`[ -n \"${{x+set}}\" ]`)")
            stack.extend(child.children)

    def _redirect(self, node: Node, depth: int, verdicts: Verdicts) -> None:
        if node.type == "herestring_redirect":
            return  # input only; substitutions inside were already refused
        if node.type == "heredoc_redirect":
            for child in node.named_children:
                if child.type in REDIRECTS:
                    self._redirect(child, depth, verdicts)
                elif child.type not in ("heredoc_start", "heredoc_body", "heredoc_end"):
                    # `cat <<EOF | grep x && ls`: what follows the delimiter on its line
                    self._statement(child, depth, verdicts)
            return
        operator = None
        destinations: list[Node] = []
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "destination":
                destinations.append(child)
            elif field_name == "descriptor":
                continue
            elif not child.is_named:
                operator = child.type
            else:
                deny(f"unsupported redirection `{snippet(node_text(node))}`")
        if len(destinations) > 1:
            deny(f"in `{snippet(node_text(node))}` the words after the redirection target are arguments of the "
                 f"command in bash; put redirections at the end of the command")
        if operator == "<" and destinations:
            verdicts.reads.append(Read(word_of(destinations[0]), snippet(node_text(node.parent or node))))
            return
        if operator in QUIET_OPERATORS or operator is None:
            return
        if operator not in OUTPUT_OPERATORS:
            deny(f"unsupported redirection operator `{operator}`")
        if not destinations:
            return
        destination = destinations[0]
        if operator == ">&" and (destination.type == "number" or node_text(destination) == "-"):
            return  # duplicating a file descriptor, not a file
        verdicts.outputs.append((word_of(destination), node_text(node)))

    def _check_expansion(self, node: Node) -> None:
        """Refuse the forms of `${...}` that evaluate a variable's value as code or arithmetic:
        indirection (`${!x}` expands the variable x names, and `x='a[$(cmd)]'` runs cmd), the `@`
        transformations (`${x@P}` expands prompt escapes, command substitutions included), and
        substring offsets or lengths other than literal integers (they are arithmetic). Assigning a
        default (`${X:=...}`) is held to the same variable names as an assignment."""
        children = node.children
        kinds = [child.type for child in children]
        shown = snippet(node_text(node))
        if len(kinds) > 1 and kinds[1] == "!":
            inner = children[2:-1]
            inner_kinds = kinds[2:-1]
            allowed = (
                not inner  # ${!}: the last background process
                or inner_kinds in (["variable_name", "*"], ["variable_name", "@"])  # ${!prefix*}, ${!prefix@}
                or (inner_kinds == ["subscript"] and self._subscript_index(inner[0]) in ("@", "*"))  # ${!a[@]}
            )
            if not allowed:
                self._refuse(f"the indirect expansion `{shown}` is not allowed: it expands the variable "
                             f"whose name is in another variable, and bash evaluates a subscript in that "
                             f"name as arithmetic, which can run commands")
            return
        for index, kind in enumerate(kinds):
            if kind == "@" and not children[index].is_named:
                self._refuse(f"the transformation `{shown}` is not allowed: `${{var@OP}}` can expand prompt "
                             f"escapes and command substitutions hidden in the value")
            elif kind in ("=", ":=") and not children[index].is_named:
                target = children[1] if len(children) > 1 else None
                if target is not None and target.type == "subscript":
                    target = target.child_by_field_name("name")
                if target is not None and target.type == "variable_name":
                    self._check_variable(node_text(target), f"in `{shown}`")
            elif kind == ":" and not children[index].is_named:
                for operand in children[index + 1:]:
                    if operand.type in (":", "}") and not operand.is_named:
                        continue
                    if operand.type != "number" or not INTEGER.fullmatch(node_text(operand).strip()):
                        self._refuse(f"the substring expansion `{shown}` has an offset or length that is not "
                                     f"a literal integer; bash evaluates it as arithmetic, which can run "
                                     f"commands hidden in a variable's value")
                break

    @staticmethod
    def _subscript_index(node: Node) -> str:
        index_node = node.child_by_field_name("index")
        return node_text(index_node) if index_node is not None else ""

    def _check_subscript(self, node: Node) -> None:
        """`${a[$i]}` and `a[$i]=1` evaluate the subscript as arithmetic, which can run commands
        hidden in $i."""
        index_text = self._subscript_index(node)
        if not (index_text in ("@", "*") or index_text.isdigit()):
            parent = node.parent if node.parent is not None else node
            self._refuse(f"the subscript in `{snippet(node_text(parent))}` is evaluated as arithmetic; "
                         f"use a literal number")

    def _variable_setting(self, base: str, words: list[Word], shown: str) -> None:
        """The variables a builtin sets (or unsets) by name must be plain literal names: bash evaluates
        a subscript in a name (`read 'a[$(cmd)]'`) as arithmetic, which runs cmd."""
        spec = NAME_BUILTINS[base]
        names: list[Word] = []
        operands: list[Word] = []
        i = 1
        while i < len(words):
            word = words[i]
            value = word.value
            if not word.literal and word.text.strip('"') in NUMERIC_PARAMETERS:
                operands.append(word)  # `wait $!`: a number is neither an option nor a name
                i += 1
                continue
            if not word.literal:
                if spec.options_end_at_operand and operands and not spec.names_from_operands:
                    break  # printf's arguments, getopts' arguments
                self._refuse(f"`{shown}`: `{word.text}` is only known at run time and {base} could take it as "
                             f"an option or a variable name")
                i += 1
                continue
            if operands and spec.options_end_at_operand:
                operands.append(word)
                i += 1
                continue
            if value == "--" and not operands:
                operands.extend(words[i + 1:])
                break
            if len(value) > 1 and value[0] in spec.option_signs and not operands:
                for position, letter in enumerate(value[1:], start=1):
                    if letter in spec.refused:
                        self._refuse(f"`{shown}`: `{base} -{letter}` {spec.refused[letter]}")
                    if letter in spec.with_value:
                        attached = value[position + 1:]
                        argument = lit(attached) if attached else (words[i + 1] if i + 1 < len(words) else None)
                        if not attached:
                            i += 1
                        if letter in spec.name_options and argument is not None:
                            names.append(argument)
                        break
                    if letter not in spec.flags:
                        self._refuse(f"`{shown}`: {base} option `-{letter}` is not known")
                i += 1
                continue
            operands.append(word)
            i += 1
        if spec.names_from_operands:
            names.extend(operands)
        elif spec.name_operand is not None and len(operands) > spec.name_operand:
            names.append(operands[spec.name_operand])
        for word in names:
            if not word.literal:
                self._refuse(f"`{shown}`: the variable name `{word.text}` is only known at run time")
                continue
            name, has_value, assigned = word.value.partition("=")
            name = name[:-1] if has_value and name.endswith("+") else name
            if not VARIABLE_NAME.fullmatch(name):
                self._refuse(f"`{shown}`: `{snippet(word.value, 30)}` is not a plain variable name (bash "
                             f"evaluates a subscript in a name as arithmetic, which can run commands)")
                continue
            if has_value and assigned.startswith("("):
                self._refuse(f"`{shown}`: an array assignment given as an argument is not judged; write it "
                             f"as `{base} {name}=(...)` directly")
            if has_value or base not in ("unset", "export"):
                self._check_variable(name, f"in `{shown}`")


def feeds_stdin(node: Node) -> bool:
    """Whether a redirect gives the command its standard input (a heredoc, a here-string, `< file`)."""
    if node.type in ("heredoc_redirect", "herestring_redirect"):
        return True
    return node.type == "file_redirect" and any(not child.is_named and child.type in ("<", "<&") and
                                                node.field_name_for_child(index) != "descriptor"
                                                for index, child in enumerate(node.children)) and \
        not any(node.field_name_for_child(index) == "descriptor" and node_text(child) != "0"
                for index, child in enumerate(node.children))
