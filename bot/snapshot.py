"""Snapshot(base, head, changes): the one input every check gets.

A BuildModel is one revision's build, read lazily: its tree, configuration, Buck cells (each
evaluated once per content: bot/buck/cell_graphs.py) and C/C++ source facts. Checks read
models; they never touch git, files or clocks. What is derived from a model (CUDA reasons,
header owners, CMake models, any check's verdict over the tree) lives in bot/facts/, which keeps
it under content keys (bot/facts/revision.py), so base and head share what the change left
alone whichever of them is asked first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from bot.buck.cell_graphs import evaluate_cell, graph_digest
from bot.buck.cells import CELLS
from bot.buck.targets import CellGraph, Platform
from bot.config import Config
from bot.diff import ChangeSet
from bot.model import ReviewMode
from bot.store.evaluations import EvaluationCache
from bot.tree import FileTree, with_files


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
        # The configuration's digest: with the tree's, the key of every fact of the whole tree.
        self.config_key = hashlib.sha256(repr(self.config).encode()).hexdigest()

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

    def platforms(self, cell: str) -> tuple[Platform, ...]:
        """The target platforms the cell builds for (the cell table's, or the configuration's)."""
        return self.config.buck.platforms_of(cell)

    def text(self, path: str) -> str | None:
        return self.tree.read_text(path)

    def source_facts(self, path: str):
        """C/C++/CUDA facts of one file (bot/cpp), or None when absent."""
        from bot.cpp.declarations import source_facts_in_tree

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
