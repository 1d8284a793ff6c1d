"""list() and string(): the operations ExecuTorch's CMake uses, under the value-size budget."""

from __future__ import annotations

import operator
import re
from typing import TYPE_CHECKING

from bot.cmake.budgets import MAX_VALUE_CHARS
from bot.cmake.regexes import RegexError, RegexTimeout
from bot.cmake.state import Frame
from bot.cmake.syntax import Command

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation


def edit_list(ev: Evaluation, command: Command, frame: Frame) -> None:
    """list(): APPEND, PREPEND, INSERT, REMOVE_*, LENGTH, GET, FIND, JOIN, SORT, REVERSE, FILTER, POP_*.

    Elements keep the `if` conditions they were added under (the variable's origins).
    """
    if len(command.args) < 2:
        return
    operation = ev.expand_one(command.args[0], frame).upper()
    name = ev.expand_one(command.args[1], frame)
    items = ev.expand_items(command.args[2:], frame)
    words = [item.value for item in items]
    entry = frame.scope.get(name)
    current = ev.elements(entry[0], command.line) if entry is not None else []
    origins: list[tuple[str, ...]] | None = None
    if entry is not None and entry[1] is not None and len(entry[1]) == len(current):
        origins = list(entry[1])
    elif entry is None or not current:
        origins = []

    def added() -> list[tuple[str, ...]]:
        return [tuple(dict.fromkeys((*item.origins, *frame.conditions))) for item in items]

    def store(values: list[str], new_origins: list[tuple[str, ...]] | None = None) -> None:
        joined = ev.join(";", values, command)
        if len(joined) < len(values) + sum(len(v) for v in values) - 1:
            new_origins = None  # truncated: the elements no longer line up with their origins
        frame.scope.set(name, joined, tuple(new_origins) if new_origins is not None else None)

    if operation == "APPEND":
        store(current + words, origins + added() if origins is not None else None)
    elif operation == "PREPEND":
        store(words + current, added() + origins if origins is not None else None)
    elif operation == "INSERT" and words:
        try:
            at = int(words[0])
        except ValueError:
            return
        new = added()[1:]
        store(
            current[:at] + words[1:] + current[at:], origins[:at] + new + origins[at:] if origins is not None else None
        )
    elif operation == "REMOVE_ITEM":
        keep = [i for i, value in enumerate(current) if value not in words]
        store([current[i] for i in keep], [origins[i] for i in keep] if origins is not None else None)
    elif operation == "REMOVE_DUPLICATES":
        seen: dict[str, int] = {}
        for i, value in enumerate(current):
            seen.setdefault(value, i)
        keep = sorted(seen.values())
        store([current[i] for i in keep], [origins[i] for i in keep] if origins is not None else None)
    elif operation == "REMOVE_AT":
        drop = {int(w) % len(current) for w in words if re.fullmatch(r"-?\d+", w) and current}
        store([v for i, v in enumerate(current) if i not in drop])
    elif operation == "LENGTH" and words:
        frame.scope.set(words[0], str(len(current)))
    elif operation == "GET" and len(words) >= 2:
        picked = [
            current[int(i)] for i in words[:-1] if re.fullmatch(r"-?\d+", i) and -len(current) <= int(i) < len(current)
        ]
        frame.scope.set(words[-1], ";".join(picked))
    elif operation == "FIND" and len(words) >= 2:
        frame.scope.set(words[1], str(current.index(words[0]) if words[0] in current else -1))
    elif operation == "JOIN" and len(words) >= 2:
        frame.scope.set(words[1], ev.join(words[0], current, command))
    elif operation == "SORT":
        store(sorted(current))
    elif operation == "REVERSE":
        store(current[::-1], origins[::-1] if origins is not None else None)
    elif operation == "FILTER" and len(words) >= 3 and words[1] == "REGEX":
        keep_matching = words[0] == "INCLUDE"
        try:
            keep = [i for i, v in enumerate(current) if bool(ev.regexes.search(words[2], v)) == keep_matching]
        except RegexError:
            ev.problem(command, f"list(FILTER): cannot use {words[2]!r}")
            return
        except RegexTimeout as timeout:
            ev.limit(command.path, command.line, f"list(FILTER REGEX {words[2]!r}): {timeout}")
            return
        store([current[i] for i in keep], [origins[i] for i in keep] if origins is not None else None)
    elif operation in ("POP_BACK", "POP_FRONT"):
        taken = current[-1:] if operation == "POP_BACK" else current[:1]
        rest = current[:-1] if operation == "POP_BACK" else current[1:]
        store(rest)
        if words and taken:
            frame.scope.set(words[0], taken[0])
    elif operation == "TRANSFORM" and words:
        _transform_list(ev, command, frame, name, current, origins, words)


# list(TRANSFORM) actions on every element (ExecuTorch prefixes its source lists with the root this way);
# the AT/FOR/REGEX selectors and REPLACE are not modelled: the list is left as it was.
_TRANSFORMS = {
    "APPEND": (1, lambda value, argument: value + argument),
    "PREPEND": (1, lambda value, argument: argument + value),
    "TOLOWER": (0, lambda value, argument: value.lower()),
    "TOUPPER": (0, lambda value, argument: value.upper()),
    "STRIP": (0, lambda value, argument: value.strip()),
}


def _transform_list(
    ev: Evaluation, command: Command, frame: Frame, name: str, current: list[str], origins, words: list[str]
) -> None:
    action = words[0].upper()
    if action not in _TRANSFORMS:
        return
    count, apply = _TRANSFORMS[action]
    argument = words[1] if count and len(words) > 1 else ""
    rest = words[1 + count :]
    output = name
    if rest[:1] == ["OUTPUT_VARIABLE"] and len(rest) == 2:
        output = rest[1]
    elif rest:
        return  # a selector
    values = [apply(value, argument) for value in current]
    frame.scope.set(output, ev.join(";", values, command), tuple(origins) if origins is not None else None)


def edit_string(ev: Evaluation, command: Command, frame: Frame) -> None:
    """string(): APPEND, PREPEND, REPLACE, REGEX, case, LENGTH, STRIP, SUBSTRING, FIND, JOIN, ..."""
    words = ev.expand(command.args, frame)
    if len(words) < 2:
        return
    operation = words[0].upper()
    set_variable = frame.scope.set
    if operation in ("APPEND", "PREPEND"):
        current = ev.lookup(frame, "", words[1])
        parts = [current, *words[2:]] if operation == "APPEND" else [*words[2:], current]
        set_variable(words[1], ev.join("", parts, command))
    elif operation == "REPLACE" and len(words) >= 4:
        set_variable(words[3], _replace(ev, command, ev.join("", words[4:], command), words[1], words[2]))
    elif operation == "REGEX" and len(words) >= 4:
        mode, pattern = words[1].upper(), words[2]
        try:
            if mode == "REPLACE" and len(words) >= 5:
                replacement = re.sub(r"\\(\d)", r"\\g<\1>", words[3])
                set_variable(words[4], _regex_replace(ev, command, pattern, replacement, "".join(words[5:])))
            elif mode == "MATCH":
                match = ev.regexes.search(pattern, "".join(words[4:]))
                set_variable(words[3], match.group(0) if match else "")
                if match:
                    for group in range(min(10, (match.re.groups or 0) + 1)):
                        set_variable(f"CMAKE_MATCH_{group}", match.group(group) or "")
            elif mode == "MATCHALL":
                set_variable(words[3], ";".join(ev.regexes.find_all(pattern, "".join(words[4:]))))
        except (RegexError, IndexError):
            ev.problem(command, f"string(REGEX): cannot use {pattern!r}")
        except RegexTimeout as timeout:
            ev.limit(command.path, command.line, f"string(REGEX {mode} {pattern!r}): {timeout}")
    elif operation in ("TOLOWER", "TOUPPER") and len(words) >= 3:
        set_variable(words[2], words[1].lower() if operation == "TOLOWER" else words[1].upper())
    elif operation == "LENGTH" and len(words) >= 3:
        set_variable(words[2], str(len(words[1])))
    elif operation == "STRIP" and len(words) >= 3:
        set_variable(words[2], words[1].strip())
    elif operation == "SUBSTRING" and len(words) >= 5:
        begin, length = int(words[2]), int(words[3])
        set_variable(words[4], words[1][begin:] if length < 0 else words[1][begin : begin + length])
    elif operation == "FIND" and len(words) >= 4:
        position = words[1].rfind(words[2]) if "REVERSE" in words[4:] else words[1].find(words[2])
        set_variable(words[3], str(position))
    elif operation == "JOIN" and len(words) >= 3:
        set_variable(words[2], ev.join(words[1], words[3:], command))
    elif operation == "CONCAT":
        set_variable(words[1], ev.join("", words[2:], command))
    elif operation == "GENEX_STRIP" and len(words) >= 3:
        set_variable(words[2], re.sub(r"\$<[^<>]*>", "", words[1]))
    elif operation == "COMPARE" and len(words) >= 5:
        comparison = {
            "EQUAL": operator.eq,
            "NOTEQUAL": operator.ne,
            "LESS": operator.lt,
            "GREATER": operator.gt,
            "LESS_EQUAL": operator.le,
            "GREATER_EQUAL": operator.ge,
        }.get(words[1].upper())
        if comparison:
            set_variable(words[4], "1" if comparison(words[2], words[3]) else "0")


def _replace(ev: Evaluation, command: Command, text: str, old: str, new: str) -> str:
    """string(REPLACE), cut at MAX_VALUE_CHARS before it is built (one long `new` times many
    occurrences of `old` is the quickest way to a huge value)."""
    if not old:
        return text
    growth = len(new) - len(old)
    if growth <= 0 or len(text) + text.count(old) * growth <= MAX_VALUE_CHARS:
        return text.replace(old, new)
    ev.oversized(command.line)
    return text.replace(old, new, max(0, (MAX_VALUE_CHARS - len(text)) // growth))[:MAX_VALUE_CHARS]


class _Oversize(Exception):
    """A regex replacement grew past MAX_VALUE_CHARS."""


_GROUP_REFERENCE = re.compile(r"\\g<\d+>")


def _regex_replace(ev: Evaluation, command: Command, pattern: str, template: str, text: str) -> str:
    """string(REGEX REPLACE), stopped (and the input kept, truncated) once the output would pass
    MAX_VALUE_CHARS: each `\\N` in the template repeats a whole match."""
    references = len(_GROUP_REFERENCE.findall(template))
    produced = [len(text)]

    def expand(match) -> str:
        produced[0] += len(template) + references * (match.end() - match.start())
        if produced[0] > MAX_VALUE_CHARS:
            raise _Oversize
        return match.expand(template)

    try:
        return ev.regexes.substitute(pattern, expand, text)
    except _Oversize:
        ev.oversized(command.line)
        return text[:MAX_VALUE_CHARS]
