"""Per-graph indexes the Buck rules ask for, each computed once for every model whose cell graph
is the same (base and head of most pull requests) and kept where the pass over the graph costs
more than reading it back.

- the selects that fail per target on one platform (no branch matches and no DEFAULT);
- the targets a Python loader links (a `python_*` target's native closure), and which of them a
  change moved in or out of that set;
- every target's own files (sources and headers), which the include scans start from.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.buck import platforms
from bot.buck.targets import CellGraph, Platform
from bot.facts import change_scope, revision, xref
from bot.facts.linkage import python_loadable
from bot.snapshot import BuildModel, Snapshot

SelectFailures = tuple[tuple[str, tuple[platforms.SelectFailure, ...]], ...]


def select_failures(model: BuildModel, cell: str, platform: Platform) -> SelectFailures:
    """(label, its failing selects) for the cell's targets with any on `platform`."""
    return revision.graph_memo(
        model, cell, ("select-failures", platform), lambda graph: _select_failures(graph, platform)
    )


def _select_failures(graph: CellGraph, platform: Platform) -> SelectFailures:
    found = []
    for label, target in sorted(graph.targets.items()):
        if target.primary_label != label and target.primary_label in graph.targets:
            continue  # the wrapper's `_static` twin fails with the target it copies
        failures = platforms.select_failures(target, platform)
        if failures:
            found.append((label, failures))
    return tuple(found)


def python_loaded(model: BuildModel, cell: str) -> frozenset[str]:
    """The labels of the cell a Python loader links (bot/facts/linkage.py `python_loadable`)."""
    return revision.graph_memo(model, cell, ("python-loadable",), python_loadable)


def python_loaded_moved(snap: Snapshot, cell: str) -> frozenset[str]:
    """The labels a Python loader links at one of the review's revisions and not the other."""
    return change_scope.moved(snap, cell, ("python-loadable",), python_loadable)


def own_files(model: BuildModel, cell: str) -> Mapping[str, frozenset[str]]:
    """label -> its sources and headers (repository paths)."""
    return revision.graph_memo(model, cell, ("header-private-files",), _own_files)


def _own_files(graph: CellGraph) -> dict[str, frozenset[str]]:
    files_of = {}
    for label, target in graph.targets.items():
        files = set(xref.source_paths(target))
        files.update(path for _name, path in xref.header_entries(target, "headers"))
        files.update(path for _name, path in xref.header_entries(target, "exported_headers"))
        files_of[label] = frozenset(files)
    return files_of
