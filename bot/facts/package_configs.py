"""CMake package configs the build installs, the targets they name, and the targets the tree defines.

A package config (`<name>-config.cmake`, `<Name>Config.cmake`, or a `.in` template of one) is
what `find_package(<name> CONFIG)` runs in a consumer's project. It names the package's targets
in two ways: `if(TARGET x)` and lists of names a `foreach` then tests with `TARGET ${lib}`
(ExecuTorch's `optional_lib_list`). Read with the CMake syntax layer, not evaluated: a config
runs in the consumer's project, not in this build.

What the tree defines is read from every CMake file: the literal first argument of
`add_library`, `add_executable` and `add_custom_target`, and every literal argument of a call
to a function or macro of the tree whose body adds a target from a variable (ExecuTorch's
`gen_operators_lib(LIB_NAME "portable_ops_lib" ...)`): such a call may define any of them.
An `EXPORT_NAME` property is the name consumers of the installed package see.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.cmake.syntax import CMakeFile, Command, parse_cmake_cached
from bot.facts import revision

if TYPE_CHECKING:
    from bot.snapshot import BuildModel

_CONFIG_NAME = re.compile(r"(?:-config|Config)\.cmake(?:\.in)?$")
_DEFINING = ("add_library", "add_executable", "add_custom_target")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.+:-]*$")


@dataclass(frozen=True, slots=True)
class NamedTarget:
    """A target name a package config relies on, at `path:line`."""

    name: str
    path: str
    line: int


def is_package_config(path: str) -> bool:
    """Whether a file name is a CMake package config (or its template)."""
    return bool(_CONFIG_NAME.search(posixpath.basename(path)))


def cmake_files(model: BuildModel) -> tuple[str, ...]:
    """Every CMake file of the revision."""
    return revision.tree_memo(
        model,
        ("package-configs:files",),
        lambda: tuple(
            p
            for p in model.tree.paths()
            if posixpath.basename(p) == "CMakeLists.txt" or p.endswith((".cmake", ".cmake.in"))
        ),
    )


def parsed(model: BuildModel, path: str) -> CMakeFile | None:
    data = model.tree.read(path)
    return None if data is None else parse_cmake_cached(model.tree.blob_id(path), data, path)


def shipped_configs(model: BuildModel) -> tuple[str, ...]:
    """Package configs some `install()` or `configure_package_config_file()` of the tree names."""

    def compute() -> tuple[str, ...]:
        configs = [p for p in cmake_files(model) if is_package_config(p)]
        if not configs:
            return ()
        words: set[str] = set()
        for path in cmake_files(model):
            if path.endswith(".in"):
                continue
            parsed_file = parsed(model, path)
            for command in parsed_file.commands if parsed_file else ():
                if command.name in ("install", "configure_package_config_file", "configure_file"):
                    words.update(posixpath.basename(arg.text) for arg in command.args)
        return tuple(p for p in configs if posixpath.basename(p) in words)

    return revision.tree_memo(model, ("package-configs:shipped",), compute)


def named_targets(config: CMakeFile) -> tuple[NamedTarget, ...]:
    """The targets a config tests for: `if(TARGET x)` and items of lists a foreach tests with TARGET."""
    found: list[NamedTarget] = []
    lists: dict[str, list[NamedTarget]] = {}
    tested_lists: set[str] = set()
    loop: tuple[str, str] | None = None  # (loop variable, list variable) of the innermost foreach
    for command in config.commands:
        args = command.args
        if command.name in ("set", "list") and args:
            head = args[0].text
            items = (
                args[1:] if command.name == "set" else args[2:] if len(args) > 2 and head.upper() == "APPEND" else ()
            )
            variable = head if command.name == "set" else args[1].text if len(args) > 1 else ""
            entries = [
                NamedTarget(a.text, command.path, a.line)
                for a in items
                if _NAME.match(a.text) and a.text.upper() not in ("CACHE", "PARENT_SCOPE")
            ]
            if command.name == "set":
                lists[variable] = entries
            else:
                lists.setdefault(variable, []).extend(entries)
        elif command.name == "foreach" and len(args) >= 2:
            loop = (args[0].text, _list_variable(args[1:]))
        elif command.name == "endforeach":
            loop = None
        if command.name in ("if", "elseif"):
            for index, arg in enumerate(args[:-1]):
                if arg.text != "TARGET" or arg.quoted:
                    continue
                target = args[index + 1].text
                if _NAME.match(target):
                    found.append(NamedTarget(target, command.path, args[index + 1].line))
                elif loop is not None and target == f"${{{loop[0]}}}" and loop[1]:
                    tested_lists.add(loop[1])
    for variable in sorted(tested_lists):
        found.extend(lists.get(variable, ()))
    return tuple(dict.fromkeys(found))


def _list_variable(args) -> str:
    """The list variable a foreach iterates: `${var}` or `IN LISTS var`."""
    texts = [a.text for a in args]
    if len(texts) >= 3 and texts[0] == "IN" and texts[1] == "LISTS":
        return texts[2]
    match = re.fullmatch(r"\$\{(\w+)\}", texts[0]) if texts else None
    return match.group(1) if match else ""


def defined_targets(model: BuildModel) -> Mapping[str, tuple[str, int]]:
    """Every target name the tree's CMake files may define -> where (the first place)."""

    def compute() -> dict[str, tuple[str, int]]:
        files = [f for f in (parsed(model, p) for p in cmake_files(model)) if f is not None]
        dynamic = _dynamic_definers(files)
        found: dict[str, tuple[str, int]] = {}
        for parsed_file in files:
            for command in parsed_file.commands:
                if command.name in _DEFINING and command.args and "${" not in command.args[0].text:
                    found.setdefault(command.args[0].text, (command.path, command.line))
                elif command.name in ("set_target_properties", "set_property"):
                    # An exported target is known to consumers by its EXPORT_NAME.
                    texts = [a.text for a in command.args]
                    for index, text in enumerate(texts[:-1]):
                        if text == "EXPORT_NAME" and _NAME.match(texts[index + 1]):
                            found.setdefault(texts[index + 1], (command.path, command.line))
                elif command.name in dynamic:
                    for arg in command.args:
                        if _NAME.match(arg.text):
                            found.setdefault(arg.text, (command.path, command.line))
        return found

    return revision.tree_memo(model, ("package-configs:defined",), compute)


def _dynamic_definers(files: Iterable[CMakeFile]) -> frozenset[str]:
    """Functions and macros whose body adds a target whose name is a variable."""
    names: set[str] = set()
    for parsed_file in files:
        current: str | None = None
        for command in parsed_file.commands:
            if command.name in ("function", "macro") and command.args:
                current = command.args[0].text.lower()
            elif command.name in ("endfunction", "endmacro"):
                current = None
            elif current and command.name in _DEFINING and command.args and "${" in command.args[0].text:
                names.add(current)
    return frozenset(names)


def first_command(config: CMakeFile, line: int) -> Command | None:
    """The command spanning `line`."""
    return next((c for c in config.commands if c.line <= line <= c.end_line), None)
