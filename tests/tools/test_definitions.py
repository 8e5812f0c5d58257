"""list_code_definition_names and file_outline: real grammars, real files, a real on-disk cache."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gitbot.policy import Decision, Policy
from gitbot.secrets import Secrets
from gitbot.tools import definitions
from gitbot.tools.base import ToolContext, ToolDenied, ToolError
from gitbot.tools.definitions import (
    LIST_CODE_DEFINITION_NAMES,
    MAX_DEFINITIONS,
    STATS,
    file_outline,
    list_code_definition_names,
)
from gitbot.tools.tag_cache import CACHE_PATH_IN_GIT_DIR


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def ctx(repo: Path) -> ToolContext:
    return ToolContext(repo, Policy(), Secrets())


def write(repo: Path, relpath: str, content: str) -> Path:
    path = repo / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return path


def entries(output: str) -> list[tuple[int, int, str]]:
    """(line, depth, text) of each definition line in the tool's output."""
    return [(int(line), len(indent) // 2, text)
            for line, indent, text in re.findall(r"^\s*(\d+) \| ( *)(.+)$", output, re.MULTILINE)]


def line_of(source: str, needle: str) -> int:
    """1-based line of the first occurrence of `needle`, so expectations follow the snippet."""
    return source[:source.index(needle)].count("\n") + 1


def cache_file(repo: Path) -> Path:
    return repo / ".git" / CACHE_PATH_IN_GIT_DIR


# One small, real snippet per language; each expectation is (text on the line, shown text, depth).
SNIPPETS: dict[str, tuple[str, str, list[tuple[str, str, int]]]] = {
    "python": ("shapes.py", '''import math

class Shape(Base):
    sides = 0

    def area(self):
        def helper():
            return 1
        return helper()

    @property
    def name(self):
        return "shape"

    class Meta:
        def describe(self): ...

def unit_square():
    return Shape()

async def fetch_all():
    pass
''', [("class Shape", "class Shape", 0), ("def area", "def area", 1), ("def name", "def name", 1),
      ("class Meta", "class Meta", 1), ("def describe", "def describe", 2),
      ("def unit_square", "def unit_square", 0), ("async def fetch_all", "def fetch_all", 0)]),
    "javascript": ("animal.js", '''class Animal {
  constructor(name) { this.name = name; }
  speak() { return 1; }
  #secret() {}
  handle = () => { function localHelper() {} };
}
function greet(x) { return x; }
const add = (a, b) => a + b;
function* counter() {}
module.exports.util = function () {};
''', [("class Animal", "class Animal", 0), ("constructor(", "method constructor", 1),
      ("speak(", "method speak", 1), ("#secret", "method #secret", 1), ("handle =", "method handle", 1),
      ("function greet", "function greet", 0), ("const add", "function add", 0),
      ("function* counter", "function counter", 0), ("module.exports.util", "function util", 0)]),
    "typescript": ("geometry.ts", '''interface Shape {
  area(): number;
}
type Id = string | number;
enum Color { Red, Green }
export abstract class Base implements Shape {
  abstract area(): number;
  describe(): string { return ""; }
}
export function make(id: Id): Base { return null as any; }
namespace Geometry {
  export function dist(): number { return 0; }
}
const double = (x: number): number => x * 2;
''', [("interface Shape", "interface Shape", 0), ("area(): number;\n}", "method area", 1),
      ("type Id", "type Id", 0), ("enum Color", "enum Color", 0), ("abstract class Base", "class Base", 0),
      ("abstract area", "method area", 1), ("describe()", "method describe", 1),
      ("function make", "function make", 0), ("namespace Geometry", "namespace Geometry", 0),
      ("function dist", "function dist", 1), ("const double", "function double", 0)]),
    "tsx": ("App.tsx", '''interface Props { title: string }
export function App(props: Props) { return <div>{props.title}</div>; }
export class Widget extends React.Component<Props> {
  render() { return <span />; }
}
''', [("interface Props", "interface Props", 0), ("function App", "function App", 0),
      ("class Widget", "class Widget", 0), ("render()", "method render", 1)]),
    "go": ("server.go", '''package main

type Server struct {
	addr string
}

type Handler interface {
	Serve(r int) error
}

type ID int

func NewServer(addr string) *Server {
	return &Server{addr: addr}
}

func (s *Server) Start() error {
	f := func() {}
	f()
	return nil
}

func (s Server) Addr() string { return s.addr }
''', [("type Server", "struct Server", 0), ("type Handler", "interface Handler", 0),
      ("Serve(r int)", "method Serve", 1), ("type ID", "type ID", 0),
      ("func NewServer", "function NewServer", 0), ("func (s *Server) Start", "method Server.Start", 0),
      ("func (s Server) Addr", "method Server.Addr", 0)]),
    "rust": ("lib.rs", '''use std::fmt;

pub struct Point { x: i32, y: i32 }

pub enum Shape { Circle, Square }

pub trait Area {
    fn area(&self) -> f64;
}

impl Point {
    pub fn new(x: i32, y: i32) -> Self { Point { x, y } }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { Ok(()) }
}

fn main() {
    fn helper() {}
}

mod tests {
    fn it_works() {}
}

macro_rules! square { ($x:expr) => { $x * $x }; }
''', [("pub struct Point", "struct Point", 0), ("pub enum Shape", "enum Shape", 0),
      ("pub trait Area", "trait Area", 0), ("fn area", "method area", 1), ("impl Point", "impl Point", 0),
      ("pub fn new", "method new", 1), ("impl fmt::Display", "impl fmt::Display for Point", 0),
      ("fn fmt", "method fmt", 1), ("fn main", "function main", 0), ("mod tests", "module tests", 0),
      ("fn it_works", "function it_works", 1), ("macro_rules!", "macro square", 0)]),
    "java": ("Account.java", '''package demo;

public class Account {
    private int balance;

    public Account(int initial) { balance = initial; }

    @Override
    public String toString() { return ""; }

    public void deposit(int amount) {
        Runnable r = new Runnable() { public void run() {} };
    }

    interface Listener { void changed(int v); }

    enum Kind { A, B }
}
''', [("public class Account", "class Account", 0), ("public Account(", "constructor Account", 1),
      ("toString()", "method toString", 1), ("void deposit", "method deposit", 1),
      ("interface Listener", "interface Listener", 1), ("void changed", "method changed", 2),
      ("enum Kind", "enum Kind", 1)]),
    "c": ("util.c", '''#include <stdio.h>

#define MAX(a, b) ((a) > (b) ? (a) : (b))

struct point { int x; int y; };

typedef struct { int w; } size2;

enum color { RED, GREEN };

int add(int a, int b);

int add(int a, int b) {
    return a + b;
}

static char *name(void) { return "x"; }

void declared_only(int);
''', [("#define MAX", "macro MAX", 0), ("struct point", "struct point", 0), ("size2;", "type size2", 0),
      ("enum color", "enum color", 0), ("int add(int a, int b) {", "function add", 0),
      ("char *name", "function name", 0), ("void declared_only", "prototype declared_only", 0)]),
    "cpp": ("circle.cpp", '''#include <string>

namespace shapes {

class Circle {
public:
    Circle(double r);
    double area() const;
    ~Circle() {}
private:
    double r_;
};

double Circle::area() const { return 3.14 * r_ * r_; }

struct Pair { int a; int b; };

}

template <typename T>
T maxOf(T a, T b) { return a > b ? a : b; }

int main() { return 0; }
''', [("namespace shapes", "namespace shapes", 0), ("class Circle", "class Circle", 1),
      ("Circle(double r)", "method Circle", 2), ("double area()", "method area", 2),
      ("~Circle", "method ~Circle", 2), ("Circle::area", "method Circle::area", 1),
      ("struct Pair", "struct Pair", 1), ("T maxOf", "function maxOf", 0), ("int main", "function main", 0)]),
    "ruby": ("billing.rb", '''module Billing
  class Invoice < Base
    def initialize(total)
      @total = total
    end

    def self.build
      new(0)
    end

    def paid?
      true
    end
  end
end

def helper
end
''', [("module Billing", "module Billing", 0), ("class Invoice", "class Invoice", 1),
      ("def initialize", "def initialize", 2), ("def self.build", "def self.build", 2),
      ("def paid?", "def paid?", 2), ("def helper", "def helper", 0)]),
}


@pytest.mark.parametrize("language", sorted(SNIPPETS))
def test_definitions_of_each_language(ctx, repo, language):
    filename, source, expected = SNIPPETS[language]
    write(repo, f"src/{filename}", source)
    output = list_code_definition_names(ctx, {"path": f"src/{filename}"})
    assert output.splitlines()[0] == f"src/{filename}:"
    assert entries(output) == [(line_of(source, needle), depth, text) for needle, text, depth in expected]


def test_file_outline_gives_line_kind_and_name(repo):
    filename, source, _ = SNIPPETS["python"]
    path = write(repo, filename, source)
    outline = file_outline(path)
    assert outline[:3] == [(line_of(source, "class Shape"), "class", "Shape"),
                           (line_of(source, "def area"), "method", "area"),
                           (line_of(source, "def name"), "method", "name")]
    assert outline[-1] == (line_of(source, "async def"), "function", "fetch_all")


def test_file_outline_outside_a_repository_and_for_other_files(tmp_path):
    path = tmp_path / "loose.go"
    path.write_text("package x\n\nfunc Loose() {}\n")
    assert file_outline(path) == [(3, "function", "Loose")]
    (tmp_path / "notes.txt").write_text("def not_code(): pass\n")
    assert file_outline(tmp_path / "notes.txt") == []
    assert file_outline(tmp_path / "missing.py") == []


def test_a_directory_lists_its_own_files_only(ctx, repo):
    write(repo, "pkg/a.py", "def alpha():\n    pass\n")
    write(repo, "pkg/b.js", "function beta() {}\n")
    write(repo, "pkg/notes.md", "# def not_code\n")
    write(repo, "pkg/sub/deep.py", "def deep():\n    pass\n")
    output = list_code_definition_names(ctx, {"path": "pkg"})
    assert output == "pkg/a.py:\n   1 | def alpha\n\npkg/b.js:\n   1 | function beta"


def test_ignored_hidden_and_denied_files_are_left_out(repo):
    class DenyPrivate(Policy):
        def check_read(self, relpath: str) -> Decision:
            return Decision(not relpath.startswith("pkg/private"), "private files are off limits")

    ctx = ToolContext(repo, DenyPrivate(), Secrets())
    write(repo, ".gitignore", "generated.py\n")
    write(repo, "pkg/generated.py", "def generated():\n    pass\n")
    write(repo, "pkg/.hidden.py", "def hidden():\n    pass\n")
    write(repo, "pkg/private_keys.py", "def private():\n    pass\n")
    write(repo, "pkg/public.py", "def public():\n    pass\n")
    output = list_code_definition_names(ctx, {"path": "pkg"})
    assert entries(output) == [(1, 0, "def public")]
    assert "(1 file hidden by the policy.)" in output
    with pytest.raises(ToolDenied):
        list_code_definition_names(ctx, {"path": "pkg/private_keys.py"})


def test_empty_directories_and_unsupported_files_say_what_to_do(ctx, repo):
    write(repo, "docs/guide.md", "# guide\n")
    write(repo, "docs/api/index.py", "def index():\n    pass\n")
    output = list_code_definition_names(ctx, {"path": "docs"})
    assert output == ("No source files in a supported language directly in docs. "
                      "Only the top level is scanned; subdirectories: api/")
    write(repo, "consts.py", "VALUE = 1\n")
    assert list_code_definition_names(ctx, {"path": "consts.py"}).startswith(
        "No definitions found in 1 source file in consts.py.")
    with pytest.raises(ToolError, match="no definition support for this file type"):
        list_code_definition_names(ctx, {"path": "docs/guide.md"})


def test_paths_outside_the_repository_are_refused(ctx, repo, tmp_path):
    (tmp_path / "outside.py").write_text("def outside():\n    pass\n")
    for path in ("..", "../outside.py", str(tmp_path / "outside.py")):
        with pytest.raises(ToolError, match="outside the repository"):
            list_code_definition_names(ctx, {"path": path})
    with pytest.raises(ToolError, match=r"\.git"):
        list_code_definition_names(ctx, {"path": ".git"})
    with pytest.raises(ToolError, match="does not exist"):
        list_code_definition_names(ctx, {"path": "nowhere"})
    with pytest.raises(ToolError, match="path must be a string"):
        list_code_definition_names(ctx, {"path": 7})


def many_functions(count: int, prefix: str = "f") -> str:
    return "".join(f"def {prefix}{i}():\n    pass\n\n" for i in range(count))


def test_output_is_capped_with_a_count_of_the_rest(ctx, repo):
    write(repo, "big/a.py", many_functions(90, "a"))
    write(repo, "big/b.py", many_functions(90, "b"))
    write(repo, "big/c.py", many_functions(50, "c"))
    write(repo, "big/d.py", many_functions(10, "d"))
    output = list_code_definition_names(ctx, {"path": "big"})
    assert len(entries(output)) == MAX_DEFINITIONS
    assert entries(output)[-1] == (3 * 19 + 1, 0, "def c19")  # 90 + 90 + 20 shown
    assert ("(30 more definitions in big/c.py and 1 more file not shown; the output is capped at 200. "
            "Call list_code_definition_names on a single file to see its definitions.)") in output
    assert "big/d.py" not in output

    write(repo, "one.py", many_functions(MAX_DEFINITIONS + 5))
    single = list_code_definition_names(ctx, {"path": "one.py"})
    assert len(entries(single)) == MAX_DEFINITIONS
    assert "(5 more definitions not shown; the output is capped at 200. Use search_files" in single


def test_files_past_the_cap_are_counted_not_parsed(ctx, repo):
    for number in range(150):
        write(repo, f"wide/m{number:03}.py", many_functions(40, f"m{number:03}_"))
    before = STATS.files_parsed
    output = list_code_definition_names(ctx, {"path": "wide"})
    parsed = STATS.files_parsed - before
    assert len(entries(output)) == MAX_DEFINITIONS and entries(output)[-1][2] == "def m004_39"
    assert "(145 more files not shown; the output is capped at 200." in output
    assert 5 <= parsed < 50  # the first five fill the answer; parsing stops after the first 32 KB
    assert list_code_definition_names(ctx, {"path": "wide"}) == output  # the same answer from the cache


def test_very_large_files_are_skipped_and_named(ctx, repo):
    write(repo, "gen/huge.py", "x = 1\n" * (definitions.MAX_FILE_BYTES // 6 + 10))
    write(repo, "gen/small.py", "def small():\n    pass\n")
    output = list_code_definition_names(ctx, {"path": "gen"})
    assert entries(output) == [(1, 0, "def small")]
    assert "Skipped, larger than 2 MB: gen/huge.py" in output


def test_second_call_on_an_unchanged_tree_parses_nothing(ctx, repo):
    for language in ("python", "go", "rust", "java"):
        filename, source, _ = SNIPPETS[language]
        write(repo, f"src/{filename}", source)
    before = STATS.files_parsed
    first = list_code_definition_names(ctx, {"path": "src"})
    assert STATS.files_parsed - before == 4

    before = STATS.files_parsed
    second = list_code_definition_names(ctx, {"path": "src"})
    assert STATS.files_parsed == before
    assert second == first

    # The cache lives in the git directory, keyed by path with size and mtime, never in the work tree.
    with sqlite3.connect(cache_file(repo)) as db:
        rows = db.execute("SELECT path, size, mtime_ns FROM tags ORDER BY path").fetchall()
    names = sorted(SNIPPETS[language][0] for language in ("python", "go", "rust", "java"))
    stats = {name: (repo / "src" / name).stat() for name in names}
    assert rows == [(f"src/{name}", stats[name].st_size, stats[name].st_mtime_ns) for name in names]
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=repo, capture_output=True,
                            text=True, check=True).stdout
    assert status.strip() == "?? src/"


def test_many_files_are_parsed_on_two_cores_with_the_same_answer(ctx, repo, monkeypatch):
    for filename, source, _ in SNIPPETS.values():
        for copy in range(6):
            write(repo, f"mixed/{copy}_{filename}", source)
    cache = cache_file(repo)

    def cold(min_bytes: int) -> tuple[str, int]:
        monkeypatch.setattr(definitions, "PARALLEL_MIN_BYTES", min_bytes)
        cache.unlink(missing_ok=True)
        before = STATS.files_parsed
        return list_code_definition_names(ctx, {"path": "mixed"}), STATS.files_parsed - before

    alone, parsed_alone = cold(1 << 40)
    split, parsed_split = cold(0)  # a forked child parses about half of them
    assert split == alone and parsed_split == parsed_alone == 6 * len(SNIPPETS)
    before = STATS.files_parsed
    assert list_code_definition_names(ctx, {"path": "mixed"}) == alone  # the child's results were cached too
    assert STATS.files_parsed == before


def test_file_outline_uses_the_same_cache(repo):
    path = write(repo, "mod.py", "class A:\n    def b(self):\n        pass\n")
    first = file_outline(path)
    before = STATS.files_parsed
    assert file_outline(path) == first == [(1, "class", "A"), (2, "method", "b")]
    assert STATS.files_parsed == before


def test_a_changed_file_is_parsed_again(ctx, repo):
    write(repo, "app/one.py", "def one():\n    pass\n")
    changed = write(repo, "app/two.py", "def two():\n    pass\n")
    list_code_definition_names(ctx, {"path": "app"})

    # Same size, new content and a new mtime: the mtime alone must invalidate the entry.
    stamp = changed.stat().st_mtime_ns
    changed.write_text("def owt():\n    pass\n")
    os.utime(changed, ns=(stamp + 1_000_000, stamp + 1_000_000))
    before = STATS.files_parsed
    output = list_code_definition_names(ctx, {"path": "app"})
    assert STATS.files_parsed - before == 1
    assert "def owt" in output and "def two" not in output

    write(repo, "app/two.py", "def two():\n    pass\n\nclass Added:\n    pass\n")
    before = STATS.files_parsed
    assert entries(list_code_definition_names(ctx, {"path": "app/two.py"})) == [(1, 0, "def two"),
                                                                                (4, 0, "class Added")]
    assert STATS.files_parsed - before == 1


def backdate(path: Path, seconds: int = 60) -> None:
    """Make a directory look settled, as a tree is between two calls of a real run."""
    stamp = path.stat().st_mtime_ns - seconds * 1_000_000_000
    os.utime(path, ns=(stamp, stamp))


def test_a_settled_directory_is_not_listed_again_until_it_changes(ctx, repo):
    write(repo, "lib/a.py", "def a():\n    pass\n")
    backdate(repo / "lib")
    list_code_definition_names(ctx, {"path": "lib"})
    listed = STATS.directories_listed
    assert entries(list_code_definition_names(ctx, {"path": "lib"})) == [(1, 0, "def a")]
    assert STATS.directories_listed == listed

    write(repo, "lib/b.py", "def b():\n    pass\n")  # a new entry moves the directory's mtime
    assert [text for _, _, text in entries(list_code_definition_names(ctx, {"path": "lib"}))] == [
        "def a", "def b"]
    assert STATS.directories_listed == listed + 1


def test_a_changed_ignore_file_invalidates_the_listing(ctx, repo):
    write(repo, ".gitignore", "*.log\n")
    write(repo, "lib/a.py", "def a():\n    pass\n")
    write(repo, "lib/b.py", "def b():\n    pass\n")
    backdate(repo / "lib")
    list_code_definition_names(ctx, {"path": "lib"})
    with (repo / ".gitignore").open("a") as ignore:  # edited in place: no directory mtime moves
        ignore.write("lib/b.py\n")
    assert entries(list_code_definition_names(ctx, {"path": "lib"})) == [(1, 0, "def a")]


def test_a_freshly_changed_directory_is_listed_every_time(ctx, repo):
    # Its mtime could still move within the same timestamp tick, so its listing is not trusted.
    write(repo, "new/a.py", "def a():\n    pass\n")
    listed = STATS.directories_listed
    list_code_definition_names(ctx, {"path": "new"})
    list_code_definition_names(ctx, {"path": "new"})
    assert STATS.directories_listed == listed + 2


def test_deleted_files_leave_the_cache(ctx, repo):
    write(repo, "d/keep.py", "def keep():\n    pass\n")
    gone = write(repo, "d/gone.py", "def gone():\n    pass\n")
    list_code_definition_names(ctx, {"path": "d"})
    gone.unlink()
    assert "gone" not in list_code_definition_names(ctx, {"path": "d"})
    with sqlite3.connect(cache_file(repo)) as db:
        assert [path for (path,) in db.execute("SELECT path FROM tags")] == ["d/keep.py"]


def test_a_corrupt_cache_is_ignored_and_replaced(ctx, repo):
    write(repo, "c/x.py", "def x():\n    pass\n")
    cache = cache_file(repo)
    cache.parent.mkdir(parents=True)
    cache.write_bytes(b"this is not a database" * 100)
    assert entries(list_code_definition_names(ctx, {"path": "c"})) == [(1, 0, "def x")]
    before = STATS.files_parsed
    assert entries(list_code_definition_names(ctx, {"path": "c"})) == [(1, 0, "def x")]
    assert STATS.files_parsed == before  # the replacement cache works


def test_a_cache_path_that_cannot_be_created_only_costs_speed(ctx, repo):
    (repo / ".git" / "gitbot").write_text("a file where the cache directory would go\n")
    write(repo, "p/y.py", "def y():\n    pass\n")
    assert entries(list_code_definition_names(ctx, {"path": "p"})) == [(1, 0, "def y")]


def test_concurrent_callers_share_the_cache_safely(ctx, repo):
    folders = [f"pkg{i}" for i in range(6)]
    for folder in folders:
        for n in range(5):
            write(repo, f"{folder}/m{n}.py", f"def {folder}_{n}():\n    pass\n")
    with ThreadPoolExecutor(max_workers=6) as pool:
        outputs = list(pool.map(lambda folder: list_code_definition_names(ctx, {"path": folder}), folders))
    for folder, output in zip(folders, outputs, strict=True):
        assert [text for _, _, text in entries(output)] == [f"def {folder}_{n}" for n in range(5)]
    before = STATS.files_parsed
    for folder in folders:
        list_code_definition_names(ctx, {"path": folder})
    assert STATS.files_parsed == before


def test_tool_definition():
    assert LIST_CODE_DEFINITION_NAMES.name == "list_code_definition_names"
    assert not LIST_CODE_DEFINITION_NAMES.changes_files
    definition = LIST_CODE_DEFINITION_NAMES.definition()
    assert definition["input_schema"]["required"] == ["path"]
    assert "200" in definition["description"]
