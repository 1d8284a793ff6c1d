"""A Buck target's file includes a repository header that no Buck target lists.

Buck compiles in a sandbox: a header is on the include path only when some target lists it in
`headers` or `exported_headers` (and the includer can see that target). A header that exists in
the tree but that no target lists is found by no Buck build at all: every target whose sources or
headers include it fails with "file not found", in every cell (ExecuTorch added
`backends/aoti/export.h` and included it from `common_shims.h` in 234c288c1c; Buck tests broke
until 57a76e4954 listed it in `backends/aoti/targets.bzl`). CMake, which puts whole directories
on the include path, builds fine, so only the Buck side shows it.

Reported: an `#include <executorch/...>` in a source or header of a C++ target of some cell,
naming a file of the tree that no target of any cell lists (a package that fails to evaluate
owns unknown headers: nothing under it is reported), when the `#if`s around the include
provably hold under the flags of a target that builds the file (an include under
`#ifdef CUDA_AVAILABLE` in a target that never defines it is not compiled by Buck). Includes of
files that are not in the tree (generated headers, third-party, system) are not this rule's
business.

Example (bad): `common_shims.h` includes `<executorch/backends/aoti/export.h>`, and no target
lists `export.h`.

Use instead: list the header in the `exported_headers` of the target that ships it (the one
whose headers include it).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from bot.buck.cells import CELLS
from bot.buck.evaluation import BuckTarget
from bot.check import BUCK_FILES, CPP_FILES, Check, Example
from bot.facts import symbols, xref
from bot.facts.header_deps import include_is_active
from bot.facts.pairing import cell_primary_targets
from bot.model import Evidence, Hit, Severity
from bot.snapshot import BuildModel, Snapshot

_NAMESPACE = "executorch/"


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    owned = _owned_anywhere(snap.head)
    failed = _failed_packages(snap.head)
    files: dict[str, list[BuckTarget]] = {}  # file -> the C++ targets (by cell, label) that compile or list it
    for cell in CELLS:
        for target in cell_primary_targets(snap.head, cell):
            if not _is_cpp(target):
                continue
            for path in _target_files(target):
                files.setdefault(path, []).append(target)
    includes = snap.head.includes(sorted(files))
    for path, found in sorted(includes.items()):
        for include, line in found:
            if not include.startswith(_NAMESPACE) or include in owned:
                continue
            header = include[len(_NAMESPACE) :]
            if snap.head.tree.blob_id(header) is None or _under(header, failed):
                continue
            builder = _active_for(snap.head, path, line, files[path])
            if builder is not None:
                yield _hit(path, line, include, header, builder)


def _active_for(model: BuildModel, path: str, line: int, targets: list[BuckTarget]) -> BuckTarget | None:
    """The first target whose flags provably keep the include (an `#if` it leaves open: none)."""
    facts = model.source_facts(path)
    include = next((i for i in facts.includes if i.line == line), None) if facts else None
    if include is None or facts is None:
        return None
    return next((t for t in targets if include_is_active(include, facts, symbols.target_defines(t))), None)


def _is_cpp(target: BuckTarget) -> bool:
    return ("cxx" in target.kind or "cpp" in target.kind) and not target.kind.startswith("python")


def _target_files(target: BuckTarget) -> tuple[str, ...]:
    listed = [
        repo_path
        for attribute in ("exported_headers", "headers")
        for _name, repo_path in xref.header_entries(target, attribute)
    ]
    return tuple(dict.fromkeys([*xref.source_paths(target), *listed]))


def _failed_packages(model: BuildModel) -> frozenset[str]:
    """Packages that failed to parse or evaluate in some cell: the targets that own their
    headers are unknown, which is `buck-eval-error`'s and `parse-error`'s to report."""
    return frozenset(error.package for cell in CELLS for error in model.cell(cell).errors)


def _under(path: str, packages: frozenset[str]) -> bool:
    directory = posixpath.dirname(path)
    while True:
        if directory in packages:
            return True
        if not directory:
            return False
        directory = posixpath.dirname(directory)


def _owned_anywhere(model: BuildModel) -> frozenset[str]:
    """Every include path some target of some cell lists, as dependents write it."""
    return model.memo(
        ("header-unowned:owned",),
        lambda: frozenset(include for cell in CELLS for include in model.header_owners(cell)),
    )


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


_BUCK = (
    "cxx_library(\n"
    '    name = "common_shims",\n'
    '    srcs = ["common_shims.cpp"],\n'
    '    exported_headers = ["common_shims.h"{export}],\n'
    ")\n"
)
_SHIMS_H = "#pragma once\n#include <executorch/backends/aoti/export.h>{marker}\n#include <vector>\nAOTI_SHIM_EXPORT int aoti_torch_get_device_type();\n"
_FILES = {
    "backends/aoti/common_shims.cpp": "#include <executorch/backends/aoti/common_shims.h>\nint aoti_torch_get_device_type() { return 1; }\n",
    "backends/aoti/export.h": "#pragma once\n#define AOTI_SHIM_EXPORT\n",
}

CHECK = Check(
    id="header-unowned",
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
    ),
)
