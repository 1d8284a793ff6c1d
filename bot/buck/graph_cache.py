"""Whole cells with the content cache: evaluate a revision's packages once per content.

A package's result is kept in the fact store (bot/facts/cache.py) under the blob ids of every
file its evaluation read (build file, loaded .bzl files, glob listings) and the host version,
so a review re-evaluates only the packages whose inputs changed.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any, Callable, Mapping

from bot.buck.cells import is_build_file
from bot.buck.evaluation import HOST_VERSION, CellEvaluator
from bot.buck.packages import dependency_version, find_packages, load_buckconfig
from bot.buck.targets import CellGraph, PackageResult
from bot.tree import FileTree, missing_reads, path_bytes


def _as_cached(graph: "CellGraph") -> "CellGraph":
    """The same graph, its packages marked as coming from the cache."""
    packages = {
        k: r if r.cached else PackageResult(r.package, r.build_file, r.targets, r.error, r.loaded, cached=True)
        for k, r in graph.packages.items()
    }
    return CellGraph(graph.cell, packages, graph.targets, graph.digest)


def graph_digest(graph: "CellGraph") -> str:
    """A digest of what a cell defines (targets and errors per package): equal graphs of two
    revisions share every fact derived from them."""
    if graph.digest:
        return graph.digest
    content = [(p, r.build_file, r.targets, r.error) for p, r in graph.packages.items()]
    return hashlib.sha256(pickle.dumps((graph.cell, content), protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()


class EvaluationCache:
    """Evaluations in the fact store (bot/facts/cache.py): per package, keyed by cell and the
    blob ids of every file read, and per whole cell, keyed by every build input. It also
    carries the review's fact cache, so one object stands for "the caches of this review"."""

    def __init__(self, directory: Path | None, bound: int | None = None) -> None:
        from bot.facts.cache import DEFAULT_BOUND, DiskStore, FactCache, current

        self.directory = directory
        self.store = DiskStore.at(directory, bound or DEFAULT_BOUND) if directory is not None else None
        # The review's memo over the store; without a directory, the memo of the review under way.
        self.facts = FactCache(self.store) if self.store is not None else current()

    def _package_key(self, cell: str, package: str, build_blob: str, config_blob: str) -> str:
        return f"buck-package\0{HOST_VERSION}\0{cell}\0{package}\0{build_blob}\0{config_blob}"

    def get(self, tree: FileTree, cell: str, package: str, build_file: str, config_blob: str) -> PackageResult | None:
        if self.store is None:
            return None
        entries = self.store.get(self._package_key(cell, package, tree.blob_id(build_file) or "", config_blob))
        if not isinstance(entries, list):
            return None
        for dependencies, result in entries:
            if all(dependency_version(tree, path) == blob for path, blob in dependencies):
                return PackageResult(result.package, result.build_file, result.targets, result.error, result.loaded, cached=True)
        return None

    def put(self, tree: FileTree, cell: str, result: PackageResult, config_blob: str) -> None:
        if self.store is None:
            return
        key = self._package_key(cell, result.package, tree.blob_id(result.build_file) or "", config_blob)
        dependencies = tuple((path, dependency_version(tree, path)) for path in result.loaded)
        entries = self.store.get(key)
        entries = entries if isinstance(entries, list) else []
        entries = [e for e in entries if e[0] != dependencies][-7:] + [(dependencies, result)]
        self.store.put(key, entries)

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

    def cell(self, tree: FileTree, cell: str, evaluate: Callable[[], "CellGraph"]) -> "CellGraph":
        """The whole cell: from this review, else the store, else `evaluate()` (then stored)."""

        fresh: list[CellGraph] = []

        def compute() -> CellGraph:
            graph = evaluate()
            fresh.append(CellGraph(graph.cell, graph.packages, graph.targets, graph_digest(graph)))
            return _as_cached(fresh[0])  # what every later use sees: the review that evaluated it reports it

        graph = self.facts.fact("buck-cell", (HOST_VERSION, cell, self.build_inputs(tree)), compute, persist=True)
        return fresh[0] if fresh else graph


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
    return _evaluate_packages(tree, cell, cache, packages, progress, limits)


def _evaluate_packages(tree, cell, cache, packages, progress, limits) -> CellGraph:
    config = load_buckconfig(tree)
    config_blob = tree.blob_id(".buckconfig") or ""
    wanted = packages if packages is not None else find_packages(tree, config, cell)
    evaluator: CellEvaluator | None = None
    results = []
    uncached = []
    for package, build_file in wanted.items():
        hit = cache.get(tree, cell, package, build_file, config_blob)
        if hit is not None:
            results.append(hit)
        else:
            uncached.append((package, build_file))
    if uncached:
        tree.prefetch(p for p in tree.paths() if is_build_file(p) or p.endswith(".bzl"))
    for index, (package, build_file) in enumerate(uncached):
        if evaluator is None:
            evaluator = CellEvaluator(tree, cell, config, **limits)
        if progress is not None:
            progress(cell, index, len(uncached))
        missing_before = missing_reads()
        result = evaluator.evaluate_package(package, build_file)
        if missing_reads() == missing_before:  # a failure to read a missing blob is not the package's
            cache.put(tree, cell, result, config_blob)
        results.append(result)
    return CellGraph.from_results(cell, results)
