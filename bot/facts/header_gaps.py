"""The header gaps of a revision: includes of a header owned outside the including target's closure.

Per cell and per target, walked from the target's own files through the headers they include
(own and unowned, to a fixed depth), under the target's configuration; a header-only target's
gaps are those of a compiling dependent that lacks the owner. A target's answer is kept with the
blob of every file it read, in one table per cell state in the fact store: a target none of whose
files changed costs a lookup, in the review's other revision and in later reviews.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from dataclasses import dataclass

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget, Platform
from bot.facts import revision, xref
from bot.facts.header_deps import CXX_KINDS, include_is_active, recorded_as_written
from bot.facts.header_graph import HeaderGraph, header_graph, target_files
from bot.snapshot import BuildModel, Snapshot
from bot.store.memo import current
from bot.tree import missing_reads

_FOLLOW_DEPTH = 4  # own and unowned headers followed this deep for their includes


_CONDITIONAL = re.compile(r"^\s*#\s*if", re.M)


def activated_targets(snap: Snapshot) -> dict[str, tuple[str, ...]]:
    """Header-only C++ targets at base that compile sources at head: label -> the new sources.

    A header of a header-only target is compiled only by its dependents, which may bring in
    what it includes; once the target has a source of its own, the header's includes must
    resolve through the target's own deps. A gap there that existed at base is new at head:
    the change made it take effect (binary_ops gaining binary_ops.cpp, ca39d86f4f).
    """
    found: dict[str, tuple[str, ...]] = {}
    for cell in CELLS:
        before = snap.base.cell(cell).targets
        for label, target in snap.head.cell(cell).targets.items():
            if label in found or not CXX_KINDS.search(target.kind):
                continue
            earlier = before.get(label)
            sources = xref.source_paths(target)
            if earlier is not None and sources and not xref.source_paths(earlier):
                found[target.primary_label] = sources
    return found


@dataclass(frozen=True, slots=True)
class HeaderGap:
    """One include of a header owned outside the including target's closure, in one cell."""

    cell: str
    target: BuckTarget
    path: str
    line: int
    include: str
    owner: BuckTarget
    owner_attribute: str
    conditions: tuple[str, ...]
    chain: tuple[tuple[str, int, str], ...]  # (path, line, include) from the target's own file
    # For a header-only target: the compiling dependent that lacks the owner (None otherwise).
    dependent: BuckTarget | None = None
    platform: str = ""  # the platform it breaks on, where another configuration has the owner


def gaps_in_cell(model: BuildModel, cell: str) -> list[HeaderGap]:
    """The cell's gaps. Per target, the answer is kept with the blob of every file it read
    (a table per cell state, in the fact cache): a target none of whose files changed costs a
    lookup, in this review's other revision and in later reviews."""
    state = header_graph(model, cell)
    owners = revision.header_owners(model, cell)
    tree = model.tree
    facts = current()
    table = facts.load("dep-undeclared-header:gaps", state.key) or {}
    updated = dict(table)
    changed = False
    missing_before = missing_reads()
    includes: dict[str, tuple[tuple[str, int], ...]] | None = None
    found: list[HeaderGap] = []
    for label, files in sorted(state.files_of.items()):
        kept = table.get(label)
        if kept is not None and all(tree.blob_id(path) == blob for path, blob in kept[0]):
            gaps = kept[1]
        else:
            if includes is None:  # read only when some target needs it
                every = {path for listed in state.files_of.values() for path in listed}
                includes = revision.includes(model, every)
            read: set[str] = set()
            gaps = _target_gaps(
                model, state.index, state.targets[label], files, includes, owners, state.owner_labels, cell, read
            )
            if gaps and cell != "oss":
                read.add(state.targets[label].path)  # recorded_as_written reads the build file
            updated[label] = (tuple((path, tree.blob_id(path)) for path in sorted(read)), gaps)
            changed = True
        if gaps and cell != "oss" and not recorded_as_written(state.targets[label], model.text):
            continue
        if gaps and label not in state.compiling:
            gaps = _gaps_of_dependents(model, state, label, gaps, cell)
        elif gaps:
            # An exported header none of the target's own sources include is compiled only by
            # dependents that include it, as a header-only target's (6e63c47354: Cadence's
            # quantize_per_tensor exports quantized_ops.h, which its .cpp never includes).
            compiled = _compiled_by_sources(model, state.targets[label])
            own = [gap for gap in gaps if (gap.chain[0][0] if gap.chain else gap.path) in compiled]
            passed_on = [gap for gap in gaps if gap not in own]
            gaps = own + (_gaps_of_dependents(model, state, label, passed_on, cell) if passed_on else [])
        found.extend(gaps)
    if changed:
        facts.save("dep-undeclared-header:gaps", state.key, updated, complete=missing_reads() == missing_before)
    return found


def _compiled_by_sources(model: BuildModel, target: BuckTarget) -> frozenset[str]:
    """The repository files a target's own sources compile: the sources and what they include,
    transitively (to the rule's walking depth)."""
    reached = {*xref.source_paths(target), *xref.label_source_paths(target, model.cell(target.cell))}
    frontier = sorted(reached)
    for _depth in range(_FOLLOW_DEPTH):
        listed = revision.includes(model, frontier)
        following = []
        for path in frontier:
            for include, _line in listed.get(path, ()):
                candidate = _repo_candidate(path, include)
                if candidate not in reached and not candidate.startswith("..") and model.tree.exists(candidate):
                    reached.add(candidate)
                    following.append(candidate)
        frontier = following
        if not frontier:
            break
    return frozenset(reached)


def _gaps_of_dependents(
    model: BuildModel, state: HeaderGraph, label: str, gaps: list[HeaderGap], cell: str
) -> list[HeaderGap]:
    """The gaps of a header-only target that some build hits.

    A target without sources compiles nothing: its headers are compiled by its dependents,
    with their include path. An include it does not declare breaks only a compiling dependent
    that lacks the owner in its own closure; where every one of them has it, the header builds
    (irunner.h including runtime/core/error.h, used only by runners that depend on
    runtime/core). Dependents without sources that export the target pass the header on to
    theirs (a private dep of a bundle such as `all_deps` reaches no further). Each gap kept
    names the first dependent (by label) that lacks the owner; one that gains sources is
    blamed by `activated`.
    """
    kept = []
    for gap in gaps:
        dependent = _dependent_without(model, state, label, state.owner_labels[gap.include], cell)
        if dependent is not None:
            kept.append(dataclasses.replace(gap, dependent=dependent))
    return kept


def _dependent_without(model, state: HeaderGraph, label: str, owners: tuple[str, ...], cell: str) -> BuckTarget | None:
    """The first compiling dependent of `label` (through dependents without sources) that does
    not see any of `owners`; None when every one does, or none exists."""
    index = state.index
    seen = {label}
    frontier = [label]
    lacking = []
    while frontier:
        following = []
        for reached in frontier:
            for dependent in state.dependents.get(reached, ()):
                if dependent in seen or dependent not in state.targets:
                    continue
                seen.add(dependent)
                if dependent not in state.compiling:
                    # Its dependents see the header only if it passes the target on (exported).
                    if label in index.exported_closure(dependent):
                        following.append(dependent)
                    continue
                if index.reaches(dependent, owners):
                    continue
                target = state.targets[dependent]
                if index.dangling(index.visible(dependent)):
                    continue  # its closure runs through something this cell does not define
                if cell != "oss" and not recorded_as_written(target, model.text):
                    continue  # a macro the repository lacks may add the owner
                lacking.append(target)
        frontier = following
    return min(lacking, key=lambda t: t.label) if lacking else None


def _target_gaps(model, index, target, files, includes, owners, owner_labels, cell, read: set) -> list[HeaderGap]:
    """Walk a target's files, and the unowned repository headers they pull in, for gaps.
    Every file whose contents the answer depends on is added to `read`."""
    found: list[HeaderGap] = []
    frontier = [(path, ()) for path in files]
    seen = set(files)
    read.update(files)
    visible = defines = None
    files_on: dict[str, frozenset[str]] = {}  # platform name -> the target's files there
    for _depth in range(_FOLLOW_DEPTH):
        following = []
        for path, chain in frontier:
            listed = includes.get(path)
            if listed is None:
                listed = includes[path] = _includes(model, path)
            for include, line in listed:
                if not include.startswith("executorch/"):
                    continue  # vendored third-party namespaces (`c10/...`) also resolve outside the repo
                owning = owners.get(include)
                if owning is None:
                    repo_path = _repo_candidate(path, include)
                    read.add(repo_path)  # its absence counts too: a header added later changes the walk
                    if repo_path in seen or not _followable(model, owners, include, repo_path):
                        continue
                    seen.add(repo_path)
                    following.append((repo_path, (*chain, (path, line, include))))
                    continue
                if index.reaches(target.label, owner_labels[include]):
                    # In some configuration; a platform that lacks the owner (a dep under select()) may still break,
                    # where it compiles the file (a source under the same select() does not build there).
                    root = chain[0][0] if chain else path
                    for view in index.unreached_on(target.label, owner_labels[include]):
                        if root not in _files_on(model, target, view.platform, files_on):
                            continue
                        visible_there = view.index.visible(target.label)
                        if view.index.dangling(visible_there):
                            continue
                        there = view.index.defines(target.label, visible_there, view.platform)
                        gap = _confirmed_gap(model, target, path, line, include, chain, there, owning, cell)
                        if gap is not None:
                            found.append(dataclasses.replace(gap, platform=view.platform.name))
                            break
                    continue
                if visible is None:
                    visible = index.visible(target.label)
                if index.dangling(visible):
                    return []  # the closure runs through something this cell does not define
                if defines is None:
                    defines = index.defines(target.label, visible)
                gap = _confirmed_gap(model, target, path, line, include, chain, defines, owning, cell)
                if gap is not None:
                    found.append(gap)
        frontier = following
        if not frontier:
            break
    return found


def _files_on(model: BuildModel, target: BuckTarget, platform: Platform, known: dict[str, frozenset[str]]):
    """The target's sources and headers on `platform`, kept in `known`."""
    if platform.name not in known:
        known[platform.name] = frozenset(target_files(target, model.cell(target.cell), platform))
    return known[platform.name]


def _confirmed_gap(model, target, path, line, include, chain, defines, owning, cell) -> HeaderGap | None:
    """A gap when every include on the way is active under the target's defines."""
    conditions: list[str] = []
    for step_path, step_line, step_include in (*chain, (path, line, include)):
        if not _CONDITIONAL.search(model.text(step_path) or ""):
            continue  # no #if anywhere in the file: the include is unconditional
        facts = model.source_facts(step_path)
        if facts is None:
            return None
        entry = next((i for i in facts.includes if i.line == step_line and i.target_text == step_include), None)
        if entry is None or not include_is_active(entry, facts, defines):
            return None
        conditions.extend(entry.conditions)
    owner, attribute = _preferred_owner(owning)
    return HeaderGap(cell, target, path, line, include, owner, attribute, tuple(conditions), chain)


def _includes(model: BuildModel, path: str) -> tuple[tuple[str, int], ...]:
    return revision.includes(model, [path]).get(path, ())


def _repo_candidate(including: str, include: str) -> str:
    """The repository path an include names: `executorch/...` from the root, else relative."""
    if include.startswith("executorch/"):
        return include[len("executorch/") :]
    return posixpath.normpath(posixpath.join(posixpath.dirname(including), include))


def _followable(model: BuildModel, owners, include: str, candidate: str) -> bool:
    """Whether an include no target of the cell owns names a repository file to walk into."""
    if not include.startswith("executorch/") and f"executorch/{candidate}" in owners:
        return False  # another target's header, reached by a relative path: not followed
    return not candidate.startswith("..") and model.tree.exists(candidate)


def _preferred_owner(owning) -> tuple[BuckTarget, str]:
    """The owner to name: an exported owner, the primary (not `_static`) one, not an ATen variant."""
    return min(
        owning,
        key=lambda pair: (
            pair[1] != "exported_headers",
            pair[0].primary_label != pair[0].label,
            "_aten" in pair[0].name,
            pair[0].label,
        ),
    )
