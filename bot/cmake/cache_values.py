"""The values a CMake cache variable takes across the repository's own configurations.

A profile evaluates one configuration, but a cache variable such as `EXECUTORCH_PAL_DEFAULT`
has a value per configuration the repository itself sets up: its default (`option`,
`define_overridable_option`, `set(... CACHE ...)`), what a preset sets (`tools/cmake/preset/*.cmake`
through `set_overridable_option`, `CMakePresets.json`'s `cacheVariables`), a plain `set()` in a
CMake file (ExecuTorch's Zephyr build), and what a build script passes on the command line
(`-DEXECUTORCH_PAL_DEFAULT=android` in a shell script anywhere, or in any script of `.ci/`,
`scripts/` and other `scripts` directories and CI workflows). A source path written with the variable, such as
`${PROJECT_SOURCE_DIR}/runtime/platform/default/${EXECUTORCH_PAL_DEFAULT}.cpp`, then names one
file per value: every one of them is a file some configuration of CMake compiles.

Pure functions of a FileTree; documentation is not read (a value a tutorial suggests is not one
the repository builds).
"""

from __future__ import annotations

import itertools
import json
import posixpath
import re
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass

from bot.cmake.syntax import Command, parse_cmake_cached
from bot.tree import FileTree

COMPILED_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".m", ".mm")
# Directories whose files configure real builds from the command line.
SCRIPT_PREFIXES = (".ci/", ".github/workflows/", ".github/scripts/", "scripts/")
SCRIPT_SUFFIXES = (".sh", ".bash", ".yml", ".yaml", ".py", ".ps1", ".bat", ".cmd")
SHELL_SUFFIXES = (".sh", ".bash")
PRESETS_FILES = ("CMakePresets.json", "CMakeUserPresets.json")
# Variables that name directories rather than configurations: (name, the directory it names,
# "" for the repository root, None for the directory of the file that writes it).
DIRECTORY_VARIABLES: Mapping[str, str | None] = {
    "PROJECT_SOURCE_DIR": "",
    "CMAKE_SOURCE_DIR": "",
    "EXECUTORCH_ROOT": "",
    "CMAKE_CURRENT_SOURCE_DIR": None,
    "CMAKE_CURRENT_LIST_DIR": None,
}
_MAX_EXPANSIONS = 64  # one written path never stands for more files than this (a product of value sets)
_DEFINE = re.compile(r"(?<![\w-])-D\s?([A-Za-z_]\w*)(?::[A-Za-z]+)?=(?P<q>[\"']?)([^\s\"'\\;`$)]+)(?P=q)")
_REFERENCE = re.compile(r"\$\{([A-Za-z_]\w*)\}")


@dataclass(frozen=True, slots=True)
class Assignment:
    """One value a variable is given, and where."""

    variable: str
    value: str
    path: str
    line: int
    how: str  # default | preset | set | command line


@dataclass(frozen=True, slots=True)
class VariableSource:
    """A repository source file a CMake file names through a variable's value."""

    source: str  # the repository path the written path expands to
    written: str  # the path as the CMake file writes it
    cmake_path: str
    line: int
    assignments: tuple[Assignment, ...]  # the values that make it this file, one per variable


def variable_assignments(tree: FileTree) -> Mapping[str, tuple[Assignment, ...]]:
    """Variable -> every literal value the repository's CMake files, presets and scripts give it."""
    found: dict[str, list[Assignment]] = {}
    for path in tree.paths():
        if _is_cmake_file(path):
            for command in _commands(tree, path):
                for assignment in _command_assignments(command):
                    found.setdefault(assignment.variable, []).append(assignment)
        elif posixpath.basename(path) in PRESETS_FILES:
            for assignment in _preset_assignments(path, tree.read_text(path) or ""):
                found.setdefault(assignment.variable, []).append(assignment)
        elif _is_script(path):
            for assignment in _command_line_assignments(path, tree.read_text(path) or ""):
                found.setdefault(assignment.variable, []).append(assignment)
    return {name: tuple(items) for name, items in sorted(found.items())}


def cache_values(tree: FileTree, variable: str) -> frozenset[str]:
    """The values `variable` takes in some configuration the repository sets up."""
    return frozenset(a.value for a in variable_assignments(tree).get(variable, ()))


def sources_by_variable(
    tree: FileTree, assignments: Mapping[str, tuple[Assignment, ...]] | None = None
) -> Mapping[str, VariableSource]:
    """Repository source file -> how a CMake file names it through the values of a variable
    (only paths that need a configuration variable; files written literally are not listed)."""
    if assignments is None:
        assignments = variable_assignments(tree)
    found: dict[str, VariableSource] = {}
    for path in tree.paths():
        if not _is_cmake_file(path):
            continue
        for command in _commands(tree, path):
            for argument in command.args:
                if "${" not in argument.text or not argument.text.endswith(COMPILED_SUFFIXES) or argument.bracket:
                    continue
                for source, chosen in _expansions(argument.text, path, assignments):
                    if tree.exists(source) and source not in found:
                        found[source] = VariableSource(source, argument.text, path, argument.line, chosen)
    return found


# `.../default/${X}.cpp`: a file of a directory chosen by a variable (the directory part may hold
# variables too: `${PROJECT_SOURCE_DIR}/...`).
_VARIABLE_FILE = re.compile(r"([A-Za-z0-9_./${}-]*/)\$\{([A-Za-z0-9_]+)\}(\.[A-Za-z0-9]+)\b")


def named_by_unvalued_variable(text: str, source: str, cmake_directory: str, valued: Container[str]) -> int:
    """The line where CMake `text` picks a file of `source`'s directory by a variable the
    repository gives no literal value (a `foreach` variable, one computed from a list), 0 when
    none does. Such a path may name any file of the directory; a variable with known values names
    only theirs (`sources_by_variable`), so the PAL's `${EXECUTORCH_PAL_DEFAULT}.cpp` is not
    answered here."""
    if "${" not in text:
        return 0
    directory, name = posixpath.split(source)
    suffix = posixpath.splitext(name)[1]
    forms = {directory}  # as written from the repository root, or from the CMake file's directory
    if cmake_directory and directory.startswith(cmake_directory + "/"):
        forms.add(directory[len(cmake_directory) + 1 :])
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("#"):
            continue
        for match in _VARIABLE_FILE.finditer(line):
            if match.group(2) in valued or match.group(3) != suffix:
                continue
            written = re.sub(r"\$\{[A-Za-z0-9_]+\}/", "", match.group(1))
            if any(form and written.rstrip("/").endswith(form) for form in forms):
                return number
    return 0


def _expansions(written: str, cmake_path: str, assignments) -> Iterable[tuple[str, tuple[Assignment, ...]]]:
    """(repository path, the assignments used) for each way the configuration variables in a
    written path can be filled; nothing when one has no known value."""
    directory = posixpath.dirname(cmake_path)
    text = written
    for name, root in DIRECTORY_VARIABLES.items():
        text = text.replace("${" + name + "}", "\0" + (directory if root is None else root) + "\0")
    variables = list(dict.fromkeys(_REFERENCE.findall(text)))
    if not variables or any(name not in assignments for name in variables):
        return
    choices = [_distinct(assignments[name]) for name in variables]
    for combination in itertools.islice(itertools.product(*choices), _MAX_EXPANSIONS):
        expanded = text
        for assignment in combination:
            expanded = expanded.replace("${" + assignment.variable + "}", assignment.value)
        if "${" in expanded or "$<" in expanded:
            continue
        rooted = expanded.startswith("\0")
        expanded = expanded.replace("\0/", "/").replace("\0", "")
        relative = expanded.lstrip("/") if rooted else posixpath.join(directory, expanded)
        normalized = posixpath.normpath(relative)
        if not normalized.startswith(".."):
            yield normalized, combination


_HOW_ORDER = ("default", "preset", "set", "command line")


def _distinct(assignments: tuple[Assignment, ...]) -> list[Assignment]:
    """One assignment per value; the evidence kept is a default before a preset, a preset before
    a `set()`, and that before a script's command line."""
    kept: dict[str, Assignment] = {}
    for assignment in sorted(assignments, key=lambda a: (_HOW_ORDER.index(a.how), a.path, a.line)):
        kept.setdefault(assignment.value, assignment)
    return list(kept.values())


def _command_assignments(command: Command) -> Iterable[Assignment]:
    args = [a for a in command.args if not a.bracket]
    literal = [a.text for a in args]
    if not literal or not re.fullmatch(r"[A-Za-z_]\w*", literal[0]):
        return
    name = literal[0]
    if command.name == "set" and len(literal) >= 2:
        yield from _literal(name, literal[1], command, "default" if "CACHE" in literal[2:] else "set")
    elif command.name == "option" and len(literal) >= 3:
        yield from _literal(name, literal[2], command, "default")
    elif command.name == "define_overridable_option" and len(literal) >= 4:
        yield from _literal(name, literal[3], command, "default")
    elif command.name == "set_overridable_option" and len(literal) >= 2:
        yield from _literal(name, literal[1], command, "preset")


def _literal(name: str, value: str, command: Command, how: str) -> Iterable[Assignment]:
    if value and "${" not in value and "$<" not in value and "$ENV{" not in value:
        yield Assignment(name, value, command.path, command.line, how)


def _preset_assignments(path: str, text: str) -> Iterable[Assignment]:
    """`cacheVariables` of every configure preset (a value, or a `{"value": ...}` object)."""
    try:
        document = json.loads(text)
    except ValueError:
        return
    presets = document.get("configurePresets", []) if isinstance(document, dict) else []
    for preset in presets if isinstance(presets, list) else []:
        variables = preset.get("cacheVariables", {}) if isinstance(preset, dict) else {}
        for name, value in variables.items() if isinstance(variables, dict) else ():
            if isinstance(value, dict):
                value = value.get("value")
            if isinstance(value, str) and value and "$" not in value:
                yield Assignment(name, value, path, _line_of(text, f'"{name}"'), "preset")


def _command_line_assignments(path: str, text: str) -> Iterable[Assignment]:
    for number, line in enumerate(text.splitlines(), start=1):
        if "-D" not in line or line.lstrip().startswith("#"):
            continue
        for match in _DEFINE.finditer(line):
            yield Assignment(match.group(1), match.group(3), path, number, "command line")


def _line_of(text: str, needle: str) -> int:
    index = text.find(needle)
    return text.count("\n", 0, index) + 1 if index >= 0 else 1


def _commands(tree: FileTree, path: str) -> tuple[Command, ...]:
    text = tree.read_text(path)
    return parse_cmake_cached(tree.blob_id(path), text, path).commands if text else ()


def _is_cmake_file(path: str) -> bool:
    return posixpath.basename(path) == "CMakeLists.txt" or path.endswith(".cmake")


def _is_script(path: str) -> bool:
    """A shell script anywhere (a backend's or an example's build script), or any script of a
    CI or `scripts` directory."""
    if path.endswith(SHELL_SUFFIXES):
        return True
    return (path.startswith(SCRIPT_PREFIXES) or "/scripts/" in path) and path.endswith(SCRIPT_SUFFIXES)
