"""Snapshot(base, head, changes): the one input every check gets.

A BuildModel is one revision's build, computed lazily: the Buck cells, CUDA reasons and header
owners per cell, and (when a check asks) the CMake model per profile and C/C++ source facts.
Checks read models; they never touch git, files or clocks. Everything derived goes through the
fact cache (bot/facts/cache.py) under content keys, so base and head share what the change
left alone whichever of them is asked first.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.buck import platforms
from bot.buck.cells import CELLS
from bot.buck.evaluation import CellGraph
from bot.buck.graph_cache import EvaluationCache, evaluate_cell, graph_digest
from bot.buck.targets import Platform
from bot.config import Config
from bot.diff import ChangeSet
from bot.facts import cache as facts
from bot.facts import xref
from bot.model import ReviewMode
from bot.tree import FileTree, path_bytes, with_files

# Files read by the processes the CMake model computes instead of running (commands/processes.py):
# ExecuTorch's list file and extract_sources.py's config (whose lists also depend on the Buck graph,
# part of the CMake model's key through `extracted_source_lists`).
CMAKE_PROCESS_INPUTS = frozenset({"build_variables.bzl", "cmake_deps.toml"})


class BuildModel:
    """The build of one revision; every part is computed on first use."""

    def __init__(
        self,
        tree: FileTree,
        config: Config | None = None,
        cache: EvaluationCache | None = None,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self.tree = tree
        self.config = config or Config()
        self._cache = cache
        self._progress = progress
        self._cells: dict[str, CellGraph] = {}  # the graphs this model used (the report counts them)
        self._config_key = hashlib.sha256(repr(self.config).encode()).hexdigest()

    def with_files(self, files: Mapping[str, str]) -> BuildModel:
        """This revision with some files replaced, sharing the evaluation cache: a build no
        commit has (a macro evaluated with a parameter its callers do not pass yet)."""
        return BuildModel(with_files(self.tree, files), self.config, self._cache, self._progress)

    def cell(self, name: str) -> CellGraph:
        """The Buck targets of one cell (`fbcode`, `xplat`, `oss`)."""
        if name not in self._cells:
            self._cells[name] = evaluate_cell(self.tree, name, cache=self._cache, progress=self._progress)
        return self._cells[name]

    def cells_used(self) -> tuple[str, ...]:
        """The cells evaluated (or read) so far, in the order they were first asked for."""
        return tuple(self._cells)

    def silence(self) -> None:
        """Report no more progress: in a worker process, whose parent reports for the review."""
        self._progress = None

    @property
    def cells(self) -> Mapping[str, CellGraph]:
        return {name: self.cell(name) for name in CELLS}

    def graph_key(self, cell: str) -> str:
        """The content digest of a cell's graph: the input key of every fact derived from it."""
        return graph_digest(self.cell(cell))

    def cuda_reasons(self, cell: str, platform: Platform | None = None) -> Mapping[str, xref.CudaReason]:
        """label -> why it is CUDA, for the cell's CUDA targets on `platform` (None: in any
        configuration, every select() branch taken)."""
        deps = tuple(self.config.buck.cuda_external_deps)
        return self.graph_memo(cell, ("cuda", deps, platform), lambda graph: xref.cuda_reasons(graph, deps, platform))

    def platforms(self, cell: str) -> tuple[Platform, ...]:
        """The target platforms the cell builds for (the cell table's, or the configuration's)."""
        return self.config.buck.platforms_of(cell)

    def incompatible(self, cell: str, platform: Platform) -> Mapping[str, platforms.Incompatibility]:
        """label -> why the target is incompatible with `platform` (itself or through a dep)."""
        reversed_deps = self.graph_memo(cell, ("reversed-deps",), platforms.ReversedDependencies.of, persist=False)
        return self.graph_memo(
            cell,
            ("incompatible", platform),
            lambda graph: platforms.incompatible_targets(graph, platform, reversed_deps),
        )

    def header_owners(self, cell: str):
        """include path -> owning targets in the cell."""
        return self.graph_memo(cell, ("owners",), xref.header_owners, persist=False)

    def graph_memo(self, cell: str, key: tuple, compute: Callable[[CellGraph], Any], *, persist: bool = True) -> Any:
        """`compute(graph)` of a fact that depends on the cell's graph alone: computed once for
        all models whose graphs are equal (base and head of most pull requests).

        `persist` also keeps it in the store for later reviews; False for a cheap pass over the
        graph whose value holds its targets (an index of them): pickling those copies for a new
        graph, and reading them back, costs many times more than the pass."""
        return facts.fact(("graph", *key), self.graph_key(cell), lambda: compute(self.cell(cell)), persist=persist)

    def memo(self, key: tuple, compute: Callable[[], Any], *, persist: bool = False) -> Any:
        """A derived fact of this revision's whole tree, kept under the tree's content digest.

        `persist` also keeps it in the store for later reviews: worth it for a costly fact (a
        check's verdict over the whole tree), not for a cheap one asked per target, whose one
        file read costs more than computing it again."""
        return facts.fact(("tree", *key), (self.tree.digest(), self._config_key), compute, persist=persist)

    def text(self, path: str) -> str | None:
        return self.tree.read_text(path)

    def includes(self, paths: Iterable[str]) -> dict[str, tuple[tuple[str, int], ...]]:
        """path -> (included path, line) for many files; kept per blob across reviews."""
        blobs = {path: self.tree.blob_id(path) for path in paths}
        blobs = {p: b for p, b in blobs.items() if b is not None}
        by_path = {b: p for p, b in blobs.items()}

        def scan(missing: list[str]) -> dict[str, tuple[tuple[str, int], ...]]:
            self.tree.prefetch(by_path[b] for b in missing)
            return {b: xref.includes_of(self.tree.read_text_by_blob(b) or "") for b in missing}

        found = facts.many("includes", blobs.values(), scan, persist=True)
        return {p: found.get(b, ()) for p, b in blobs.items()}

    def cmake(self, profile_name: str, **variables: str):
        """The CMake model under a named profile (built in, or defined in the config), with `-D` overrides.

        Kept by content: a pull request that leaves the CMake files and the path listing alone
        evaluates each configuration once for base and head together.
        """
        # A repository may define a profile of the same name differently at another revision:
        # the definition is part of the key, not only the name.
        defined = self.config.cmake_defined.get(profile_name)
        definition = (
            None
            if defined is None
            else (
                defined.compiler_id,
                defined.platform,
                defined.cuda,
                tuple(sorted(defined.variables.items())),
                defined.prelude,
            )
        )
        extracted = self.extracted_source_lists()
        lists_key = facts.digest(*extracted) if extracted else ""
        key = (profile_name, definition, tuple(sorted(variables.items())), self.cmake_inputs(), lists_key)

        def evaluate():
            from bot import cmake  # imported on use: Buck-only reviews never pay for it

            profile = cmake.profile_named(profile_name, self.config.cmake_defined)
            by_config = {lists.config: lists for lists in extracted}
            return cmake.evaluate_cmake_reads(
                self.tree, profile.with_variables(**variables) if variables else profile, extracted=by_config
            )

        # Stored by what the evaluation read (the files, paths and globs it asked about), not by the
        # whole tree: a later tree whose answers are the same gets it without evaluating, though
        # files elsewhere (Buck files, sources no glob lists) changed. The review's memo keeps it by tree.
        reused_key = key[:3] + key[4:]  # everything but the tree's CMake inputs, which the reads cover
        return facts.fact(
            "cmake-model", key, lambda: facts.by_reads("cmake-model", reused_key, self.tree, evaluate), persist=False
        )

    def extracted_source_lists(self) -> tuple:
        """The source lists extract_sources.py would write for CMake (trees before 2a692c2da9 that
        have one), as `ExtractedSources` values: an input of every CMake model of the revision,
        so they are part of its key (a Buck change that alters a list re-evaluates CMake)."""
        from bot.facts.extracted_sources import extracted_sources

        return tuple(extraction.sources for _config, extraction in sorted(extracted_sources(self).items()))

    def cmake_reads_buck_graph(self) -> bool:
        """Whether this revision's CMake model depends on its Buck files (extract_sources.py's lists)."""
        from bot.facts.extracted_sources import configs

        return bool(self.memo(("extracted-sources:configs",), lambda: configs(self.tree.paths())))

    def cmake_inputs(self) -> str:
        """A digest of what CMake evaluation reads: every CMake file, the files its modelled processes
        read (commands/processes.py) and the path listing."""

        def compute() -> str:
            digest = hashlib.sha256()
            for path in self.tree.paths():
                digest.update(path_bytes(path) + b"\0")
                if path.endswith(("CMakeLists.txt", ".cmake")) or posixpath.basename(path) in CMAKE_PROCESS_INPUTS:
                    digest.update((self.tree.blob_id(path) or "").encode() + b"\0")
            return digest.hexdigest()

        return self.memo(("cmake-inputs",), compute)

    def source_facts(self, path: str):
        """C/C++/CUDA facts of one file (bot/cpp), or None when absent."""
        from bot.cpp import source_facts_in_tree

        return source_facts_in_tree(self.tree, path)

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


@dataclass(frozen=True)
class Snapshot:
    """What a check sees: both builds and the change between them."""

    base: BuildModel
    head: BuildModel
    changes: ChangeSet
    config: Config = field(default_factory=Config)
    # The review this run belongs to, when it is not this one: the engine's baseline run (base
    # against base) looks at the targets its review's change can affect (bot/facts/change_scope.py).
    scope: Snapshot | None = None
    mode: ReviewMode = ReviewMode.REVIEW

    @property
    def review(self) -> Snapshot:
        """The review whose change bounds this run: the baseline's review, else this run itself."""
        return self.scope if self.mode is ReviewMode.BASELINE and self.scope is not None else self

    @property
    def is_scan(self) -> bool:
        """Is this run, or the review it is the baseline of, a scan (every file new)?"""
        return self.review.mode is ReviewMode.SCAN
