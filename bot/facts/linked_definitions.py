"""The C-linkage functions each unit of a CMake binary's link defines, and where the CMake files
bring that unit in.

A unit is a target whose every object the link takes (its sources, a whole-archive or object
library: bot/facts/cmake_links.py); its definitions are read from its sources under its compile
line's defines (its own and those its direct libraries pass on).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from bot.cmake.model import CMakeModel, CMakeTarget
from bot.cpp.conditions import defines_from_flags
from bot.facts import cmake_links, symbols
from bot.facts.cmake_links import LinkedUnit
from bot.facts.pairing import is_compiled
from bot.snapshot import BuildModel


@dataclass(frozen=True, slots=True)
class PlacedDefinition:
    unit: LinkedUnit
    definition: symbols.Definition


def unit_definitions(build: BuildModel, model: CMakeModel, name: str) -> tuple[symbols.Definition, ...]:
    target = model.targets[name]
    defines = _defines(model, target)
    found: list[symbols.Definition] = []
    for source in dict.fromkeys(s.path_repo_relative for s in target.sources):
        if is_compiled(source):
            found.extend(symbols.source_c_definitions(build, source, defines))
    return tuple(found)


def _defines(model: CMakeModel, target: CMakeTarget) -> dict[str, str | None]:
    """What the target's compile line defines: its own definitions and those its direct
    libraries pass on (generator expressions the model left unevaluated are skipped)."""
    values = [d.value for d in target.compile_definitions if d.scope in ("PRIVATE", "PUBLIC")]
    for item in target.link_libraries:
        library = model.targets.get(cmake_links.resolve(model, item.value))
        if item.scope != "INTERFACE" and library is not None:
            values += [d.value for d in library.compile_definitions if d.scope in ("PUBLIC", "INTERFACE")]
    return defines_from_flags("-D" + value for value in values if value and "$<" not in value)


def placement(
    base_model: CMakeModel, binary: str, first: PlacedDefinition, second: PlacedDefinition
) -> tuple[PlacedDefinition, PlacedDefinition]:
    """Report on the definer the base's link of `binary` did not take yet, if one."""
    linked_at_base = set()
    for unit in cmake_links.linked_units(base_model, binary):
        linked_at_base.update(s.path_repo_relative for s in base_model.targets[unit.target].sources)
    if first.definition.path in linked_at_base and second.definition.path not in linked_at_base:
        return second, first
    return first, second


def where(build: BuildModel, model: CMakeModel, placed: PlacedDefinition) -> tuple[str, int]:
    """Where the CMake files bring the definer in: the line naming its source, or the link item."""
    if placed.unit.how != "sources":
        return placed.unit.path, placed.unit.line
    target = model.targets[placed.unit.target]
    source = next(s for s in target.sources if s.path_repo_relative == placed.definition.path)
    cmake_file = source.via[0][0] if source.via else source.path
    written = posixpath.relpath(placed.definition.path, posixpath.dirname(cmake_file) or ".")
    lines = (build.text(cmake_file) or "").splitlines()
    named = [n for n, text in enumerate(lines, start=1) if written in text and not text.lstrip().startswith("#")]
    return (cmake_file, named[0]) if named else (source.path, source.line)
