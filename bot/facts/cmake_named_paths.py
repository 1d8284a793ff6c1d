"""The paths CMake files name as sources or subdirectories, as written and as resolved.

Read textually (no evaluation): `add_library`, `add_executable`, `target_sources`,
`et_cxx_test` and `add_subdirectory` arguments that look like files, with `${...}` roots and
the file's own directory resolved, outputs of custom commands left out. Kept per (blob, path)
in the fact store.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from bot.snapshot import BuildModel
from bot.store import memo as facts

# CMake commands whose arguments are sources relative to the current source directory.
SOURCE_FILE = re.compile(r"\.(c|cc|cpp|cxx|cu|cuh|h|hh|hpp|inc|m|mm|S|py)$")

_SOURCE_COMMANDS = frozenset({"add_library", "add_executable", "target_sources", "et_cxx_test"})


# Commands whose path arguments are not sources that must exist: outputs they create, tests of
# existence, properties of files, text. Any other command's rooted path (`${EXECUTORCH_ROOT}/x.cpp`,
# a helper such as `vulkan_op_test(name ${CMAKE_CURRENT_SOURCE_DIR}/x.cpp)`) names a source.
_NOT_SOURCES = frozenset(
    {
        "add_custom_command",
        "add_custom_target",
        "configure_file",
        "file",
        "execute_process",
        "message",
        "if",
        "elseif",
        "while",
        "string",
        "get_filename_component",
        "set_source_files_properties",
        "set_property",
        "cmake_path",
        "find_file",
        "find_path",
        "return",
        "function",
        "macro",
        "foreach",
    }
)


_ROOTS = ("EXECUTORCH_ROOT", "PROJECT_SOURCE_DIR")


_HERE = ("CMAKE_CURRENT_SOURCE_DIR", "CMAKE_CURRENT_LIST_DIR")


_COMMAND = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(", re.MULTILINE)


_VARIABLE = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def cmake_files(model: BuildModel) -> Iterator[str]:
    for path in model.tree.paths():
        name = path.rsplit("/", 1)[-1]
        if name == "CMakeLists.txt" or name.endswith(".cmake"):
            yield path


def cmake_named_paths(model: BuildModel, paths: list[str]) -> dict[str, tuple[tuple[int, str, str, str], ...]]:
    """path -> what `_named_paths` finds in it, kept per (blob, path) in the fact store."""
    blobs = {path: model.tree.blob_id(path) for path in paths}
    keys = [(blob, path) for path, blob in blobs.items() if blob is not None]

    def scan(missing: list) -> dict:
        model.tree.prefetch(path for _blob, path in missing)
        found = {}
        for key in missing:
            text = model.text(key[1])
            found[key] = tuple(_named_paths(key[1], text)) if text and "(" in text else ()
        return found

    found = facts.many("source-missing:cmake-paths", keys, scan, persist=True)
    return {path: found[(blob, path)] for blob, path in keys}


def _strip_comment(line: str) -> str:
    """The line without a trailing `#` comment (outside quotes)."""
    quoted = False
    for index, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == "#" and not quoted:
            return line[:index]
    return line


def _named_paths(path: str, text: str) -> Iterator[tuple[int, str, str, str]]:
    """(line, command, repository path, text written) for every file path a CMake file names."""
    here = posixpath.dirname(path)
    listed = path.endswith("CMakeLists.txt")
    variables: dict[str, str] = {}
    lines = [_strip_comment(line) for line in text.splitlines()]
    command = ""
    depth = 0
    arguments: list[tuple[int, str]] = []
    named_paths: list[tuple[int, str, str, str]] = []
    listed_by_variable: dict[str, list[str]] = {}  # set(VAR paths...) -> the paths
    generated: set[str] = set()  # what add_custom_command(OUTPUT ...) makes at build time
    for number, line in enumerate(lines, 1):
        position = 0
        if depth == 0:
            match = _COMMAND.match(line)
            if not match:
                continue
            command, depth, arguments, position = match.group(1).lower(), 1, [], match.end()
        for token in re.finditer(r'"[^"]*"|[()]|[^\s()"]+', line[position:]):
            word = token.group(0)
            if word == "(":
                depth += 1
            elif word == ")":
                depth -= 1
                if depth == 0:
                    found = list(_resolve(command, arguments, here, listed, variables))
                    if command == "set" and arguments:
                        listed_by_variable[arguments[0][1]] = [named for _l, _c, named, _w in found]
                    if command == "add_custom_command":
                        generated.update(_outputs(arguments, here, variables, listed_by_variable))
                    named_paths.extend(found)
                    break
            else:
                arguments.append((number, word.strip('"')))
    # A generated file is named before the command that makes it (MLX's schema_generated.h, 38c5ca30c3).
    yield from (found for found in named_paths if found[2] not in generated)


_KEYWORD = re.compile(r"[A-Z_]+")


def _outputs(
    arguments: list[tuple[int, str]], here: str, variables: dict[str, str], listed_by_variable: dict[str, list[str]]
) -> Iterator[str]:
    """The repository paths an add_custom_command's OUTPUT names (directly, or as `${VAR}` of a set())."""
    words = [word for _line, word in arguments]
    if "OUTPUT" not in words:
        return
    for word in words[words.index("OUTPUT") + 1 :]:
        if _KEYWORD.fullmatch(word):
            return
        variable = re.fullmatch(r"\$\{(\w+)\}", word)
        if variable is not None:
            yield from listed_by_variable.get(variable.group(1), ())
            continue
        named = _expand(word, here, variables, relative=True)
        if named is not None:
            yield named


def _resolve(
    command: str, arguments: list[tuple[int, str]], here: str, listed: bool, variables: dict[str, str]
) -> Iterator[tuple[int, str, str, str]]:
    if command == "set" and len(arguments) == 2 and "$" not in arguments[1][1] and "/" not in arguments[1][1]:
        variables[arguments[0][1]] = arguments[1][1]  # set(TARGET_DIR generic): one literal word
        return
    if command == "add_subdirectory" and arguments:
        line, written = arguments[0]
        named = _expand(written, here, variables, relative=listed)
        if named is not None:
            yield line, command, named, written
        return
    if command in _NOT_SOURCES:
        return
    for line, written in arguments[1:]:
        if not SOURCE_FILE.search(written) or "$<" in written or "*" in written:
            continue
        rooted = written.startswith("${")
        if not rooted and (command not in _SOURCE_COMMANDS or not listed):
            continue  # a bare name in a list is joined to a prefix later; in an included file, to the includer's
        named = _expand(written, here, variables, relative=listed)
        if named is not None:
            yield line, command, named, written


def _expand(written: str, here: str, variables: dict[str, str], relative: bool) -> str | None:
    """The repository path a CMake path denotes, or None when it depends on what the model cannot know."""

    def value(match: re.Match) -> str:
        name = match.group(1)
        if name in _ROOTS:
            return "\0root"
        if name in _HERE:
            return "\0here"
        return variables.get(name, "\0unknown")

    expanded = _VARIABLE.sub(value, written)
    if "\0unknown" in expanded or "$" in expanded:
        return None
    if expanded.startswith("\0root/"):
        joined = expanded[len("\0root/") :]
    elif expanded.startswith("\0here/"):
        joined = posixpath.join(here, expanded[len("\0here/") :])
    elif "\0" in expanded or expanded.startswith("/") or not relative:
        return None
    else:
        joined = posixpath.join(here, expanded)
    normalized = posixpath.normpath(joined)
    return None if normalized.startswith("..") or "\0" in normalized else normalized
