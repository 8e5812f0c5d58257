"""prompts/ and its renderer: every template is used, rendered with exactly the fields its callers give,
and ships in the wheel; a template and its caller that disagree fail loudly instead of sending the
model a half-filled text."""

from __future__ import annotations

import ast
import glob
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

from gitbot import prompting
from gitbot.prompting import PROMPTS_DIR, PromptError, fields, render_prompt, template
from gitbot.tools.registry import all_tools

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gitbot"


def template_names() -> set[str]:
    return {path.relative_to(PROMPTS_DIR).with_suffix("").as_posix() for path in PROMPTS_DIR.rglob("*.md")}


def call_sites() -> dict[str, list[tuple[str, frozenset[str]]]]:
    """Every literal render_prompt(name, field=...) in gitbot/: name → [(where, the fields it passes)]."""
    sites: dict[str, list[tuple[str, frozenset[str]]]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "render_prompt"):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            assert all(k.arg is not None for k in node.keywords), f"{where}: **fields cannot be checked"
            name = node.args[0]
            if isinstance(name, ast.JoinedStr):  # the tool descriptions, one per registered tool
                assert where.startswith("gitbot/tools/base.py"), f"{where}: template names are literal"
                continue
            assert isinstance(name, ast.Constant) and isinstance(name.value, str), f"{where}: literal name"
            sites[name.value].append((where, frozenset(k.arg for k in node.keywords)))
    return sites


@pytest.mark.slow
def test_every_template_is_used_and_every_used_template_exists():
    sites = call_sites()
    tools = {f"tools/{tool.name}" for tool in all_tools()}
    assert set(sites) - template_names() == set(), "render_prompt names a template that does not exist"
    assert tools - template_names() == set(), "a tool without a description"
    assert template_names() - set(sites) - tools == set(), "templates nothing renders"


@pytest.mark.slow
def test_every_call_gives_exactly_the_fields_of_its_template():
    mismatches = [f"{where}: {name} takes {sorted(fields(name))}, gets {sorted(given)}"
                  for name, calls in call_sites().items() for where, given in calls if given != fields(name)]
    assert mismatches == []


@pytest.mark.parametrize("name", sorted(template_names()))
def test_every_template_renders_with_its_fields(name):
    values = {field: f"<{field} value>" for field in fields(name)}
    text = render_prompt(name, **values)
    assert text.strip(), "an empty template"
    assert "{{" not in text and "}}" not in text
    for value in values.values():
        assert value in text
    assert not text.endswith("\n") or name == "system", "the template's final newline is not part of it"


def test_a_missing_field_is_refused():
    with pytest.raises(PromptError, match=r"missing \['diff'\]"):
        render_prompt("completion/review")


def test_an_unknown_field_is_refused():
    with pytest.raises(PromptError, match=r"unknown \['colour'\]"):
        render_prompt("completion/review", diff="+x", colour="red")


def test_a_value_that_is_not_text_is_refused():
    with pytest.raises(PromptError, match="not strings"):
        render_prompt("first_message/more_files", count=3)


def test_an_unknown_template_is_refused():
    with pytest.raises(PromptError, match="no template"):
        render_prompt("no/such/template")


def test_values_are_put_in_literally_in_one_pass():
    # Untrusted text (an issue, a log) that spells a field stays as it is, and so does a backslash.
    text = render_prompt("completion/review", diff="{{diff}} \\1 $HOME {x}")
    assert "{{diff}} \\1 $HOME {x}" in text


def test_a_malformed_field_in_a_template_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "broken.md").write_text("Hello {{ name }}\n")
    (tmp_path / "plain.md").write_text("Use $HOME, $(cmd) and *.{ts,tsx}.\n\n")
    monkeypatch.setattr(prompting, "PROMPTS_DIR", tmp_path)
    template.cache_clear()
    try:
        with pytest.raises(PromptError, match="malformed field"):
            render_prompt("broken", name="x")
        # Shell and glob syntax is plain text; only the one final newline is dropped.
        assert render_prompt("plain") == "Use $HOME, $(cmd) and *.{ts,tsx}.\n"
    finally:
        template.cache_clear()


def test_the_package_data_ships_every_template():
    """gitbot/prompts links to prompts/; pyproject's package-data must match every file under it, or a
    non-editable install (the README's demo command) is missing text."""
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = {Path(found).resolve() for pattern in patterns["gitbot"]
               for found in glob.glob(str(PACKAGE / pattern), recursive=True)}
    assert (PACKAGE / "prompts").resolve() == (ROOT / "prompts").resolve()
    assert {path.resolve() for path in PROMPTS_DIR.rglob("*.md")} - shipped == set()
