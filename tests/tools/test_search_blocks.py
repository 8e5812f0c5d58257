"""BlockReader: rg's `--heading --null --byte-offset` output split into per-file counts, or refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitbot.tools.search import rg_binary
from gitbot.tools.search_blocks import Block, BlockReader, Unparseable


def rg_blocks_output(root: Path, regex: str, target: str = ".") -> bytes:
    command = [rg_binary(), "--no-config", "--heading", "--null", "--with-filename", "--byte-offset",
               "--max-columns=8", "--sort", "path", "--regexp", regex, "--", target]
    return subprocess.run(command, cwd=root, capture_output=True, check=False).stdout


def read(output: bytes, chunk: int, **where: bytes) -> list[Block]:
    reader = BlockReader(**where)
    blocks = []
    for start in range(0, len(output), chunk):
        blocks += reader.feed(output[start:start + chunk])
    return blocks + reader.close()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("hit 1\n\n\nhit 2\nhit 3\n")
    (tmp_path / "b c.txt").write_bytes(b"hit\r\n\r\n")
    (tmp_path / "late.bin").write_bytes(b"hit early\n" + b"z" * 70_000 + b"\n\0hit late\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.txt").write_text("".join(f"hit {n}\n" for n in range(1000)))
    return tmp_path


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64, 1 << 20])
def test_counts_do_not_depend_on_where_chunks_end(tree, chunk):
    output = rg_blocks_output(tree, "^hit|^$")
    assert read(output, chunk, prefix=b"./") == [
        Block(b"./a.txt", 5, False), Block(b"./b c.txt", 1, False), Block(b"./late.bin", 1, True),
        Block(b"./sub/d.txt", 1000, False)]


def test_a_named_file_that_is_binary_from_the_start(tree):
    (tree / "early.bin").write_bytes(b"\0hit\n")
    output = rg_blocks_output(tree, "hit", "early.bin")
    assert read(output, 3, single=b"early.bin") == [Block(b"early.bin", 0, True)]
    assert read(rg_blocks_output(tree, "hit", "late.bin"), 7, single=b"late.bin") == [
        Block(b"late.bin", 1, True)]


@pytest.mark.parametrize("output, where", [
    (b"./odd\nname.txt\x000:hit\n", {"prefix": b"./"}),  # a newline in a path: blocks could be cut wrong
    (b"elsewhere/x.txt\x000:hit\n", {"prefix": b"./"}),  # not below the directory searched
    (b"other.txt\x000:hit\n", {"single": b"one.txt"}),
    (b"one.txt: binary file matches (found \"\\0\" byte around offset 3)\n", {"prefix": b"./"}),
    (b"x" * 70_000, {"prefix": b"./"}),
])
def test_ambiguous_output_is_refused(output, where):
    with pytest.raises(Unparseable):
        read(output, 4096, **where)
