"""One C-linkage function is defined twice in the objects a CMake link always takes.

A CMake shared library, module or executable links every object of its own sources, of the
OBJECT libraries it links and of each archive it links whole (`-Wl,--whole-archive`, also when
a static library it links replays the pair, or a library names itself for its consumers with
`executorch_target_link_options_shared_lib`). When two of those objects define one
`extern "C"` function, the link fails with `multiple definition of ...`: ExecuTorch's
`aoti_cuda_shims` links `aoti_common_shims_slim` whole, and `common_shims_slim.cpp` defines
`aoti_torch_get_device_type`, as the ETensor `runtime/shims/tensor_attribute.cpp` does; adding
that file back to `_aoti_cuda_shim_sources` breaks the CUDA build.

C linkage comes from an `extern "C"` block, from an `extern "C"` declaration in a header the
source includes, or from a `.c` file. Static, inline and weak definitions, and definitions under
an `#if` the target's compile definitions turn off, do not count; nor do members of archives
linked the ordinary way (the linker takes those only on demand), nor two targets compiling the
same file (alternative variants of one library). Buck's `link_whole` is the business of
`shim-duplicate-symbol`. The configured CMake builds are read, and the Android build when the
change touches extension/android (the JNI library links there only).

Example (bad): `set(_aoti_cuda_shim_sources runtime/shims/memory.cpp runtime/shims/tensor_attribute.cpp)`
while `aoti_cuda_shims` links `aoti_common_shims_slim` whole.

Use instead: keep one definition: drop the obsolete source or the duplicate function.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.check import CMAKE_FILES, CPP_FILES, Check, Example
from bot.cmake.model import CMakeModel
from bot.facts import cmake_links, cmake_models
from bot.facts.linked_definitions import PlacedDefinition, placement, unit_definitions, where
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot
from checks.support.profiles import link_profiles


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    reported: set[tuple[str, frozenset[str]]] = set()
    for profile in link_profiles(snap):
        model = cmake_models.cmake_model(snap.head, profile)
        base_model = cmake_models.cmake_model(snap.base, profile)
        for binary, _target in cmake_links.binaries(model):
            by_symbol: dict[str, list[PlacedDefinition]] = {}
            for unit in cmake_links.linked_units(model, binary):
                for definition in unit_definitions(snap.head, model, unit.target):
                    by_symbol.setdefault(definition.symbol, []).append(PlacedDefinition(unit, definition))
            for symbol, placed in sorted(by_symbol.items()):
                for index, first in enumerate(placed):
                    for second in placed[index + 1 :]:
                        paths = frozenset((first.definition.path, second.definition.path))
                        if len(paths) < 2 or (symbol, paths) in reported:
                            continue
                        reported.add((symbol, paths))
                        yield _hit(snap, model, base_model, binary, symbol, first, second)


def _hit(
    snap: Snapshot,
    model: CMakeModel,
    base_model: CMakeModel,
    binary: str,
    symbol: str,
    first: PlacedDefinition,
    second: PlacedDefinition,
) -> Hit:
    at, other = placement(base_model, binary, first, second)
    path, line = where(snap.head, model, at)
    evidence = [
        Evidence(
            p.definition.path,
            p.definition.line,
            f"`{symbol}` defined here (C linkage from {p.definition.linkage}), compiled into `{p.unit.target}`",
        )
        for p in (at, other)
    ]
    for placed in (at, other):
        if placed.unit.how != "sources":
            evidence.append(
                Evidence(
                    placed.unit.path,
                    placed.unit.line,
                    f"`{binary}` takes every object of `{placed.unit.target}` ({placed.unit.how})",
                )
            )
    binary_target = model.targets[binary]
    evidence.append(
        Evidence(
            binary_target.path,
            binary_target.line,
            f"`{binary}` is defined here ({binary_target.kind.lower().replace('_', ' ')})",
        )
    )
    return Hit(
        path=path,
        line=line,
        message=(
            f"The link of `{binary}` takes every object of `{at.unit.target}` and `{other.unit.target}`, and both define "
            f"the C-linkage function `{symbol}` ({at.definition.path}:{at.definition.line} and "
            f"{other.definition.path}:{other.definition.line}): it fails with `multiple definition of {symbol}`. "
            "Keep one definition (drop the obsolete source or the duplicate function)."
        ),
        key=f"{symbol}|{'|'.join(sorted((at.definition.path, other.definition.path)))}",
        target=binary,
        offending_text=symbol,
        evidence=tuple(dict.fromkeys(evidence)),
    )


_SLIM = 'extern "C" int aoti_torch_get_device_type(void* tensor, int* out) { *out = 1; return 0; }\n'
_ATTRIBUTE_HEADER = '#pragma once\nextern "C" int aoti_torch_get_device_type(void* tensor, int* out);\n'
_ATTRIBUTE = (
    "#include <executorch/cuda/tensor_attribute.h>\n"
    "int aoti_torch_get_device_type(void* tensor, int* out) { *out = 1; return 0; }\n"
)
_FILES = {
    "aoti/common_shims_slim.cpp": _SLIM,
    "cuda/tensor_attribute.h": _ATTRIBUTE_HEADER,
    "cuda/tensor_attribute.cpp": _ATTRIBUTE,
    "cuda/memory.cpp": "int memory_helper() { return 0; }\n",
}


def _tree(shim_sources: str, aoti: str = "") -> dict[str, str]:
    return {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.29)\nproject(demo)\nadd_subdirectory(aoti)\nadd_subdirectory(cuda)\n",
        "aoti/CMakeLists.txt": aoti or "add_library(aoti_common_shims_slim STATIC common_shims_slim.cpp)\n",
        "cuda/CMakeLists.txt": (
            f"set(_aoti_cuda_shim_sources {shim_sources})\n"
            "add_library(aoti_cuda_shims SHARED ${_aoti_cuda_shim_sources})\n"
            "target_link_libraries(\n"
            "  aoti_cuda_shims PRIVATE -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive\n"
            ")\n"
        ),
        **_FILES,
    }


CHECK = Check(
    id="link-duplicate-symbol",
    inputs=CMAKE_FILES + CPP_FILES,
    severity=Severity.BLOCKER,
    title="C-linkage function defined twice in the objects one CMake link takes",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            base=_tree("memory.cpp"),
            head=_tree("memory.cpp\n    tensor_attribute.cpp  # expect: link-duplicate-symbol\n"),
        ),
    ),
    good=(
        Example(base=_tree("memory.cpp"), head=_tree("memory.cpp")),
        # Linked the ordinary way: the linker takes the archive member only if something asks for it.
        Example(
            head={
                **_tree("memory.cpp tensor_attribute.cpp"),
                "cuda/CMakeLists.txt": (
                    "add_library(aoti_cuda_shims SHARED memory.cpp tensor_attribute.cpp)\n"
                    "target_link_libraries(aoti_cuda_shims PRIVATE aoti_common_shims_slim)\n"
                ),
            },
        ),
        # The SlimTensor definition is compiled only where the ETensor one is not.
        Example(
            head={
                **_tree("memory.cpp tensor_attribute.cpp"),
                "aoti/common_shims_slim.cpp": "#ifdef USE_SLIM_SHIMS\n" + _SLIM + "#endif\n",
            },
        ),
    ),
)
