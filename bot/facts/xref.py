"""Cross-references over a cell's targets: what is CUDA and why, who owns a header.

Design 3.4. All functions are pure and take a CellGraph; results are memoized per graph by
the Snapshot that owns it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bot.buck.cells import cell_named
from bot.buck.targets import BuckTarget, CellGraph, Platform, flatten, resolve

CUDA_SOURCE_SUFFIXES = (".cu", ".cuh")


@dataclass(frozen=True, slots=True)
class CudaReason:
    """Why a target is CUDA: the attribute item that says so, or the dependency chain."""

    kind: str  # source | nvcc_flags | external_dep | include | dependency
    detail: str  # the source file, the dep name, or the chain's last label
    chain: tuple[str, ...] = ()  # labels from the target to the CUDA target, for `dependency`

    def describe(self) -> str:
        if self.kind == "source":
            return f"builds the CUDA source `{self.detail}`"
        if self.kind == "nvcc_flags":
            return "passes `nvcc_flags`"
        if self.kind == "external_dep":
            return f"depends on the CUDA external dep `{self.detail}`"
        if self.kind == "include":
            return f"includes `{self.detail}`"
        return "depends on a CUDA target: " + " -> ".join(self.chain)


def source_paths(target: BuckTarget, platform: Platform | None = None) -> tuple[str, ...]:
    """Repository paths of a target's sources (srcs, with (path, flags) pairs unwrapped), on
    `platform` (None: in any configuration)."""

    def compute() -> tuple[str, ...]:
        paths = []
        for item in target.values("srcs", platform):
            if isinstance(item, str) and not item.startswith((":", "//")):
                paths.append(posixpath.normpath(posixpath.join(target.package, item)))
        return tuple(paths)

    return target.derived(("source_paths", platform), compute) if "srcs" in target.attrs else ()


# Cell prefixes under which a label names this repository: (prefix, in the repository-under-
# `executorch/` convention of the internal cells, in the open-source convention).
_LABEL_ROOTS = (
    ("fbsource//xplat/executorch/", True, False),
    ("fbcode//executorch/", True, False),
    ("//executorch/", True, False),
    ("root//", False, True),
    ("//", False, True),
)
# Rules whose output is one file of the repository, named by `src` (else by the rule's name).
_FILE_RULES = frozenset({"export_file"})


def repository_label(label: str, package: str, cell: str) -> str | None:
    """`//pkg:name` for a label that names this repository in `cell`'s convention, else None.

    The internal cells mount the repository under `//executorch/` (their `//other` is another
    part of the monorepo); open-source buck2 roots it at `//`, where ExecuTorch's wrapper has
    already rewritten `//executorch/...` references before the rule sees them.
    """
    if label.startswith(":"):
        return f"//{package}{label}"
    under_executorch = cell_named(cell).repository_under_executorch
    for prefix, internal, open_source in _LABEL_ROOTS:
        if label.startswith(prefix):
            if not (internal if under_executorch else open_source):
                return None
            rest = label[len(prefix) :]
            return "//" + rest if ":" in rest else None
    return None


def label_file(label: str, package: str, graph: CellGraph) -> str | None:
    """The repository file a source or header written as a label (`//pkg:file.cpp`, `:file.h`)
    stands for: the file an `export_file` target of the cell exports. Generated outputs
    (`:gen[out.cpp]`) and labels the cell does not define name no file of the repository."""
    if "[" in label:
        return None
    resolved = repository_label(label, package, graph.cell)
    target = graph.targets.get(resolved) if resolved is not None else None
    if target is None or target.kind not in _FILE_RULES:
        return None
    source = target.attr("src") or target.name
    if not isinstance(source, str) or source.startswith((":", "//")):
        return None
    return posixpath.normpath(posixpath.join(target.package, source))


def label_source_paths(target: BuckTarget, graph: CellGraph) -> tuple[str, ...]:
    """Repository files of the sources and headers a target gives as labels, resolved in its cell."""
    paths = []
    for attribute in ("srcs", "headers", "exported_headers"):
        for item in flatten(target.attr(attribute)):
            if isinstance(item, str) and (item.startswith(":") or "//" in item):
                path = label_file(item, target.package, graph)
                if path is not None:
                    paths.append(path)
    return tuple(dict.fromkeys(paths))


def header_entries(target: BuckTarget, attribute: str, platform: Platform | None = None) -> tuple[tuple[str, str], ...]:
    """(include path as dependents write it, repository path) for `headers`/`exported_headers`,
    on `platform` (None: in any configuration, every select() branch)."""
    if attribute not in target.attrs:
        return ()
    return target.derived(("header_entries", attribute, platform), lambda: _header_entries(target, attribute, platform))


def _header_entries(target: BuckTarget, attribute: str, platform: Platform | None) -> tuple[tuple[str, str], ...]:
    value = target.attr(attribute)
    if platform is not None:
        value = resolve(value, platform)
    namespace = target.attr("header_namespace")
    if namespace is None:
        namespace = posixpath.join("executorch", target.package) if target.package else "executorch"
    entries = []
    if isinstance(value, dict):
        pairs = [(str(k), v) for k, v in value.items() if isinstance(v, str)]
    else:
        pairs = [(v, v) for v in flatten(value) if isinstance(v, str)]
    for include_name, source in pairs:
        if source.startswith((":", "//")):
            continue
        repo_path = posixpath.normpath(posixpath.join(target.package, source))
        entries.append((posixpath.join(namespace, include_name) if namespace else include_name, repo_path))
    return tuple(entries)


def external_dep_names(target: BuckTarget, platform: Platform | None = None) -> tuple[str, ...]:
    """Names in `external_deps`/`exported_external_deps` on `platform` (None: any configuration);
    tuples give their first element."""
    names = []
    for attribute in ("external_deps", "exported_external_deps"):
        value = target.attr(attribute)
        if platform is not None:
            value = resolve(value, platform)
        for item in _external_items(value):
            names.append(item)
    return tuple(names)


def _external_items(value) -> Iterable[str]:
    if value is None:
        return
    if isinstance(value, str):
        yield value
        return
    if isinstance(value, (list, tuple)):
        # A ("cuda", None, "cuda-lazy") tuple arrives as a list of three items.
        if value and isinstance(value[0], str) and len(value) == 3 and value[1] is None:
            yield value[0]
            yield str(value[2])
            return
        for item in value:
            yield from _external_items(item)
        return
    for item in flatten(value):
        if isinstance(item, str):
            yield item


def direct_cuda_reason(
    target: BuckTarget, cuda_external_deps: Iterable[str], platform: Platform | None = None
) -> CudaReason | None:
    """CUDA-ness from the target's own attributes on `platform` (None: in any configuration)."""
    for path in source_paths(target, platform):
        if path.endswith(CUDA_SOURCE_SUFFIXES):
            return CudaReason("source", path)
    if target.attr("nvcc_flags") and (platform is None or target.values("nvcc_flags", platform)):
        return CudaReason("nvcc_flags", "nvcc_flags")
    cuda_names = set(cuda_external_deps)
    for name in external_dep_names(target, platform):
        if name in cuda_names:
            return CudaReason("external_dep", name)
    return None


def dependency_labels(target: BuckTarget, platform: Platform | None = None) -> tuple[str, ...]:
    """`deps` and `exported_deps` on `platform` (None: every branch of every select())."""
    return target.labels("deps", platform) + target.labels("exported_deps", platform)


def cuda_reasons(
    graph: CellGraph, cuda_external_deps: Iterable[str], platform: Platform | None = None
) -> Mapping[str, CudaReason]:
    """label -> why it is CUDA, for every CUDA target of the cell (transitively through deps).

    On `platform`, select() branches are resolved there: a dep that only the CUDA branch adds is
    absent on a CPU-only platform. None asks "CUDA in some configuration" (every branch).
    """
    cuda_names = tuple(cuda_external_deps)
    reasons: dict[str, CudaReason] = {}
    for label, target in graph.targets.items():
        reason = direct_cuda_reason(target, cuda_names, platform)
        if reason is not None:
            reasons[label] = reason
    # Propagate along deps until nothing changes; chains stay shortest-first.
    deps_of = {
        label: dependency_labels(target, platform) for label, target in graph.targets.items() if label not in reasons
    }
    changed = True
    while changed:
        changed = False
        for label, deps in deps_of.items():
            if label in reasons:
                continue
            for dep in deps:
                if dep in reasons:
                    inner = reasons[dep]
                    chain = (label,) + (inner.chain if inner.kind == "dependency" else (dep,))
                    reasons[label] = CudaReason("dependency", chain[-1], chain)
                    changed = True
                    break
    return reasons


# Meta's `cpp_library` macro (fbcode_macros, and buck2-shims-meta's `shims.bzl` in the open-source
# build) passes its `headers` on as `exported_headers`: dependents see them.
EXPORTING_HEADER_MACROS = frozenset({"cpp_library"})


def visible_attribute(target: BuckTarget, attribute: str, cell: str) -> str:
    """How dependents see a header listed in `attribute`: "exported_headers" or "headers"."""
    if (
        attribute == "headers"
        and target.kind in EXPORTING_HEADER_MACROS
        and cell_named(cell).cpp_library_headers_visible
    ):
        return "exported_headers"
    return attribute


def header_owners(graph: CellGraph) -> Mapping[str, tuple[tuple[BuckTarget, str], ...]]:
    """include path -> ((owning target, "exported_headers" | "headers"), ...), the attribute as
    dependents see it (a `cpp_library`'s `headers` are exported)."""
    owners: dict[str, list[tuple[BuckTarget, str]]] = {}
    for target in graph.targets.values():
        for attribute in ("exported_headers", "headers"):
            for include_name, _repo_path in header_entries(target, attribute):
                owners.setdefault(include_name, []).append((target, visible_attribute(target, attribute, graph.cell)))
    return {k: tuple(v) for k, v in owners.items()}


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def includes_of(text: str) -> tuple[tuple[str, int], ...]:
    """(included path, line) of every `#include` in a C/C++ file."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if "include" in line:
            match = _INCLUDE.match(line)
            if match:
                found.append((match.group(1), number))
    return tuple(found)
