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

On the Buck side each fact is one configuration's: the library's `preprocessor_flags` and
`exported_preprocessor_flags`, its exported headers, and the dependent's sources, deps and
flags are taken per platform the cell builds for, and a target incompatible with a platform is
not judged there. A flag exported only under `select({"ovr_config//cuda:has_cuda": [...],
"DEFAULT": []})` is private on xplat's CPU-only platforms; a dependent that links the library
only in another platform's branch is no dependent where the macro is private. A finding that
holds on only some of the platforms the library builds on names them.

Example (bad): `target_compile_definitions(aoti_cuda_backend PRIVATE
EXECUTORCH_BUILD_EXTENSION_LLM)` while `cuda_kv_cache.h` declares its cache API under
`#if defined(EXECUTORCH_BUILD_EXTENSION_LLM)` and `test_cuda_kv_cache` includes it.

Use instead: `target_compile_definitions(aoti_cuda_backend PUBLIC EXECUTORCH_BUILD_EXTENSION_LLM)`
(Buck: move the flag to `exported_preprocessor_flags`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from bot.buck import edits as buck_edits
from bot.buck.cells import CELLS
from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, Check, Example
from bot.cmake import edits as cmake_edits
from bot.facts import verdicts
from bot.facts.gate_exports import cell_gaps, cmake_gate_gaps
from bot.fixes import fix_between
from bot.model import Evidence, Fix, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import attribute_line, call_of, item_line


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    yield from verdicts.whole_tree(snap.head, "gate-macro-not-exported", lambda: _not_exported(snap.head))


def _not_exported(model: BuildModel) -> tuple[Hit, ...]:
    return tuple(_cmake_hit(model, *gap) for gap in cmake_gate_gaps(model)) + tuple(_buck_hits(model))


# -- CMake ----------------------------------------------------------------------------------


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
        for key, entry in cell_gaps(model, cell).items():
            found.setdefault(key, entry)  # the first cell's, as the same target in another cell is the same defect
    return [_buck_hit(model, *entry) for _key, entry in sorted(found.items())]


def _buck_hit(model, cell, target, macro, header, block, consumer, platforms: tuple[str, ...] = ()) -> Hit:
    """The finding; `platforms` names where it holds when that is not every platform the library builds on."""
    consumer_target, consumer_path, consumer_line = consumer
    text = model.text(target.path) or ""
    line = item_line(text, target, f"-D{macro}") or attribute_line(text, target, "preprocessor_flags") or target.line
    call = call_of(text, target)
    fix = None if call is None else _export_flag_fix(text, target.path, call, macro)
    named = ", ".join(f"`{platform}`" for platform in platforms)
    where = (
        f"on {named} (in `{cell}`; a `select()` makes its other platforms differ)" if platforms else f"(in `{cell}`)"
    )
    return Hit(
        path=target.path,
        line=line,
        message=(
            f"`-D{macro}` is in `preprocessor_flags` of `{target.primary_label}`, but its exported header "
            f"`{posixpath.basename(header)}` changes declarations under `{macro}` and `{consumer_target.primary_label}` "
            f"includes it without the flag {where}: the library and its dependents compile different "
            "declarations. Put the flag in `exported_preprocessor_flags`"
            + (" wherever it is defined." if platforms else ".")
        ),
        key=f"buck:{target.primary_label}:{macro}" + (f"|{platforms[0]}" if platforms else ""),
        target=target.primary_label,
        cell=cell,
        offending_text=f"-D{macro}",
        evidence=(
            Evidence(header, block.line, f"`{posixpath.basename(header)}` tests `{macro}` around declarations"),
            Evidence(
                consumer_path,
                consumer_line,
                f"`{consumer_target.primary_label}` includes it without `-D{macro}`"
                + (f" on {named}" if platforms else ""),
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


_STREAM_HEADERS = {
    # The pool member and function exist only where the macro is defined.
    "CUDA_CALLER_STREAM_POOL": ("  void* pool;\n", "void* pooled_stream();\n"),
    # Without CUDA the library emulates streams with an id of its own.
    "ET_CALLER_STREAM_EMULATED": ("  int emulated_id;\n", "int emulated_stream_id();\n"),
}


def _caller_stream(macro: str, flags: str, user: str = '    deps = [":caller_stream"],\n') -> dict[str, str]:
    """caller_stream, whose exported header changes its struct under `macro`, with the given flag
    attributes, and a user with the given attributes that includes the header."""
    member, function = _STREAM_HEADERS[macro]
    return {
        ".buckconfig": "[repositories]\n  root = .\n",
        "extension/cuda/BUCK": (
            "cxx_library(\n"
            '    name = "caller_stream",\n'
            '    srcs = ["caller_stream.cpp"],\n'
            '    exported_headers = ["caller_stream.h"],\n'
            f"{flags}"
            '    visibility = ["PUBLIC"],\n'
            ")\n"
            "cxx_library(\n"
            '    name = "user",\n'
            '    srcs = ["user.cpp"],\n'
            f"{user}"
            ")\n"
        ),
        "extension/cuda/caller_stream.h": (
            f"#pragma once\nstruct CallerStream {{\n  void* stream;\n#ifdef {macro}\n{member}#endif\n}};\n"
            f"#ifdef {macro}\n{function}#endif\n"
        ),
        "extension/cuda/caller_stream.cpp": "#include <executorch/extension/cuda/caller_stream.h>\n",
        "extension/cuda/user.cpp": "#include <executorch/extension/cuda/caller_stream.h>\n",
    }


_POOL_PRIVATE = '    preprocessor_flags = ["-DCUDA_CALLER_STREAM_POOL"],  # expect: gate-macro-not-exported\n'
_EMULATED_WITHOUT_CUDA = (
    '    preprocessor_flags = select({"ovr_config//cuda:has_cuda": [], "DEFAULT": ["-DET_CALLER_STREAM_EMULATED"]}),\n'
)


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
            head=_caller_stream("CUDA_CALLER_STREAM_POOL", _POOL_PRIVATE),
            fixed={
                "extension/cuda/BUCK": _caller_stream(
                    "CUDA_CALLER_STREAM_POOL",
                    '    exported_preprocessor_flags = ["-DCUDA_CALLER_STREAM_POOL"],  # expect: gate-macro-not-exported\n',
                )["extension/cuda/BUCK"],
            },
        ),
        # With other flags beside it, only the macro's flag moves.
        Example(
            head=_caller_stream(
                "CUDA_CALLER_STREAM_POOL",
                "    preprocessor_flags = [\n"
                '        "-DCUDA_CALLER_STREAM_POOL",  # expect: gate-macro-not-exported\n'
                '        "-DET_LOG_ENABLED=0",\n'
                "    ],\n",
            ),
            fixed={
                "extension/cuda/BUCK": _caller_stream(
                    "CUDA_CALLER_STREAM_POOL",
                    '    preprocessor_flags = [\n        "-DET_LOG_ENABLED=0",\n    ],\n'
                    '    exported_preprocessor_flags = ["-DCUDA_CALLER_STREAM_POOL"],\n',
                )["extension/cuda/BUCK"],
            },
        ),
        # Exported only with CUDA: on xplat's CPU-only platforms the user compiles the struct without the pool.
        Example(
            head=_caller_stream(
                "CUDA_CALLER_STREAM_POOL",
                _POOL_PRIVATE
                + '    exported_preprocessor_flags = select({"ovr_config//cuda:has_cuda": ["-DCUDA_CALLER_STREAM_POOL"],'
                ' "DEFAULT": []}),\n',
            )
        ),
        # The user defines the macro itself, but only with CUDA: without CUDA it misses it.
        Example(
            head=_caller_stream(
                "CUDA_CALLER_STREAM_POOL",
                _POOL_PRIVATE,
                '    preprocessor_flags = select({"ovr_config//cuda:has_cuda": ["-DCUDA_CALLER_STREAM_POOL"], "DEFAULT": []}),\n'
                '    deps = [":caller_stream"],\n',
            ),
            fixed={
                "extension/cuda/BUCK": _caller_stream(
                    "CUDA_CALLER_STREAM_POOL",
                    '    exported_preprocessor_flags = ["-DCUDA_CALLER_STREAM_POOL"],  # expect: gate-macro-not-exported\n',
                    '    preprocessor_flags = select({"ovr_config//cuda:has_cuda": ["-DCUDA_CALLER_STREAM_POOL"], "DEFAULT": []}),\n'
                    '    deps = [":caller_stream"],\n',
                )["extension/cuda/BUCK"],
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
        # Emulated streams only without CUDA, and the user links the library only with CUDA: on no
        # platform does a dependent see the header while the macro is private.
        Example(
            head=_caller_stream(
                "ET_CALLER_STREAM_EMULATED",
                _EMULATED_WITHOUT_CUDA,
                '    deps = select({"ovr_config//cuda:has_cuda": [":caller_stream"], "DEFAULT": []}),\n',
            )
        ),
        # The one user is CUDA-only: it is not built where the library emulates streams.
        Example(
            head=_caller_stream(
                "ET_CALLER_STREAM_EMULATED",
                _EMULATED_WITHOUT_CUDA,
                '    target_compatible_with = ["ovr_config//cuda:has_cuda"],\n    deps = [":caller_stream"],\n',
            )
        ),
    ),
)
