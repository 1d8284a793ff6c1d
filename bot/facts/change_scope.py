"""What a change can affect in a Buck cell: the index that change-scoped checks read.

A pull request changes a few packages; base and head agree on every other one. A check whose
verdict on a target depends only on that target's evaluation, the text of its call site and
facts it names (who links it, which other targets share its file) finds the same thing at base
and head on every target none of those moved, and the engine would not blame it on the change
anyway (bot/engine.py keeps what is new at head). Such a check looks only at the targets in
scope: those of packages whose evaluation differs, those written in a changed file or in a file
that also writes a changed target, and whatever the check adds from its own per-graph facts
(`ChangeScope.widened`, e.g. the targets whose Python loadability changed).

The review's baseline run (base against base) gets the scope of the review it belongs to
(`Snapshot.scope`), so both runs look at the same targets. A scan (empty base) has no scope:
every target is in it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from bot.buck.targets import BuckTarget, CellGraph, flatten, normalize_label
from bot.facts import revision
from bot.model import ReviewMode
from bot.snapshot import BuildModel, Snapshot
from bot.store import memo as cache


@dataclass(frozen=True, slots=True)
class ChangeScope:
    """The targets of one cell a change can affect; `everything` for a scan."""

    everything: bool
    labels: frozenset[str] = frozenset()
    files: frozenset[str] = frozenset()  # call-site files of changed targets, and changed files
    packages: frozenset[str] = frozenset()  # packages whose evaluation differs

    def holds(self, target: BuckTarget) -> bool:
        """Is the target in scope (by its label, or by the file its call is written in)?"""
        return self.everything or target.label in self.labels or target.path in self.files

    def widened(self, labels: Iterable[str], graph: CellGraph) -> ChangeScope:
        """The scope with more targets (those a check's own facts say moved) and every target
        written in the same files as them (what a rule comparing a file's targets needs)."""
        if self.everything:
            return self
        labels = frozenset(labels)
        files = self.files | {graph.targets[label].path for label in labels if label in graph.targets}
        return ChangeScope(False, self.labels | labels, frozenset(files), self.packages)


_EVERYTHING = ChangeScope(True)


def scope_models(snap: Snapshot) -> Snapshot:
    """The review whose change bounds this run (the baseline run's is its review)."""
    return snap.review


def changed_targets(snap: Snapshot, cell: str) -> ChangeScope:
    """The targets of `cell` the review's change can affect (see the module's docstring)."""
    review = scope_models(snap)
    base, head = review.base, review.head
    if review.mode is ReviewMode.SCAN:
        return _EVERYTHING  # a scan: every target is new
    changed = frozenset(path for change in review.changes.files for path in (change.path, change.old_path) if path)
    key = (cell, base.tree.digest(), head.tree.digest(), changed)
    return cache.fact("change-scope", key, lambda: _scope(base, head, cell, changed))


def _scope(base: BuildModel, head: BuildModel, cell: str, changed_paths: frozenset[str]) -> ChangeScope:
    old, new = base.cell(cell), head.cell(cell)
    files = set(changed_paths)
    packages = set()
    for package in old.packages.keys() | new.packages.keys():
        before, after = old.packages.get(package), new.packages.get(package)
        if before is after:
            continue
        if before is None or after is None or (before.targets, before.error) != (after.targets, after.error):
            packages.add(package)
            for result in (before, after):
                if result is not None:
                    files.update(target.path for target in result.targets)
                    files.add(result.build_file)
    labels = {label for graph in (old, new) for label, target in graph.targets.items() if target.path in files}
    return ChangeScope(False, frozenset(labels), frozenset(files), frozenset(packages))


def dependents_by_package(model: BuildModel, cell: str) -> Mapping[str, frozenset[str]]:
    """package -> the targets of the cell whose `deps` or `exported_deps` name a label in it
    (any select() branch): the index a check reads to find what a changed package reaches,
    instead of walking every target. Kept per graph digest in the store."""
    return revision.graph_memo(model, cell, ("dependents-by-package",), _dependents_by_package)


def _dependents_by_package(graph: CellGraph) -> Mapping[str, frozenset[str]]:
    found: dict[str, set[str]] = {}
    for label, target in graph.targets.items():
        for attribute in ("deps", "exported_deps"):
            for raw in flatten(target.attr(attribute)):
                if isinstance(raw, str) and (raw.startswith(":") or "//" in raw):
                    package = normalize_label(raw, target.package)[2:].split(":")[0]
                    found.setdefault(package, set()).add(label)
    return {package: frozenset(labels) for package, labels in found.items()}


def moved(snap: Snapshot, cell: str, key: tuple, fact: Callable[[CellGraph], frozenset[str]]) -> frozenset[str]:
    """Labels in a per-graph set (`revision.graph_memo(model, cell, key, fact)`, such as the targets a
    Python loader links) at one of the review's revisions and not the other: what the change
    moved far from its own targets."""
    review = scope_models(snap)
    if review.mode is ReviewMode.SCAN:
        return frozenset()
    return revision.graph_memo(review.base, cell, key, fact) ^ revision.graph_memo(review.head, cell, key, fact)


def listing_changes(snap: Snapshot) -> frozenset[str] | None:
    """The paths whose existence the review's change can flip: every changed path, the same
    path seen through each symlink that points above it (ExecuTorch's `src/executorch/backends`
    is `backends`), and each directory above one of those. None (everything may have moved) for
    a scan, or when a changed path is a symlink itself."""
    review = scope_models(snap)
    if review.mode is ReviewMode.SCAN:
        return None
    changed = {path for change in review.changes.files for path in (change.path, change.old_path) if path}
    seen_through = set(changed)
    for model in (review.base, review.head):
        for link in model.tree.symlinks():
            if link in changed:
                return None
            pointed = posixpath.normpath(posixpath.join(posixpath.dirname(link), model.tree.read_link(link) or ""))
            seen_through.update(link + p[len(pointed) :] for p in changed if p.startswith(pointed + "/"))
    found = set(seen_through)
    for path in seen_through:
        while "/" in path:
            path = path.rsplit("/", 1)[0]
            found.add(path)
    return frozenset(found)
