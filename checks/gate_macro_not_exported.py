"""A macro that a dependents-included header tests is defined only for the library itself.

When a header's declarations depend on `#if M` and M is defined PRIVATE (CMake
`target_compile_definitions(lib PRIVATE M)`) or in `preprocessor_flags` (Buck) rather than
`exported_preprocessor_flags`, the library compiles one version of the header and every
dependent another: declarations missing on one side, classes with different members (an ODR
violation that corrupts memory rather than failing to build). The definition has to travel
with the header.

Reported only when a dependent is seen including the header without defining the macro
itself, and when the `#if` changes declarations. Export-attribute macros (`#ifdef
BUILDING_X` choosing `dllexport` or `dllimport`) are private on purpose and never reported.

Example (bad): `target_compile_definitions(aoti_cuda_backend PRIVATE
EXECUTORCH_BUILD_EXTENSION_LLM)` while `cuda_kv_cache.h` declares its cache API under
`#if defined(EXECUTORCH_BUILD_EXTENSION_LLM)` and `test_cuda_kv_cache` includes it.

Use instead: `target_compile_definitions(aoti_cuda_backend PUBLIC EXECUTORCH_BUILD_EXTENSION_LLM)`
(Buck: move the flag to `exported_preprocessor_flags`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from bot.buck import edits as buck_edits
from bot.buck.cells import CELLS
from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, Check, Example
from bot.cmake import edits as cmake_edits
from bot.facts import gating, xref
from bot.facts.header_deps import CXX_KINDS, DependencyIndex, DependencyTable
from bot.fixes import fix_between
from bot.model import Evidence, Fix, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import attribute_line, call_of, item_line


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    yield from snap.head.memo(("gate-macro-not-exported",), lambda: _not_exported(snap.head), persist=True)


def _not_exported(model: BuildModel) -> tuple[Hit, ...]:
    return tuple(_cmake_hits(model)) + tuple(_buck_hits(model))


def _gating_declarations(model: BuildModel, header: str, macro: str):
    """The `#if` group testing the macro when it changes declarations, else None."""
    facts = model.source_facts(header)
    if facts is None or gating.export_macro_blocks(facts, macro):
        return None
    if not any(any(gating.mentions(c, macro) for c in d.conditions) for d in facts.declarations):
        return None
    return gating.first_block_testing(facts, macro)


# -- CMake ----------------------------------------------------------------------------------


def _cmake_models(model: BuildModel, written) -> list:
    """The default model, and one per option that is off and encloses one of the written
    PRIVATE definitions, which only that model would show."""
    default = gating.cmake_model(model)
    if default is None:
        return []
    models = [default]
    off = gating.off_options(model)
    options = sorted({o for w in written for c in w.conditions for o in re.findall(r"[A-Za-z_]\w*", c) if o in off})
    for option in options:
        with_option = gating.option_model(model, option)
        if with_option is not None:
            models.append(with_option)
    return models


def _cmake_hits(model: BuildModel) -> list[Hit]:
    # Textual first: a PRIVATE definition written in a CMake file at or above a header that
    # tests the macro around declarations. Only then is CMake evaluated.
    written = gating.private_definitions_written(model)
    tested = gating.headers_testing(model, {w.macro for w in written})
    candidates = [
        w
        for w in written
        if any(
            w.macro in macros
            and header.startswith(_directory_prefix(w.path))
            and _gating_declarations(model, header, w.macro)
            for header, macros in tested.items()
        )
    ]
    if not candidates:
        return []
    relevant = frozenset(w.macro for w in candidates)
    hits: dict[str, Hit] = {}
    for cmake_model in _cmake_models(model, candidates):
        private = []
        for target in cmake_model.targets.values():
            for definition in target.compile_definitions:
                macro = definition.value.split("=", 1)[0]
                if definition.scope != "PRIVATE" or macro not in relevant:
                    continue
                if any(d.value.split("=", 1)[0] == macro and d.scope != "PRIVATE" for d in target.compile_definitions):
                    continue
                if (
                    cmake_edits.invocation_at(
                        model.text(definition.path) or "", definition.line, ("target_compile_definitions",)
                    )
                    is None
                ):
                    continue  # a directory-wide definition reaches the directory's dependents too
                private.append((target, definition, macro))
        if not private:
            continue
        tested = gating.headers_testing(model, {macro for _t, _d, macro in private})
        for target, definition, macro in private:
            home = posixpath.dirname(target.path)
            for header, macros in sorted(tested.items()):
                if macro not in macros or not (header.startswith(home + "/") or not home):
                    continue
                block = _gating_declarations(model, header, macro)
                if block is None:
                    continue
                consumer = _cmake_consumer(model, cmake_model, target, header, macro)
                if consumer is None:
                    continue
                key = f"{target.name}:{macro}"
                if key in hits:
                    continue
                hits[key] = _cmake_hit(model, target, definition, macro, header, block, consumer)
    return list(hits.values())


def _cmake_consumer(model: BuildModel, cmake_model, library, header: str, macro: str):
    """(target, source, line) of a target linking `library` whose source includes the header
    without the macro defined."""
    include = f"executorch/{header}"
    names = {library.name} | {n for n, t in cmake_model.targets.items() if t.alias_of == library.name}
    for target in cmake_model.targets.values():
        if target is library or not any(item.value in names for item in target.link_libraries):
            continue
        if _cmake_defines(cmake_model, target, macro):
            continue
        sources = [s.path_repo_relative for s in target.sources]
        for path, found in model.includes(sources).items():
            for included, line in found:
                if (
                    included == include
                    or posixpath.normpath(posixpath.join(posixpath.dirname(path), included)) == header
                ):
                    return target, path, line
    return None


def _cmake_defines(cmake_model, target, macro: str) -> bool:
    """Whether the target gets the macro: its own definitions or a linked target's public ones."""
    if any(d.value.split("=", 1)[0] == macro for d in target.compile_definitions):
        return True
    for item in target.link_libraries:
        linked = cmake_model.targets.get(item.value)
        if linked is not None and any(
            d.value.split("=", 1)[0] == macro and d.scope in ("PUBLIC", "INTERFACE") for d in linked.compile_definitions
        ):
            return True
    return False


def _cmake_hit(model, target, definition, macro, header, block, consumer) -> Hit:
    consumer_target, consumer_path, consumer_line = consumer
    fix = _public_fix(model.text(definition.path) or "", definition, macro, target.name)
    return Hit(
        path=definition.path,
        line=definition.line,
        message=(
            f"`{macro}` is defined PRIVATE on `{target.name}`, but `{header}` changes its declarations under it "
            f"and `{consumer_target.name}` includes that header without the definition: the library and its "
            f"dependents compile different declarations. Make the definition PUBLIC."
        ),
        key=f"cmake:{target.name}:{macro}",
        target=target.name,
        offending_text=f"PRIVATE {macro}",
        evidence=(
            Evidence(header, block.line, f"`{header}` tests `{macro}` around declarations"),
            Evidence(
                consumer_path, consumer_line, f"`{consumer_target.name}` links `{target.name}` and includes the header"
            ),
            Evidence(target.path, target.line, f"`{target.name}` is defined here"),
        ),
        fix=fix,
    )


def _directory_prefix(path: str) -> str:
    directory = posixpath.dirname(path)
    return directory + "/" if directory else ""


def _public_fix(text: str, definition, macro: str, target: str) -> Fix | None:
    """The definition moved to PUBLIC scope; other definitions of its group stay PRIVATE."""
    invocation = cmake_edits.invocation_at(text, definition.line, ("target_compile_definitions",))
    if invocation is None:
        return None
    for group in cmake_edits.scope_groups(invocation):
        for item in group.items:
            if group.scope == "PRIVATE" and item.line == definition.line and _defined_macro(item.value) == macro:
                fixed = cmake_edits.set_scope(text, invocation, (item,), "PUBLIC")
                if fixed is not None:
                    return fix_between(
                        definition.path, text, fixed, f"make `{macro}` a PUBLIC definition of `{target}`"
                    )
    return None


def _defined_macro(item: str) -> str:
    """The macro a target_compile_definitions item defines (`-DM=1` and `M=1` define M)."""
    return item.removeprefix("-D").split("=", 1)[0]


# -- Buck -----------------------------------------------------------------------------------


def _buck_hits(model: BuildModel) -> list[Hit]:
    found: dict[tuple[str, str], tuple] = {}
    for cell in CELLS:
        graph = model.cell(cell)
        private = gating.cell_defines(model, cell, ("preprocessor_flags",))
        exported = gating.cell_defines(model, cell, ("exported_preprocessor_flags",))
        candidates = {m: labels for m, labels in private.items() if m not in exported}
        if not candidates:
            continue
        tested = gating.headers_testing(model, candidates)
        if not tested:
            continue
        index = includers = None
        for macro, labels in sorted(candidates.items()):
            for label in labels:
                target = graph.targets[label]
                if label in exported.get(macro, ()):
                    continue
                for include_name, header in xref.header_entries(target, "exported_headers"):
                    if macro not in tested.get(header, ()) or (target.primary_label, macro) in found:
                        continue
                    block = _gating_declarations(model, header, macro)
                    if block is None:
                        continue
                    if index is None:
                        index = DependencyIndex.build(graph, DependencyTable.of(graph), None, frozenset(), {})
                        includers = _includers(model, graph)
                    consumer = _buck_consumer(model, graph, index, target, include_name, macro, includers)
                    if consumer is not None:
                        found[(target.primary_label, macro)] = (cell, target, macro, header, block, consumer)
    return [_buck_hit(model, *entry) for _key, entry in sorted(found.items())]


def _buck_consumer(model, graph, index, library, include_name: str, macro: str, includers):
    """(target, file, line) of a dependent that includes the header and does not get the macro."""
    for target, path, line in includers.get(include_name, ()):
        if target.label == library.label or not index.reaches(target.label, [library.label]):
            continue
        if macro in index.defines(target.label, index.visible(target.label)):
            continue
        return target, path, line
    return None


def _includers(model: BuildModel, graph) -> dict[str, list]:
    """include path -> (target, file, line) for every C++ target's sources of the cell."""
    candidates = [t for t in graph.targets.values() if CXX_KINDS.search(t.kind)]
    files_of = {t.label: xref.source_paths(t) for t in candidates}
    includes = model.includes({p for files in files_of.values() for p in files})
    found: dict[str, list] = {}
    for target in sorted(candidates, key=lambda t: t.label):
        for path in files_of[target.label]:
            for included, line in includes.get(path, ()):
                found.setdefault(included, []).append((target, path, line))
    return found


def _buck_hit(model, cell, target, macro, header, block, consumer) -> Hit:
    consumer_target, consumer_path, consumer_line = consumer
    text = model.text(target.path) or ""
    line = item_line(text, target, f"-D{macro}") or attribute_line(text, target, "preprocessor_flags") or target.line
    call = call_of(text, target)
    fix = None if call is None else _export_flag_fix(text, target.path, call, macro)
    return Hit(
        path=target.path,
        line=line,
        message=(
            f"`-D{macro}` is in `preprocessor_flags` of `{target.primary_label}`, but its exported header "
            f"`{posixpath.basename(header)}` changes declarations under `{macro}` and `{consumer_target.primary_label}` "
            f"includes it without the flag (in `{cell}`): the library and its dependents compile different "
            "declarations. Put the flag in `exported_preprocessor_flags`."
        ),
        key=f"buck:{target.primary_label}:{macro}",
        target=target.primary_label,
        cell=cell,
        offending_text=f"-D{macro}",
        evidence=(
            Evidence(header, block.line, f"`{posixpath.basename(header)}` tests `{macro}` around declarations"),
            Evidence(
                consumer_path, consumer_line, f"`{consumer_target.primary_label}` includes it without `-D{macro}`"
            ),
        ),
        fix=fix,
    )


def _export_flag_fix(text: str, path: str, call, macro: str) -> Fix | None:
    """Move `-D<macro>` from the call's `preprocessor_flags` list to `exported_preprocessor_flags`."""
    private, exported = call.keyword("preprocessor_flags"), call.keyword("exported_preprocessor_flags")
    if private is None or private.value_list is None or (exported is not None and exported.value_list is None):
        return None
    flags = [e.string.split("=")[0] if e.string else None for e in private.value_list.elements]
    if f"-D{macro}" not in flags:
        return None  # the flag comes from elsewhere (a variable, a macro): its author moves it
    index = flags.index(f"-D{macro}")
    element = private.value_list.elements[index]
    if exported is None and len(flags) == 1:  # the only flag: the keyword itself becomes the exported one
        fixed = buck_edits.rename_keyword(text, private, "exported_preprocessor_flags")
    elif exported is None:
        added = buck_edits.insert_keyword(
            text, call, "exported_preprocessor_flags", f"[{element.text}]", after="preprocessor_flags"
        )
        fixed = buck_edits.remove_list_element(added, private.value_list, index)  # above the insertion: spans hold
    elif exported.span.start > private.span.start:
        added = buck_edits.add_list_element(text, exported.value_list, element.string)
        fixed = buck_edits.remove_list_element(added, private.value_list, index)
    else:
        removed = buck_edits.remove_list_element(text, private.value_list, index)
        fixed = buck_edits.add_list_element(removed, exported.value_list, element.string)
    return fix_between(path, text, fixed, f"export `-D{macro}` to dependents")


_CMAKE_ROOT = (
    "cmake_minimum_required(VERSION 3.24)\n"
    "project(executorch)\n"
    'option(EXECUTORCH_BUILD_EXTENSION_LLM "Build the LLM extension" ON)\n'
    "add_subdirectory(backends/cuda)\n"
)


def _cmake(scope: str, marker: str) -> str:
    return (
        "add_library(aoti_cuda_backend STATIC runtime/cuda_backend.cpp)\n"
        "if(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
        "  target_sources(aoti_cuda_backend PRIVATE runtime/cuda_kv_cache.cpp)\n"
        f"  target_compile_definitions(aoti_cuda_backend {scope} EXECUTORCH_BUILD_EXTENSION_LLM){marker}\n"
        "  add_executable(test_cuda_kv_cache runtime/tests/test_cuda_kv_cache.cpp)\n"
        "  target_link_libraries(test_cuda_kv_cache PRIVATE aoti_cuda_backend)\n"
        "endif()\n"
    )


def _files(scope: str, marker: str) -> dict[str, str]:
    return {
        "CMakeLists.txt": _CMAKE_ROOT,
        "backends/cuda/CMakeLists.txt": _cmake(scope, marker),
        "backends/cuda/runtime/cuda_backend.cpp": "#include <executorch/backends/cuda/runtime/cuda_kv_cache.h>\n",
        "backends/cuda/runtime/cuda_kv_cache.cpp": "#include <executorch/backends/cuda/runtime/cuda_kv_cache.h>\n",
        "backends/cuda/runtime/cuda_kv_cache.h": (
            "#pragma once\n"
            "#if defined(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
            "int attach_offgraph_kv_cache(int slot);\n"
            "#endif\n"
        ),
        "backends/cuda/runtime/tests/test_cuda_kv_cache.cpp": (
            "#include <executorch/backends/cuda/runtime/cuda_kv_cache.h>\nint main() { return 0; }\n"
        ),
    }


CHECK = Check(
    id="gate-macro-not-exported",
    fixable=True,
    inputs=BUCK_FILES + CPP_FILES + CMAKE_FILES,
    severity=Severity.MAJOR,
    title="Macro tested by a dependents' header is defined privately",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head=_files("PRIVATE", "  # expect: gate-macro-not-exported"),
            fixed={
                "backends/cuda/CMakeLists.txt": (
                    "add_library(aoti_cuda_backend STATIC runtime/cuda_backend.cpp)\n"
                    "if(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
                    "  target_sources(aoti_cuda_backend PRIVATE runtime/cuda_kv_cache.cpp)\n"
                    "  target_compile_definitions(aoti_cuda_backend PUBLIC EXECUTORCH_BUILD_EXTENSION_LLM)"
                    "  # expect: gate-macro-not-exported\n"
                    "  add_executable(test_cuda_kv_cache runtime/tests/test_cuda_kv_cache.cpp)\n"
                    "  target_link_libraries(test_cuda_kv_cache PRIVATE aoti_cuda_backend)\n"
                    "endif()\n"
                )
            },
        ),
        # The macro shares its group with a definition only the library's own sources need:
        # that one stays PRIVATE, the group is split.
        Example(
            head={
                **_files("PRIVATE", ""),
                "backends/cuda/CMakeLists.txt": (
                    "add_library(aoti_cuda_backend STATIC runtime/cuda_backend.cpp)\n"
                    "if(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
                    "  target_sources(aoti_cuda_backend PRIVATE runtime/cuda_kv_cache.cpp)\n"
                    "  target_compile_definitions(\n"
                    "    aoti_cuda_backend PRIVATE CUDA_AVAILABLE=1 EXECUTORCH_BUILD_EXTENSION_LLM  # expect: gate-macro-not-exported\n"
                    "  )\n"
                    "  add_executable(test_cuda_kv_cache runtime/tests/test_cuda_kv_cache.cpp)\n"
                    "  target_link_libraries(test_cuda_kv_cache PRIVATE aoti_cuda_backend)\n"
                    "endif()\n"
                ),
            },
            fixed={
                "backends/cuda/CMakeLists.txt": (
                    "add_library(aoti_cuda_backend STATIC runtime/cuda_backend.cpp)\n"
                    "if(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
                    "  target_sources(aoti_cuda_backend PRIVATE runtime/cuda_kv_cache.cpp)\n"
                    "  target_compile_definitions(\n"
                    "    aoti_cuda_backend PRIVATE CUDA_AVAILABLE=1\n"
                    "                      PUBLIC EXECUTORCH_BUILD_EXTENSION_LLM  # expect: gate-macro-not-exported\n"
                    "  )\n"
                    "  add_executable(test_cuda_kv_cache runtime/tests/test_cuda_kv_cache.cpp)\n"
                    "  target_link_libraries(test_cuda_kv_cache PRIVATE aoti_cuda_backend)\n"
                    "endif()\n"
                )
            },
        ),
        Example(
            head={
                ".buckconfig": "[repositories]\n  root = .\n",
                "extension/cuda/BUCK": (
                    "cxx_library(\n"
                    '    name = "caller_stream",\n'
                    '    srcs = ["caller_stream.cpp"],\n'
                    '    exported_headers = ["caller_stream.h"],\n'
                    '    preprocessor_flags = ["-DCUDA_CALLER_STREAM_POOL"],  # expect: gate-macro-not-exported\n'
                    '    visibility = ["PUBLIC"],\n'
                    ")\n"
                    "cxx_library(\n"
                    '    name = "user",\n'
                    '    srcs = ["user.cpp"],\n'
                    '    deps = [":caller_stream"],\n'
                    ")\n"
                ),
                "extension/cuda/caller_stream.h": (
                    "#pragma once\nstruct CallerStream {\n  void* stream;\n#ifdef CUDA_CALLER_STREAM_POOL\n  void* pool;\n#endif\n};\n"
                    "#ifdef CUDA_CALLER_STREAM_POOL\nvoid* pooled_stream();\n#endif\n"
                ),
                "extension/cuda/caller_stream.cpp": "#include <executorch/extension/cuda/caller_stream.h>\n",
                "extension/cuda/user.cpp": "#include <executorch/extension/cuda/caller_stream.h>\n",
            },
            fixed={
                "extension/cuda/BUCK": (
                    "cxx_library(\n"
                    '    name = "caller_stream",\n'
                    '    srcs = ["caller_stream.cpp"],\n'
                    '    exported_headers = ["caller_stream.h"],\n'
                    '    exported_preprocessor_flags = ["-DCUDA_CALLER_STREAM_POOL"],  # expect: gate-macro-not-exported\n'
                    '    visibility = ["PUBLIC"],\n'
                    ")\n"
                    "cxx_library(\n"
                    '    name = "user",\n'
                    '    srcs = ["user.cpp"],\n'
                    '    deps = [":caller_stream"],\n'
                    ")\n"
                ),
            },
        ),
        # With other flags beside it, only the macro's flag moves.
        Example(
            head={
                ".buckconfig": "[repositories]\n  root = .\n",
                "extension/cuda/BUCK": (
                    "cxx_library(\n"
                    '    name = "caller_stream",\n'
                    '    srcs = ["caller_stream.cpp"],\n'
                    '    exported_headers = ["caller_stream.h"],\n'
                    "    preprocessor_flags = [\n"
                    '        "-DCUDA_CALLER_STREAM_POOL",  # expect: gate-macro-not-exported\n'
                    '        "-DET_LOG_ENABLED=0",\n'
                    "    ],\n"
                    '    visibility = ["PUBLIC"],\n'
                    ")\n"
                    "cxx_library(\n"
                    '    name = "user",\n'
                    '    srcs = ["user.cpp"],\n'
                    '    deps = [":caller_stream"],\n'
                    ")\n"
                ),
                "extension/cuda/caller_stream.h": (
                    "#pragma once\nstruct CallerStream {\n  void* stream;\n#ifdef CUDA_CALLER_STREAM_POOL\n  void* pool;\n#endif\n};\n"
                    "#ifdef CUDA_CALLER_STREAM_POOL\nvoid* pooled_stream();\n#endif\n"
                ),
                "extension/cuda/caller_stream.cpp": "#include <executorch/extension/cuda/caller_stream.h>\n",
                "extension/cuda/user.cpp": "#include <executorch/extension/cuda/caller_stream.h>\n",
            },
            fixed={
                "extension/cuda/BUCK": (
                    "cxx_library(\n"
                    '    name = "caller_stream",\n'
                    '    srcs = ["caller_stream.cpp"],\n'
                    '    exported_headers = ["caller_stream.h"],\n'
                    "    preprocessor_flags = [\n"
                    '        "-DET_LOG_ENABLED=0",\n'
                    "    ],\n"
                    '    exported_preprocessor_flags = ["-DCUDA_CALLER_STREAM_POOL"],\n'
                    '    visibility = ["PUBLIC"],\n'
                    ")\n"
                    "cxx_library(\n"
                    '    name = "user",\n'
                    '    srcs = ["user.cpp"],\n'
                    '    deps = [":caller_stream"],\n'
                    ")\n"
                ),
            },
        ),
    ),
    good=(
        Example(head=_files("PUBLIC", "")),
        Example(
            head={
                ".buckconfig": "[repositories]\n  root = .\n",
                "extension/cuda/BUCK": (
                    "cxx_library(\n"
                    '    name = "caller_stream",\n'
                    '    srcs = ["caller_stream.cpp"],\n'
                    '    exported_headers = ["export.h"],\n'
                    '    preprocessor_flags = ["-DEXECUTORCH_EXTENSION_CUDA_BUILDING"],\n'
                    '    visibility = ["PUBLIC"],\n'
                    ")\n"
                    "cxx_library(\n"
                    '    name = "user",\n'
                    '    srcs = ["user.cpp"],\n'
                    '    deps = [":caller_stream"],\n'
                    ")\n"
                ),
                "extension/cuda/export.h": (
                    "#pragma once\n"
                    "#ifdef EXECUTORCH_EXTENSION_CUDA_BUILDING\n"
                    "#define ET_CUDA_API __declspec(dllexport)\n"
                    "#else\n"
                    "#define ET_CUDA_API __declspec(dllimport)\n"
                    "#endif\n"
                    "ET_CUDA_API void* caller_stream();\n"
                ),
                "extension/cuda/caller_stream.cpp": "#include <executorch/extension/cuda/export.h>\n",
                "extension/cuda/user.cpp": "#include <executorch/extension/cuda/export.h>\n",
            }
        ),
    ),
)
