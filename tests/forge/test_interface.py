"""The flow speaks only interface.py: it imports no adapter, and each adapter has every member of the
protocols it stands in for, with the same parameters (a renamed keyword would fail only at run time)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from gitbot.forge import interface
from gitbot.forge.github.actions_io import ActionsIO
from gitbot.forge.github.api import GitHubForge
from gitbot.forge.github.event import ActionsContext
from gitbot.forge.github.inputs import ActionInputs

FORGE_DIR = Path(interface.__file__).parent
ADAPTERS = ("gitbot.forge.github", "gitbot.forge.gitlab")


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("path", sorted(FORGE_DIR.glob("*.py")), ids=lambda p: p.name)
def test_the_flow_imports_no_adapter(path):
    # Lazy imports inside functions count too: ast.walk sees them.
    assert not {m for m in imported_modules(path) if m.startswith(ADAPTERS)}


def protocol_members(protocol: type) -> tuple[set[str], dict[str, inspect.Signature]]:
    attributes = set(protocol.__annotations__)
    methods = {}
    for name, value in vars(protocol).items():
        if name.startswith("_"):
            continue
        if isinstance(value, property):
            attributes.add(name)
        elif inspect.isfunction(value):
            methods[name] = inspect.signature(value)
    return attributes, methods


def has_attribute(cls: type, name: str) -> bool:
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    return name in fields or hasattr(cls, name) or name in getattr(cls, "__annotations__", {})


def parameters(signature: inspect.Signature) -> list[tuple[str, object]]:
    return [(p.name, p.kind) for p in signature.parameters.values()]


@pytest.mark.parametrize(
    "protocol,implementation",
    [
        (interface.Forge, GitHubForge),
        (interface.JobIO, ActionsIO),
        (interface.RunPlace, ActionsContext),
        (interface.Settings, ActionInputs),
    ],
    ids=lambda x: x.__name__,
)
def test_the_github_adapter_has_every_member_of_the_protocol(protocol, implementation):
    attributes, methods = protocol_members(protocol)
    missing = sorted(a for a in attributes if not has_attribute(implementation, a))
    if protocol is interface.JobIO:  # set in __init__, not declared on the class
        missing = [a for a in missing if a != "environ"]
        assert ActionsIO(environ={"CI": "true"}).environ == {"CI": "true"}
    assert missing == []
    for name, wanted in methods.items():
        method = getattr(implementation, name, None)
        assert callable(method), f"{implementation.__name__} has no {name}"
        assert parameters(inspect.signature(method)) == parameters(wanted), name


GITLAB_WORDS = interface.Terms(
    change="merge request", change_short="MR", change_prefix="!", run="pipeline", forge="GitLab",
    ci="pipeline", ci_product="GitLab CI/CD",
)


def test_the_model_reads_the_forges_words():
    """The tasks the model reads name the forge the flow was given, not GitHub (the GitHub text itself
    is pinned in tests/prompts_pinned/)."""
    from gitbot.forge.issue_task import IssueText, build_issue_task, select_comments
    from gitbot.forge.pr_task import build_pull_task
    from gitbot.forge.workflow import FailedJob, build_workflow_task
    from tests.forge.test_pr_task import context

    issue = build_issue_task(IssueText(4, "t", "b", "ada"), select_comments([], None), repository="g/p",
                             terms=GITLAB_WORDS)
    failed = build_workflow_task(workflow="test", branch="main", sha="a" * 40, run_url="https://x/-/pipelines/1",
                                 jobs=[FailedJob("unit", "https://x/-/jobs/2", [], "E boom")], notes=[],
                                 check_command=None, terms=GITLAB_WORDS)
    for continued in (False, True):
        ctx = context()
        ctx.terms = GITLAB_WORDS
        pull = build_pull_task(ctx, continued=continued, check_command=None)
        assert "merge request !9" in pull.text and pull.title.endswith("on !9")
        assert "GitHub" not in pull.text.replace(ctx.pull.author, "")
    assert "of the GitLab repository g/p" in issue.text and "GitHub" not in issue.text
    assert "The GitLab CI/CD pipeline 'test' failed" in failed.text and "GitHub" not in failed.text
