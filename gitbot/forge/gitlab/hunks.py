"""The diff hunk a GitLab diff note points at, as GitHub gives one with a line comment: the hunk's header and
its lines up to the commented one. GitLab's discussions carry only the position (path and line), so the hunk
is cut out of the merge request's diff (its latest version), which the caller reads."""

from __future__ import annotations


def hunk_upto(path: str, diff: str, *, new_line: int | None, old_line: int | None) -> str:
    """The hunk of `diff` (one file's patch from its first `@@`) that holds the line, up to that line; ""
    when none does. A note on a kept or added line names its new line; on a removed one, its old line."""
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    if not diff or (new_line is None and old_line is None):
        return ""
    try:
        patch = PatchSet(f"--- a/{path}\n+++ b/{path}\n{diff if diff.endswith(chr(10)) else diff + chr(10)}")
    except UnidiffParseError:
        return ""
    for hunk in (h for f in patch for h in f):
        taken = [_header(hunk)]
        for line in hunk:
            taken.append(f"{line.line_type}{line.value.rstrip(chr(10))}")
            here = line.target_line_no if new_line is not None else line.source_line_no
            if here == (new_line if new_line is not None else old_line):
                return "\n".join(taken)
    return ""


def _header(hunk) -> str:
    section = f" {hunk.section_header}" if hunk.section_header else ""
    return (
        f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@{section}"
    )
