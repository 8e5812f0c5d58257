"""Running a function over many items on two cores, for work that holds the GIL (tree-sitter's
parser does, so threads would take turns).

One child is forked per call and takes about half the items by weight; the parent does the rest
at the same time. Forking, rather than a process pool, costs a few milliseconds and needs no
pickling of the function or of what it closes over (tree-sitter's parsers and queries cannot be
pickled): the child has the parent's memory. Only the results travel back, pickled through a
pipe. The child never returns into the caller's code: it leaves through os._exit, so no atexit
handler, buffered output or `finally` of the parent runs twice. A child that fails or dies
costs only time: its items are done again here.
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Callable, Sequence
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def map_split(function: Callable[[Item], Result], items: Sequence[Item], weights: Sequence[int], *,
              min_weight: int) -> list[Result]:
    """[function(item) for item in items], with one forked child doing about half of the work when
    the total weight reaches `min_weight` (below that, a fork costs more than it saves)."""
    if len(items) < 2 or sum(weights) < min_weight or not hasattr(os, "fork"):
        return [function(item) for item in items]
    theirs, mine = _halves(weights)
    read_end, write_end = os.pipe()
    try:
        child = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return [function(item) for item in items]
    if child == 0:  # pragma: no cover - the child's coverage is not collected
        _serve(function, [items[i] for i in theirs], read_end, write_end)
    os.close(write_end)
    results: dict[int, Result] = {}
    try:
        for index in mine:
            results[index] = function(items[index])
        received = _read_all(read_end)
    except BaseException:
        os.kill(child, signal.SIGKILL)
        raise
    finally:
        os.close(read_end)
        _, status = os.waitpid(child, 0)
    done = pickle.loads(received) if status == 0 and received else None
    if not isinstance(done, list) or len(done) != len(theirs):
        done = [function(items[index]) for index in theirs]  # the child failed: do its share here
    results.update(zip(theirs, done, strict=True))
    return [results[index] for index in range(len(items))]


def _halves(weights: Sequence[int]) -> tuple[list[int], list[int]]:
    """Item indexes split into two sets of about equal weight (heaviest first, onto the lighter side)."""
    sides: tuple[list[int], list[int]] = ([], [])
    totals = [0, 0]
    for index in sorted(range(len(weights)), key=lambda i: -weights[i]):
        side = 0 if totals[0] <= totals[1] else 1
        sides[side].append(index)
        totals[side] += weights[index]
    return sides


def _serve(function: Callable[[Item], Result], items: list[Item], read_end: int, write_end: int) -> None:
    """The child: compute, send, and leave without returning into the caller."""
    code = 1
    try:
        os.close(read_end)
        data = pickle.dumps([function(item) for item in items], protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view):]
        code = 0
    except BaseException:  # noqa: BLE001, S110 - whatever went wrong, the parent redoes the work
        pass
    finally:
        os._exit(code)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)
