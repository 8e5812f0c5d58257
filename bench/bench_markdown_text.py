"""What reading an issue costs (markdown_text.visible_text), as ratios against baselines measured in the
same run.

    .venv/bin/python bench/bench_markdown_text.py              # 64 KiB bodies, 5 repeats
    .venv/bin/python bench/bench_markdown_text.py --repeat 9 --fuzz 20000

- 64 KiB bodies of hostile shapes (unclosed `<a b `, brackets, backticks, `*`, `<!--`, dollars, deep
  quotes, entities, …) and of a realistic issue: `visible_text` against cmark-gfm's own rendering of
  the same body (the first of its three steps) and against `str.split` (reading it at all);
- the seeded differential fuzzer (tests/page_fuzz.py): leaks (must be 0) and over-stripping (must be
  under 1%) over N cases, and the time per case.
Prints medians; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cmarkgfm

from gitbot.markdown_text import visible_text
from tests.page_fuzz import generate

SIZE = 64 * 1024
SHAPES = ["<a b ", "[", "[a](", "`", "``a", "*", "_a ", "<!--", "$a ", "$$", "> ", "- ", "<", "&#x", "<svg>",
          "<div>", "|a", "[^a]", "www.a", "<svg><desc><p>"]
REALISTIC = ("## Steps\n\n1. run `make test`\n2. see the **crash** in [the log](https://example.com/log)\n\n"
             "```python\nTraceback (most recent call last):\n  File \"x.py\", line 3\n```\n\n"
             "<details><summary>env</summary>\n\nPython 3.12, $x^2$ costs $5\n</details>\n\n"
             "| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted <!-- note -->\n\n")


# Whole bodies whose cost is a product of two parts (open formatting elements × paragraphs, a table's
# header width × its rows): repeating one unit would not build them.
PRODUCTS = {
    "60 <b id> × <p>x": "".join(f"<b id={i}>" for i in range(60)) + "<p>x" * 16000,
    "<b id></x> × <p>x": "".join(f"<b id={i}></x>" for i in range(1000)) + "<p>x" * 14000,
    "wide table header": "|" + "a|" * 4000 + "\n|" + "-|" * 4000 + "\n" + "x\n" * 16000,
}


def median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def body_of(unit: str) -> str:
    return (unit * (SIZE // len(unit) + 1))[:SIZE]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--fuzz", type=int, default=5000)
    args = parser.parse_args()
    print(f"64 KiB bodies, median of {args.repeat}: visible_text, and its ratio to cmark-gfm alone and to str.split")
    worst = 0.0
    for name, body in [(repr(u), body_of(u)) for u in SHAPES] + list(PRODUCTS.items()) + [("realistic issue", body_of(REALISTIC))]:
        ours = median_time(lambda b=body: visible_text(b), args.repeat)
        cmark = median_time(lambda b=body: cmarkgfm.github_flavored_markdown_to_html(b), args.repeat)
        split = median_time(lambda b=body: b.split(), args.repeat)
        worst = max(worst, ours)
        print(f"  {name:18s} {ours * 1000:8.1f} ms   ×{ours / cmark:7.1f} cmark   ×{ours / split:8.0f} split")
    print(f"  slowest: {worst * 1000:.1f} ms")
    leaks = missing = visible = 0
    cases = generate(2026, args.fuzz)
    began = time.perf_counter()
    for case in cases:
        text = visible_text(case.body)
        leaks += sum(p in text for p in case.payloads)
        visible += len(case.visibles)
        missing += sum(v not in text for v in case.visibles)
    spent = time.perf_counter() - began
    print(f"fuzzer: {len(cases)} cases, {sum(len(c.payloads) for c in cases)} hidden words, {visible} visible words: "
          f"{leaks} leaks, {missing} lost ({missing / visible:.3%}); {spent / len(cases) * 1000:.2f} ms a case")


if __name__ == "__main__":
    main()
