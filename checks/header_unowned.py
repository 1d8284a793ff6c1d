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
from bot.check import BUCK_FILES, CPP_FILES, Check, Example
from bot.facts import revision, symbols, xref
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
            directories[key] = _include_directories(model, target)
        for directory, flag_owner in directories[key]:
            header = posixpath.normpath(posixpath.join(directory, include))
            if model.tree.blob_id(header) is None or _under(header, failed):
                continue
            if _active_for(model, path, line, [target]) is not None:
                return _root_relative_hit(path, line, include, header, directory, target, flag_owner)
    return None


_INCLUDE_FLAGS = ("-I", "-isystem", "-iquote")


def _include_directories(model: BuildModel, target: BuckTarget) -> list[tuple[str, BuckTarget]]:
    """(directory, target whose flag names it) for the `-I` flags naming a directory of the tree:
    the target's own flags and the exported flags of its deps (through their exported deps)."""
    graph = model.cell(target.cell)
    flagged: list[tuple[BuckTarget, str]] = [
        (target, attribute) for attribute in ("preprocessor_flags", "exported_preprocessor_flags", "compiler_flags")
    ]
    queue = list(target.labels("deps") + target.labels("exported_deps"))
    seen = set(queue)
    while queue:
        dep = graph.targets.get(queue.pop())
        if dep is None:
            continue
        flagged.append((dep, "exported_preprocessor_flags"))
        for label in dep.labels("exported_deps"):
            if label not in seen:
                seen.add(label)
                queue.append(label)
    found: list[tuple[str, BuckTarget]] = []
    for owner, attribute in flagged:
        flags = [flag for flag in owner.values(attribute) if isinstance(flag, str)]
        for index, flag in enumerate(flags):
            option = next((o for o in _INCLUDE_FLAGS if flag.startswith(o)), None)
            if option is None:
                continue
            directory = flag[len(option) :] or (flags[index + 1] if index + 1 < len(flags) else "")
            relative = bool(directory) and "$" not in directory and not directory.startswith(("/", ".."))
            if relative and model.tree.is_dir(posixpath.normpath(directory)):
                found.append((posixpath.normpath(directory), owner))
    return found


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
    """Packages whose targets, and so the headers they list, are unknown: those that failed to
    parse or evaluate in some cell (`buck-eval-error`'s and `parse-error`'s to report), and those
    that a dep names but that have no build file here, whose build file lives only in Meta's
    tree (8b56743a46 adds `backends/cadence/common/xt_macros.h` and deps on
    `//executorch/backends/cadence/common:xt_macros`; the open repository got that package's
    BUCK file in 73c561cf32). The root package is never taken as unknown from a dep: one
    dangling `//:x` would hide every header."""

    def compute() -> frozenset[str]:
        unknown = {error.package for cell in CELLS for error in model.cell(cell).errors}
        for cell in CELLS:
            graph = model.cell(cell)
            defined = {target.package for target in graph.targets.values()}
            for target in graph.targets.values():
                for dep in target.labels("deps") + target.labels("exported_deps"):
                    if dep.startswith("//") and dep not in graph.targets:
                        package = dep[2:].split(":", 1)[0]
                        if package and package not in defined and model.tree.is_dir(package):
                            unknown.add(package)
        return frozenset(unknown)

    return revision.tree_memo(model, ("header-unowned:unknown-packages",), compute)


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
    return revision.tree_memo(
        model,
        ("header-unowned:owned",),
        lambda: frozenset(include for cell in CELLS for include in revision.header_owners(model, cell)),
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
