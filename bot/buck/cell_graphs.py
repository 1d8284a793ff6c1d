"""Whole cells with the content cache: evaluate a revision's packages once per content.

A package's result is kept in the evaluation store (bot/store/evaluations.py) under the digest
of every file its evaluation read (build file, loaded .bzl files, glob listings) and the host
version, so a review re-evaluates only the packages whose inputs changed; a whole cell is a
manifest of package results, so trees that share packages share their entries. A cold cell's
packages are shared out over worker processes (bot/parallel/evaluation_pool.py).
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from bot.buck.buckconfig import BuckConfig
from bot.buck.cells import is_build_file
from bot.buck.evaluation import HOST_VERSION, CellEvaluator
from bot.buck.packages import dependency_version, find_packages, load_buckconfig
from bot.buck.targets import CellGraph, PackageResult
from bot.parallel import evaluation_pool
from bot.store.evaluations import EvaluationCache
from bot.tree import FileTree, missing_reads, path_bytes

Evaluated = tuple[PackageResult, bool]  # the result, and whether every blob it read was readable


def _as_cached(graph: CellGraph) -> CellGraph:
    """The same graph, its packages marked as coming from the cache."""
    packages = {
        k: r if r.cached else PackageResult(r.package, r.build_file, r.targets, r.error, r.loaded, cached=True)
        for k, r in graph.packages.items()
    }
    return CellGraph(graph.cell, packages, graph.targets, graph.digest)


def graph_digest(graph: CellGraph) -> str:
    """A digest of what a cell defines (targets and errors per package): equal graphs of two
    revisions share every fact derived from them."""
    if graph.digest:
        return graph.digest
    content = [(p, r.build_file, r.targets, r.error) for p, r in graph.packages.items()]
    digest = hashlib.sha256()
    # Without the memo, equal values give equal bytes however they are shared: a graph whose
    # packages came from worker processes (bot/parallel/evaluation_pool.py) or from the store has
    # the digest of the same graph evaluated in one process.
    pickler = pickle.Pickler(_Digesting(digest), protocol=pickle.HIGHEST_PROTOCOL)
    pickler.fast = True
    pickler.dump((graph.cell, content))
    return digest.hexdigest()


class _Digesting:
    """A file-like sink that hashes what is written to it."""

    def __init__(self, digest: hashlib._Hash) -> None:
        self.write = digest.update


def _stored(
    cache: EvaluationCache, tree: FileTree, cell: str, package: str, build_file: str, config_blob: str
) -> tuple[PackageResult, str] | None:
    """The stored result of a package whose inputs are unchanged, with its digest."""
    hit = cache.lookup(
        (HOST_VERSION, cell, package, tree.blob_id(build_file) or "", config_blob),
        lambda dependencies: all(dependency_version(tree, path) == blob for path, blob in dependencies),
    )
    return hit if hit is not None and isinstance(hit[0], PackageResult) else None


def _keep(cache: EvaluationCache, tree: FileTree, cell: str, result: PackageResult, config_blob: str) -> str | None:
    """Store a freshly evaluated result and index it; its digest, or None without a store."""
    if cache.store is None:
        return None
    dependencies = tuple((path, dependency_version(tree, path)) for path in result.loaded)
    stored = PackageResult(result.package, result.build_file, result.targets, result.error, result.loaded, cached=True)
    return cache.keep(
        (HOST_VERSION, cell, result.package, tree.blob_id(result.build_file) or "", config_blob),
        (HOST_VERSION, cell, result.package, result.build_file, config_blob),
        dependencies,
        stored,
    )


def build_inputs(cache: EvaluationCache, tree: FileTree) -> str:
    """A digest of what evaluating any cell reads: every build file, .bzl and the listing."""

    def compute() -> str:
        digest = hashlib.sha256()
        for path in tree.paths():
            digest.update(path_bytes(path) + b"\0")  # glob() results depend on the listing
            if is_build_file(path) or path.endswith((".bzl", ".buckconfig")) or tree.entry(path) is None:
                digest.update((tree.blob_id(path) or "").encode())
        for path in tree.symlinks():
            digest.update(path_bytes(f"{path}->{tree.read_link(path)}"))
        return digest.hexdigest()

    return cache.facts.fact("buck-build-inputs", tree.digest(), compute)


def _cell(cache: EvaluationCache, tree: FileTree, cell: str, evaluate: Callable[[], _Evaluated]) -> CellGraph:
    """The whole cell: from this review, else composed from the store, else `evaluate()`."""
    key = (HOST_VERSION, cell, build_inputs(cache, tree))
    fresh: list[CellGraph] = []

    def compute() -> CellGraph:
        composed = _composed(cache, cell, key)
        if composed is not None:
            return composed
        evaluated = evaluate()
        graph = CellGraph(cell, evaluated.graph.packages, evaluated.graph.targets, graph_digest(evaluated.graph))
        fresh.append(graph)
        if cache.store is not None and len(evaluated.result_keys) == len(graph.packages):
            # The manifest only: the pack is written by the first review that composes the
            # cell from the store (`_composed`), so a tree seen once (most heads) never
            # pickles its thousands of results a second time.
            cache.save_manifest(key, (graph.digest, tuple(evaluated.result_keys.items())))
        return _as_cached(graph)  # what every later use sees: the review that evaluated it reports it

    graph = cache.facts.fact("buck-cell-graph", key, compute)
    return fresh[0] if fresh else graph


def _composed(cache: EvaluationCache, cell: str, key: tuple) -> CellGraph | None:
    """The cell from its stored manifest: its pack (every result in one entry, one read for
    a cell of thousands of packages), else each package's result (the pack was evicted, or
    is written again then); None when any result is gone."""
    manifest = cache.manifest(key)
    if not (isinstance(manifest, tuple) and len(manifest) == 2):
        return None
    digest, entries = manifest
    # The other revision of this review holds most results already (a pull request changes
    # a few packages): those are used as they are and only the rest read, one by one; the
    # first revision reads the pack.
    held = [cache.held(result_key) for _package, result_key in entries]
    wants_pack = sum(result is None for result in held) > len(entries) // 8
    pack = cache.pack(key) if wants_pack else None
    if isinstance(pack, tuple) and len(pack) == len(entries):
        results = [cache.remember(result_key, packed) for (_p, result_key), packed in zip(entries, pack, strict=True)]
    else:
        results = []
        for (_package, result_key), result in zip(entries, held, strict=True):
            if result is None:
                result = cache.result(result_key)
                result = result if isinstance(result, PackageResult) else None
            if result is None:
                return None
            results.append(result)
        if wants_pack:  # not packed yet, or evicted: the next review reads one entry
            cache.save_pack(key, results)
    graph = CellGraph.from_results(cell, results)
    return CellGraph(cell, graph.packages, graph.targets, digest)


@dataclass(frozen=True, slots=True)
class _Evaluated:
    """A cell's graph as evaluated, with the store digest of each package's result."""

    graph: CellGraph
    result_keys: Mapping[str, str]


def evaluate_cell(
    tree: FileTree,
    cell: str,
    *,
    cache: EvaluationCache | None = None,
    packages: Mapping[str, str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    **limits: Any,
) -> CellGraph:
    """Evaluate every package (or the given ones) of `tree` in `cell`."""
    cache = cache or EvaluationCache(None)
    if packages is None and not limits:
        return _cell(cache, tree, cell, lambda: _evaluate_packages(tree, cell, cache, None, progress, limits))
    return _evaluate_packages(tree, cell, cache, packages, progress, limits).graph


def _evaluate_packages(tree, cell, cache, packages, progress, limits) -> _Evaluated:
    config = load_buckconfig(tree)
    config_blob = tree.blob_id(".buckconfig") or ""
    wanted = packages if packages is not None else find_packages(tree, config, cell)
    results = []
    result_keys: dict[str, str] = {}
    uncached = []
    for package, build_file in wanted.items():
        hit = _stored(cache, tree, cell, package, build_file, config_blob)
        if hit is not None:
            results.append(hit[0])
            result_keys[package] = hit[1]
        else:
            uncached.append((package, build_file))
    if uncached:
        tree.prefetch(p for p in tree.paths() if is_build_file(p) or p.endswith(".bzl"))
    evaluated = evaluate_packages(tree, cell, config, uncached, limits, progress)
    for (package, _build_file), (result, complete) in zip(uncached, evaluated, strict=True):
        if complete:  # see _evaluate_share: what is not the package's own result is not stored
            result_key = _keep(cache, tree, cell, result, config_blob)
            if result_key is not None:
                result_keys[package] = result_key
        results.append(result)
    return _Evaluated(CellGraph.from_results(cell, results), result_keys)


def evaluate_packages(
    tree: FileTree,
    cell: str,
    config: BuckConfig,
    packages: list[tuple[str, str]],
    limits: dict[str, Any],
    progress: Callable[[str, int, int], None] | None = None,
    *,
    jobs: int | None = None,
) -> list[Evaluated]:
    """Evaluate `packages` ((package, build file) pairs) in `cell`, on every core when that pays;
    results in the same order."""
    share = partial(_evaluate_share, tree, cell, config, limits)
    return evaluation_pool.evaluate(packages, share, None if progress is None else partial(progress, cell), jobs=jobs)


def _evaluate_share(tree, cell, config, limits, packages, progress) -> list[Evaluated]:
    """One share's packages with one `CellEvaluator` (the .bzl modules they load evaluated once)."""
    evaluator = CellEvaluator(tree, cell, config, **limits)
    evaluated = []
    for index, (package, build_file) in enumerate(packages):
        if progress is not None:
            progress(index, len(packages))
        missing_before = missing_reads()
        result = evaluator.evaluate_package(package, build_file)
        # Not the package's own result, so not stored: a failure to read a missing blob, or a
        # limit that only this moment's load reached.
        evaluated.append((result, missing_reads() == missing_before and not evaluator.stopped_by_load))
    return evaluated
