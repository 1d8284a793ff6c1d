"""The evaluator's working state: variable scopes, directories, frames, targets under construction.

Everything here is mutable while an evaluation runs and never leaves it; `TargetBuilder.freeze`
turns a target into the frozen `CMakeTarget` of the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from bot.cmake.model import CMakeSource, CMakeTarget, Location, Scoped
from bot.cmake.syntax import Arg, Command
from bot.cmake.whole_archive import whole_archives

if TYPE_CHECKING:  # a definition's body is a slice of its file's block structure
    from bot.cmake.blocks import Program

_UNSET = object()
# Per list element: the `if` conditions it was added under (used to give each source the
# condition of the `list(APPEND ...)` that added it, not only of the add_library).
Origins = tuple[tuple[str, ...], ...]


class Scope:
    """A variable scope (directory, function or block), reading through to its parent."""

    __slots__ = ("own", "parent")

    def __init__(self, parent: Scope | None) -> None:
        self.own: dict[str, object] = {}
        self.parent = parent

    def get(self, name: str) -> tuple[str, Origins | None] | None:
        scope: Scope | None = self
        while scope is not None:
            entry = scope.own.get(name)
            if entry is not None:
                return None if entry is _UNSET else entry  # type: ignore[return-value]
            scope = scope.parent
        return None

    def set(self, name: str, value: str, origins: Origins | None = None) -> None:
        self.own[name] = (value, origins)

    def unset(self, name: str) -> None:
        self.own[name] = _UNSET

    def pin(self, name: str) -> None:
        """Keep this scope's current view of `name` before the parent's value changes."""
        if name not in self.own:
            entry = self.get(name)
            self.own[name] = _UNSET if entry is None else entry


@dataclass(slots=True)
class Directory:
    """Directory-level state: paths and the usage requirements add_definitions & co. add."""

    source_dir: str
    binary_dir: str
    compile_definitions: list[Scoped] = field(default_factory=list)
    compile_options: list[Scoped] = field(default_factory=list)
    include_directories: list[Scoped] = field(default_factory=list)
    link_libraries: list[Scoped] = field(default_factory=list)

    def child(self, source_dir: str, binary_dir: str) -> Directory:
        return Directory(
            source_dir,
            binary_dir,
            list(self.compile_definitions),
            list(self.compile_options),
            list(self.include_directories),
            list(self.link_libraries),
        )


@dataclass(frozen=True, slots=True)
class Frame:
    """Where a command runs: scope, directory, enclosing conditions, helper call sites."""

    scope: Scope
    directory: Directory
    conditions: tuple[str, ...] = ()
    call_sites: tuple[Location, ...] = ()
    macro_arguments: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Definition:
    """A function() or macro() definition: its body is a slice of its file's commands."""

    name: str
    parameters: tuple[str, ...]
    is_macro: bool
    program: Program
    body_start: int
    body_end: int
    path: str


class Flow(Enum):
    """How a run of commands ended: normally, or at break(), continue() or return()."""

    NEXT = 0
    BREAK = 1
    CONTINUE = 2
    RETURN = 3


@dataclass(frozen=True, slots=True)
class Item:
    """An expanded argument: its value, the line it was written on, its element origins."""

    value: str
    line: int
    origins: tuple[str, ...] = ()


def place(command: Command, frame: Frame, line: int | None = None) -> tuple[str, int, tuple[Location, ...]]:
    """Where a fact is reported: the outermost helper call site, or the command itself."""
    if frame.call_sites:
        path, call_line = frame.call_sites[0]
        return path, call_line, (*frame.call_sites[1:], (command.path, command.line))
    return command.path, line if line is not None else command.line, ()


def join_conditions(parts: Sequence[str]) -> str:
    """The conditions a fact holds under, as one `A AND (B OR C)` text."""
    unique = list(dict.fromkeys(p for p in parts if p))
    if len(unique) == 1:
        return unique[0]
    return " AND ".join(f"({p})" if (" OR " in p or " AND " in p) else p for p in unique)


def negate(condition: str) -> str:
    """`NOT condition`, parenthesized when it has more than one word."""
    return f"NOT ({condition})" if " " in condition else f"NOT {condition}"


def condition_text(args: Sequence[Arg]) -> str:
    """An if() condition as written, for reports."""
    words = []
    for arg in args:
        if arg.bracket:
            words.append(f"[[{arg.text}]]")
        elif arg.quoted:
            words.append(f'"{arg.text}"')
        else:
            words.append(arg.text)
    text = " ".join(words)
    return text.replace("( ", "(").replace(" )", ")")


@dataclass(slots=True)
class TargetBuilder:
    """A target while commands still add to it; frozen into CMakeTarget at the end."""

    name: str
    kind: str
    path: str
    line: int
    condition_text: str
    via: tuple[Location, ...]
    imported: bool = False
    alias_of: str | None = None
    sources: list[CMakeSource] = field(default_factory=list)
    link_options: list[Scoped] = field(default_factory=list)
    compile_definitions: list[Scoped] = field(default_factory=list)
    compile_options: list[Scoped] = field(default_factory=list)
    link_libraries: list[Scoped] = field(default_factory=list)
    include_directories: list[Scoped] = field(default_factory=list)
    installed: bool = False
    properties: dict[str, str] = field(default_factory=dict)

    def freeze(self) -> CMakeTarget:
        return CMakeTarget(
            name=self.name,
            kind=self.kind,
            path=self.path,
            line=self.line,
            condition_text=self.condition_text,
            sources=tuple(self.sources),
            link_options=tuple(self.link_options),
            compile_definitions=tuple(self.compile_definitions),
            compile_options=tuple(self.compile_options),
            link_libraries=tuple(self.link_libraries),
            include_directories=tuple(self.include_directories),
            whole_archive=tuple(whole_archives(self.link_libraries) + whole_archives(self.link_options)),
            installed=self.installed,
            imported=self.imported,
            alias_of=self.alias_of,
            properties=tuple(sorted(self.properties.items())),
            via=self.via,
        )


# Usage-requirement properties and the builder list + scope they stand for.
USAGE_PROPERTIES = {
    "LINK_OPTIONS": ("link_options", "PRIVATE"),
    "INTERFACE_LINK_OPTIONS": ("link_options", "INTERFACE"),
    "COMPILE_DEFINITIONS": ("compile_definitions", "PRIVATE"),
    "INTERFACE_COMPILE_DEFINITIONS": ("compile_definitions", "INTERFACE"),
    "COMPILE_OPTIONS": ("compile_options", "PRIVATE"),
    "INTERFACE_COMPILE_OPTIONS": ("compile_options", "INTERFACE"),
    "LINK_LIBRARIES": ("link_libraries", "PRIVATE"),
    "INTERFACE_LINK_LIBRARIES": ("link_libraries", "INTERFACE"),
    "INCLUDE_DIRECTORIES": ("include_directories", "PRIVATE"),
    "INTERFACE_INCLUDE_DIRECTORIES": ("include_directories", "INTERFACE"),
}
