"""Where things are inside a rule call: the line of an attribute or an item, and edits to it."""

from __future__ import annotations

import re

from bot.buck.evaluation import BuckTarget, Frame
from bot.model import Evidence, Fix


def call_lines(text: str, target: BuckTarget) -> list[tuple[int, str]]:
    """(line number, text) of the lines of a target's call site."""
    lines = text.splitlines()
    return [(n, lines[n - 1]) for n in range(target.line, min(target.end_line, len(lines)) + 1)]


def attribute_line(text: str, target: BuckTarget, attribute: str) -> int | None:
    """The line of `attribute = ...` inside the call, if written there."""
    pattern = re.compile(rf"^\s*{re.escape(attribute)}\s*=")
    for number, line in call_lines(text, target):
        if pattern.search(line):
            return number
    return None


def item_line(text: str, target: BuckTarget, item: str) -> int | None:
    """The line of a quoted item (a source, a dep) inside the call, if written there."""
    for quote in ('"', "'"):
        for number, line in call_lines(text, target):
            if f"{quote}{item}{quote}" in line:
                return number
    return None


def insert_after(text: str, path: str, line: int, insertion: str, description: str) -> Fix:
    """A fix that keeps `line` and adds `insertion` below it at the same indentation."""
    original = text.splitlines()[line - 1]
    indent = original[: len(original) - len(original.lstrip())]
    return Fix(path, line, line, f"{original}\n{indent}{insertion}", description)


def outermost_frame(target: BuckTarget) -> Frame | None:
    """The build-file line whose evaluation defined the target (what made it visible)."""
    return target.stack[0] if target.stack else None


