"""What a Buck target links with: its dependency closure and the targets that link it.

Linking is transitive over `deps` and `exported_deps`: a binary gets the objects (and the
`exported_linker_flags`) of every library below it. Both directions are computed on demand
and remembered per revision, cell and platform: on a platform, select() branches are resolved
there (a dep only the CUDA branch adds is not linked on a CPU-only platform); without one, every
branch counts (what links in some configuration).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from bot.facts import revision
from bot.facts.xref import dependency_labels

if TYPE_CHECKING:
    from bot.buck.targets import BuckTarget, Platform
    from bot.snapshot import BuildModel


def dependency_closure(
    model: BuildModel, cell: str, label: str, platform: Platform | None = None
) -> Mapping[str, str | None]:
    """label -> the label it was reached from (None for the start), for everything `label` links
    on `platform` (None: in any configuration)."""
    return revision.tree_memo(
        model, ("linkage:closure", cell, label, platform), lambda: _walk(_LazyEdges(model, cell, platform), label)
    )


def dependents_closure(
    model: BuildModel, cell: str, label: str, platform: Platform | None = None
) -> Mapping[str, str | None]:
    """label -> the label it was reached from, for every target that links `label` (itself
    included) on `platform` (None: in any configuration)."""
    return revision.tree_memo(
        model,
        ("linkage:dependents", cell, label, platform),
        lambda: _walk(_reverse_edges(model, cell, platform), label),
    )


def built_on(model: BuildModel, cell: str, label: str) -> tuple[Platform | None, ...]:
    """The platforms of the cell that `label` builds on (not incompatible); `(None,)` where the
    cell names no platform: any configuration."""
    platforms = model.platforms(cell)
    if not platforms:
        return (None,)
    return tuple(p for p in platforms if label not in revision.incompatible(model, cell, p))


def carried(
    model: BuildModel,
    cell: str,
    platform: Platform | None,
    name: str,
    carries: Callable[[BuckTarget, Platform | None], bool],
) -> frozenset[str]:
    """Labels of the cell whose dependency closure on `platform` (itself included) holds a target
    for which `carries(target, platform)`; `name` names `carries` in the memo. One reverse walk
    per graph content and platform: base and head share it."""

    def compute(graph) -> frozenset[str]:
        carriers = [label for label, target in graph.targets.items() if carries(target, platform)]
        if not carriers:
            return frozenset()
        users: dict[str, list[str]] = {}
        for label, target in graph.targets.items():
            for dep in dependency_labels(target, platform):
                users.setdefault(dep, []).append(label)
        return frozenset(_walk(users, *carriers))

    return revision.graph_memo(model, cell, ("linkage:carried", name, platform), compute)


def path_to(closure: Mapping[str, str | None], label: str) -> tuple[str, ...]:
    """The chain from the closure's start to `label`."""
    chain = [label]
    while closure.get(chain[-1]) is not None:
        chain.append(closure[chain[-1]])  # type: ignore[arg-type]
    return tuple(reversed(chain))


class _LazyEdges:
    """A target's dependency labels, computed when the walk reaches it."""

    def __init__(self, model: BuildModel, cell: str, platform: Platform | None = None) -> None:
        self._model = model
        self._cell = cell
        self._platform = platform
        self._targets = model.cell(cell).targets

    def get(self, label: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        target = self._targets.get(label)
        if target is None:
            return default
        platform = self._platform
        return revision.tree_memo(
            self._model, ("linkage:deps", self._cell, label, platform), lambda: dependency_labels(target, platform)
        )


def _edges(model: BuildModel, cell: str, platform: Platform | None = None) -> Mapping[str, tuple[str, ...]]:
    def compute() -> Mapping[str, tuple[str, ...]]:
        edges = _LazyEdges(model, cell, platform)
        return {label: edges.get(label) for label in model.cell(cell).targets}

    return revision.tree_memo(model, ("linkage:edges", cell, platform), compute)


def _reverse_edges(model: BuildModel, cell: str, platform: Platform | None = None) -> Mapping[str, tuple[str, ...]]:
    def compute() -> Mapping[str, tuple[str, ...]]:
        reverse: dict[str, list[str]] = {}
        for label, deps in sorted(_edges(model, cell, platform).items()):
            for dep in deps:
                reverse.setdefault(dep, []).append(label)
        return {label: tuple(users) for label, users in reverse.items()}

    return revision.tree_memo(model, ("linkage:reverse-edges", cell, platform), compute)


def _walk(
    edges: Mapping[str, tuple[str, ...]] | Mapping[str, list[str]] | _LazyEdges, *starts: str
) -> dict[str, str | None]:
    reached: dict[str, str | None] = dict.fromkeys(starts)
    queue = deque(starts)
    while queue:
        current = queue.popleft()
        for following in edges.get(current, ()):
            if following not in reached:
                reached[following] = current
                queue.append(following)
    return reached


# Targets a Python interpreter loads native code through: an extension module, or a Python
# target whose native dependencies get linked into one (Buck's Python native linking).
PYTHON_LOADER_KINDS = frozenset({"cxx_python_extension", "python_library", "python_binary", "python_test"})


def python_loadable(graph) -> frozenset[str]:
    """Every target of the cell that a Python extension or Python target links, transitively."""
    roots = [label for label, target in graph.targets.items() if target.kind in PYTHON_LOADER_KINDS]
    return frozenset(reachable(graph, roots, dependency_labels))


def reachable(graph, roots, edges) -> set[str]:
    """Every label reached from `roots` along `edges(target)`; labels the graph lacks are kept
    (reached) but not followed."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        label = stack.pop()
        if label in seen:
            continue
        seen.add(label)
        target = graph.targets.get(label)
        if target is not None:
            stack.extend(dep for dep in edges(target) if dep not in seen)
    return seen
