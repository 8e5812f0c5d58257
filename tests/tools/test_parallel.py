"""map_split: the same results as a plain map, with a forked child doing part of the work."""

from __future__ import annotations

import os

import pytest

from gitbot.tools.parallel import map_split

PARENT = os.getpid()


def square_and_pid(number: int) -> tuple[int, int]:
    return number * number, os.getpid()


def test_results_come_back_in_order_with_part_of_the_work_done_elsewhere():
    items = list(range(40))
    results = map_split(square_and_pid, items, [1 + n % 7 for n in items], min_weight=1)
    assert [square for square, _ in results] == [n * n for n in items]
    pids = {pid for _, pid in results}
    assert PARENT in pids and len(pids) == 2


def test_below_the_minimum_weight_nothing_is_forked():
    results = map_split(square_and_pid, [1, 2, 3], [1, 1, 1], min_weight=10)
    assert results == [(1, PARENT), (4, PARENT), (9, PARENT)]


def fails_in_the_child(number: int) -> tuple[int, int]:
    if os.getpid() != PARENT:
        raise RuntimeError("a child that cannot finish")
    return number + 1, os.getpid()


def test_a_failing_child_costs_time_not_results():
    assert map_split(fails_in_the_child, [1, 2, 3, 4], [5, 5, 5, 5], min_weight=1) == [
        (n + 1, PARENT) for n in (1, 2, 3, 4)]


def exits_in_the_child(number: int) -> int:
    if os.getpid() != PARENT:
        os._exit(3)  # dies without a word
    return -number


def test_a_child_that_dies_is_made_up_for():
    assert map_split(exits_in_the_child, [1, 2, 3], [1, 1, 1], min_weight=1) == [-1, -2, -3]


def fails_in_the_parent(number: int) -> int:
    if os.getpid() == PARENT:
        raise ValueError(f"bad item {number}")
    return number


def own_children() -> set[int]:
    # Other tests may leave children of their own running (a checkpoint's background status), so this
    # compares the children of this process before and after; a zombie stays listed until it is reaped.
    with open(f"/proc/{PARENT}/task/{PARENT}/children") as listing:
        return {int(pid) for pid in listing.read().split()}


def test_an_error_here_is_raised_and_the_child_is_reaped():
    before = own_children()
    with pytest.raises(ValueError, match="bad item"):
        map_split(fails_in_the_parent, [1, 2], [1, 1], min_weight=1)
    assert own_children() <= before  # no child left behind
