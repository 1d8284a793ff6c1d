"""What each CMake link puts into one binary whether or not anything calls into it.

A linker takes every object of a target's own sources, every object of an OBJECT library it
links, and every member of an archive linked whole (`--whole-archive`, `-force_load`,
`$<LINK_LIBRARY:WHOLE_ARCHIVE,...>`). Members of an ordinary archive are taken only when an
undefined symbol asks for them, so they are left out: whether two of them meet is not visible
from the build files alone.

Which link items reach a link follows CMake's propagation: a static library's items (PRIVATE
included) are replayed at every consumer's link, an INTERFACE library passes on its INTERFACE
items, and a shared library passes on only its PUBLIC and INTERFACE items (its own objects stay
in its own binary).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.cmake.model import CMakeModel, CMakeTarget

LINKED_KINDS = ("SHARED_LIBRARY", "MODULE_LIBRARY", "EXECUTABLE")
_OWN_SCOPES = ("PRIVATE", "PUBLIC")  # items that apply to the target's own link
_PASSED_ON = {
    "STATIC_LIBRARY": ("PRIVATE", "PUBLIC", "INTERFACE"),
    "OBJECT_LIBRARY": ("PRIVATE", "PUBLIC", "INTERFACE"),
    "INTERFACE_LIBRARY": ("INTERFACE", "PUBLIC"),
    "SHARED_LIBRARY": ("PUBLIC", "INTERFACE"),
    "MODULE_LIBRARY": ("PUBLIC", "INTERFACE"),
}


@dataclass(frozen=True, slots=True)
class LinkedUnit:
    """A target whose every object lands in the link of `binary`, and why.

    `how` is "sources" (the binary's own), "whole-archive" or "objects"; `path:line` is the
    link item that brings it in (the binary's definition for its own sources).
    """

    binary: str
    target: str
    how: str
    path: str
    line: int


def resolve(model: CMakeModel, name: str) -> str:
    """The target an ALIAS name stands for (the name itself otherwise)."""
    seen: set[str] = set()
    while name not in seen:
        seen.add(name)
        target = model.targets.get(name)
        if target is None or target.alias_of is None:
            return name
        name = target.alias_of
    return name


def linked_units(model: CMakeModel, binary: str) -> tuple[LinkedUnit, ...]:
    """Every target whose objects all land in `binary`'s link (the binary itself first)."""
    root = model.targets.get(binary)
    if root is None or root.imported or root.kind not in LINKED_KINDS:
        return ()
    reached, whole = _walk(model, root, binary)
    units = {binary: LinkedUnit(binary, binary, "sources", root.path, root.line)}
    for name, where in reached.items():
        if model.targets[name].kind == "OBJECT_LIBRARY":
            units.setdefault(name, LinkedUnit(binary, name, "objects", *where))
    for name, where in sorted(whole.items()):
        target = model.targets.get(name)
        if (
            name != binary
            and target is not None
            and not target.imported
            and target.kind in ("STATIC_LIBRARY", "OBJECT_LIBRARY")
        ):
            units.setdefault(name, LinkedUnit(binary, name, "whole-archive", *where))
    return tuple(units.values())


def archives_linked_on_demand(model: CMakeModel, binary: str) -> dict[str, tuple[str, int]]:
    """Static libraries `binary`'s link reaches but does not take whole -> the link item that
    brings each in (the linker keeps only the members something asks for)."""
    root = model.targets.get(binary)
    if root is None or root.imported or root.kind not in LINKED_KINDS:
        return {}
    reached, whole = _walk(model, root, binary)
    return {
        name: where
        for name, where in sorted(reached.items())
        if name not in whole and name != binary and model.targets[name].kind == "STATIC_LIBRARY"
    }


def _walk(
    model: CMakeModel, root: CMakeTarget, binary: str
) -> tuple[dict[str, tuple[str, int]], dict[str, tuple[str, int]]]:
    """(every in-tree library the link reaches, those it takes whole), each -> the item that brings it."""
    whole: dict[str, tuple[str, int]] = {}
    for pair in root.whole_archive:
        if pair.scope in _OWN_SCOPES:
            whole.setdefault(resolve(model, pair.library), (pair.path, pair.line))
    queue = deque(
        (resolve(model, item.value), (item.path, item.line))
        for item in root.link_libraries
        if item.scope in _OWN_SCOPES
    )
    reached: dict[str, tuple[str, int]] = {}
    while queue:
        name, where = queue.popleft()
        target = model.targets.get(name)
        if name in reached or name == binary or target is None or target.imported:
            continue
        reached[name] = where
        scopes = _PASSED_ON.get(target.kind, ())
        for pair in target.whole_archive:
            if pair.scope in scopes:
                whole.setdefault(resolve(model, pair.library), (pair.path, pair.line))
        queue.extend(
            (resolve(model, item.value), (item.path, item.line))
            for item in target.link_libraries
            if item.scope in scopes
        )
    return reached, whole


def binaries(model: CMakeModel) -> Iterator[tuple[str, CMakeTarget]]:
    """The model's shared libraries, modules and executables, sorted by name."""
    for name, target in sorted(model.targets.items()):
        if target.kind in LINKED_KINDS and not target.imported and target.alias_of is None:
            yield name, target
