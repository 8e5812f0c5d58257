"""The text the model reads: templates in prompts/, rendered with named fields.

Every sentence gitbot sends to the model lives in a Markdown file under prompts/ (the repository's
top level; gitbot/prompts links to it so it ships in the wheel), so the words can be read, reviewed
and changed in one place without reading code. The code decides *which* templates make up a message
and what goes into their fields; the templates hold the words.

A template is its file's text without the one final newline an editor adds. A field is written
`{{name}}`: no other syntax, so the `$HOME`, `$(…)` and `{a,b}` that tool descriptions mention are
plain text. Rendering is strict: every field of the template must be given, nothing else may be, and
each value must already be a string (formatting numbers is the caller's business). Values are put in
as they are, in one pass: text from an issue or a log that happens to contain `{{name}}` stays
literal. Escaping untrusted text and redacting secrets stay with the code that builds the message.

This module sits at the bottom of the package (stdlib only), because tools/, checks/, forge/ and
agent/ all need templates.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
FIELD = re.compile(r"\{\{([a-z][a-z0-9_]*)\}\}")


class PromptError(Exception):
    """A template and the code that renders it disagree: a bug in gitbot, never the user's input."""


@cache
def template(name: str) -> str:
    """The text of prompts/<name>.md, checked for malformed fields."""
    path = PROMPTS_DIR / f"{name}.md"
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise PromptError(f"no template {name!r} (expected {path})") from None
    text = text.removesuffix("\n")
    stray = FIELD.sub("", text)
    if "{{" in stray or "}}" in stray:
        raise PromptError(f"template {name!r} has a malformed field: write fields as {{{{lower_case_name}}}}")
    return text


def fields(name: str) -> set[str]:
    """The names of the fields in a template."""
    return set(FIELD.findall(template(name)))


def render_prompt(name: str, /, **values: str) -> str:
    """The template `name` (a path under prompts/ without .md) with every field filled in."""
    wanted = fields(name)
    missing, unknown = wanted - values.keys(), values.keys() - wanted
    if missing or unknown:
        raise PromptError(f"template {name!r} takes the fields {sorted(wanted)}; missing {sorted(missing)}, "
                          f"unknown {sorted(unknown)}")
    wrong = sorted(key for key, value in values.items() if not isinstance(value, str))
    if wrong:
        raise PromptError(f"template {name!r}: the values of {wrong} are not strings")
    return FIELD.sub(lambda match: values[match.group(1)], template(name))


# The tags the prompts put untrusted text between: the first message's own blocks (prompts/first_message/),
# and the blocks inside a task (prompts/check_task/, and the randomly suffixed ones of issue_task.py,
# workflow.py and pr_task.py), which a task's text legitimately closes itself.
OUTER_DELIMITERS = ("task", "untrusted_data", "environment", "project_instructions")
INNER_DELIMITERS = ("check_output", r"issue_\w*", r"ci_log_\w*", r"pr_request_\w*")


def _closing(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(rf"<(\s*/\s*)(?=(?:{'|'.join(names)})(?![\w-]))", re.IGNORECASE)


_CLOSING_ANY = _closing(OUTER_DELIMITERS + INNER_DELIMITERS)
_CLOSING_OUTER = _closing(OUTER_DELIMITERS)


def defuse_delimiters(text: str, *, outer_only: bool = False) -> str:
    """Untrusted text made safe to put between the prompts' delimiters: a closing tag (any case,
    spaces inside: `</task >`, `< /Task>`) has its slash escaped (`<\\/task>`), so the text cannot end
    its block early and go on as if it were gitbot's own words. `outer_only` is for a task's text as
    a whole, whose inner blocks gitbot closed itself (and defused inside when it built them)."""
    pattern = _CLOSING_OUTER if outer_only else _CLOSING_ANY
    return pattern.sub(lambda m: "<" + m.group(1).replace("/", "\\/"), text)
