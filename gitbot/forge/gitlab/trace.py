"""A GitLab job's trace as its log page shows it, for the task a failed pipeline becomes.

The raw trace is what the runner streamed: ANSI colour and erase sequences, collapsible-section markers
(`ESC[0Ksection_start:TIME:NAME[options] CR ESC[0K`), and carriage returns by which progress output
rewrote its own line. The log page renders all three away; the model is given the same text, so the
failure it reads is not buried in escapes and a section marker in a trace names nothing for it to follow.
"""

from __future__ import annotations

import re

# Section markers, with their options (`[collapsed=true]`) and the CR ESC[0K that ends them.
_SECTION = re.compile(r"\x1b\[0K|section_(?:start|end):\d+:[A-Za-z0-9_.-]+(?:\[[^\]\r\n]*\])?\r?")
# CSI sequences (colours, erase), OSC sequences (titles, links), and lone two-byte escapes.
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def readable(trace: str) -> str:
    lines = []
    for line in _ESCAPE.sub("", _SECTION.sub("", trace)).split("\n"):
        line = line.removesuffix("\r")
        lines.append(line.rsplit("\r", 1)[-1])  # what is left on screen after the line rewrote itself
    return "\n".join(lines)
