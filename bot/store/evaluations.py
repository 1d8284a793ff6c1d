"""The evaluation store: Buck package results kept per package and composed per cell.

What it keeps, under the store's one naming scheme (bot/store/disk.py `entry_key`):
- `buck-result`: a package's result, under the digest of its inputs (host version, cell,
  package, build file, the `.buckconfig` and the version of every file and listing its
  evaluation read). Trees that share a package share that entry.
- `buck-package`: an index per (host version, cell, package, build file blob, `.buckconfig`
  blob) listing the input versions seen with the digest of each result, so a tree whose whole
  cell is new still finds its unchanged packages.
- `buck-cell`: a cell's manifest under the digest of every build input of the tree (the graph's
  digest and each package's result digest), and `buck-cell-pack`: those results in one entry.
Which trees and packages are asked for, and how a cell is composed from these entries, is the
Buck model's (bot/buck/cell_graphs.py). It also carries the review's fact cache, so one object
stands for "the caches of this review".
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bot.store.disk import DEFAULT_BOUND, DiskStore, entry_key
from bot.store.memo import FactCache, current

Dependencies = tuple[tuple[str, str | None], ...]  # (path read, its version) per input of a result
_VERSIONS_KEPT = 8  # input versions indexed per package: the base and heads of a few pull requests


class EvaluationCache:
    """Package results in the fact store, indexed by package and composed per cell."""

    def __init__(self, directory: Path | None, bound: int | None = None) -> None:
        self.directory = directory
        self.store = DiskStore.at(directory, bound or DEFAULT_BOUND) if directory is not None else None
        # The review's memo over the store; without a directory, the memo of the review under way.
        self.facts = FactCache(self.store) if self.store is not None else current()

    def result(self, result_key: str) -> Any:
        """A stored package result (shared by every tree of this review that names it), or None."""
        return self.facts.load("buck-result", result_key)

    def held(self, result_key: str) -> Any:
        """The package result this review already holds, or None (no store read)."""
        return self.facts.peek("buck-result", result_key)

    def lookup(self, index: tuple, unchanged: Callable[[Dependencies], bool]) -> tuple[Any, str] | None:
        """The stored result indexed under `index` whose inputs are `unchanged`, with its digest."""
        if self.store is None:
            return None
        entries = self.store.get(entry_key("buck-package", index))
        if not isinstance(entries, list):
            return None
        for dependencies, result_key in entries:
            if unchanged(dependencies):
                result = self.result(result_key)
                return None if result is None else (result, result_key)
        return None

    def keep(self, index: tuple, inputs: tuple, dependencies: Dependencies, result: Any) -> str | None:
        """Store a freshly evaluated result under the digest of `inputs` and index it; its digest,
        or None without a store."""
        if self.store is None:
            return None
        result_key = hashlib.sha256(repr((*inputs, dependencies)).encode()).hexdigest()
        self.facts.save("buck-result", result_key, result)
        key = entry_key("buck-package", index)
        entries = self.store.get(key)
        entries = entries if isinstance(entries, list) else []
        kept = [e for e in entries if e[0] != dependencies][-(_VERSIONS_KEPT - 1) :]
        self.store.put(key, [*kept, (dependencies, result_key)])
        return result_key

    def manifest(self, key: tuple) -> Any:
        """A cell's stored manifest (graph digest, (package, result digest) pairs), or None."""
        return self.facts.load("buck-cell", key)

    def save_manifest(self, key: tuple, manifest: tuple) -> None:
        self.facts.save("buck-cell", key, manifest)

    def pack(self, key: tuple) -> Any:
        """A cell's results in one entry, or None; read, not remembered (its parts are)."""
        return self.facts.load("buck-cell-pack", key, keep=False)

    def save_pack(self, key: tuple, results: Sequence[Any]) -> None:
        self.facts.save("buck-cell-pack", key, tuple(results))

    def remember(self, result_key: str, result: Any) -> Any:
        """Keep a result read from a pack in this review, as if read on its own."""
        return self.facts.fact("buck-result", result_key, lambda: result)
