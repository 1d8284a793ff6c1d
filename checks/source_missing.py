"""A build names a file that does not exist.

A Buck target's `srcs`, `headers` or `exported_headers` (C++ and Python alike), a CMake
`add_library`/`add_executable`/`target_sources` source, a source list built with `set` or
`list(APPEND)` from a rooted path (`${EXECUTORCH_ROOT}/...`, `${CMAKE_CURRENT_SOURCE_DIR}/...`),
or an `add_subdirectory` whose directory has no CMakeLists.txt: each must name a file of the
tree. When a change moves or deletes a file and only one build follows (ExecuTorch keeps Buck
and CMake by hand, and often several Buck files name one source), the other build fails:
buck2 refuses the target ("source file does not exist"), CMake stops at configure ("Cannot
find source file"). The finding names the change that explains the gap: the rename (with the
new path) or the deletion.

Files under a submodule (a gitlink: `third-party/`, XNNPACK, ...) are not in the tree and are
not checked; nor are generated files (an add_custom_command's OUTPUT, labels, `$(...)`,
generator expressions, paths from variables the file does not set to a literal).

Example (bad): `tosa_backend.py` moves to `tosa/backend.py` and `srcs = ["tosa_backend.py"]` stays.

Use instead: name the file where it now is, in every build that compiles it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from bot.buck.cells import CELLS
from bot.buck.targets import flatten
from bot.check import Check, Example
from bot.facts import change_scope
from bot.model import Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from bot.store import memo as facts
from checks.support.callsite import item_line

_FILE_ATTRIBUTES = ("srcs", "headers", "exported_headers")
_SOURCE = re.compile(r"\.(c|cc|cpp|cxx|cu|cuh|h|hh|hpp|inc|m|mm|S|py)$")
# CMake commands whose arguments are sources relative to the current source directory.
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


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    submodules = tuple(snap.head.tree.gitlinks())
    seen: set[tuple[str, str]] = set()
    for hit in (*_buck_hits(snap, submodules), *_cmake_hits(snap, submodules)):
        if (hit.path, hit.key) not in seen:
            seen.add((hit.path, hit.key))
            yield hit


def _under_submodule(path: str, submodules: tuple[str, ...]) -> bool:
    return any(path == s or path.startswith(s + "/") for s in submodules)


def _explanation(snap: Snapshot, path: str) -> str:
    """Why the file is gone, from the change: a rename names where it went."""
    for change in snap.changes.files:
        if change.old_path == path and change.status == "renamed":
            return f" It was moved to `{change.path}` by this change."
        if change.path == path and change.status == "deleted":
            return " It was deleted by this change."
    for change in snap.changes.files:  # a directory: where its files went
        if change.status == "renamed" and change.old_path and change.old_path.startswith(path + "/"):
            moved = change.path[: len(change.path) - len(change.old_path) + len(path)]
            if change.path.endswith(change.old_path[len(path) :]):
                return f" This change moved `{path}` to `{moved}`."
            return f" This change moved files out of `{path}`."
    return ""


def _missing(model: BuildModel, path: str, submodules: tuple[str, ...]) -> bool:
    return not model.tree.exists(path) and not model.tree.is_dir(path) and not _under_submodule(path, submodules)


def _buck_hits(snap: Snapshot, submodules: tuple[str, ...]) -> Iterator[Hit]:
    # What the change can affect: the targets it changed, and any target's file whose existence
    # it flipped (a deletion or a move far from the targets that name the file).
    listing = change_scope.listing_changes(snap)
    names = None if listing is None else {path.rsplit("/", 1)[-1] for path in listing}
    for cell in CELLS:
        graph = snap.head.cell(cell)
        scope = change_scope.changed_targets(snap, cell)
        for target in graph.targets.values():
            whole = names is None or scope.holds(target)
            for attribute in _FILE_ATTRIBUTES:
                for item in flatten(target.attrs.get(attribute)):
                    if not isinstance(item, str) or not _SOURCE.search(item) or item.startswith((":", "/", "@", "$")):
                        continue
                    if "//" in item or "*" in item:
                        continue
                    if not whole and item.rsplit("/", 1)[-1] not in names:  # type: ignore[operator]
                        continue  # cheaper than the join below, for the many files nobody moved
                    path = posixpath.normpath(posixpath.join(target.package, item))
                    if not whole and path not in listing:  # type: ignore[operator]
                        continue
                    if not _missing(snap.head, path, submodules):
                        continue
                    text = snap.head.text(target.path) or ""
                    line = item_line(text, target, item) or target.line
                    yield Hit(
                        path=target.path,
                        line=line,
                        message=(
                            f"`{target.label}` names `{item}` in `{attribute}`, but `{path}` does not exist."
                            f"{_explanation(snap, path)} buck2 refuses the target."
                        ),
                        key=f"{target.label}:{path}",
                        target=target.label,
                        cell=cell,
                        offending_text=item,
                    )


def _cmake_files(model: BuildModel) -> Iterator[str]:
    for path in model.tree.paths():
        name = path.rsplit("/", 1)[-1]
        if name == "CMakeLists.txt" or name.endswith(".cmake"):
            yield path


def _cmake_hits(snap: Snapshot, submodules: tuple[str, ...]) -> Iterator[Hit]:
    listing = change_scope.listing_changes(snap)
    paths = [path for path in _cmake_files(snap.head) if not _under_submodule(path, submodules)]
    for path, named_paths in _cmake_named_paths(snap.head, paths).items():
        # A file the change left alone names the same paths: only those whose existence moved can differ.
        whole = listing is None or path in listing
        for line, command, named, written in named_paths:
            if not whole and named not in listing:  # type: ignore[operator]
                continue
            missing = (
                not snap.head.tree.exists(posixpath.join(named, "CMakeLists.txt"))
                if command == "add_subdirectory"
                else not snap.head.tree.exists(named)
            )
            if (
                not missing
                or _under_submodule(named, submodules)
                or (snap.head.tree.is_dir(named) and command != "add_subdirectory")
            ):
                continue
            what = f"`{named}/CMakeLists.txt`" if command == "add_subdirectory" else f"`{named}`"
            yield Hit(
                path=path,
                line=line,
                message=(
                    f"`{command}({written})` names {what}, which does not exist."
                    f"{_explanation(snap, named)} CMake stops at configure in every build that reads this file."
                ),
                key=f"{command}:{named}",
                offending_text=written,
            )


def _cmake_named_paths(model: BuildModel, paths: list[str]) -> dict[str, tuple[tuple[int, str, str, str], ...]]:
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
        if not _SOURCE.search(written) or "$<" in written or "*" in written:
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


CHECK = Check(
    id="source-missing",
    inputs=None,
    severity=Severity.BLOCKER,
    title="Build names a file that does not exist",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            base={
                "arm/BUCK": 'python_library(name = "backend", srcs = ["tosa_backend.py"])\n',
                "arm/tosa_backend.py": "x = 1\n",
            },
            head={
                "arm/BUCK": 'python_library(name = "backend", srcs = ["tosa_backend.py"])  # expect: source-missing\n',
                "arm/tosa/backend.py": "x = 1\n",
            },
        ),
        Example(
            base={
                "cadence/CMakeLists.txt": "set(TARGET_DIR reference)\nadd_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/${TARGET_DIR}/kernels)\n",
                "cadence/reference/kernels/CMakeLists.txt": "add_library(k kernels.cpp)\n",
                "cadence/reference/kernels/kernels.cpp": "int k;\n",
            },
            head={
                "cadence/CMakeLists.txt": "set(TARGET_DIR reference)\nadd_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/${TARGET_DIR}/kernels)  # expect: source-missing\n",
                "cadence/generic/kernels/CMakeLists.txt": "add_library(k kernels.cpp)\n",
                "cadence/generic/kernels/kernels.cpp": "int k;\n",
            },
        ),
    ),
    good=(
        Example(
            base={
                "arm/BUCK": 'python_library(name = "backend", srcs = ["tosa_backend.py"])\n',
                "arm/tosa_backend.py": "x = 1\n",
            },
            head={
                "arm/BUCK": 'python_library(name = "backend", srcs = ["tosa/backend.py"])\n',
                "arm/tosa/backend.py": "x = 1\n",
            },
        ),
        Example(
            head={
                "ops/CMakeLists.txt": (
                    "set(_srcs op_add.cpp)\n"
                    "add_library(ops ${_srcs} ${CMAKE_CURRENT_BINARY_DIR}/gen.cpp op_add.cpp)\n"
                    "add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/sub)\n"
                ),
                "ops/op_add.cpp": "int add;\n",
                "ops/sub/CMakeLists.txt": "\n",
            },
        ),
        # Files a custom command generates at build time, named before it (38c5ca30c3's MLX schema).
        Example(
            head={
                "mlx/CMakeLists.txt": (
                    "set(_generated\n"
                    '    "${CMAKE_CURRENT_SOURCE_DIR}/runtime/schema_generated.h"\n'
                    '    "${CMAKE_CURRENT_SOURCE_DIR}/runtime/MLXLoader.cpp"\n'
                    ")\n"
                    "add_custom_command(\n"
                    "  OUTPUT ${_generated} ${CMAKE_CURRENT_SOURCE_DIR}/serialization/schema.py\n"
                    "  COMMAND python generate.py\n"
                    ")\n"
                    "add_library(mlx ${CMAKE_CURRENT_SOURCE_DIR}/runtime/MLXLoader.cpp)\n"
                ),
            },
        ),
    ),
)
