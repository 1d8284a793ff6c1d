"""Targets: add_library, add_executable, add_custom_target, target_sources."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bot.cmake.commands.usage import SCOPE_KEYWORDS
from bot.cmake.generator_expressions import GenexContext, evaluate_generator_expressions
from bot.cmake.model import CMakeSource, repo_path
from bot.cmake.state import Frame, Item, TargetBuilder, join_conditions, place
from bot.cmake.syntax import Command
from bot.cmake.values import is_false_value, split_list

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation

_LIBRARY_KINDS = {
    "STATIC": "STATIC_LIBRARY",
    "SHARED": "SHARED_LIBRARY",
    "MODULE": "MODULE_LIBRARY",
    "OBJECT": "OBJECT_LIBRARY",
    "INTERFACE": "INTERFACE_LIBRARY",
    "UNKNOWN": "UNKNOWN_LIBRARY",
}


def new_target(ev: Evaluation, name: str, kind: str, command: Command, frame: Frame, **extra: Any) -> TargetBuilder:
    """A target defined here, starting with its directory's usage requirements."""
    path, line, via = place(command, frame)
    target = TargetBuilder(name, kind, path, line, join_conditions(frame.conditions), via, **extra)
    if kind not in ("ALIAS", "UTILITY") and not target.imported:
        directory = frame.directory
        target.compile_definitions.extend(directory.compile_definitions)
        target.compile_options.extend(directory.compile_options)
        target.include_directories.extend(directory.include_directories)
        target.link_libraries.extend(directory.link_libraries)
    if name in ev.targets and not ev.targets[name].imported:
        ev.problem(command, f"target {name!r} is defined twice")
    ev.targets[name] = target
    return target


def _add_sources(ev: Evaluation, target: TargetBuilder, items: Sequence[Item], command: Command, frame: Frame) -> None:
    """Sources with the conditions they were added under (the command's and each element's)."""
    context = GenexContext.of(ev.profile)
    path, line, via = place(command, frame)
    for item in items:
        for value in split_list(evaluate_generator_expressions(item.value, context)):
            resolved = ev.resolve(value, frame)
            relative = repo_path(resolved)
            condition = join_conditions((*frame.conditions, *item.origins))
            target.sources.append(
                CMakeSource(
                    relative if relative is not None else value,
                    condition,
                    path,
                    line if frame.call_sites else item.line,
                    via,
                )
            )


def add_library(ev: Evaluation, command: Command, frame: Frame) -> None:
    """add_library(): a library (or ALIAS, or IMPORTED) and its sources."""
    items = ev.expand_items(command.args, frame)
    if not items:
        return
    name = items[0].value
    words = [item.value for item in items[1:]]
    if words[:1] == ["ALIAS"] and len(words) >= 2:
        new_target(ev, name, "ALIAS", command, frame, alias_of=words[1])
        return
    kind = None
    if words and words[0] in _LIBRARY_KINDS:
        kind = _LIBRARY_KINDS[words[0]]
    imported = "IMPORTED" in words[:3]
    if kind is None:
        shared = not is_false_value(ev.lookup(frame, "", "BUILD_SHARED_LIBS"))
        kind = "SHARED_LIBRARY" if shared else "STATIC_LIBRARY"
    target = new_target(ev, name, kind, command, frame, imported=imported)
    if not imported:
        skip = {"STATIC", "SHARED", "MODULE", "OBJECT", "INTERFACE", "EXCLUDE_FROM_ALL", "GLOBAL", "UNKNOWN"}
        sources = [item for item in items[1:] if item.value not in skip]
        _add_sources(ev, target, sources, command, frame)


def add_executable(ev: Evaluation, command: Command, frame: Frame) -> None:
    """add_executable(): an executable (or ALIAS, or IMPORTED) and its sources."""
    items = ev.expand_items(command.args, frame)
    if not items:
        return
    words = [item.value for item in items[1:]]
    if words[:1] == ["ALIAS"] and len(words) >= 2:
        new_target(ev, items[0].value, "ALIAS", command, frame, alias_of=words[1])
        return
    imported = "IMPORTED" in words[:2]
    target = new_target(ev, items[0].value, "EXECUTABLE", command, frame, imported=imported)
    if not imported:
        sources = [item for item in items[1:] if item.value not in ("WIN32", "MACOSX_BUNDLE", "EXCLUDE_FROM_ALL")]
        _add_sources(ev, target, sources, command, frame)


def add_custom_target(ev: Evaluation, command: Command, frame: Frame) -> None:
    """add_custom_target(): a UTILITY target."""
    words = ev.expand(command.args[:1], frame)
    if words:
        new_target(ev, words[0], "UTILITY", command, frame)


def add_target_sources(ev: Evaluation, command: Command, frame: Frame) -> None:
    """target_sources(): plain sources and FILE_SET files."""
    items = ev.expand_items(command.args, frame)
    if not items:
        return
    target = ev.target(items[0].value, command)
    if target is None:
        return
    sources: list[Item] = []
    file_set_keyword = None
    for item in items[1:]:
        value = item.value
        if value in SCOPE_KEYWORDS:
            file_set_keyword = None
        elif value in ("FILE_SET", "TYPE", "BASE_DIRS", "FILES"):
            file_set_keyword = value
        elif file_set_keyword in ("FILE_SET", "TYPE"):
            file_set_keyword = None
        elif file_set_keyword == "BASE_DIRS":
            continue
        else:
            sources.append(item)
    _add_sources(ev, target, sources, command, frame)
