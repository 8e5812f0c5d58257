"""95% intervals for a resolve rate (Wilson) and for the difference of two (Newcombe's hybrid score
interval; the paired form when both runs have the same instances). Newcombe, Statistics in Medicine 1998,
17:873-890 (unpaired: method 10) and 17:2635-2650 (paired: method 10)."""

from __future__ import annotations

import math

Z = 1.959963984540054  # the 97.5th percentile of the normal distribution


def wilson(successes: int, n: int, z: float = Z) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def difference_unpaired(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float, float]:
    """p1 - p2 and its interval, for two independent samples."""
    p1, p2 = (k1 / n1 if n1 else 0.0), (k2 / n2 if n2 else 0.0)
    l1, u1 = wilson(k1, n1)
    l2, u2 = wilson(k2, n2)
    d = p1 - p2
    return d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


def difference_paired(both: int, only_a: int, only_b: int, neither: int) -> tuple[float, float, float]:
    """pA - pB and its interval when each instance was run by both (the 2×2 table of outcomes)."""
    n = both + only_a + only_b + neither
    if n == 0:
        return 0.0, -1.0, 1.0
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    l1, u1 = wilson(both + only_a, n)
    l2, u2 = wilson(both + only_b, n)
    product = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    # Newcombe's correlation term, corrected for continuity: 0 for a small positive association.
    association = both * neither - only_a * only_b
    if association > n / 2:
        association -= n / 2
    elif association > 0:
        association = 0
    phi = association / math.sqrt(product) if product > 0 else 0.0
    d = p1 - p2
    lower = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    upper = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return d, max(-1.0, d - lower), min(1.0, d + upper)
