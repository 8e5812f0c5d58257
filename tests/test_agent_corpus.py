"""The agent-command corpus (bench/corpus/) and its classifier: real lines, the kinds the bench reports."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from bench.agent_corpus_kinds import classify

CORPUS = Path(__file__).resolve().parent.parent / "bench" / "corpus" / "agent_commands.jsonl.gz"


@pytest.mark.parametrize(("command", "kind"), [
    ("nl -ba django/db/models/query.py | sed -n '870,900p'", "read"),
    ("grep -rn \"def union(\" django/db/models/", "read"),
    ("cd /testbed && python reproduce_issue.py", "run"),
    ("./tests/runtests.py admin_views --parallel 1", "run"),
    ("bin/test sympy/physics/units/tests/test_quantities.py", "run"),
    ("python -m pytest -q tests/test_ext_autodoc.py", "run"),
    ("pip install -e .", "setup"),
    ("python -m pip install numpy", "setup"),
    ("sed -i 's/timeout=5/timeout=10/' reproduce_issue.py", "edit"),
    ("cat <<'EOF' > repro.py\nprint('a > b')\nEOF\npython repro.py", "edit"),
    ("rm reproduce_issue.py", "edit"),
    ("git diff", "git"),
    ("# look again\nsed -n '71,130p' sphinx/domains/python.py", "read"),
    ("echo done", "other"),
])
def test_classifier_kinds(command: str, kind: str):
    assert classify(command) == kind


def test_the_corpus_is_real_agents_on_several_projects():
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    assert len(rows) >= 10_000
    assert len({r["model"] for r in rows}) >= 2 and len({r["project"] for r in rows}) >= 10
    assert {r["kind"] for r in rows} <= {"read", "run", "setup", "edit", "git", "other"}
    # The kind is the classifier's, so the bench's per-kind figures follow from the file alone.
    sample = rows[::500]
    assert [r["kind"] for r in sample] == [classify(r["command"]) for r in sample]
    assert Counter(r["kind"] for r in rows).most_common(1)[0][0] == "read"
