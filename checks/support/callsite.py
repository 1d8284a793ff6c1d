"""Where things are inside a rule call: the call itself, the line of an attribute or an item.

Evaluation says where a target is defined (its call-site line); the syntax layer
(`bot/buck/syntax.py`) says what is written there. The two meet by that line.
"""

from __future__ import annotations

import re

from bot.buck.syntax import Call, syntax_of
from bot.buck.targets import BuckTarget, Frame


def call_of(text: str, target: BuckTarget) -> Call | None:
    """The call written at the target's call site, if `text` (its file) has one there."""
    return syntax_of(text).call_at(target.line) if text else None


def call_lines(text: str, target: BuckTarget) -> list[tuple[int, str]]:
    """(line number, text) of the lines of a target's call site."""
    lines = text.splitlines()
    return [(n, lines[n - 1]) for n in range(target.line, min(target.end_line, len(lines)) + 1)]


def attribute_line(text: str, target: BuckTarget, attribute: str) -> int | None:
    """The line of `attribute = ...` inside the call, if written there."""
    call = call_of(text, target)
    if call is not None:
        keyword = call.keyword(attribute)
        return keyword.name_span.line if keyword is not None else None
    # No call starts on the recorded line (a file that changed under the evaluation): scan it.
    pattern = re.compile(rf"^\s*{re.escape(attribute)}\s*=")
    return next((number for number, line in call_lines(text, target) if pattern.search(line)), None)


def item_line(text: str, target: BuckTarget, item: str) -> int | None:
    """The line of a quoted item (a source, a dep) inside the call, if written there."""
    call = call_of(text, target)
    if call is not None:
        for literal in syntax_of(text).lists:
            if call.span.start <= literal.span.start < call.span.end:
                for element in literal.elements:
                    if element.string == item:
                        return element.span.line
    # An item inside a tuple or a dict (`external_deps = [("cuda", None, "cuda-lazy")]`).
    for quote in ('"', "'"):
        for number, line in call_lines(text, target):
            if f"{quote}{item}{quote}" in line:
                return number
    return None


def outermost_frame(target: BuckTarget) -> Frame | None:
    """The build-file line whose evaluation defined the target (what made it visible)."""
    return target.stack[0] if target.stack else None
