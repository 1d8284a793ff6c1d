"""What one cell's Buck graph decides about header visibility, independent of C++ contents.

Shared by the rules that ask which headers a target sees (`dep-undeclared-header`,
`dep-private-for-exported-header`): the dependency index, with a view per platform where a
select() chooses deps (bot/facts/header_deps.py), each C++ target's files, the owners of each
include path, the targets that compile sources of their own, and each target's dependents.
Kept per cell graph content, so that equal graphs (base and head of most changes) share it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from bot.buck.targets import BuckTarget, CellGraph, Platform
from bot.facts import revision, xref
from bot.facts.gating import graph_fact
from bot.facts.header_deps import (
    CXX_KINDS,
    DependencyIndex,
    DependencyTable,
    configured_views,
)
from bot.store.memo import digest, fact

# Cells where any transitive dependency's headers count as reachable. None: Buck2's rule holds in
# every cell (see dep-undeclared-header); kept as a name so that a repository-specific cell can opt in.
LENIENT_CELLS: tuple[str, ...] = ()


@dataclass(frozen=True)
class HeaderGraph:
    """What one cell's graph decides, independent of C++ contents (equal graphs share it)."""

    key: str  # content digest of everything below
    targets: Mapping[str, BuckTarget]
    index: DependencyIndex  # any configuration, with `configured` views per platform where deps vary
    files_of: Mapping[str, tuple[str, ...]]  # C++ label -> its sources and headers (every configuration)
    owner_labels: Mapping[str, tuple[str, ...]]  # include -> labels of its owners
    compiling: frozenset[str]  # C++ targets with sources of their own
    dependents: Mapping[str, tuple[str, ...]]  # C++ label -> the C++ targets depending on it


def header_graph(model, cell: str) -> HeaderGraph:
    """The cell's header-visibility facts, computed once per distinct graph content."""
    twin_key = model.graph_key("oss") if cell != "oss" else ""
    repo_dirs = _repo_dirs(model)
    key = digest(cell, model.graph_key(cell), twin_key, digest(tuple(sorted(repo_dirs))))

    def compute() -> HeaderGraph:
        graph = model.cell(cell)
        twin_table = dependency_table(model, "oss") if cell != "oss" else None
        index = DependencyIndex.build(
            graph, dependency_table(model, cell), twin_table, repo_dirs, transitive=cell in LENIENT_CELLS
        )
        index = configured_views(model, cell, index)
        files_of: dict[str, tuple[str, ...]] = {}
        compiling: set[str] = set()
        dependents: dict[str, list[str]] = {}
        for label, target in graph.targets.items():
            if CXX_KINDS.search(target.kind):
                if compiles(target):
                    compiling.add(label)
                for dep in index.deps_of(label):
                    dependents.setdefault(dep, []).append(label)
                files_of[label] = target_files(target, graph)
        owners = revision.header_owners(model, cell)
        owner_labels = {include: tuple(o.label for o, _a in owning) for include, owning in owners.items()}
        return HeaderGraph(
            key,
            graph.targets,
            index,
            files_of,
            owner_labels,
            frozenset(compiling),
            {label: tuple(sorted(found)) for label, found in dependents.items()},
        )

    return fact("header-graph", key, compute)


def target_files(target: BuckTarget, graph: CellGraph, platform: Platform | None = None) -> tuple[str, ...]:
    """A C++ target's sources and headers on `platform` (None: in any configuration)."""
    files = list(xref.source_paths(target, platform))
    for attribute in ("headers", "exported_headers"):
        files.extend(path for _name, path in xref.header_entries(target, attribute, platform))
    # Given as labels (`//executorch/extension/pybindings:pybindings.cpp`): the files those name
    # are compiled into the target just the same (in any configuration: few are under a select()).
    files.extend(xref.label_source_paths(target, graph))
    return tuple(dict.fromkeys(files))


def compiles(target: BuckTarget) -> bool:
    """Whether a target compiles sources of its own (any configuration, labels included)."""
    return any(isinstance(item, str) for item in target.values("srcs"))


def dependency_table(model, cell: str) -> DependencyTable:
    """The cell's dependency table in any configuration (every select() branch taken)."""
    return graph_fact(model, cell, "dependency-table", DependencyTable.of)


def _repo_dirs(model) -> frozenset[str]:
    def compute() -> frozenset[str]:
        dirs = set()
        for path in model.tree.paths():
            parent = posixpath.dirname(path)
            while parent and parent not in dirs:
                dirs.add(parent)
                parent = posixpath.dirname(parent)
        return frozenset(dirs)

    return revision.tree_memo(model, ("repo-dirs",), compute)
