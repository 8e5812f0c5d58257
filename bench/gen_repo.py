"""A generated, committed git repository of N source files for benchmarks.

Shaped like a real monorepo rather than N copies of one file: packages of 20-60 files in
nested directories, one dominant language per package, files of 30-400 lines with classes,
methods, free functions, comments, TODO markers, string literals and cross-file calls, plus
what a real tree also has: a .gitignore with ignored build output, a hidden directory, binary
assets and docs. Deterministic for a given seed.

    from bench.gen_repo import make_repo
    make_repo(tmp / "repo", 5000)                      # all languages
    make_repo(tmp / "py", 500, languages=("python",))  # one language
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

LANGUAGES = ("python", "javascript", "typescript", "go", "rust", "java", "c", "cpp", "ruby")
EXTENSIONS = {"python": ".py", "javascript": ".js", "typescript": ".ts", "go": ".go", "rust": ".rs",
              "java": ".java", "c": ".c", "cpp": ".cpp", "ruby": ".rb"}

_WORD_TEXT = """account address agent alert archive asset audit batch billing blob buffer bundle cache
calendar cart channel chart checkout client cluster config connection context cookie counter cursor
customer dashboard device digest domain draft email engine entry event export feature feed filter
gateway graph group handler header health history index inventory invoice job journal key ledger
limit listener loader lock log mailbox manifest member message metric mirror model monitor node
notice order owner packet page parser payment peer pipeline plan policy pool portal price profile
project queue quota record region registry release report request resource response route rule
schedule schema scope search secret segment sensor session setting shard signal snapshot source
stage state storage stream subscription summary table task template tenant ticket timer token topic
trace tracker transfer trigger upload usage user vault version view volume webhook worker zone"""

_VERB_TEXT = """add apply build check clear close compute convert copy count create decode delete encode
ensure fetch find flush format get handle init insert load lookup merge normalize open parse patch
prepare process publish push read refresh register remove render reset resolve retry save scan
send serialize set sort split start stop store sync update validate verify write"""
WORDS = _WORD_TEXT.split()
VERBS = _VERB_TEXT.split()


def _snake(rng: random.Random, parts: int = 2) -> str:
    return "_".join([rng.choice(VERBS)] + [rng.choice(WORDS) for _ in range(parts - 1)])


def _camel(rng: random.Random, parts: int = 2) -> str:
    words = [rng.choice(VERBS)] + [rng.choice(WORDS) for _ in range(parts - 1)]
    return words[0] + "".join(w.capitalize() for w in words[1:])


def _pascal(rng: random.Random, parts: int = 2) -> str:
    return "".join(rng.choice(WORDS).capitalize() for _ in range(parts))


def _comment_text(rng: random.Random) -> str:
    marker = rng.choice(["", "", "", "", "TODO: ", "FIXME: ", "NOTE: "])
    return marker + " ".join(rng.choice(WORDS + VERBS) for _ in range(rng.randint(4, 10)))


def _python(rng: random.Random, names: list[str]) -> str:
    out = ["import logging", "import os", "from dataclasses import dataclass", "",
           f"log = logging.getLogger({rng.choice(WORDS)!r})", ""]
    for _ in range(rng.randint(1, 3)):
        cls = _pascal(rng)
        out += ["", "@dataclass", f"class {cls}:", f'    """{_comment_text(rng)}."""', "",
                f"    {rng.choice(WORDS)}_id: int = 0",
                f"    {rng.choice(WORDS)}: str = {rng.choice(WORDS)!r}", ""]
        for _ in range(rng.randint(2, 7)):
            method = _snake(rng)
            names.append(method)
            out += [f"    def {method}(self, {rng.choice(WORDS)}, limit=10):",
                    f"        # {_comment_text(rng)}",
                    f"        result = [{rng.choice(WORDS)} for _ in range(limit)]",
                    f"        if len(result) > {rng.randint(1, 99)}:",
                    f"            log.warning(\"{_comment_text(rng)}: %s\", result)",
                    f"        return {rng.choice(names)}(result) if result else None", ""]
    for _ in range(rng.randint(1, 6)):
        function = _snake(rng)
        names.append(function)
        out += ["", f"def {function}(items, *, strict=False):", f'    """{_comment_text(rng)}."""',
                "    total = 0", "    for item in items:", "        total += len(str(item))",
                f"    return os.environ.get({rng.choice(WORDS).upper()!r}, total)", ""]
    return "\n".join(out) + "\n"


def _javascript(rng: random.Random, names: list[str], typed: bool = False) -> str:

    def t(annotation: str) -> str:  # type annotations appear only in TypeScript
        return annotation if typed else ""

    out = ["'use strict';", f"const {rng.choice(WORDS)}Store = require('./{rng.choice(WORDS)}');", ""]
    for _ in range(rng.randint(1, 3)):
        cls = _pascal(rng)
        out += [f"// {_comment_text(rng)}", f"class {cls} {{", f"  constructor(options{t(': Options')}) {{",
                "    this.options = options;", "  }", ""]
        for _ in range(rng.randint(2, 6)):
            method = _camel(rng)
            names.append(method)
            out += [f"  {method}(value{t(': number')}){t(': string')} {{", f"    // {_comment_text(rng)}",
                    f"    if (value > {rng.randint(1, 99)}) {{",
                    f"      return `{rng.choice(WORDS)}-${{value}}`;",
                    "    }", f"    return {rng.choice(names)}(value);", "  }", ""]
        out += ["}", ""]
    for _ in range(rng.randint(1, 5)):
        function = _camel(rng)
        names.append(function)
        out += [f"function {function}(input{t(': unknown')}) {{", "  const items = [].concat(input);",
                f"  return items.map((item) => item.{rng.choice(WORDS)}).filter(Boolean);", "}", ""]
    out.append(f"module.exports = {{ {', '.join(names[-3:])} }};")
    return "\n".join(out) + "\n"


def _go(rng: random.Random, names: list[str]) -> str:
    out = [f"package {rng.choice(WORDS)}", "", 'import (', '\t"errors"', '\t"fmt"', ')', ""]
    for _ in range(rng.randint(1, 3)):
        struct = _pascal(rng)
        out += [f"// {struct} {_comment_text(rng)}.", f"type {struct} struct {{",
                f"\t{_pascal(rng, 1)} string",
                f"\t{_pascal(rng, 1)} int", "}", ""]
        for _ in range(rng.randint(2, 6)):
            method = _pascal(rng)
            names.append(method)
            out += [f"func (s *{struct}) {method}(n int) (string, error) {{", f"\t// {_comment_text(rng)}",
                    f"\tif n > {rng.randint(1, 99)} {{", f'\t\treturn "", errors.New("{_comment_text(rng)}")',
                    "\t}", f'\treturn fmt.Sprintf("%s-%d", s.{_pascal(rng, 1)}, n), nil', "}", ""]
    return "\n".join(out) + "\n"


def _rust(rng: random.Random, names: list[str]) -> str:
    out = ["use std::collections::HashMap;", ""]
    for _ in range(rng.randint(1, 3)):
        struct = _pascal(rng)
        out += [f"/// {_comment_text(rng)}", f"pub struct {struct} {{", f"    {rng.choice(WORDS)}: u64,",
                "    index: HashMap<String, u64>,", "}", "", f"impl {struct} {{"]
        for _ in range(rng.randint(2, 6)):
            method = _snake(rng)
            names.append(method)
            out += [f"    pub fn {method}(&self, key: &str) -> Option<u64> {{",
                    f"        // {_comment_text(rng)}",
                    "        self.index.get(key).copied()", "    }", ""]
        out += ["}", ""]
    return "\n".join(out) + "\n"


def _java(rng: random.Random, names: list[str], cls: str) -> str:
    out = [f"package com.example.{rng.choice(WORDS)};", "", "import java.util.List;", "",
           f"/** {_comment_text(rng)} */", f"public class {cls} {{",
           f"    private final String {rng.choice(WORDS)};", ""]
    for _ in range(rng.randint(3, 9)):
        method = _camel(rng)
        names.append(method)
        out += [f"    public int {method}(List<String> items) {{", f"        // {_comment_text(rng)}",
                "        int total = 0;", "        for (String item : items) {",
                "            total += item.length();",
                "        }", f"        return total * {rng.randint(1, 99)};", "    }", ""]
    out.append("}")
    return "\n".join(out) + "\n"


def _c(rng: random.Random, names: list[str], cpp: bool = False) -> str:
    out = ["#include <stdio.h>", "#include <stdlib.h>", ""]
    if cpp:
        cls = _pascal(rng)
        out += [f"namespace {rng.choice(WORDS)} {{", "", f"class {cls} {{", "public:"]
        for _ in range(rng.randint(2, 5)):
            method = _snake(rng)
            names.append(method)
            out += [f"    int {method}(int n) const {{", f"        // {_comment_text(rng)}",
                    f"        return n * {rng.randint(1, 99)};", "    }"]
        out += ["};", "", "}", ""]
    struct = _snake(rng)
    out += [f"/* {_comment_text(rng)} */", f"struct {struct} {{", "    int count;", "    char *label;",
            "};", ""]
    for _ in range(rng.randint(2, 6)):
        function = _snake(rng)
        names.append(function)
        out += [f"int {function}(struct {struct} *item, int limit) {{", f"    /* {_comment_text(rng)} */",
                "    for (int i = 0; i < limit; i++) {", "        item->count += i;", "    }",
                f'    printf("{rng.choice(WORDS)} %d\\n", item->count);', "    return item->count;", "}", ""]
    return "\n".join(out) + "\n"


def _ruby(rng: random.Random, names: list[str]) -> str:
    out = ["# frozen_string_literal: true", "", f"module {_pascal(rng, 1)}"]
    for _ in range(rng.randint(1, 3)):
        out += [f"  # {_comment_text(rng)}", f"  class {_pascal(rng)}"]
        for _ in range(rng.randint(2, 6)):
            method = _snake(rng)
            names.append(method)
            out += [f"    def {method}(items, limit: 10)", f"      # {_comment_text(rng)}",
                    "      items.first(limit).map(&:to_s)", "    end", ""]
        out += ["  end"]
    out.append("end")
    return "\n".join(out) + "\n"


def _source(language: str, rng: random.Random, names: list[str], stem: str) -> str:
    if language == "python":
        return _python(rng, names)
    if language in ("javascript", "typescript"):
        return _javascript(rng, names, typed=language == "typescript")
    if language == "go":
        return _go(rng, names)
    if language == "rust":
        return _rust(rng, names)
    if language == "java":
        return _java(rng, names, stem)
    if language in ("c", "cpp"):
        return _c(rng, names, cpp=language == "cpp")
    return _ruby(rng, names)


def make_repo(path: Path, n_files: int, languages: tuple[str, ...] = LANGUAGES, seed: int = 0,
              commit: bool = True) -> Path:
    """Create a git repository at `path` holding `n_files` tracked source files; return `path`.

    Besides the source files it writes a .gitignore, ignored build output (`build/`,
    `node_modules/`, `*.log`), a hidden `.cache/` directory and a few binary assets, so
    tools that must skip those are measured doing so.
    """
    unknown = set(languages) - set(LANGUAGES)
    if unknown:
        raise ValueError(f"unknown languages: {sorted(unknown)}; choose from {LANGUAGES}")
    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    names: list[str] = ["len", "str", "print"]
    written = 0
    package_index = 0
    while written < n_files:
        language = languages[package_index % len(languages)]
        top = rng.choice(["services", "libs", "apps", "tools", "internal"])
        package = path / top / f"{rng.choice(WORDS)}_{package_index}"
        if rng.random() < 0.4:
            package = package / rng.choice(["core", "api", "util", "impl"])
        package.mkdir(parents=True, exist_ok=True)
        for _ in range(min(rng.randint(20, 60), n_files - written)):
            stem = _pascal(rng) if language == "java" else _snake(rng)
            target = package / f"{stem}{EXTENSIONS[language]}"
            if target.exists():
                continue
            target.write_text(_source(language, rng, names, stem), encoding="utf-8")
            written += 1
        names[:] = names[-200:]  # keep cross-file references local-ish, like real packages
        package_index += 1
    _extras(path, rng)
    if commit:
        _git(path, "init", "-q")
        _git(path, "add", "-A")
        _git(path, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m",
             f"generated: {n_files} files")
    return path


def _extras(path: Path, rng: random.Random) -> None:
    (path / ".gitignore").write_text("build/\nnode_modules/\n*.log\n", encoding="utf-8")
    (path / "README.md").write_text("# generated repository\n\nFor benchmarks. " + _comment_text(rng) + "\n")
    for directory, count in (("build", 40), ("node_modules/dep", 40), (".cache", 10)):
        (path / directory).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            (path / directory / f"gen_{i}.js").write_text(_javascript(rng, ["x"]), encoding="utf-8")
    (path / "server.log").write_text("\n".join(_comment_text(rng) for _ in range(500)) + "\n")
    (path / "assets").mkdir(exist_ok=True)
    for i in range(5):
        (path / "assets" / f"image_{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + rng.randbytes(20_000))


def _git(path: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)


if __name__ == "__main__":
    import sys
    import tempfile
    import time

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    target = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp(prefix="gitbot-gen-")) / "repo"
    began = time.perf_counter()
    make_repo(target, count)
    print(f"{count} files in {target} ({time.perf_counter() - began:.1f} s)")
