"""Facts of one revision's build (a `BuildModel`), kept by content: this module decides under
which key each is kept, in the review's memo and (where `persist`) in the store.

A fact of a cell's graph is kept under the graph's content digest, so base and head of a pull
request that left the cell alone share it whichever is asked first; a fact of the whole tree
under the tree's digest and the configuration's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bot.buck import platforms
from bot.buck.targets import CellGraph, Platform
from bot.facts import xref
from bot.snapshot import BuildModel
from bot.store import memo


def graph_memo(
    model: BuildModel, cell: str, key: tuple, compute: Callable[[CellGraph], Any], *, persist: bool = True
) -> Any:
    """`compute(graph)` of a fact that depends on the cell's graph alone: computed once for
    all models whose graphs are equal (base and head of most pull requests).

    `persist` also keeps it in the store for later reviews; False for a cheap pass over the
    graph whose value holds its targets (an index of them): pickling those copies for a new
    graph, and reading them back, costs many times more than the pass."""
    return memo.fact(("graph", *key), model.graph_key(cell), lambda: compute(model.cell(cell)), persist=persist)


def tree_memo(model: BuildModel, key: tuple, compute: Callable[[], Any], *, persist: bool = False) -> Any:
    """A derived fact of the revision's whole tree, kept under the tree's content digest.

    `persist` also keeps it in the store for later reviews: worth it for a costly fact (a
    check's verdict over the whole tree), not for a cheap one asked per target, whose one
    file read costs more than computing it again."""
    return memo.fact(("tree", *key), (model.tree.digest(), model.config_key), compute, persist=persist)


def cuda_reasons(model: BuildModel, cell: str, platform: Platform | None = None) -> Mapping[str, xref.CudaReason]:
    """label -> why it is CUDA, for the cell's CUDA targets on `platform` (None: in any
    configuration, every select() branch taken)."""
    deps = tuple(model.config.buck.cuda_external_deps)
    return graph_memo(model, cell, ("cuda", deps, platform), lambda graph: xref.cuda_reasons(graph, deps, platform))


def incompatible(model: BuildModel, cell: str, platform: Platform) -> Mapping[str, platforms.Incompatibility]:
    """label -> why the target is incompatible with `platform` (itself or through a dep)."""
    reversed_deps = graph_memo(model, cell, ("reversed-deps",), platforms.ReversedDependencies.of, persist=False)
    return graph_memo(
        model,
        cell,
        ("incompatible", platform),
        lambda graph: platforms.incompatible_targets(graph, platform, reversed_deps),
    )


def header_owners(model: BuildModel, cell: str):
    """include path -> owning targets in the cell."""
    return graph_memo(model, cell, ("owners",), xref.header_owners, persist=False)


def includes(model: BuildModel, paths: Iterable[str]) -> dict[str, tuple[tuple[str, int], ...]]:
    """path -> (included path, line) for many files; kept per blob across reviews."""
    tree = model.tree
    blobs = {path: tree.blob_id(path) for path in paths}
    blobs = {p: b for p, b in blobs.items() if b is not None}
    by_path = {b: p for p, b in blobs.items()}

    def scan(missing: list[str]) -> dict[str, tuple[tuple[str, int], ...]]:
        tree.prefetch(by_path[b] for b in missing)
        return {b: xref.includes_of(tree.read_text_by_blob(b) or "") for b in missing}

    found = memo.many("includes", blobs.values(), scan, persist=True)
    return {p: found.get(b, ()) for p, b in blobs.items()}
