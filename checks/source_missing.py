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

A CMake file that no build of the repository reads (no CMake profile's configure reaches it,
nor its component's directory, and no CI script names it: a template a manual tells users to
copy) stops nobody's configure: its finding is information only.

Files under a submodule (a gitlink: `third-party/`, XNNPACK, ...) are not in the tree and are
not checked; nor are generated files (an add_custom_command's OUTPUT, labels, `$(...)`,
generator expressions, paths from variables the file does not set to a literal).

Example (bad): `tosa_backend.py` moves to `tosa/backend.py` and `srcs = ["tosa_backend.py"]` stays.

Use instead: name the file where it now is, in every build that compiles it.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.check import Check, Example
from bot.facts import cmake_reach
from bot.facts.missing_files import missing_listed, missing_named
from bot.model import Hit, Severity
from bot.snapshot import Snapshot
from checks.support.callsite import item_line


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    submodules = tuple(snap.head.tree.gitlinks())
    seen: set[tuple[str, str]] = set()
    for hit in (*_buck_hits(snap, submodules), *_cmake_hits(snap, submodules)):
        if (hit.path, hit.key) not in seen:
            seen.add((hit.path, hit.key))
            yield hit


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


def _buck_hits(snap: Snapshot, submodules: tuple[str, ...]) -> Iterator[Hit]:
    for cell, target, attribute, item, path in missing_listed(snap, submodules):
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


def _cmake_hits(snap: Snapshot, submodules: tuple[str, ...]) -> Iterator[Hit]:
    found = list(missing_named(snap, submodules))
    unread = cmake_reach.unread(snap.head, cmake_reach.review_profiles(snap), {f[0] for f in found})
    for path, line, command, named, written in found:
        what = f"`{named}/CMakeLists.txt`" if command == "add_subdirectory" else f"`{named}`"
        consequence = (
            " No build of this repository reads this file (no CMake profile's configure reaches it and no "
            "CI script names its directory): it stops only a configure run someone starts on it by hand."
            if path in unread
            else " CMake stops at configure in every build that reads this file."
        )
        yield Hit(
            path=path,
            line=line,
            message=f"`{command}({written})` names {what}, which does not exist.{_explanation(snap, named)}{consequence}",
            key=f"{command}:{named}",
            offending_text=written,
            at_most=Severity.INFO if path in unread else None,
        )


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
                "CMakeLists.txt": "add_subdirectory(cadence)\n",
                "cadence/CMakeLists.txt": "set(TARGET_DIR reference)\nadd_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/${TARGET_DIR}/kernels)\n",
                "cadence/reference/kernels/CMakeLists.txt": "add_library(k kernels.cpp)\n",
                "cadence/reference/kernels/kernels.cpp": "int k;\n",
            },
            head={
                "CMakeLists.txt": "add_subdirectory(cadence)\n",
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
