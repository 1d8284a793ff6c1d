"""Properties: set_target_properties, set_property, get_target_property, get_property."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from bot.cmake.commands.usage import usage_items, usage_transform
from bot.cmake.model import Scoped
from bot.cmake.state import USAGE_PROPERTIES, Frame, Item, TargetBuilder
from bot.cmake.syntax import Command
from bot.cmake.values import split_list

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation


def set_target_properties(ev: Evaluation, command: Command, frame: Frame) -> None:
    """set_target_properties(): plain properties, and usage-requirement ones into their lists."""
    words = ev.expand(command.args, frame)
    if "PROPERTIES" not in words:
        return
    at = words.index("PROPERTIES")
    # name/value pairs; a trailing name without its value (CMake's own error) is dropped, not guessed
    pairs = list(zip(words[at + 1 :: 2], words[at + 2 :: 2], strict=False))
    for name in words[:at]:
        target = ev.target(name, command)
        if target is not None:
            for key, value in pairs:
                _store_property(ev, target, key, value, False, command, frame)


def set_property(ev: Evaluation, command: Command, frame: Frame) -> None:
    """set_property(GLOBAL|TARGET ... [APPEND] PROPERTY ...)."""
    words = ev.expand(command.args, frame)
    if not words or "PROPERTY" not in words:
        return
    at = words.index("PROPERTY")
    if at + 1 >= len(words):
        return
    key, values = words[at + 1], words[at + 2 :]
    append = "APPEND" in words[:at] or "APPEND_STRING" in words[:at]
    if words[0] == "GLOBAL":
        current = ev.global_properties.get(key, "")
        joined = ";".join(values)
        ev.global_properties[key] = (current + (";" if current and joined else "") + joined) if append else joined
    elif words[0] == "TARGET":
        for name in words[1:at]:
            if name in ("APPEND", "APPEND_STRING"):
                continue
            target = ev.target(name, command)
            if target is not None:
                _store_property(ev, target, key, ";".join(values), append, command, frame)


def _store_property(
    ev: Evaluation, target: TargetBuilder, key: str, value: str, append: bool, command: Command, frame: Frame
) -> None:
    usage = USAGE_PROPERTIES.get(key)
    if usage is None:
        current = target.properties.get(key)
        target.properties[key] = f"{current};{value}" if append and current else value
        return
    field_name, scope = usage
    collected: list[Scoped] = getattr(target, field_name)
    if not append:
        # PUBLIC items stand for both properties; replacing one leaves the other half.
        other = "INTERFACE" if scope == "PRIVATE" else "PRIVATE"
        kept = []
        for item in collected:
            if item.scope == scope:
                continue
            kept.append(dataclasses.replace(item, scope=other) if item.scope == "PUBLIC" else item)
        collected[:] = kept
    items = [Item(v, command.line) for v in split_list(value)]
    collected.extend(
        usage_items(
            ev, items, scope, command, frame, field_name != "link_libraries", usage_transform(ev, field_name, frame)
        )
    )


def _property_value(ev: Evaluation, target: TargetBuilder, key: str) -> str | None:
    if key == "TYPE":
        return target.kind
    if key == "NAME":
        return target.name
    if key == "IMPORTED":
        return "TRUE" if target.imported else "FALSE"
    if key == "ALIASED_TARGET":
        return target.alias_of
    if key == "SOURCES":
        return ";".join(s.path_repo_relative for s in target.sources)
    usage = USAGE_PROPERTIES.get(key)
    if usage is not None:
        field_name, scope = usage
        values = [i.value for i in getattr(target, field_name) if i.scope in (scope, "PUBLIC")]
        return ";".join(values) if values else None
    return target.properties.get(key)


def get_target_property(ev: Evaluation, command: Command, frame: Frame) -> None:
    """get_target_property(): the value, or <variable>-NOTFOUND."""
    words = ev.expand(command.args, frame)
    if len(words) < 3:
        return
    target = ev.targets.get(words[1])
    value = _property_value(ev, target, words[2]) if target is not None else None
    frame.scope.set(words[0], value if value is not None else f"{words[0]}-NOTFOUND")


def get_property(ev: Evaluation, command: Command, frame: Frame) -> None:
    """get_property(GLOBAL|TARGET ...)."""
    words = ev.expand(command.args, frame)
    if len(words) < 4 or "PROPERTY" not in words:
        return
    key = words[words.index("PROPERTY") + 1] if words.index("PROPERTY") + 1 < len(words) else ""
    value: str | None = None
    if words[1] == "GLOBAL":
        value = ev.global_properties.get(key)
    elif words[1] == "TARGET" and len(words) > 2:
        target = ev.targets.get(words[2])
        value = _property_value(ev, target, key) if target is not None else None
    if value is None:
        frame.scope.unset(words[0]) if words[1] == "GLOBAL" else frame.scope.set(words[0], "")
    else:
        frame.scope.set(words[0], value)
