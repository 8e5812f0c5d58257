"""zizmor (the GitHub Actions security linter) finds nothing in action.yml and the workflows, and every
finding it is told to ignore is justified next to the line it excuses."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AUDITED = [ROOT / "action.yml", *sorted((ROOT / ".github" / "workflows").glob("*.yml"))]
IGNORE = re.compile(r"#\s*zizmor:\s*ignore\[(?P<rules>[^\]]+)\](?P<why>.*)$")


def zizmor() -> str:
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    binary = shutil.which("zizmor", path=search)
    assert binary, "zizmor is not installed: it is in the test extra (pip install -e '.[test]')"
    return binary


def test_zizmor_finds_nothing():
    done = subprocess.run([zizmor(), "--offline", "--format=json", *map(str, AUDITED)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    findings = json.loads(done.stdout or "[]")
    assert findings == [], json.dumps(findings, indent=1)[:4000]
    assert done.returncode == 0, done.stderr


def test_every_ignored_finding_says_why():
    ignored = []
    for path in AUDITED:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if match := IGNORE.search(line):
                ignored.append(match.group("rules"))
                why = match.group("why").strip(" -—")
                assert len(why) >= 20, f"{path.name}:{number}: say why the finding is safe to ignore"
    assert "dangerous-triggers" in ignored  # workflow_run, explained where gitbot.yml uses it


def test_checkouts_keep_no_credential():
    for path in AUDITED[1:]:
        text = path.read_text()
        for checkout in re.finditer(r"uses: actions/checkout@[^\n]*\n(?P<rest>(?:\s{8,}.*\n)*)", text):
            assert "persist-credentials: false" in checkout.group("rest"), path.name
