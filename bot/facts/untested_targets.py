"""C++ targets a change makes build on a platform where no test builds them, and what the tests reach.

Per cell and platform, as configured there: what the tests compatible with the platform build
(their dependency closure), which C++ targets build at head and did not at base, and which of
them no such test (nor, in a CI-driven cell, a CI command) reaches while some test of another
configuration does. Kept per graph where a fact depends on the graph alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from bot.buck.cells import CELLS, cell_named
from bot.buck.platforms import dependencies
from bot.buck.targets import BuckTarget, CellGraph, Platform
from bot.facts import linkage, revision
from bot.facts.build_scope import scope_of
from bot.snapshot import BuildModel, Snapshot

_CXX_KINDS = re.compile(r"cxx_|cpp_|cuda|gpu_")


# What a test build follows: every attribute that makes a dependency, the wrapper's per-cell
# splits included (a wider closure can only call a target tested, never hide one).
_TEST_DEPENDENCY_ATTRIBUTES = (
    "deps",
    "exported_deps",
    "fbcode_deps",
    "xplat_deps",
    "fbcode_exported_deps",
    "xplat_exported_deps",
    "runtime_deps",
)


def untested_new(snap: Snapshot, cell: str, platform: Platform, cuda_constraint: str) -> frozenset[str]:
    """C++ targets that build on `platform` at head and did not at base, that existed at base in
    some cell, and that no test compatible with `platform` reaches (nor, in a CI-driven cell, a
    CI command builds)."""
    head, base = snap.head.cell(cell), snap.base.cell(cell)
    head_incompatible = revision.incompatible(snap.head, cell, platform)
    base_incompatible = revision.incompatible(snap.base, cell, platform)
    candidates = [
        label
        for label, target in head.targets.items()
        if label not in head_incompatible
        and (label not in base.targets or label in base_incompatible)
        and _CXX_KINDS.search(target.kind)
        and not is_test(target)
        and _folded(head, label) == label
        and _evaluated(base, target.package)
        and any(label in snap.base.cell(other).targets for other in CELLS)
    ]
    if candidates and not platform.satisfies(cuda_constraint):
        # A CUDA target a CPU-only platform admits fails to build there: cuda-guard-missing's.
        cuda = revision.cuda_reasons(snap.head, cell, platform)
        candidates = [label for label in candidates if label not in cuda]
    if not candidates:
        return frozenset()
    tested = _tested_on(snap, cell, platform)
    if cell_named(cell).is_oss:
        built = scope_of(snap.head, cell, platform).built_targets
        if built is None:
            return frozenset()  # no CI commands to read: every target counts as built
        tested = tested | built
    untested = [label for label in candidates if label not in tested]
    if not untested:
        return frozenset()
    # Only code some test builds in another configuration: there the change moves tested code
    # to where no test follows it; code no test builds anywhere lacks a test, not a configuration.
    elsewhere = frozenset().union(
        *(
            _tested_on(snap, other, other_platform)
            for other in CELLS
            for other_platform in snap.config.buck.platforms_of(other)
            if (other, other_platform) != (cell, platform)
        )
    )
    return frozenset(label for label in untested if label in elsewhere)


def _tested_on(snap: Snapshot, cell: str, platform: Platform) -> frozenset[str]:
    """What the tests compatible with `platform` build in the cell at head (kept per graph)."""
    incompatible = revision.incompatible(snap.head, cell, platform)
    return revision.graph_memo(
        snap.head, cell, ("tested", platform), lambda graph: _tested(graph, platform, incompatible)
    )


def _evaluated(graph: CellGraph, package: str) -> bool:
    """Whether the cell evaluated the package without error (or does not define it at all): a
    package that failed at base defined nothing there, so its targets are not new."""
    result = graph.packages.get(package)
    return result is None or result.error is None


def _tested(graph: CellGraph, platform: Platform, incompatible: Mapping[str, object]) -> frozenset[str]:
    """Every target some test compatible with `platform` builds there, as configured there; the
    wrapper's `_static` twins count for the target they copy."""
    tests = [label for label, target in graph.targets.items() if is_test(target) and label not in incompatible]
    seen = linkage.reachable(
        graph,
        tests,
        lambda target: (dep for attribute in _TEST_DEPENDENCY_ATTRIBUTES for dep in target.labels(attribute, platform)),
    )
    return frozenset(seen | {_folded(graph, label) for label in seen if label in graph.targets})


def by_root(graph: CellGraph, untested: frozenset[str], platform: Platform) -> Mapping[str, tuple[str, ...]]:
    """root -> the untested targets it depends on there: a root is one no other untested target
    depends on; each other target goes to the first root (in label order) that reaches it."""
    below: dict[str, set[str]] = {}
    for label in sorted(untested):
        reached: set[str] = set()
        stack = list(dependencies(graph.targets[label], platform))
        while stack:
            dep = stack.pop()
            if dep in reached or dep not in graph.targets:
                continue
            reached.add(dep)
            stack.extend(dependencies(graph.targets[dep], platform))
        below[label] = {_folded(graph, dep) for dep in reached} & untested - {label}
    covered = set().union(*below.values())
    roots = sorted(label for label in untested if label not in covered)
    assigned: set[str] = set()
    result: dict[str, tuple[str, ...]] = {}
    for root in roots:
        mine = sorted(below[root] - assigned)
        assigned.update(mine)
        result[root] = tuple(mine)
    return result


def dependents_of(model: BuildModel, cell: str) -> Mapping[str, tuple[str, ...]]:
    """label -> the targets of the cell that depend on it, in any configuration (kept per graph)."""
    return revision.graph_memo(model, cell, ("dependents",), _dependents)


def _dependents(graph: CellGraph) -> dict[str, tuple[str, ...]]:
    """label -> the targets that depend on it, in any configuration."""
    found: dict[str, list[str]] = {}
    for label, target in graph.targets.items():
        for attribute in _TEST_DEPENDENCY_ATTRIBUTES:
            for dep in target.labels(attribute):
                found.setdefault(dep, []).append(label)
    return {label: tuple(dict.fromkeys(users)) for label, users in found.items()}


def is_test(target: BuckTarget) -> bool:
    return "test" in target.kind


def _folded(graph: CellGraph, label: str) -> str:
    """The label that stands for `label`: the target a wrapper's `_static` twin copies, else itself."""
    target = graph.targets.get(label)
    primary = target.primary_label if target is not None else label
    return primary if primary in graph.targets else label
