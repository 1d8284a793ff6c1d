"""A library that registers itself is linked whole in one build system and on demand in the other.

A backend or kernel library announces itself from a static initializer
(`static auto registered = register_backend(...)`, `EXECUTORCH_LIBRARY(...)`, a
`__attribute__((constructor))`): nothing calls into that object, so a linker that takes archive
members on demand drops it, and the registration with it. Buck keeps it with `link_whole = True`,
CMake with `--whole-archive` (or a library naming itself through
`executorch_target_link_options_shared_lib`). When the Buck target and its CMake twin (the
target compiling the same sources) disagree, one build's binaries lose the backend or kernels
silently: loading a program then fails with "backend not found" or a missing operator, in
that build only.

Reported: a Buck target with `link_whole = True` whose CMake twin a CMake binary links
without taking it whole (or a CMake library that gathers its sources with others', as
ExecuTorch's `executorch` gathered the executor's Buck closure, prim ops registry included, until
41fe5d2e0c linked it whole); and a CMake target that binaries take whole while its Buck twin lacks
`link_whole`. Only when a source both compile holds a registering static initializer: a library
without one needs no force-linking, and the flag's absence there is no defect. The configured
CMake builds are read, and the Android build when the change touches extension/android: the JNI
library's link line exists only there (ExecuTorch dropped `quantized_ops_lib`'s force-linking
from it in d38ca81dbb and put it back in 69aed24f09).

Example (bad): `//backends/cuda/runtime:cuda_backend` has `link_whole = True` and
`executor_runner` links `aoti_cuda_backend` with plain `target_link_libraries`.

Use instead: link the twin whole (`executorch_target_link_options_shared_lib(aoti_cuda_backend)`),
or set `link_whole = True` on the Buck side.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, Check, Example
from bot.cmake.model import CMakeModel
from bot.facts import cmake_links, cmake_models, pairing
from bot.model import Evidence, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import attribute_line
from checks.support.profiles import link_profiles

# A static initializer that registers: what makes force-linking necessary.
_REGISTRATION = re.compile(
    r"^[^/\n]*=\s*(?:[\w:]+::)?register_\w+\s*\(|^\s*EXECUTORCH_LIBRARY\s*\(|__attribute__\s*\(\(\s*constructor",
    re.MULTILINE,
)


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    reported: set[tuple[str, str]] = set()
    for profile in link_profiles(snap):
        model = cmake_models.cmake_model(snap.head, profile)
        pairs = pairing.pairing(snap.head, profile)
        whole_in_buck = _buck_link_whole(snap.head)
        taken_whole: dict[str, tuple[str, str, int]] = {}  # CMake library -> (binary, path, line)
        for binary, _target in cmake_links.binaries(model):
            for unit in cmake_links.linked_units(model, binary):
                if unit.how == "whole-archive":
                    taken_whole.setdefault(unit.target, (binary, unit.path, unit.line))
            for library, (path, line) in cmake_links.archives_linked_on_demand(model, binary).items():
                for label in _compiled_buck_libraries(pairs, library):
                    buck = whole_in_buck.get(label)
                    registration = buck and _registration(snap.head, pairs.shared(label, library))
                    # Buck variants of one library (custom_ops, custom_ops_mkl) are alternatives:
                    # one finding per CMake library, naming the closest (library, "") marks it.
                    if buck is None or registration is None or {(library, label), (library, "")} & reported:
                        continue
                    reported.update({(library, label), (library, "")})
                    twin = label in pairs.closest_buck(library)
                    yield _cmake_on_demand(snap, model, binary, library, path, line, buck, registration, twin)
        for library, (binary, path, line) in sorted(taken_whole.items()):
            for label in pairs.closest_buck(library):
                if label in whole_in_buck or (library, label) in reported:
                    continue
                buck = _library_named(snap.head, label)
                registration = buck and _registration(snap.head, pairs.shared(label, library))
                if buck is None or registration is None:
                    continue
                reported.add((library, label))
                yield _buck_on_demand(snap, binary, library, path, line, buck, registration)


def _compiled_buck_libraries(pairs: pairing.Pairing, library: str) -> tuple[str, ...]:
    """Buck labels whose sources the CMake library compiles: its twins first, then the rest.

    A CMake library may gather the sources of several Buck targets (ExecuTorch's `executorch` took
    the whole Buck closure of the executor, prim ops registry included): a force-linked one among
    them loses its registration when the gathering library is linked on demand, twin or not.
    """
    twins = pairs.closest_buck(library)
    return twins + tuple(label for label in pairs.by_cmake.get(library, ()) if label not in twins)


def _buck_link_whole(build: BuildModel) -> dict[str, BuckTarget]:
    """Buck label -> the target, for libraries some cell defines with `link_whole = True`."""
    found: dict[str, BuckTarget] = {}
    for cell in CELLS:
        for target in pairing.cell_primary_targets(build, cell):
            if target.attr("link_whole") is True and "library" in target.kind and not target.kind.startswith("python"):
                found.setdefault(target.label, target)
    return found


def _library_named(build: BuildModel, label: str) -> BuckTarget | None:
    """A C++ library of that label in some cell (the first cell that defines one)."""
    for cell in CELLS:
        target = build.cell(cell).targets.get(label)
        if target is not None and "library" in target.kind and not target.kind.startswith("python"):
            return target
    return None


def _registration(build: BuildModel, sources: frozenset[str]) -> tuple[str, int] | None:
    """(path, line) of the first registering static initializer among the sources."""
    for path in sorted(sources):
        text = build.text(path) or ""
        match = _REGISTRATION.search(text)
        if match:
            return path, text.count("\n", 0, match.start()) + 1
    return None


def _cmake_on_demand(
    snap: Snapshot,
    model: CMakeModel,
    binary: str,
    library: str,
    path: str,
    line: int,
    buck: BuckTarget,
    registration: tuple[str, int],
    twin: bool,
) -> Hit:
    text = snap.head.text(buck.path) or ""
    cmake_target = model.targets[library]
    forced = (
        f"its Buck twin `{buck.label}` is force-linked (`link_whole = True`)"
        if twin
        else f"it compiles {registration[0]}, which Buck force-links in `{buck.label}` (`link_whole = True`),"
    )
    return Hit(
        path=path,
        line=line,
        message=(
            f"`{binary}` links `{library}` on demand, but {forced} "
            f"because {registration[0]}:{registration[1]} registers from a static initializer: the CMake build drops that "
            f"object and the registration with it. Link `{library}` whole "
            f"(`executorch_target_link_options_shared_lib({library})` or `-Wl,--whole-archive`)."
        ),
        key=f"{library}|{buck.label}|cmake",
        target=library,
        offending_text=library,
        evidence=(
            Evidence(
                buck.path,
                attribute_line(text, buck, "link_whole") or buck.line,
                f"`{buck.label}` sets `link_whole = True`",
            ),
            Evidence(
                cmake_target.path,
                cmake_target.line,
                f"`{library}` compiles the same sources" if twin else f"`{library}` compiles {registration[0]}",
            ),
            Evidence(*registration, "registers from a static initializer: nothing calls into this object"),
        ),
    )


def _buck_on_demand(
    snap: Snapshot, binary: str, library: str, path: str, line: int, buck: BuckTarget, registration: tuple[str, int]
) -> Hit:
    return Hit(
        path=buck.path,
        line=buck.line,
        message=(
            f"`{buck.label}` is linked on demand (no `link_whole = True`), but CMake links its twin `{library}` whole into "
            f"`{binary}` because {registration[0]}:{registration[1]} registers from a static initializer: Buck binaries "
            "drop that object and the registration with it. Set `link_whole = True`."
        ),
        key=f"{library}|{buck.label}|buck",
        target=buck.label,
        offending_text=buck.label,
        evidence=(
            Evidence(path, line, f"`{binary}` takes every object of `{library}`"),
            Evidence(*registration, "registers from a static initializer: nothing calls into this object"),
        ),
    )


_BACKEND = (
    "#include <executorch/runtime/backend/interface.h>\n"
    "namespace {\n"
    "CudaBackend backend;\n"
    'auto registered = executorch::runtime::register_backend({"CudaBackend", &backend});\n'
    "}\n"
)
_ROOT = "cmake_minimum_required(VERSION 3.29)\nproject(demo)\nadd_subdirectory(cuda)\n"


def _cmake(link: str) -> str:
    return (
        "add_library(aoti_cuda_backend STATIC cuda_backend.cpp)\n"
        "add_executable(executor_runner main.cpp)\n"
        f"target_link_libraries(executor_runner PRIVATE\n  {link}\n)\n"
    )


def _buck(link_whole: str) -> str:
    return f'cxx_library(\n    name = "cuda_backend",\n    srcs = ["cuda_backend.cpp"],\n{link_whole})\n'


_WHOLE = "-Wl,--whole-archive aoti_cuda_backend -Wl,--no-whole-archive"
# One CMake library gathering the sources of two Buck targets, one force-linked: ExecuTorch's
# `executorch` as extract_sources.py listed it, prim ops included (7cffa86857, fixed in 41fe5d2e0c).
_GATHERED = {
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.29)\nproject(demo)\nadd_subdirectory(runtime)\n",
    "runtime/BUCK": (
        'cxx_library(\n    name = "program",\n    srcs = ["method.cpp", "program.cpp"],\n    deps = [":prim_ops"],\n)\n'
        'cxx_library(\n    name = "prim_ops",\n    srcs = ["register_prim_ops.cpp"],\n    link_whole = True,\n)\n'
    ),
    "runtime/method.cpp": "int method() { return 0; }\n",
    "runtime/program.cpp": "int program() { return 0; }\n",
    "runtime/register_prim_ops.cpp": "static auto success_with_op_reg = register_operators(op_array_ref);\n",
    "runtime/main.cpp": "int main() { return 0; }\n",
}


def _gathered(link: str) -> str:
    return (
        "add_library(executorch STATIC method.cpp program.cpp register_prim_ops.cpp)\n"
        "add_executable(executor_runner main.cpp)\n"
        f"target_link_libraries(executor_runner PRIVATE\n  {link}\n)\n"
    )


_FILES = {"CMakeLists.txt": _ROOT, "cuda/cuda_backend.cpp": _BACKEND, "cuda/main.cpp": "int main() { return 0; }\n"}

CHECK = Check(
    id="link-whole-parity",
    inputs=BUCK_FILES + CMAKE_FILES + CPP_FILES,
    severity=Severity.MAJOR,
    title="Self-registering library force-linked in one build system only",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                **_FILES,
                "cuda/BUCK": _buck("    link_whole = True,\n"),
                "cuda/CMakeLists.txt": _cmake("aoti_cuda_backend  # expect: link-whole-parity"),
            }
        ),
        Example(
            head={
                **_FILES,
                "cuda/BUCK": _buck("").replace("cxx_library(", "cxx_library(  # expect: link-whole-parity"),
                "cuda/CMakeLists.txt": _cmake(_WHOLE),
            }
        ),
        Example(head={**_GATHERED, "runtime/CMakeLists.txt": _gathered("executorch  # expect: link-whole-parity")}),
    ),
    good=(
        Example(head={**_FILES, "cuda/BUCK": _buck("    link_whole = True,\n"), "cuda/CMakeLists.txt": _cmake(_WHOLE)}),
        # Nothing registers: linking on demand loses nothing.
        Example(
            head={
                **_FILES,
                "cuda/cuda_backend.cpp": "int load_library() { return 0; }\n",
                "cuda/BUCK": _buck("    link_whole = True,\n"),
                "cuda/CMakeLists.txt": _cmake("aoti_cuda_backend"),
            }
        ),
        Example(
            head={
                **_GATHERED,
                "runtime/CMakeLists.txt": _gathered("-Wl,--whole-archive executorch -Wl,--no-whole-archive"),
            }
        ),
    ),
)
