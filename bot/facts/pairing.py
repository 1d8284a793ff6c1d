"""Buck <-> CMake target pairing by shared source files (design 3.4).

The two builds name their targets differently (`//backends/cuda/runtime:cuda_backend` and
`aoti_cuda_backend`), so the only fact that ties them together is what they compile: a Buck
target and a CMake target that build the same source file are twins. Only compiled sources
count (headers are listed inconsistently on both sides), and a Buck target's sources are the
union over every cell and every `select()` branch: the question is "does this build compile
the file somewhere", not "in which configuration".

ExecuTorch's internal `runtime.cxx_library` also records a `<name>_static` twin at the same
call site; those twins are left out so that one call site is one Buck target.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget, CellGraph
from bot.cmake import cache_values
from bot.facts import cmake_models, revision
from bot.facts.xref import source_paths

if TYPE_CHECKING:  # the snapshot imports the build models; this module only reads them
    from bot.cmake.model import CMakeModel
    from bot.snapshot import BuildModel

COMPILED_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".m", ".mm")
CMAKE_FILE_SUFFIXES = (".cmake",)
_COMPILING_KINDS = ("STATIC_LIBRARY", "SHARED_LIBRARY", "MODULE_LIBRARY", "OBJECT_LIBRARY", "EXECUTABLE")


def is_compiled(path: str) -> bool:
    """Whether a path is a translation unit (not a header)."""
    return path.endswith(COMPILED_SUFFIXES)


def is_static_twin(target: BuckTarget, graph: CellGraph) -> bool:
    """A `<name>_static` target the runtime wrapper records beside `<name>` at the same call site."""
    if not target.name.endswith("_static") or target.attr("preferred_linkage") != "static":
        return False
    sibling = graph.targets.get(target.label[: -len("_static")])
    return sibling is not None and (sibling.path, sibling.line) == (target.path, target.line)


def primary_targets(graph: CellGraph) -> Iterator[BuckTarget]:
    """The cell's targets, one per call site (wrapper-made static twins left out), sorted by label."""
    for _label, target in sorted(graph.targets.items()):
        if not is_static_twin(target, graph):
            yield target


def cell_primary_targets(model: BuildModel, cell: str) -> tuple[BuckTarget, ...]:
    """`primary_targets` of one cell of a revision, computed once."""

    return revision.graph_memo(
        model, cell, ("pairing:primary-targets",), lambda graph: tuple(primary_targets(graph)), persist=False
    )


@dataclass(frozen=True)
class Pairing:
    """Which Buck targets and CMake targets (one profile) compile the same files."""

    buck_sources: Mapping[str, frozenset[str]]  # Buck label -> compiled sources, all cells
    cmake_sources: Mapping[str, frozenset[str]]  # CMake target -> compiled sources
    by_buck: Mapping[str, tuple[str, ...]]  # Buck label -> CMake targets sharing a source
    by_cmake: Mapping[str, tuple[str, ...]]  # CMake target -> Buck labels sharing a source

    def shared(self, label: str, cmake_target: str) -> frozenset[str]:
        """The sources both targets compile."""
        return self.buck_sources.get(label, frozenset()) & self.cmake_sources.get(cmake_target, frozenset())

    def closest_buck(self, cmake_target: str) -> tuple[str, ...]:
        """The Buck labels that share the most sources with a CMake target (its twins proper)."""
        candidates = self.by_cmake.get(cmake_target, ())
        if not candidates:
            return ()
        counts = {label: len(self.shared(label, cmake_target)) for label in candidates}
        best = max(counts.values())
        return tuple(label for label in candidates if counts[label] == best)

    def all_cmake_sources(self) -> frozenset[str]:
        return frozenset().union(*self.cmake_sources.values()) if self.cmake_sources else frozenset()

    def all_buck_sources(self) -> frozenset[str]:
        return frozenset().union(*self.buck_sources.values()) if self.buck_sources else frozenset()


def buck_sources(targets: Iterable[BuckTarget]) -> dict[str, frozenset[str]]:
    """Buck label -> compiled sources, over the given targets (of any cells)."""
    found: dict[str, set[str]] = {}
    seen: dict[str, list] = {}  # label -> srcs values already counted (cells mostly agree)
    for target in targets:
        srcs = target.attr("srcs")
        if srcs is None or srcs in seen.setdefault(target.label, []):
            continue
        seen[target.label].append(srcs)
        compiled = {path for path in source_paths(target) if is_compiled(path)}
        if compiled:
            found.setdefault(target.label, set()).update(compiled)
    return {label: frozenset(paths) for label, paths in sorted(found.items())}


def cmake_sources(model: CMakeModel) -> dict[str, frozenset[str]]:
    """CMake target -> compiled sources inside the repository (imported and alias targets left out)."""
    found: dict[str, frozenset[str]] = {}
    for name, target in sorted(model.targets.items()):
        if target.imported or target.alias_of is not None or target.kind not in _COMPILING_KINDS:
            continue
        compiled = frozenset(s.path_repo_relative for s in target.sources if is_compiled(s.path_repo_relative))
        if compiled:
            found[name] = compiled
    return found


def pair_targets(buck: Mapping[str, frozenset[str]], cmake: Mapping[str, frozenset[str]]) -> Pairing:
    """Pair every Buck target with every CMake target it shares a compiled source with."""
    owners: dict[str, list[str]] = {}
    for name, paths in cmake.items():
        for path in paths:
            owners.setdefault(path, []).append(name)
    by_buck: dict[str, set[str]] = {}
    by_cmake: dict[str, set[str]] = {}
    for label, paths in buck.items():
        for path in paths:
            for name in owners.get(path, ()):
                by_buck.setdefault(label, set()).add(name)
                by_cmake.setdefault(name, set()).add(label)
    return Pairing(
        buck_sources=dict(buck),
        cmake_sources=dict(cmake),
        by_buck={k: tuple(sorted(v)) for k, v in sorted(by_buck.items())},
        by_cmake={k: tuple(sorted(v)) for k, v in sorted(by_cmake.items())},
    )


def pairing(model: BuildModel, profile_name: str) -> Pairing:
    """The pairing of one revision under one CMake profile, computed once per model and shared
    by revisions with equal cell graphs and CMake inputs (most pull requests)."""

    def compute(_last_graph: CellGraph) -> Pairing:
        targets = [target for cell in CELLS for target in cell_primary_targets(model, cell)]
        return pair_targets(buck_sources(targets), cmake_sources(cmake_models.cmake_model(model, profile_name)))

    others = tuple(model.graph_key(cell) for cell in CELLS[:-1])
    key = ("pairing:pairs", profile_name, cmake_models.cmake_inputs(model), others)
    return revision.graph_memo(model, CELLS[-1], key, compute)


def cmake_files(model: BuildModel) -> tuple[str, ...]:
    """Every CMake file of the revision (CMakeLists.txt and *.cmake), sorted."""

    def compute() -> tuple[str, ...]:
        return tuple(
            p
            for p in model.tree.paths()
            if posixpath.basename(p) == "CMakeLists.txt" or p.endswith(CMAKE_FILE_SUFFIXES)
        )

    return revision.tree_memo(model, ("pairing:cmake-files",), compute)


def cmake_mentions(model: BuildModel, source: str) -> tuple[str, int] | None:
    """Where a CMake file of the revision writes `source` (relative to its own directory or to the
    repository root), under any condition, or names it through a variable's value; None when none
    does.

    The CMake model evaluates one profile; a source added only under an option the profile
    leaves off (`if(EXECUTORCH_BUILD_EXTENSION_LLM)`) is still built by some configuration. A path
    written with a cache variable (`runtime/platform/default/${EXECUTORCH_PAL_DEFAULT}.cpp`) names
    the files of the values the repository gives that variable (bot/cmake/cache_values.py): the
    android file where a preset or script sets `android`, not where nothing does.
    """
    chosen = variable_sources(model).get(source)
    if chosen is not None:
        return chosen.cmake_path, chosen.line
    valued = variable_names(model)
    for path in cmake_files(model):
        directory = posixpath.dirname(path)
        if directory and not source.startswith(directory + "/"):
            needles = (source,)
        else:
            needles = (source[len(directory) + 1 :] if directory else source, source)
        text = model.text(path) or ""
        for needle in needles:
            if needle in text:
                for number, line in enumerate(text.splitlines(), start=1):
                    if needle in line and not line.lstrip().startswith("#"):
                        return path, number
        line = cache_values.named_by_unvalued_variable(text, source, directory, valued)
        if line:
            return path, line
    return None


def variable_sources(model: BuildModel) -> Mapping[str, cache_values.VariableSource]:
    """Sources CMake names through the values the repository gives a variable (kept across reviews)."""
    return revision.tree_memo(
        model,
        ("cmake:sources-by-variable",),
        lambda: cache_values.sources_by_variable(model.tree, _assignments(model)),
        persist=True,
    )


def variable_names(model: BuildModel) -> frozenset[str]:
    """The variables the repository's CMake files, presets and scripts give literal values."""
    return revision.tree_memo(model, ("cmake:valued-variables",), lambda: frozenset(_assignments(model)), persist=True)


def _assignments(model: BuildModel) -> Mapping[str, tuple[cache_values.Assignment, ...]]:
    return revision.tree_memo(
        model, ("cmake:variable-assignments",), lambda: cache_values.variable_assignments(model.tree)
    )
