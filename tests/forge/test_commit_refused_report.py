"""What the Action says when the commit gate refuses: the paths, made safe, never content; nothing pushed."""

from __future__ import annotations

import io
from types import SimpleNamespace

from gitbot.agent.result import RunResult, Status
from gitbot.fixcheck.gate import Stopped, shown
from gitbot.forge.github.actions_io import ActionsIO
from gitbot.forge.interface import Terms
from gitbot.forge.report import Report
from gitbot.secrets import Secrets


def test_a_refused_commit_names_each_path_safely_and_sets_the_status(tmp_path):
    out, outputs = io.StringIO(), tmp_path / "outputs"
    actions_io = ActionsIO(Secrets(), stdout=out, environ={"GITHUB_OUTPUT": str(outputs)})
    job = SimpleNamespace(io=actions_io, ctx=SimpleNamespace(run_url="https://github.com/o/r/actions/runs/1", run_id="1"),
                          artifact_notes=[], secrets=Secrets(), trigger=None, forge=SimpleNamespace(terms=Terms()))
    report = Report.__new__(Report)
    report.job, report.plan, comments = job, None, []
    report.comment = comments.append
    result = RunResult(status=Status.COMPLETED, run_id="20261101-101010-abcdef", model="m", summary="s")
    hostile = shown(b"x`y\n::error::forged\xff")
    code = report.refuse_commit(result, [Stopped(hostile, "the run did not change it"),
                                         Stopped(".env", "it matches files.read_deny")])
    assert code == 1
    [comment] = comments
    assert "`` x`y\\n::error::forged\\xff `` (the run did not change it)" in comment
    assert "`.env` (it matches files.read_deny)" in comment and "Nothing was pushed" in comment
    log = out.getvalue()
    assert "\n::error::forged" not in log and "::error title=gitbot%3A commit refused::" in log
    assert "commit_refused" in outputs.read_text()
