"""A Buck target's file includes a repository header that no Buck target lists.

Buck compiles in a sandbox: a header is on the include path only when some target lists it in
`headers` or `exported_headers` (and the includer can see that target). A header that exists in
the tree but that no target lists is found by no Buck build at all: every target whose sources or
headers include it fails with "file not found", in every cell (ExecuTorch added
`backends/aoti/export.h` and included it from `common_shims.h` in 234c288c1c; Buck tests broke
until 57a76e4954 listed it in `backends/aoti/targets.bzl`). CMake, which puts whole directories
on the include path, builds fine, so only the Buck side shows it.

Reported: an `#include <executorch/...>` in a source or header of a C++ target of some cell,
naming a file of the tree that no target of any cell lists (a package that fails to evaluate,
or one a dep names that has no build file in the open repository, owns unknown headers: nothing
under it is reported), when the `#if`s around the include
provably hold under the flags of a target that builds the file (an include under
`#ifdef CUDA_AVAILABLE` in a target that never defines it is not compiled by Buck). Includes of
files that are not in the tree (generated headers, third-party, system) are not this rule's
business.

Also reported: a short include (`<pal/Path.h>`) that no target lists under that name and that
reaches a file of the tree only through an `-I` flag naming a directory relative to the
repository root (the target's own flags or a dep's exported ones). The open-source Buck build
compiles from the repository root and finds it; the fbcode and xplat cells compile from their
own root, where the repository is a subdirectory, and do not (ExecuTorch's QNN PAL headers, added
with `-Ibackends/qualcomm/runtime/pal/include` in c7f22bf7b0, moved to a header map in
ed6e2e28a8).

Example (bad): `common_shims.h` includes `<executorch/backends/aoti/export.h>`, and no target
lists `export.h`.

Use instead: list the header in the `exported_headers` of the target that ships it (the one
whose headers include it).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from bot.buck.cells import CELLS, cell_named
from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, CPP_FILES, Check, Example, Share
from bot.facts import revision
from bot.facts.header_reach import (
    active_for,
    failed_packages,
    include_directories,
    is_cpp,
    owned_anywhere,
    target_files,
    under,
)
from bot.facts.pairing import cell_primary_targets
from bot.model import Evidence, Hit, Severity
from bot.snapshot import BuildModel, Snapshot

_NAMESPACE = "executorch/"


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    owned = owned_anywhere(snap.head)
    failed = failed_packages(snap.head)
    files: dict[str, list[BuckTarget]] = {}  # file -> the C++ targets (by cell, label) that compile or list it
    for cell in CELLS:
        for target in cell_primary_targets(snap.head, cell):
            if not is_cpp(target):
                continue
            for path in target_files(target):
                files.setdefault(path, []).append(target)
    includes = revision.includes(snap.head, sorted(files))
    directories: dict[tuple[str, str], list[tuple[str, BuckTarget]]] = {}  # (cell, label) -> its -I directories
    for path, found in sorted(includes.items()):
        for include, line in found:
            if include in owned:
                continue
            if not include.startswith(_NAMESPACE):
                hit = _through_root_relative_flag(snap.head, path, line, include, files[path], failed, directories)
                if hit is not None:
                    yield hit
                continue
            header = include[len(_NAMESPACE) :]
            if snap.head.tree.blob_id(header) is None or under(header, failed):
                continue
            builder = active_for(snap.head, path, line, files[path])
            if builder is not None:
                yield _hit(path, line, include, header, builder)


def _through_root_relative_flag(
    model: BuildModel,
    path: str,
    line: int,
    include: str,
    targets: list[BuckTarget],
    failed: frozenset[str],
    directories: dict[tuple[str, str], list[tuple[str, BuckTarget]]],
) -> Hit | None:
    """A finding when the include reaches a tree file only through a root-relative `-I` of a
    target built in a cell that does not compile from the repository root. `directories` keeps
    each target's `-I` directories for the run (a target's files hold thousands of includes)."""
    if model.tree.blob_id(posixpath.normpath(posixpath.join(posixpath.dirname(path), include))) is not None:
        return None  # found next to the includer (a quoted include): no flag needed
    for target in targets:
        if not cell_named(target.cell).repository_under_executorch:
            continue
        key = (target.cell, target.label)
        if key not in directories:
            directories[key] = include_directories(model, target)
        for directory, flag_owner in directories[key]:
            header = posixpath.normpath(posixpath.join(directory, include))
            if model.tree.blob_id(header) is None or under(header, failed):
                continue
            if active_for(model, path, line, [target]) is not None:
                return _root_relative_hit(path, line, include, header, directory, target, flag_owner)
    return None


def _hit(path: str, line: int, include: str, header: str, target: BuckTarget) -> Hit:
    package_file = posixpath.join(posixpath.dirname(header), "BUCK")
    return Hit(
        path=path,
        line=line,
        message=(
            f"`{path}` (built by `{target.label}`) includes `<{include}>`, and no Buck target lists `{header}` in "
            f'`headers` or `exported_headers`: Buck builds do not see the file and fail with "file not found" '
            f"(CMake, with whole directories on its include path, does not notice). List it in the "
            f"`exported_headers` of the target that ships it."
        ),
        key=f"{include}|{path}",
        target=target.label,
        cell=target.cell,
        offending_text=include,
        evidence=(
            Evidence(path, line, f"includes `<{include}>`"),
            Evidence(header, 1, f"`{header}` exists, but no target lists it (near `{package_file}`?)"),
        ),
    )


def _root_relative_hit(
    path: str, line: int, include: str, header: str, directory: str, target: BuckTarget, flag_owner: BuckTarget
) -> Hit:
    return Hit(
        path=path,
        line=line,
        message=(
            f"`{path}` (built by `{target.label}`) includes `<{include}>`, which no Buck target lists under that name: "
            f"it is found only through `-I{directory}`, a directory relative to the repository root. The {target.cell} "
            f'cell compiles from its own root, where the repository is a subdirectory, and fails with "file not found" '
            f"(the open-source build, run from the repository root, does not notice). Expose the header under that name "
            f'(a header map: `exported_headers = {{"{include}": ...}}` with `header_namespace = ""`).'
        ),
        key=f"{include}|{path}",
        target=target.label,
        cell=target.cell,
        offending_text=include,
        evidence=(
            Evidence(path, line, f"includes `<{include}>`"),
            Evidence(flag_owner.path, flag_owner.line, f"`{flag_owner.label}` passes `-I{directory}`"),
            Evidence(header, 1, f"`{header}` is the file it reaches; no target lists it as `{include}`"),
        ),
    )


_BUCK = (
    "cxx_library(\n"
    '    name = "common_shims",\n'
    '    srcs = ["common_shims.cpp"],\n'
    '    exported_headers = ["common_shims.h"{export}],\n'
    ")\n"
)
_SHIMS_H = "#pragma once\n#include <executorch/backends/aoti/export.h>{marker}\n#include <vector>\nAOTI_SHIM_EXPORT int aoti_torch_get_device_type();\n"
_PAL_BUCK = (
    "cxx_library(\n"
    '    name = "runtime",\n'
    '    srcs = ["SharedBuffer.cpp", "pal/src/Path.cpp"],\n'
    '    exported_headers = ["SharedBuffer.h", "pal/include/pal/Path.h"],\n'
    '    exported_preprocessor_flags = ["-Ibackends/qualcomm/runtime/pal/include"],\n'
    ")\n"
)
_PAL_MAPPED = (
    "cxx_library(\n"
    '    name = "pal",\n'
    '    srcs = ["pal/src/Path.cpp"],\n'
    '    exported_headers = {"pal/Path.h": "pal/include/pal/Path.h"},\n'
    '    header_namespace = "",\n'
    ")\n"
    "cxx_library(\n"
    '    name = "runtime",\n'
    '    srcs = ["SharedBuffer.cpp"],\n'
    '    exported_headers = ["SharedBuffer.h"],\n'
    '    exported_deps = [":pal"],\n'
    ")\n"
)
_PAL_FILES = {
    "backends/qualcomm/runtime/SharedBuffer.h": "#pragma once\nint shared_buffer_size();\n",
    "backends/qualcomm/runtime/pal/include/pal/Path.h": "#pragma once\nconst char* library_path();\n",
    "backends/qualcomm/runtime/pal/src/Path.cpp": 'const char* library_path() { return "lib"; }\n',
}
_SHARED_BUFFER = "#include <pal/Path.h>{marker}\nint shared_buffer_size() {{ return library_path() ? 1 : 0; }}\n"
_FILES = {
    "backends/aoti/common_shims.cpp": "#include <executorch/backends/aoti/common_shims.h>\nint aoti_torch_get_device_type() { return 1; }\n",
    "backends/aoti/export.h": "#pragma once\n#define AOTI_SHIM_EXPORT\n",
}

CHECK = Check(
    id="header-unowned",
    share=Share.WORKER,
    inputs=BUCK_FILES + CPP_FILES,
    severity=Severity.MAJOR,
    title="Included repository header that no Buck target lists",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                **_FILES,
                "backends/aoti/BUCK": _BUCK.format(export=""),
                "backends/aoti/common_shims.h": _SHIMS_H.format(marker="  // expect: header-unowned"),
            }
        ),
        # Found only through an `-I` relative to the repository root: the internal cells miss it.
        Example(
            head={
                **_PAL_FILES,
                "backends/qualcomm/runtime/BUCK": _PAL_BUCK,
                "backends/qualcomm/runtime/SharedBuffer.cpp": _SHARED_BUFFER.format(
                    marker="  // expect: header-unowned"
                ),
            }
        ),
    ),
    good=(
        Example(
            head={
                **_FILES,
                "backends/aoti/BUCK": _BUCK.format(export=', "export.h"'),
                "backends/aoti/common_shims.h": _SHIMS_H.format(marker=""),
            }
        ),
        # The owner's package does not parse: who lists its headers is unknown (parse-error reports it).
        Example(
            head={
                **_FILES,
                "backends/aoti/BUCK": _BUCK.format(export=', "export.h"') + "cxx_library(\n",
                "backends/aoti/common_shims.h": _SHIMS_H.format(marker=""),
                "backends/cuda/BUCK": 'cxx_library(\n    name = "shims",\n    srcs = ["memory.cpp"],\n)\n',
                "backends/cuda/memory.cpp": "#include <executorch/backends/aoti/common_shims.h>\n",
            }
        ),
        # The header's package has no build file here, but a dep names a target of it: that
        # target (in Meta's tree) lists the header (8b56743a46's xt_macros.h).
        Example(
            head={
                **_FILES,
                "backends/aoti/BUCK": (
                    "cxx_library(\n"
                    '    name = "common_shims",\n'
                    '    srcs = ["common_shims.cpp"],\n'
                    '    exported_headers = ["common_shims.h"],\n'
                    '    deps = ["//backends/aoti/macros:export"],\n'
                    ")\n"
                ),
                "backends/aoti/macros/export.h": "#pragma once\n#define AOTI_SHIM_EXPORT\n",
                "backends/aoti/common_shims.h": "#pragma once\n#include <executorch/backends/aoti/macros/export.h>\n",
            }
        ),
        # The short name is listed through a header map: every cell finds it.
        Example(
            head={
                **_PAL_FILES,
                "backends/qualcomm/runtime/BUCK": _PAL_MAPPED,
                "backends/qualcomm/runtime/SharedBuffer.cpp": _SHARED_BUFFER.format(marker=""),
            }
        ),
    ),
)
