"""Recall and false positives of gitbot's scanner against detect-secrets, on plain secrets under a secret's
name (issue 20, finding 7).

    .venv/bin/python bench/bench_secret_recall.py        # needs detect-secrets (a test dependency)

- recall on tests/keyword_corpus.py's planted set (one line per secret, written to a file of the name
  the format uses, so detect-secrets' per-language rules apply): gitbot's `scan`, detect-secrets with its
  default plugins and filters, and its KeywordDetector alone;
- false positives: findings on the corpus' look-alike lines, and gitbot's keyword-rule findings on this
  repository's tracked files (gitbot/ and the docs should have none; tests/ holds fixture credentials).
Prints counts; asserts nothing (tests/test_secretscan_keywords.py holds the floor).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitbot.secretscan import KEYWORD_KIND, scan
from tests.keyword_corpus import NOT_SECRETS, planted


def gitbot_finds(line: str, value: str) -> bool:
    at = line.index(value)
    return any(f.start <= at < f.end for f in scan(line))


def detect_secrets_values(lines: list[tuple[str, str]], *, keyword_only: bool) -> list[set[str]]:
    """The secret values detect-secrets reports for each (file name, line), each in a file of its own."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings, transient_settings

    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, line) in enumerate(lines):
            path = Path(tmp) / str(i) / name
            path.parent.mkdir()
            path.write_text(line + "\n")
            settings = transient_settings({"plugins_used": [{"name": "KeywordDetector"}]}) if keyword_only \
                else default_settings()
            with settings:
                collection = SecretsCollection()
                collection.scan_file(str(path))
            found.append({s.secret_value for secrets in collection.data.values() for s in secrets})
    return found


def main() -> None:
    items = planted()
    kinds = Counter(kind for kind, *_ in items)
    print(f"planted: {len(items)} secrets of {len(kinds)} kinds ({', '.join(sorted(kinds))})")
    ours = [gitbot_finds(line, value) for _kind, _name, line, value in items]
    rows = [("gitbot secretscan", ours)]
    try:
        lines = [(name, line) for _kind, name, line, _value in items]
        for label, keyword_only in (("detect-secrets (default plugins)", False), ("detect-secrets KeywordDetector", True)):
            values = detect_secrets_values(lines, keyword_only=keyword_only)
            rows.append((label, [value in got for (*_, value), got in zip(items, values, strict=True)]))
    except ImportError:
        print("detect-secrets: not installed (pip install detect-secrets to compare)")
    for label, hits in rows:
        print(f"{label:36} recall {sum(hits)}/{len(hits)} = {sum(hits) / len(hits):.0%}")
        missed = Counter(kind for (kind, *_), hit in zip(items, hits, strict=True) if not hit)
        if missed:
            print(f"{'':36} missed: {dict(missed)}")

    print(f"\nlook-alike lines (not secrets): {len(NOT_SECRETS)}")
    print(f"{'gitbot secretscan':36} flags {sum(bool(scan(line)) for _name, line in NOT_SECRETS)}")
    if len(rows) > 1:
        for label, keyword_only in (("detect-secrets (default plugins)", False), ("detect-secrets KeywordDetector", True)):
            flagged = detect_secrets_values(NOT_SECRETS, keyword_only=keyword_only)
            print(f"{label:36} flags {sum(bool(values) for values in flagged)}")

    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    per_top: Counter[str] = Counter()
    for name in filter(None, tracked.decode().split("\0")):
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        per_top[name.split("/")[0] if "/" in name else "(top)"] += sum(f.kind == KEYWORD_KIND for f in scan(text))
    print(f"\nkeyword-rule findings in this repository's tracked files: {dict(+per_top) or 'none'}")
    own = Counter(f.kind for path in sorted((ROOT / "gitbot").rglob("*.py")) for f in scan(path.read_text("utf-8")))
    print(f"findings of any rule in gitbot/: {dict(own) or 'none'}")


if __name__ == "__main__":
    main()
