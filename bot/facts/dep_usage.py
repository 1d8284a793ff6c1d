"""Which of a Buck target's written deps its files use, as depend-on-what-you-use asks for Bazel.

A dep is used when a file of the target (a source, a private or an exported header, or a
repository header no target lists that one of those pulls in) includes a header of the dep or
of a target the dep re-exports (its `exported_deps`, transitively): that is how the target
sees the header, so the dep is needed even when only the re-exported target's header is
included. Every include counts, under whatever `#if`: dropping a dep that one configuration
needs would break that configuration, and a usage test must only ever hide a finding.

Only deps written as plain strings in the target's own call are judged (a dep a macro adds is
the macro's business, and the fix edits what is written), and only deps a usage test can speak
for: a C++ library of the cell that lists headers, is not force-linked (`link_whole`: it is
there for its registrations), passes no flags on (`exported_preprocessor_flags`,
`exported_linker_flags`: they change the target without an include) and whose sources do not
implement a header the target includes from elsewhere (an interface declared by one target and
defined by another).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bot.buck.cells import CELLS
from bot.buck.syntax import Element, Keyword, syntax_of
from bot.buck.targets import BuckTarget, normalize_label
from bot.facts import revision, xref
from bot.facts.gating import graph_fact
from bot.facts.header_deps import CXX_KINDS, DependencyTable, recorded_as_written
from bot.snapshot import BuildModel

_FOLLOW_DEPTH = 4  # unlisted repository headers followed this deep for their includes
_FLAGS_PASSED_ON = ("exported_preprocessor_flags", "exported_linker_flags", "exported_post_linker_flags")


@dataclass(frozen=True, slots=True)
class WrittenDep:
    """One dep as the target's call writes it: the attribute's list and the element in it."""

    label: str
    attribute: str  # deps | exported_deps
    keyword: Keyword
    index: int
    element: Element


@dataclass(frozen=True, slots=True)
class Usage:
    """A target's files split by who sees them, and the header include names each file uses."""

    complete: bool  # every file of the target is in the tree (a submodule's are not: unknown includes)
    public: frozenset[str]  # include names reached from the exported headers
    private: frozenset[str]  # include names reached from the sources and private headers
    private_sources: tuple[str, ...]  # the target's own sources (an implementer's includes are compared to these)


def is_cpp(target: BuckTarget) -> bool:
    """A C/C++ rule (not a Python rule that happens to carry native deps)."""
    return bool(CXX_KINDS.search(target.kind)) and not target.kind.startswith("python")


def written_deps(model: BuildModel, target: BuckTarget, attributes: Iterable[str]) -> tuple[WrittenDep, ...]:
    """The string elements of the target's `deps`/`exported_deps` list literals, normalized."""
    text = model.text(target.path) or ""
    call = syntax_of(text).call_at(target.line) if text else None  # the call written at its call site
    if call is None:
        return ()
    found = []
    for attribute in attributes:
        keyword = call.keyword(attribute)
        if keyword is None or keyword.value_list is None:
            continue
        for index, element in enumerate(keyword.value_list.elements):
            if element.string and (element.string.startswith(":") or element.string.startswith("//")):
                label = normalize_label(element.string, target.package)
                found.append(WrittenDep(label, attribute, keyword, index, element))
    return tuple(found)


def usage(model: BuildModel, target: BuckTarget) -> Usage:
    """Include names the target's files use, public side and private side (once per target)."""
    return revision.tree_memo(model, ("dep-usage:usage", target.cell, target.label), lambda: _usage(model, target))


def _usage(model: BuildModel, target: BuckTarget) -> Usage:
    exported = [path for _name, path in xref.header_entries(target, "exported_headers")]
    private_headers = [path for _name, path in xref.header_entries(target, "headers")]
    if xref.visible_attribute(target, "headers", target.cell) == "exported_headers":
        exported, private_headers = exported + private_headers, []
    sources = list(xref.source_paths(target))
    graph = model.cell(target.cell)
    sources.extend(xref.label_source_paths(target, graph))
    every = [*exported, *private_headers, *sources]
    return Usage(
        complete=all(model.tree.blob_id(path) is not None for path in every),
        public=_reached(model, exported),
        private=_reached(model, [*sources, *private_headers]),
        private_sources=tuple(dict.fromkeys(sources)),
    )


def _reached(model: BuildModel, files: list[str]) -> frozenset[str]:
    """Include names (as `header_owners` keys them) in `files` and in the repository headers they
    pull in, listed by a target or not: a header the target includes may include a dep's header,
    which the target then needs on its include path as much as one it includes itself."""
    names: set[str] = set()
    frontier = list(dict.fromkeys(files))
    seen = set(frontier)
    for _depth in range(_FOLLOW_DEPTH):
        following = []
        for path in frontier:
            file_names, followed = _file_includes(model, path)
            names |= file_names
            for repo_path in followed:
                if repo_path not in seen:
                    seen.add(repo_path)
                    following.append(repo_path)
        frontier = following
        if not frontier:
            break
    return frozenset(names)


def _file_includes(model: BuildModel, path: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """One file's include names and the repository files they name (once per file and revision)."""

    def compute() -> tuple[frozenset[str], tuple[str, ...]]:
        names: set[str] = set()
        followed: list[str] = []
        for include, _line in revision.includes(model, [path]).get(path, ()):
            # Both readings: as written (the root namespace, a third-party one) and relative to
            # the including file. A name too many only ever hides a finding.
            for name in dict.fromkeys((include, _include_name(path, include))):
                names.add(name)
                if name.startswith("executorch/") and model.tree.exists(name[len("executorch/") :]):
                    followed.append(name[len("executorch/") :])
        return frozenset(names), tuple(dict.fromkeys(followed))

    return revision.tree_memo(model, ("dep-usage:file", path), compute)


def _include_name(including: str, include: str) -> str:
    """The include as `executorch/<repo path>` when it names a repository file by a relative path."""
    if include.startswith("executorch/"):
        return include
    return "executorch/" + posixpath.normpath(posixpath.join(posixpath.dirname(including), include))


@dataclass(frozen=True)
class CellView:
    """What one cell says about deps: owners, exported closures, dependents."""

    cell: str
    targets: Mapping[str, BuckTarget]
    table: DependencyTable
    owned_names: Mapping[str, frozenset[str]]  # label -> include names it lists
    owners: Mapping[str, object]

    def closure(self, label: str) -> frozenset[str]:
        """The label and every target it re-exports (exported deps, transitively)."""
        reached, stack = {label}, [label]
        while stack:
            for dep in self.table.exported.get(stack.pop(), ()):
                if dep not in reached:
                    reached.add(dep)
                    stack.append(dep)
        return frozenset(reached)

    def names_of(self, labels: Iterable[str]) -> frozenset[str]:
        return frozenset(name for label in labels for name in self.owned_names.get(label, ()))

    def judgeable(self, model: BuildModel, label: str, user: Usage) -> bool:
        """Whether a usage test speaks for the dep (see the module docstring)."""
        dep = self.targets.get(label)
        if dep is None or not is_cpp(dep) or "library" not in dep.kind or dep.attr("link_whole") is True:
            return False
        if not self.owned_names.get(label) or any(dep.values(attribute) for attribute in _FLAGS_PASSED_ON):
            return False
        implemented = revision.includes(model, xref.source_paths(dep))
        user_names = user.public | user.private
        return not any(
            _include_name(path, include) in user_names
            for path, listed in implemented.items()
            for include, _line in listed
            if _include_name(path, include) not in self.owned_names.get(label, ())
        )


def cell_view(model: BuildModel, cell: str) -> CellView:
    """The cell's owners and dependency table (shared with dep-undeclared-header's facts)."""
    graph = model.cell(cell)
    owners = revision.header_owners(model, cell)

    def names(graph_) -> dict[str, frozenset[str]]:
        by_label: dict[str, set[str]] = {}
        for include, owning in owners.items():
            for owner, _attribute in owning:
                by_label.setdefault(owner.label, set()).add(include)
        return {label: frozenset(found) for label, found in by_label.items()}

    return CellView(
        cell,
        graph.targets,
        graph_fact(model, cell, "dependency-table", DependencyTable.of),
        graph_fact(model, cell, "dep-usage:owned-names", names),
        owners,
    )


def judged_targets(
    model: BuildModel, touched: frozenset[str] | None = None
) -> dict[str, list[tuple[CellView, BuckTarget]]]:
    """Primary label -> (cell, target) for every C++ target whose call the model sees in full.

    With `touched` (a review's changed paths), only the targets the change touches: their build
    file, a macro file on their stack or one of their own files. A dep turns unused by an edit of
    the target's own files or call; judging the whole graph in every review would cost seconds
    for an info rule. A scan (`touched` None) judges every target."""
    found: dict[str, list[tuple[CellView, BuckTarget]]] = {}
    for cell in CELLS:
        view = cell_view(model, cell)
        for label, target in sorted(view.targets.items()):
            if label != target.primary_label and target.primary_label in view.targets:
                continue  # the wrapper's `_static` twin: the same call
            if not is_cpp(target) or (cell != "oss" and not recorded_as_written(target, model.text)):
                continue
            if touched is not None and not _touches(target, touched):
                continue
            found.setdefault(target.primary_label, []).append((view, target))
    return found


def _touches(target: BuckTarget, touched: frozenset[str]) -> bool:
    if target.path in touched or any(frame.path in touched for frame in target.stack):
        return True
    own = [*xref.source_paths(target)]
    for attribute in ("exported_headers", "headers"):
        own.extend(path for _name, path in xref.header_entries(target, attribute))
    return any(path in touched for path in own)


def dependents(view: CellView) -> dict[str, tuple[str, ...]]:
    """label -> the labels that depend on it directly."""
    found: dict[str, list[str]] = {}
    for label, deps in view.table.deps.items():
        for dep in deps:
            found.setdefault(dep, []).append(label)
    return {label: tuple(users) for label, users in found.items()}


def dependent_includes(model: BuildModel, view: CellView, users: tuple[str, ...], names: frozenset[str]) -> bool:
    """Whether a dependent's files include one of `names` (it may count on a re-export)."""
    for user in users:
        target = view.targets.get(user)
        if target is None:
            continue
        files = usage(model, target)
        if names & (files.public | files.private):
            return True
    return False
