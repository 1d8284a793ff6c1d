"""A statically built Buck library lacks the `--export-dynamic` its CMake twin exports.

An AOTInductor library binds its `aoti_torch_*` calls to the shims in the host executable
when it is loaded. That works only if the executable exports those symbols: CMake makes every
consumer link with `-Wl,--export-dynamic` through a PUBLIC (or INTERFACE) link option on the
shim and backend libraries. Buck's equivalent is `exported_linker_flags` on the library. Where
Buck links the library statically into an executable (the `xplat` cell, and the open-source
build when the wrapper sets `force_static`), a library without it leaves every binary that
links it to rediscover the flag; without it, loading a model fails with
`undefined symbol: aoti_torch_...`.

The twin is found by shared sources (design 3.4): the Buck target that compiles the most of the
CMake target's files. A flag carried by any library in the target's dependency closure counts,
since Buck applies `exported_linker_flags` to everything that links it. When several targets of
one closure miss it, the lowest is reported: fixing it fixes those above it.

`fbcode` links libraries as shared objects by default, so its libraries are not reported; but
a binary or test there that links statically (`link_style = "static"`) puts the shims in the
executable just the same. Such a target that links a library whose CMake twin exports the
flag, with the flag neither in its own `linker_flags` nor in its closure's
`exported_linker_flags`, is reported (the #24643 author's fbcode test failed with
`undefined symbol: aoti_torch_dtype_float32` without it).

Each fact is one configuration's, per platform the cell builds for: `linker_flags`,
`exported_linker_flags`, the dependency closure, `link_style`, `preferred_linkage`,
`force_static` and `link_whole`. A flag exported under `select({"ovr_config//os:linux": [...],
"DEFAULT": []})` counts only on Linux, a dep under `select(has_cuda)` only with CUDA, and a
platform a target is incompatible with is not judged. A gap on only some of the platforms the
target builds on names them.

Example (bad): `cxx_library(name = "cuda_backend", srcs = ["cuda_backend.cpp"])` in a package
xplat builds, while CMake says `target_link_options(aoti_cuda_backend PUBLIC -Wl,--export-dynamic)`.

Use instead: add `exported_linker_flags = ["-Wl,--export-dynamic"],` to the Buck target.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from bot.buck import edits
from bot.buck.cells import StaticLinking, cell_named, cells_where
from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, CMAKE_FILES, SMOKE_VERIFIED, Check, Example
from bot.cmake.model import Scoped
from bot.facts import cmake_models, linkage, pairing
from bot.facts.static_link_gaps import (
    StaticLinkGap,
    exported_option,
    exporting_targets,
    gap_below,
    missing_libraries,
    newly_force_linked,
    static_binaries,
)
from bot.fixes import fix_between
from bot.model import Evidence, Fix, Hit, Severity
from bot.snapshot import Snapshot
from checks.support.callsite import call_of

_FLAG = '"-Wl,--export-dynamic"'


@dataclass(frozen=True, slots=True)
class Options:
    """Cells where libraries are always linked statically, and cells where `force_static` decides."""

    static_cells: tuple[str, ...] = cells_where(static_linking=StaticLinking.LIBRARIES)
    force_static_cells: tuple[str, ...] = cells_where(static_linking=StaticLinking.FORCE_STATIC)
    # Cells whose libraries link dynamically but whose binaries and tests may link statically.
    static_binary_cells: tuple[str, ...] = cells_where(static_linking=StaticLinking.BINARIES_ONLY)


def run(snap: Snapshot, options: Options) -> Iterator[Hit]:
    options = options or Options()
    exporting: dict[str, tuple[str, str]] = {}  # the first profile whose twin exports the flag wins
    for profile in snap.config.cmake_profiles:
        for label, name in exporting_targets(snap, profile, pairing.pairing(snap.head, profile)).items():
            exporting.setdefault(label, (profile, name))
    if not exporting:
        return
    reported: set[str] = set()
    for cell in (*options.static_cells, *options.force_static_cells):
        force_static_only = cell in options.force_static_cells and cell not in options.static_cells
        missing = missing_libraries(snap.head, cell, exporting, force_static_only)
        for label, gap in sorted(missing.items()):
            if label in reported:
                continue
            if gap_below(snap.head, cell, label, gap, missing):
                continue  # a library below it misses the flag too, on each platform where it does; that one is reported
            above = sorted(
                other
                for other, higher in missing.items()
                if other != label
                and any(
                    p in higher.platforms and label in linkage.dependency_closure(snap.head, cell, other, p)
                    for p in gap.platforms
                )
            )
            reported.update([label, *above])
            yield _hit(snap, cell, gap, above)
    for cell in options.static_binary_cells:
        broken: list[Mapping[str, str | None]] = []  # dependency closures of the static binaries reported at major
        for target, shim, path, named, closures in static_binaries(snap, cell, exporting):
            broken.extend(closures)
            yield _binary_hit(snap, cell, target, shim, exporting[shim], path, named)
        for target, exporter, named in newly_force_linked(snap, cell, exporting, broken):
            yield _force_linked_hit(snap, cell, target, exporter, exporting[exporter], named)


def _where(platforms: tuple[str, ...]) -> str:
    return " on " + ", ".join(f"`{name}`" for name in platforms) if platforms else ""


def _key_suffix(platforms: tuple[str, ...]) -> str:
    """As dep-private-for-exported-header: a finding on some platforms only is keyed by the first."""
    return f"|{platforms[0]}" if platforms else ""


def _export_flag_fix(text: str, target: BuckTarget, why: str) -> Fix | None:
    """`exported_linker_flags = ["-Wl,--export-dynamic"]` written after `link_whole` (or the name),
    where the call does not set the keyword already."""
    call = call_of(text, target)
    if call is None or call.keyword("exported_linker_flags") is not None:
        return None
    after = "link_whole" if call.keyword("link_whole") is not None else "name"
    flag = edits.string_literal(text, _FLAG.strip('"'))
    return fix_between(
        target.path, text, edits.insert_keyword(text, call, "exported_linker_flags", f"[{flag}]", after=after), why
    )


def _force_linked_hit(
    snap: Snapshot, cell: str, target: BuckTarget, exporter: str, twin: tuple[str, str], platforms: tuple[str, ...] = ()
) -> Hit:
    profile, cmake_name = twin
    option = exported_option(cmake_models.cmake_model(snap.head, profile).targets[cmake_name])
    assert option is not None  # `exporting` holds only the twins that export the flag
    text = snap.head.text(target.path) or ""
    fix = _export_flag_fix(text, target, "export the executable's symbols wherever the shims are linked")
    twin_of = (
        f"`{cmake_name}`, its own CMake twin,"
        if exporter == target.label
        else f"`{cmake_name}`, the CMake twin of `{exporter}`, which links it,"
    )
    evidence = [
        Evidence(
            target.path,
            target.line,
            f"`{target.label}` is made `link_whole` by this change in `{cell}`{_where(platforms)}",
        ),
        _exporting_evidence(cmake_name, option),
    ]
    return Hit(
        path=target.path,
        line=target.line,
        end_line=target.end_line,
        message=(
            f"`{target.label}` is now force-linked{_where(platforms)} so that AOTInductor libraries can bind to its "
            f"symbols when loaded; CMake also makes their host export them: {twin_of} gives its consumers `{option.value}` "
            f"({option.scope}). `{cell}` links the library as a shared object by default, so "
            "nothing breaks yet, but a binary or test that links it statically fails to load a model "
            "(`undefined symbol: aoti_torch_...`) unless it adds the flag itself. "
            f"Fix: add `exported_linker_flags = [{_FLAG}]` here, or say on the target that static consumers need it."
        ),
        key=f"{target.primary_label}|{cell}|force-linked" + _key_suffix(platforms),
        target=target.label,
        cell=cell,
        offending_text=cmake_name,
        evidence=tuple(evidence),
        fix=fix,
        at_most=Severity.MINOR,
    )


def _binary_hit(
    snap: Snapshot,
    cell: str,
    target: BuckTarget,
    library: str,
    twin: tuple[str, str],
    chain,
    platforms: tuple[str, ...] = (),
) -> Hit:
    profile, cmake_name = twin
    option = exported_option(cmake_models.cmake_model(snap.head, profile).targets[cmake_name])
    assert option is not None, "only twins that export are paired (exporting_targets)"
    text = snap.head.text(target.path) or ""
    call = call_of(text, target)
    fix = None
    linker_flags = call.keyword("linker_flags") if call is not None else None
    if call is not None and linker_flags is None:
        after = "link_style" if call.keyword("link_style") is not None else "name"
        flag = edits.string_literal(text, _FLAG.strip('"'))
        fixed = edits.insert_keyword(text, call, "linker_flags", f"[{flag}]", after=after)
        fix = fix_between(target.path, text, fixed, "export the executable's symbols to the libraries it loads")
    elif linker_flags is not None and linker_flags.value_list is not None:
        fixed = edits.add_list_element(text, linker_flags.value_list, _FLAG.strip('"'))
        fix = fix_between(target.path, text, fixed, "export the executable's symbols to the libraries it loads")
    evidence = [
        Evidence(
            target.path,
            target.line,
            f"`{target.label}` links statically (`link_style = {_written(target.attr('link_style'))}`) in `{cell}`"
            + _where(platforms),
        ),
        _exporting_evidence(cmake_name, option),
    ]
    return Hit(
        path=target.path,
        line=target.line,
        end_line=target.end_line,
        message=(
            f"`{target.label}` links `{library}` statically{_where(platforms)} "
            f"({' -> '.join(f'`{c}`' for c in chain)}), whose CMake twin "
            f"`{cmake_name}` gives its consumers `{option.value}` ({option.scope}); nothing in its `linker_flags` or its "
            "closure's `exported_linker_flags` exports the executable's symbols, so an AOTInductor library it loads "
            "fails with `undefined symbol: aoti_torch_...`. "
            f"Fix: add `linker_flags = [{_FLAG}]` here, or `exported_linker_flags` with it on `{library}`."
        ),
        key=f"{target.primary_label}|{cell}|static-binary" + _key_suffix(platforms),
        target=target.label,
        cell=cell,
        offending_text=cmake_name,
        evidence=tuple(evidence),
        fix=fix,
    )


def _exporting_evidence(cmake_name: str, option: Scoped) -> Evidence:
    """The CMake line that gives the twin's consumers the flag: every case of this rule cites it."""
    return Evidence(option.path, option.line, f"CMake: `{cmake_name}` exports `{option.value}` ({option.scope})")


def _written(value) -> str:
    """An attribute value as the message quotes it."""
    return f'"{value}"' if isinstance(value, str) else "select(...)"


def _hit(snap: Snapshot, cell: str, gap: StaticLinkGap, above: list[str]) -> Hit:
    target, (profile, cmake_name), platforms = gap.target, gap.twin, gap.named
    cmake_target = cmake_models.cmake_model(snap.head, profile).targets[cmake_name]
    option = exported_option(cmake_target)
    assert option is not None, "only twins that export are paired (exporting_targets)"
    text = snap.head.text(target.path) or ""
    fix = _export_flag_fix(text, target, "export the executable's symbols as CMake does")
    static = cell_named(cell).static_linking.prose
    also = ""
    if above:
        verbs = "links it and misses" if len(above) == 1 else "link it and miss"
        also = f" `{'`, `'.join(above)}` {verbs} the flag too."
    evidence = [
        Evidence(
            target.path,
            target.line,
            f"`{target.label}` is defined in `{cell}`, which {static}"
            + (f"; its closure lacks the flag{_where(platforms)}" if platforms else ""),
        ),
        _exporting_evidence(cmake_name, option),
    ]
    return Hit(
        path=target.path,
        line=target.line,
        end_line=target.end_line,
        message=(
            f"`{target.label}` compiles the same sources as the CMake target `{cmake_name}`, which gives its "
            f"consumers `{option.value}` ({option.scope}); in `{cell}` Buck links it statically and{_where(platforms)} "
            "nothing in its dependency closure sets `exported_linker_flags` with the flag, so an executable that "
            f"links it cannot load an AOTInductor library (`undefined symbol: aoti_torch_...`).{also} "
            f"Fix: add `exported_linker_flags = [{_FLAG}]`" + (" on those platforms too." if platforms else ".")
        ),
        key=f"{target.primary_label}|{cell}" + _key_suffix(platforms),  # the same gap in another cell is another defect
        target=target.label,
        cell=cell,
        offending_text=cmake_name,
        evidence=tuple(evidence),
        fix=fix,
    )


_CMAKE = (
    "add_library(aoti_cuda_backend STATIC runtime/cuda_backend.cpp)\n"
    "if(NOT MSVC)\n"
    "  target_link_options(aoti_cuda_backend PUBLIC -Wl,--export-dynamic)\n"
    "endif()\n"
)

_FBCODE_BUCK = (
    'load("@fbsource//tools/build_defs:fbsource_utils.bzl", "is_fbcode")\n'
    'load(":targets.bzl", "define_common_targets")\n'
    "\n"
    "define_common_targets(is_fbcode = is_fbcode())\n"
)


def _fbcode_targets(test_attributes: str, marker: str = "") -> dict[str, str]:
    """The CUDA backend defined in fbcode only (as on the Aug 2026 tree), with a test that loads
    a compiled AOTI library."""
    return {
        "CMakeLists.txt": "add_subdirectory(backends/cuda)\n",
        "backends/cuda/CMakeLists.txt": _CMAKE,
        "backends/cuda/runtime/BUCK": _FBCODE_BUCK,
        "backends/cuda/runtime/targets.bzl": (
            "def define_common_targets(is_fbcode = False):\n"
            "    if not is_fbcode:\n"
            "        return\n"
            '    native.cxx_library(name = "cuda_backend", srcs = ["cuda_backend.cpp"], link_whole = True)\n'
            f"    native.cxx_test({marker}\n"
            '        name = "test_aoti_load",\n'
            '        srcs = ["test/test_aoti_load.cpp"],\n'
            f"{test_attributes}"
            '        deps = [":cuda_backend"],\n'
            "    )\n"
        ),
    }


def _fbcode_shims(shim_attributes: str, marker: str = "") -> dict[str, str]:
    """fbcode's CUDA backend over a shim library that this change may force-link (#24643)."""
    return {
        "CMakeLists.txt": "add_subdirectory(backends/cuda)\n",
        "backends/cuda/CMakeLists.txt": _CMAKE,
        "backends/cuda/runtime/BUCK": _FBCODE_BUCK,
        "backends/cuda/runtime/targets.bzl": (
            "def define_common_targets(is_fbcode = False):\n"
            "    if not is_fbcode:\n"
            "        return\n"
            f"    native.cxx_library({marker}\n"
            '        name = "common_shims_slim",\n'
            '        srcs = ["common_shims_slim.cpp"],\n'
            f"{shim_attributes}"
            "    )\n"
            '    native.cxx_library(name = "cuda_backend", srcs = ["cuda_backend.cpp"], deps = [":common_shims_slim"])\n'
        ),
    }


def _xplat_backend(attributes: str, shims: str = "") -> dict[str, str]:
    """The CUDA backend in a package every cell builds (xplat links it statically), with the given
    attributes and, when given, a shim library with the given attributes beside it."""
    library = f'cxx_library(\n    name = "shims",\n    srcs = ["shims.cpp"],\n{shims})\n' if shims else ""
    return {
        "CMakeLists.txt": "add_subdirectory(backends/cuda)\n",
        "backends/cuda/CMakeLists.txt": _CMAKE,
        "backends/cuda/runtime/BUCK": (
            f"{library}cxx_library(  # expect: link-export-dynamic-missing\n"
            '    name = "cuda_backend",\n'
            '    srcs = ["cuda_backend.cpp"],\n'
            "    link_whole = True,\n"
            f"{attributes}"
            ")\n"
        ),
    }


_EXPORTED = '    exported_linker_flags = ["-Wl,--export-dynamic"],\n'


CHECK = Check(
    id="link-export-dynamic-missing",
    tags=frozenset({SMOKE_VERIFIED}),
    fixable=True,
    inputs=BUCK_FILES + CMAKE_FILES,
    severity=Severity.MAJOR,
    title="Statically built Buck library without the --export-dynamic its CMake twin exports",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                "CMakeLists.txt": "add_subdirectory(backends/cuda)\n",
                "backends/cuda/CMakeLists.txt": _CMAKE,
                "backends/cuda/runtime/BUCK": (
                    "cxx_library(  # expect: link-export-dynamic-missing\n"
                    '    name = "cuda_backend",\n'
                    '    srcs = ["cuda_backend.cpp"],\n'
                    "    link_whole = True,\n"
                    ")\n"
                ),
            },
            fixed={
                "backends/cuda/runtime/BUCK": (
                    "cxx_library(  # expect: link-export-dynamic-missing\n"
                    '    name = "cuda_backend",\n'
                    '    srcs = ["cuda_backend.cpp"],\n'
                    "    link_whole = True,\n"
                    '    exported_linker_flags = ["-Wl,--export-dynamic"],\n'
                    ")\n"
                ),
            },
        ),
        # fbcode links the backend as a shared library, but this test links it into its executable.
        Example(
            head=_fbcode_targets('        link_style = "static",\n', "  # expect: link-export-dynamic-missing"),
            fixed={
                "backends/cuda/runtime/targets.bzl": _fbcode_targets(
                    '        link_style = "static",\n        linker_flags = ["-Wl,--export-dynamic"],\n',
                    "  # expect: link-export-dynamic-missing",
                )["backends/cuda/runtime/targets.bzl"],
            },
        ),
        # This change force-links the shims in fbcode (minor: no binary links them statically yet).
        Example(
            base=_fbcode_shims(""),
            head=_fbcode_shims("        link_whole = True,\n", "  # expect: link-export-dynamic-missing"),
            fixed={
                "backends/cuda/runtime/targets.bzl": _fbcode_shims(
                    '        link_whole = True,\n        exported_linker_flags = ["-Wl,--export-dynamic"],\n',
                    "  # expect: link-export-dynamic-missing",
                )["backends/cuda/runtime/targets.bzl"],
            },
        ),
        # Exported only on Linux: xplat's Android and iOS builds link the backend statically without it.
        Example(
            head=_xplat_backend(
                '    exported_linker_flags = select({"ovr_config//os:linux": ["-Wl,--export-dynamic"], "DEFAULT": []}),\n'
            )
        ),
        # The shims that carry the flag are linked only with CUDA: xplat's CPU-only builds lack it.
        Example(
            head=_xplat_backend(
                '    deps = select({"ovr_config//cuda:has_cuda": [":shims"], "DEFAULT": []}),\n', _EXPORTED
            ),
            fixed={
                "backends/cuda/runtime/BUCK": _xplat_backend(
                    _EXPORTED + '    deps = select({"ovr_config//cuda:has_cuda": [":shims"], "DEFAULT": []}),\n',
                    _EXPORTED,
                )["backends/cuda/runtime/BUCK"],
            },
        ),
    ),
    good=(
        # Force-linked with CUDA before this change, and fbcode always builds with CUDA: nothing new there.
        Example(
            base=_fbcode_shims('        link_whole = select({"ovr_config//cuda:has_cuda": True, "DEFAULT": False}),\n'),
            head=_fbcode_shims("        link_whole = True,\n"),
        ),
        Example(
            head=_fbcode_targets('        link_style = "static",\n        linker_flags = ["-Wl,--export-dynamic"],\n')
        ),
        # Force-linked with the flag that goes with it.
        Example(
            base=_fbcode_shims(""),
            head=_fbcode_shims(
                '        link_whole = True,\n        exported_linker_flags = ["-Wl,--export-dynamic"],\n'
            ),
        ),
        # Force-linked before this change: not this change's doing.
        Example(base=_fbcode_shims("        link_whole = True,\n"), head=_fbcode_shims("        link_whole = True,\n")),
        # Linked dynamically, as fbcode does by default: the shims stay exported by their library.
        Example(head=_fbcode_targets("")),
        Example(
            head={
                "CMakeLists.txt": "add_subdirectory(backends/cuda)\n",
                "backends/cuda/CMakeLists.txt": _CMAKE,
                "backends/cuda/runtime/BUCK": (
                    "cxx_library(\n"
                    '    name = "cuda_backend",\n'
                    '    srcs = ["cuda_backend.cpp"],\n'
                    "    link_whole = True,\n"
                    '    exported_linker_flags = ["-Wl,--export-dynamic"],\n'
                    ")\n"
                ),
            }
        ),
        Example(
            head={
                "CMakeLists.txt": "add_subdirectory(backends/cuda)\n",
                "backends/cuda/CMakeLists.txt": _CMAKE,
                "backends/cuda/runtime/BUCK": (
                    "cxx_library(\n"
                    '    name = "shims",\n'
                    '    srcs = ["shims.cpp"],\n'
                    '    exported_linker_flags = ["-Wl,--export-dynamic"],\n'
                    ")\n"
                    "cxx_library(\n"
                    '    name = "cuda_backend",\n'
                    '    srcs = ["cuda_backend.cpp"],\n'
                    '    deps = [":shims"],\n'
                    ")\n"
                ),
            }
        ),
    ),
    options=Options(),
)
