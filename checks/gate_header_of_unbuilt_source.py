"""A header is exported or installed in a configuration where its implementation is not built.

A header that declares functions defined out of line in `foo.cpp` (or `foo.cu`) is only
usable where `foo.cpp` is compiled. Exporting it from a Buck target in a cell whose targets do
not build the source, or installing it from a CMake configuration that adds the source only
under an option that is off, hands dependents declarations that compile and then fail to
link. The header should follow its source: export it where the source is built.

Findings need positive evidence on both sides: the header's declarations defined in the
source, the source built elsewhere (another cell, or a CMake target under an option), and no
source of the configuration in question defining them instead.

Example (bad): outside fbcode, `cuda_backend` builds without `cuda_kv_pool.cpp` but still
lists `cuda_kv_pool.h` in `exported_headers`.

Use instead: export the header under the same condition as its source (e.g. only in fbcode),
or build the source wherever the header is exported.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from bot.buck.cells import CELLS
from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, Check, Example
from bot.facts import gating, verdicts
from bot.model import Evidence, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import item_line


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    yield from verdicts.whole_tree(snap.head, "gate-header-of-unbuilt-source", lambda: _unbuilt(snap.head))


def _unbuilt(model: BuildModel) -> tuple[Hit, ...]:
    return tuple(_buck_hits(model)) + tuple(_cmake_hits(model))


# -- Buck: exported in a cell that does not build the implementation --------------------------


def _buck_hits(model: BuildModel) -> list[Hit]:
    found: dict[tuple[str, str], list[tuple[str, str, str, tuple]]] = {}
    for cell in CELLS:
        exported = gating.exported_in_cell(model, cell)
        built_here = gating.built_in_cell(model, cell)
        for header, labels in sorted(exported.items()):
            for source in gating.implementation_of(model.tree, header):
                if source in built_here or source in gating.files_exported_as_targets(model, cell):
                    continue
                elsewhere = _built_elsewhere(model, cell, source)
                if elsewhere is None:
                    continue
                shared = _implemented_functions(model, header, source)
                if not shared or _defined_in_cell(model, cell, shared):
                    continue
                for label in labels:
                    target = model.cell(cell).targets[label]
                    found.setdefault((target.primary_label, header), []).append((cell, label, source, elsewhere))
    hits = []
    for (primary, header), entries in sorted(found.items()):
        entries.sort(key=lambda e: CELLS.index(e[0]))
        cell, label, source, elsewhere = entries[0]
        cells = sorted({e[0] for e in entries}, key=CELLS.index)
        target = model.cell(cell).targets[label]
        text = model.text(target.path) or ""
        relative = posixpath.relpath(header, target.package) if target.package else header
        line = item_line(text, target, relative) or _quoted_line(text, relative) or target.line
        where, path, at_line = elsewhere
        hits.append(
            Hit(
                path=target.path,
                line=line,
                message=(
                    f"`{primary}` exports `{relative}` in {', '.join(f'`{c}`' for c in cells)}, where no target builds "
                    f"`{posixpath.basename(source)}`, which defines its out-of-line functions (it is built {where}). "
                    "Dependents there compile against the header and fail to link. Export the header only where its "
                    "source is built."
                ),
                key=f"{primary}:{header}",
                target=primary,
                cell=cell,
                offending_text=relative,
                evidence=(
                    Evidence(
                        target.path,
                        target.line,
                        f"`{primary}` is defined in `{cell}` without `{posixpath.basename(source)}`",
                    ),
                    Evidence(path, at_line, f"`{posixpath.basename(source)}` is built {where}"),
                ),
            )
        )
    return hits


def _built_elsewhere(model: BuildModel, cell: str, source: str) -> tuple[str, str, int] | None:
    """(where, path, line) of a target that builds `source` outside `cell`, if any."""
    for other in CELLS:
        if other == cell:
            continue
        labels = gating.built_in_cell(model, other).get(source)
        if labels:
            target = model.cell(other).targets[labels[0]]
            relative = source[len(target.package) + 1 :] if target.package else source
            text = model.text(target.path) or ""
            line = item_line(text, target, relative) or _quoted_line(text, relative) or target.line
            return f"in `{other}` by `{target.primary_label}`", target.path, line
    return None


def _quoted_line(text: str, item: str) -> int | None:
    """The first line of a build file writing `item` as a string (a list built in a variable)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if f'"{item}"' in line or f"'{item}'" in line:
            return number
    return None


def _implemented_functions(model: BuildModel, header: str, source: str) -> tuple:
    """Functions the header declares and the source defines."""
    header_facts = model.source_facts(header)
    source_facts = model.source_facts(source)
    if header_facts is None or source_facts is None:
        return ()
    defined = [d for d in source_facts.declarations if d.kind == "function" and d.is_definition]
    return tuple(
        d
        for d in gating.out_of_line_functions(header_facts)
        if any(gating.same_function(d.qualified_name, x.qualified_name) for x in defined)
    )


def _defined_in_cell(model: BuildModel, cell: str, declarations: tuple) -> bool:
    """Whether some source the cell builds defines one of them (another implementation)."""
    built = gating.built_in_cell(model, cell)
    for definitions in gating.definitions(model, declarations).values():
        if any(path in built for path, _definition in definitions):
            return True
    return False


# -- CMake: installed while the source is added only under an option that is off ---------------


def _cmake_hits(model: BuildModel) -> list[Hit]:
    # Textual first: a source written inside an `if()`, with a header of the same stem. Only
    # then is CMake evaluated (and an option model only for an installed header).
    written: dict[str, set[str]] = {}
    for _path, line, _number, stack in gating.cmake_if_blocks(model):
        for name in gating.source_names(line):
            written.setdefault(name, set()).update(stack)
    candidates = [
        p
        for p in model.tree.paths()
        if p.endswith(gating.IMPLEMENTATION_SUFFIXES) and posixpath.basename(p) in written and _header_of(model, p)
    ]
    options = gating.declared_options(model)
    candidates = [
        p
        for p in candidates
        if any(w in options for c in written[posixpath.basename(p)] for w in re.findall(r"[A-Za-z_]\w*", c))
        and (header := _header_of(model, p)) is not None
        and gating.may_be_installed(model, header)
    ]
    if not candidates:
        return []
    cmake_model = gating.cmake_model(model)
    if cmake_model is None:
        return []
    built = gating.default_sources(model)
    off = gating.off_options(model)
    installed_by_path = {}
    for installed in cmake_model.installed_files:
        installed_by_path.setdefault(installed.repo_path, installed)
    hits = []
    for source in candidates:
        header = _header_of(model, source)
        installed = installed_by_path.get(header) if header is not None else None
        if header is None or installed is None or source in built:
            continue
        conditions = written[posixpath.basename(source)]
        options = sorted({o for c in conditions for o in off if gating.mentions(c, o)})
        for option in options:
            if gating.mentions(installed.condition_text, option):
                continue
            gated = gating.gated_sources(model, option).get(source)
            if gated is None or not _implemented_functions(model, header, source):
                continue
            hits.append(
                Hit(
                    path=installed.path,
                    line=installed.line,
                    message=(
                        f"`{header}` is installed in the default configuration, but "
                        f"`{posixpath.basename(source)}`, which defines its out-of-line functions, is built only "
                        f"with `{option}` (off by default): installed consumers fail to link. Install the header "
                        f"under `if({option})` too."
                    ),
                    key=f"install:{header}@{option}",
                    offending_text=header,
                    evidence=(
                        Evidence(
                            gated.cmake_path,
                            gated.cmake_line,
                            f"`{source}` is added to `{gated.target}` only under `if({gated.condition})`",
                        ),
                    ),
                )
            )
            break
    return hits


def _header_of(model: BuildModel, source: str) -> str | None:
    stem = posixpath.splitext(source)[0]
    return next((stem + s for s in gating.HEADER_SUFFIXES if model.tree.exists(stem + s)), None)


_BUCKCONFIG = "[repositories]\n  root = .\n"
_BUCK = (
    'load("@fbsource//tools/build_defs:fbsource_utils.bzl", "is_fbcode")\n'
    'load(":targets.bzl", "define_common_targets")\n'
    "define_common_targets(is_fbcode = is_fbcode())\n"
)


def _targets(exported: str) -> str:
    return (
        "def define_common_targets(is_fbcode = False):\n"
        '    srcs = ["cuda_backend.cpp"]\n'
        '    headers = ["cuda_backend.h"]\n'
        "    if is_fbcode:\n"
        '        srcs = srcs + ["cuda_kv_pool.cpp"]\n'
        '        headers = headers + ["cuda_kv_pool.h"]\n'
        "    native.cxx_library(\n"
        '        name = "cuda_backend",\n'
        "        srcs = srcs,\n"
        f"        exported_headers = {exported},\n"
        '        visibility = ["PUBLIC"],\n'
        "    )\n"
    )


def _files(exported: str) -> dict[str, str]:
    return {
        ".buckconfig": _BUCKCONFIG,
        "backends/cuda/runtime/BUCK": _BUCK,
        "backends/cuda/runtime/targets.bzl": _targets(exported),
        "backends/cuda/runtime/cuda_backend.h": "#pragma once\nint init_backend();\n",
        "backends/cuda/runtime/cuda_backend.cpp": "int init_backend() { return 0; }\n",
        "backends/cuda/runtime/cuda_kv_pool.h": "#pragma once\nclass KvPool {\n public:\n  KvPool();\n  ~KvPool();\n};\n",
        "backends/cuda/runtime/cuda_kv_pool.cpp": (
            "#include <executorch/backends/cuda/runtime/cuda_kv_pool.h>\nKvPool::KvPool() {}\nKvPool::~KvPool() {}\n"
        ),
    }


def _cmake_files(install: str) -> dict[str, str]:
    return {
        "CMakeLists.txt": (
            "cmake_minimum_required(VERSION 3.24)\n"
            "project(executorch)\n"
            'option(EXECUTORCH_BUILD_EXTENSION_LLM "Build the LLM extension" OFF)\n'
            "add_subdirectory(backends/cuda)\n"
        ),
        "backends/cuda/CMakeLists.txt": (
            "add_library(aoti_cuda_backend STATIC runtime/cuda_backend.cpp)\n"
            "if(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
            "  target_sources(aoti_cuda_backend PRIVATE runtime/cuda_kv_pool.cpp)\n"
            "endif()\n"
            f"{install}"
        ),
        "backends/cuda/runtime/cuda_backend.cpp": "int init_backend() { return 0; }\n",
        "backends/cuda/runtime/cuda_kv_pool.h": "#pragma once\nclass KvPool {\n public:\n  KvPool();\n};\n",
        "backends/cuda/runtime/cuda_kv_pool.cpp": "#include <executorch/backends/cuda/runtime/cuda_kv_pool.h>\nKvPool::KvPool() {}\n",
    }


CHECK = Check(
    id="gate-header-of-unbuilt-source",
    inputs=BUCK_FILES + CPP_FILES + CMAKE_FILES,
    severity=Severity.MINOR,
    title="Header exported where its implementation is not built",
    doc=__doc__,
    run=run,
    bad=(
        Example(head=_files('["cuda_backend.h", "cuda_kv_pool.h"],  # expect: gate-header-of-unbuilt-source')),
        Example(
            head=_cmake_files(
                "install(FILES runtime/cuda_kv_pool.h DESTINATION include/executorch/backends/cuda/runtime)"
                "  # expect: gate-header-of-unbuilt-source\n"
            )
        ),
    ),
    good=(
        Example(head=_files("headers")),
        Example(
            head=_cmake_files(
                "if(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
                "  install(FILES runtime/cuda_kv_pool.h DESTINATION include/executorch/backends/cuda/runtime)\n"
                "endif()\n"
            )
        ),
    ),
)
