"""CMake values: `${}` references and escapes in raw argument text, lists, truth of constants."""

from __future__ import annotations

import re
from collections.abc import Callable

from bot.cmake.budgets import MAX_NESTING, NestingTooDeep

_REFERENCE_OPEN = re.compile(r"\$(ENV|CACHE)?\{")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", ";": "\\;", "\n": "", "0": "\0"}


def expand_references(text: str, lookup: Callable[[str, str], str]) -> str:
    """Expand `${X}`, `$ENV{X}`, `$CACHE{X}` (nested) and escapes in raw argument text.

    `lookup(kind, name)` gets kind "" (normal), "ENV" or "CACHE". `\\;` stays `\\;` because
    CMake keeps it so that list splitting can skip it. References nested deeper than
    MAX_NESTING raise NestingTooDeep (each level is a recursion).
    """
    expanded, _ = _expand_from(text, 0, lookup, inside_reference=False)
    return expanded


def _expand_from(
    text: str, index: int, lookup: Callable[[str, str], str], inside_reference: bool, depth: int = 0
) -> tuple[str, int]:
    if depth > MAX_NESTING:
        raise NestingTooDeep(f"`${{}}` references nested deeper than {MAX_NESTING}")
    parts: list[str] = []
    length = len(text)
    while index < length:
        char = text[index]
        if inside_reference and char == "}":
            return "".join(parts), index + 1
        if char == "\\" and index + 1 < length:
            following = text[index + 1]
            parts.append(_ESCAPES.get(following, following if not following.isalnum() else "\\" + following))
            index += 2
            continue
        if char == "$":
            opened = _REFERENCE_OPEN.match(text, index)
            if opened:
                name, after = _expand_from(text, opened.end(), lookup, True, depth + 1)
                if after < 0:
                    # Unterminated: CMake rejects the file; keep the text as written.
                    parts.append(text[index:])
                    return "".join(parts), (-1 if inside_reference else length)
                parts.append(lookup(opened.group(1) or "", name))
                index = after
                continue
        parts.append(char)
        index += 1
    return "".join(parts), (-1 if inside_reference else length)


def split_list(value: str) -> list[str]:
    """A CMake list's elements: split on `;` except `\\;` and inside `[...]`; empties dropped."""
    if ";" not in value:
        return [value] if value else []
    if "[" not in value and "\\" not in value:
        return [item for item in value.split(";") if item]
    items: list[str] = []
    current: list[str] = []
    depth = 0
    index = 0
    while index < len(value):
        char = value[index]
        if char == "\\" and index + 1 < len(value) and value[index + 1] == ";":
            current.append("\\;")
            index += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        elif char == ";" and depth == 0:
            if current:
                items.append("".join(current))
            current = []
            index += 1
            continue
        current.append(char)
        index += 1
    if current:
        items.append("".join(current))
    return items


_FALSE_CONSTANTS = frozenset({"", "0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND"})
_TRUE_CONSTANTS = frozenset({"1", "ON", "YES", "TRUE", "Y"})
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def is_false_value(value: str) -> bool:
    """CMake's cmIsOff: "", 0, OFF, NO, FALSE, N, IGNORE, NOTFOUND, *-NOTFOUND."""
    upper = value.upper()
    return (
        upper in _FALSE_CONSTANTS or upper.endswith("-NOTFOUND") or (bool(_NUMBER.match(value)) and float(value) == 0)
    )


def constant_truth(value: str) -> bool | None:
    """True/False when `value` is one of if()'s named constants or a number, else None."""
    upper = value.upper()
    if upper in _TRUE_CONSTANTS:
        return True
    if upper in _FALSE_CONSTANTS or upper.endswith("-NOTFOUND"):
        return False
    if _NUMBER.match(value):
        return float(value) != 0
    return None
