"""Fixes as line-range replacements: made from a syntax edit's before and after text, and applied.

A check computes a fix by editing a file's text through a syntax layer (`bot/buck/edits.py` for
Starlark, the CMake and C++ span edits for the others) and hands both texts to `fix_between`,
which keeps only the smallest range of whole lines that changed. Whole lines because that is
what every consumer takes: a GitHub `suggestion` block replaces the commented lines, SARIF and
rdjson replace a region, and `pr-check fix` writes files. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.model import Fix

PATCH_CONTEXT = 3  # unchanged lines kept around a fix, as `git diff` shows them


def fix_between(path: str, before: str, after: str, description: str) -> Fix | None:
    """The Fix that turns `before` into `after` (None when they are equal).

    The range always holds at least one line of `before`: a pure insertion or deletion keeps
    the line above it (or below, at the top of the file) as an anchor, because a suggestion
    block and a line replacement both need a line to stand on.
    """
    if before == after:
        return None
    old = before.split("\n")
    new = after.split("\n")
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    first, last = prefix, len(old) - suffix  # old[first:last] becomes new[first:len(new) - suffix]
    if first == last or first == len(new) - suffix:  # nothing replaced on one side: anchor a line
        if first > 0:
            first -= 1
        else:
            last += 1
    replaced = new[first : len(new) - (len(old) - last)]
    # Line numbers count the text's lines; a trailing newline is no line of its own.
    line_count = len(old) - 1 if before.endswith("\n") else len(old)
    if last > line_count:  # the anchor fell on the empty string after the final newline
        last = line_count
    end = max(first + 1, last)
    above = old[max(0, first - PATCH_CONTEXT) : first]
    below = old[end : min(line_count, end + PATCH_CONTEXT)]
    return Fix(
        path,
        first + 1,
        end,
        "\n".join(replaced),
        description,
        "\n".join(old[first:end]),
        "\n".join(above),
        "\n".join(below),
    )


class StaleFix(ValueError):
    """The lines a fix replaces are not in the file as they were when it was computed."""


def apply_fix(text: str, fix: Fix) -> str:
    """`text` with lines [fix.line, fix.end_line] replaced by the fix's replacement."""
    lines = text.split("\n")
    trailing_newline = text.endswith("\n")
    if trailing_newline:
        lines.pop()
    if not 1 <= fix.line <= max(1, len(lines)) or fix.end_line < fix.line or fix.end_line > max(1, len(lines)):
        raise ValueError(f"{fix.path}: lines {fix.line}-{fix.end_line} are not in the file ({len(lines)} lines)")
    if fix.original and "\n".join(lines[fix.line - 1 : fix.end_line]) != fix.original:
        raise StaleFix(f"{fix.path}: lines {fix.line}-{fix.end_line} no longer hold what the fix replaces")
    lines[fix.line - 1 : fix.end_line] = fix.replacement.split("\n")
    return "\n".join(lines) + ("\n" if trailing_newline else "")


@dataclass(frozen=True, slots=True)
class AppliedFixes:
    """What `apply_fixes` did to one file: the new text, the fixes it applied and those it left."""

    text: str
    applied: tuple[Fix, ...]
    overlapping: tuple[Fix, ...]  # left out because an applied fix already rewrote their lines


def apply_fixes(text: str, fixes: Iterable[Fix]) -> AppliedFixes:
    """Apply fixes of one file that do not overlap, bottom-up so line numbers stay true.

    Of two overlapping fixes the one that starts first is applied; the other is returned in
    `overlapping`, to be recomputed on the new text (a second review round does that). Equal
    fixes are applied once.
    """
    chosen: list[Fix] = []
    overlapping: list[Fix] = []
    for fix in sorted(set(fixes), key=lambda f: (f.line, f.end_line, f.replacement)):
        if chosen and fix.line <= chosen[-1].end_line:
            overlapping.append(fix)
            continue
        chosen.append(fix)
    for fix in reversed(chosen):
        text = apply_fix(text, fix)
    return AppliedFixes(text, tuple(chosen), tuple(overlapping))
