"""Whole cells with the content cache: evaluate a revision's packages once per content.

A package's result is kept in the fact store (bot/facts/cache.py) under the digest of every
file its evaluation read (build file, loaded .bzl files, glob listings) and the host version,
so a review re-evaluates only the packages whose inputs changed; a whole cell is a manifest of
package results, so trees that share packages share their entries (`EvaluationCache`).
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.buck import evaluation_pool
from bot.buck.cells import is_build_file
from bot.buck.evaluation import HOST_VERSION
from bot.buck.packages import dependency_version, find_packages, load_buckconfig
from bot.buck.targets import CellGraph, PackageResult
from bot.tree import FileTree, path_bytes


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
    # packages came from worker processes (bot/buck/evaluation_pool.py) or from the store has
    # the digest of the same graph evaluated in one process.
    pickler = pickle.Pickler(_Digesting(digest), protocol=pickle.HIGHEST_PROTOCOL)
    pickler.fast = True
    pickler.dump((graph.cell, content))
    return digest.hexdigest()


class _Digesting:
    """A file-like sink that hashes what is written to it."""

    def __init__(self, digest: hashlib._Hash) -> None:
        self.write = digest.update


class EvaluationCache:
    """Evaluations in the fact store (bot/facts/cache.py), kept per package and composed per cell.

    - A package's result is stored once, under the digest of its inputs (cell, package, the
      `.buckconfig`, and the version of every file and listing its evaluation read):
      `buck-result`. Trees that share a package share that entry.
    - An index per (cell, package, build file blob) lists the input versions seen with the
      digest of each result, so a tree whose whole cell is new still finds its unchanged
      packages: `buck-package`.
    - A cell is a manifest, under the digest of every build input of the tree: the graph's
      digest and each package's result digest (`buck-cell`), and a pack of those results in
      one entry (`buck-cell-pack`, read instead of one file per package), written when the
      cell is first composed from the store, not when it is evaluated (a head seen once is
      never packed). A cell is composed from the pack, else from the package results the
      manifest names; a result gone from the store means evaluating the cell again.
    It also carries the review's fact cache, so one object stands for "the caches of this review".
    """

    def __init__(self, directory: Path | None, bound: int | None = None) -> None:
        from bot.facts.cache import DEFAULT_BOUND, DiskStore, FactCache, current

        self.directory = directory
        self.store = DiskStore.at(directory, bound or DEFAULT_BOUND) if directory is not None else None
        # The review's memo over the store; without a directory, the memo of the review under way.
        self.facts = FactCache(self.store) if self.store is not None else current()

    def _package_key(self, cell: str, package: str, build_blob: str, config_blob: str) -> str:
        return f"buck-package\0{HOST_VERSION}\0{cell}\0{package}\0{build_blob}\0{config_blob}"

    @staticmethod
    def _result_key(cell: str, result: PackageResult, config_blob: str, dependencies: tuple) -> str:
        inputs = (HOST_VERSION, cell, result.package, result.build_file, config_blob, dependencies)
        return hashlib.sha256(repr(inputs).encode()).hexdigest()

    def _result(self, result_key: str) -> PackageResult | None:
        """A stored package result (shared by every tree of this review that names it)."""
        result = self.facts.load("buck-result", result_key)
        return result if isinstance(result, PackageResult) else None

    def get(
        self, tree: FileTree, cell: str, package: str, build_file: str, config_blob: str
    ) -> tuple[PackageResult, str] | None:
        """The stored result of a package whose inputs are unchanged, with its digest."""
        if self.store is None:
            return None
        entries = self.store.get(self._package_key(cell, package, tree.blob_id(build_file) or "", config_blob))
        if not isinstance(entries, list):
            return None
        for dependencies, result_key in entries:
            if all(dependency_version(tree, path) == blob for path, blob in dependencies):
                result = self._result(result_key)
                return None if result is None else (result, result_key)
        return None

    def put(self, tree: FileTree, cell: str, result: PackageResult, config_blob: str) -> str | None:
        """Store a freshly evaluated result and index it; its digest, or None without a store."""
        if self.store is None:
            return None
        dependencies = tuple((path, dependency_version(tree, path)) for path in result.loaded)
        result_key = self._result_key(cell, result, config_blob, dependencies)
        stored = PackageResult(
            result.package, result.build_file, result.targets, result.error, result.loaded, cached=True
        )
        self.facts.save("buck-result", result_key, stored)
        key = self._package_key(cell, result.package, tree.blob_id(result.build_file) or "", config_blob)
        entries = self.store.get(key)
        entries = entries if isinstance(entries, list) else []
        entries = [*[e for e in entries if e[0] != dependencies][-7:], (dependencies, result_key)]
        self.store.put(key, entries)
        return result_key

    def build_inputs(self, tree: FileTree) -> str:
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

        return self.facts.fact("buck-build-inputs", tree.digest(), compute)

    def cell(self, tree: FileTree, cell: str, evaluate: Callable[[], _Evaluated]) -> CellGraph:
        """The whole cell: from this review, else composed from the store, else `evaluate()`."""
        key = (HOST_VERSION, cell, self.build_inputs(tree))
        fresh: list[CellGraph] = []

        def compute() -> CellGraph:
            composed = self._composed(cell, key)
            if composed is not None:
                return composed
            evaluated = evaluate()
            graph = CellGraph(cell, evaluated.graph.packages, evaluated.graph.targets, graph_digest(evaluated.graph))
            fresh.append(graph)
            if self.store is not None and len(evaluated.result_keys) == len(graph.packages):
                # The manifest only: the pack is written by the first review that composes the
                # cell from the store (`_composed`), so a tree seen once (most heads) never
                # pickles its thousands of results a second time.
                manifest = (graph.digest, tuple(evaluated.result_keys.items()))
                self.facts.save("buck-cell", key, manifest)
            return _as_cached(graph)  # what every later use sees: the review that evaluated it reports it

        graph = self.facts.fact("buck-cell-graph", key, compute)
        return fresh[0] if fresh else graph

    def _composed(self, cell: str, key: tuple) -> CellGraph | None:
        """The cell from its stored manifest: its pack (every result in one entry, one read for
        a cell of thousands of packages), else each package's result (the pack was evicted, or
        is written again then); None when any result is gone."""
        manifest = self.facts.load("buck-cell", key)
        if not (isinstance(manifest, tuple) and len(manifest) == 2):
            return None
        digest, entries = manifest
        # The other revision of this review holds most results already (a pull request changes
        # a few packages): those are used as they are and only the rest read, one by one; the
        # first revision reads the pack.
        held = [self.facts.peek("buck-result", result_key) for _package, result_key in entries]
        wants_pack = sum(result is None for result in held) > len(entries) // 8
        pack = self.facts.load("buck-cell-pack", key, keep=False) if wants_pack else None
        if isinstance(pack, tuple) and len(pack) == len(entries):
            results = [
                self.facts.fact("buck-result", result_key, lambda r=packed: r)
                for (_p, result_key), packed in zip(entries, pack, strict=True)
            ]
        else:
            results = []
            for (_package, result_key), result in zip(entries, held, strict=True):
                result = result if result is not None else self._result(result_key)
                if result is None:
                    return None
                results.append(result)
            if wants_pack:  # not packed yet, or evicted: the next review reads one entry
                self.facts.save("buck-cell-pack", key, tuple(results))
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
        return cache.cell(tree, cell, lambda: _evaluate_packages(tree, cell, cache, None, progress, limits))
    return _evaluate_packages(tree, cell, cache, packages, progress, limits).graph


def _evaluate_packages(tree, cell, cache, packages, progress, limits) -> _Evaluated:
    config = load_buckconfig(tree)
    config_blob = tree.blob_id(".buckconfig") or ""
    wanted = packages if packages is not None else find_packages(tree, config, cell)
    results = []
    result_keys: dict[str, str] = {}
    uncached = []
    for package, build_file in wanted.items():
        hit = cache.get(tree, cell, package, build_file, config_blob)
        if hit is not None:
            results.append(hit[0])
            result_keys[package] = hit[1]
        else:
            uncached.append((package, build_file))
    if uncached:
        tree.prefetch(p for p in tree.paths() if is_build_file(p) or p.endswith(".bzl"))
    evaluated = evaluation_pool.evaluate(tree, cell, config, uncached, limits, progress)
    for (package, _build_file), (result, complete) in zip(uncached, evaluated, strict=True):
        if complete:  # a failure to read a missing blob is not the package's
            result_key = cache.put(tree, cell, result, config_blob)
            if result_key is not None:
                result_keys[package] = result_key
        results.append(result)
    return _Evaluated(CellGraph.from_results(cell, results), result_keys)
