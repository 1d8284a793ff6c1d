"""Which headers a Buck target may include: its dependency closure, defines and active includes.

A target T sees the exported headers of its direct `deps` and `exported_deps`, and, through
each of those, their `exported_deps` transitively. Its preprocessor flags (and the exported
flags of that closure) decide which `#if`-guarded includes are active for it. Derived facts for
`dep-undeclared-header`; pure functions of a CellGraph and source facts.

Every such fact can differ by configuration: a dep under `select({"ovr_config//cuda:has_cuda":
[...], "DEFAULT": []})` is there on a CUDA platform and absent on a CPU-only one. The index
answers for any configuration (every branch taken) and, where the cell's graph holds selects
in dependency attributes, per platform the cell builds for (`configured_views`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from bot.buck.targets import BuckTarget, CellGraph, Platform, Select
from bot.cpp.conditions import conditions_hold, defines_from_flags
from bot.cpp.declarations import SourceFacts
from bot.cpp.preprocessor import Include
from bot.facts import revision

# ExecuTorch's wrapper splits deps per cell; the internal cells record them unresolved.
DEP_ATTRIBUTES = ("deps", "exported_deps", "fbcode_deps", "xplat_deps", "fbcode_exported_deps", "xplat_exported_deps")
EXPORTED_DEP_ATTRIBUTES = ("exported_deps", "fbcode_exported_deps", "xplat_exported_deps")
FLAG_ATTRIBUTES = ("preprocessor_flags", "exported_preprocessor_flags", "compiler_flags")
CXX_KINDS = re.compile(r"cxx_|cpp_|cuda|gpu_")


@dataclass(frozen=True, slots=True)
class DependencyTable:
    """Every target's normalized dependency labels in one cell: all deps, and exported ones."""

    deps: Mapping[str, tuple[str, ...]]
    exported: Mapping[str, tuple[str, ...]]
    kinds: Mapping[str, str]
    configurable: frozenset[str] = frozenset()  # labels whose dependency attributes hold a select()

    @classmethod
    def of(cls, graph: CellGraph, platform: Platform | None = None) -> DependencyTable:
        """The cell's deps on `platform` (None: in any configuration, every select() branch taken)."""
        deps, exported, kinds, configurable = {}, {}, {}, set()
        for label, target in graph.targets.items():
            if any(target.attrs.get(a) for a in DEP_ATTRIBUTES):
                labels = {a: target.labels(a, platform) for a in DEP_ATTRIBUTES}
                deps[label] = tuple(dict.fromkeys(item for a in DEP_ATTRIBUTES for item in labels[a]))
                exported[label] = tuple(dict.fromkeys(item for a in EXPORTED_DEP_ATTRIBUTES for item in labels[a]))
                if any(_has_select(target.attrs.get(a)) for a in DEP_ATTRIBUTES):
                    configurable.add(label)
            kinds[label] = target.kind
        return cls(deps, exported, kinds, frozenset(configurable))

    def on(self, graph: CellGraph, platform: Platform) -> DependencyTable:
        """This any-configuration table of `graph` configured for `platform`: equal to
        `DependencyTable.of(graph, platform)`, computed from this one. Only the targets whose
        dependency attributes hold a select() can differ, so only they are read again (a cell
        builds for several platforms, and most of its targets select nothing)."""
        deps, exported = dict(self.deps), dict(self.exported)
        for label in self.configurable:
            target = graph.targets[label]
            labels = {a: target.labels(a, platform) for a in DEP_ATTRIBUTES}
            deps[label] = tuple(dict.fromkeys(item for a in DEP_ATTRIBUTES for item in labels[a]))
            exported[label] = tuple(dict.fromkeys(item for a in EXPORTED_DEP_ATTRIBUTES for item in labels[a]))
        return DependencyTable(deps, exported, self.kinds, self.configurable)


def _has_select(value: object) -> bool:
    if isinstance(value, Select):
        return True
    if isinstance(value, list | tuple):
        return any(_has_select(item) for item in value)
    return False


@dataclass(frozen=True)
class ConfiguredView:
    """A cell's dependencies as configured on one platform: what each target sees there, and
    which targets do not build there at all (incompatible, by themselves or through a dep)."""

    platform: Platform
    incompatible: frozenset[str]
    index: DependencyIndex


@dataclass(frozen=True)
class DependencyIndex:
    """Closures over one cell, with the OSS twin's deps folded into internal-cell targets.

    `transitive` models fbcode, where headers of every dependency, exported or not, are in
    practice visible to dependents (as its `headers` are): only a header reachable through no
    dependency path at all is missing there.

    The internal cells record `runtime.*` calls with what ExecuTorch's wrapper adds to them (the
    host's recording `runtime`: a test's `//test/utils:utils`, a library's `_static` twin). A
    label that OSS also defines gets the union of both views: it can only hide a finding, never
    make one.
    """

    targets: Mapping[str, BuckTarget]  # the cell's (not the graph itself, which caches hold weakly)
    packages: Mapping[str, object]
    table: DependencyTable
    twin: DependencyTable | None
    repo_dirs: frozenset[str]
    transitive: bool  # every dep passes its headers on (fbcode's lenient practice), not only exported ones
    _deps: dict  # label -> all dependency labels
    _exported: dict  # label -> frozenset of labels reachable through exported deps
    configured: tuple[ConfiguredView, ...] = ()  # per platform, where the cell's deps differ by platform
    _varies: dict = field(default_factory=dict)  # label -> whether its visible closure holds a select()
    _visible: dict = field(default_factory=dict)  # label -> visible(label)

    @classmethod
    def build(
        cls,
        graph: CellGraph,
        table: DependencyTable,
        twin: DependencyTable | None,
        repo_dirs: frozenset[str],
        transitive: bool = False,
    ) -> DependencyIndex:
        return cls(
            graph.targets,
            graph.packages,
            table,
            twin,
            repo_dirs,
            transitive,
            {},
            {},
        )

    def deps_of(self, label: str) -> tuple[str, ...]:
        cached = self._deps.get(label)
        if cached is not None:
            return cached
        found = list(self.table.deps.get(label, ()))
        if self.twin is not None:
            found.extend(self.twin.deps.get(label, ()))
        self._deps[label] = result = tuple(dict.fromkeys(found))
        return result

    def exported_deps_of(self, label: str) -> tuple[str, ...]:
        own = self.table.exported.get(label, ())
        twin = self.twin.exported.get(label, ()) if self.twin is not None else ()
        return own + twin if twin else own

    def exported_closure(self, label: str) -> frozenset[str]:
        """Labels whose exported headers reach a dependent of `label` through exported deps."""
        if label in self._exported:
            return self._exported[label]
        self._exported[label] = frozenset()  # cycles: a label in progress contributes nothing more
        reached: set[str] = set()
        for dep in self.deps_of(label) if self.transitive else self.exported_deps_of(label):
            reached.add(dep)
            reached |= self.exported_closure(dep)
        self._exported[label] = frozenset(reached)
        return self._exported[label]

    def reaches(self, label: str, owners: Iterable[str]) -> bool:
        """Whether any of `owners` is `label` itself or visible to it."""
        visible = self.visible(label)
        return any(owner in visible for owner in owners)

    def visible(self, label: str) -> frozenset[str]:
        """Targets whose exported headers `label`'s own files may include (itself included)."""
        found = self._visible.get(label)
        if found is None:  # asked once per include of each of the target's files: kept
            reached = {label}
            for dep in self.deps_of(label):
                reached.add(dep)
                reached |= self.exported_closure(dep)
            reached |= self.exported_closure(label)
            found = self._visible[label] = frozenset(reached)
        return found

    def dangling(self, labels: Iterable[str]) -> tuple[str, ...]:
        """Labels of this repository that the cell does not define (a variant never built here,
        a package that failed to evaluate): the closure through them is unknown."""
        missing = []
        for label in labels:
            if not label.startswith("//") or label in self.targets:
                continue
            package = label[2:].split(":", 1)[0]
            if package in self.packages or package in self.repo_dirs:
                missing.append(label)
        return tuple(missing)

    def defines(self, label: str, visible: Iterable[str], platform: Platform | None = None) -> dict[str, str | None]:
        """Macros the target compiles with on `platform` (None: any configuration): its own flags
        and the exported flags it receives."""
        flags: list[str] = []
        for other in visible:
            target = self.targets.get(other)
            if target is None:
                continue
            attributes = FLAG_ATTRIBUTES if other == label else ("exported_preprocessor_flags",)
            for attribute in attributes:
                flags.extend(str(flag) for flag in target.values(attribute, platform) if isinstance(flag, str))
        return defines_from_flags(flags)

    @property
    def configurable(self) -> frozenset[str]:
        """Labels whose dependency attributes hold a select(), here or in the OSS twin."""
        return self.table.configurable | self.twin.configurable if self.twin is not None else self.table.configurable

    def views_of(self, label: str) -> tuple[ConfiguredView, ...] | None:
        """The platforms `label` builds on, each with the cell as configured there, where what it
        sees differs by platform (a select() among the deps of its closure); None where it does
        not, and this index answers for every platform."""
        if not self.configured:
            return None
        varies = self._varies.get(label)
        if varies is None:
            varies = self._varies[label] = not self.configurable.isdisjoint(self.visible(label))
        if not varies:
            return None
        return tuple(view for view in self.configured if label not in view.incompatible)

    def unreached_on(self, label: str, owners: Iterable[str]) -> tuple[ConfiguredView, ...]:
        """The platforms where `label` builds and none of `owners` is visible to it, though some
        configuration makes one visible: an owner reached only through a dep under
        `select(has_cuda)` is absent on the CPU-only platforms. Empty where deps do not vary."""
        owners = tuple(owners)
        return tuple(view for view in self.views_of(label) or () if not view.index.reaches(label, owners))


def configured_views(model, cell: str, index: DependencyIndex) -> DependencyIndex:
    """`index` with a view per platform the cell builds for, when any dependency of the cell is
    chosen by a select() (else the one view answers for every platform)."""
    if not index.configurable:
        return index
    graph = model.cell(cell)
    views = []
    for platform in model.platforms(cell):
        table = configured_table(model, cell, platform)
        # The OSS twin's deps are configured for the same platform: its select() branches too.
        twin = configured_table(model, "oss", platform) if index.twin is not None else None
        views.append(
            ConfiguredView(
                platform,
                frozenset(revision.incompatible(model, cell, platform)),
                DependencyIndex.build(graph, table, twin, index.repo_dirs, index.transitive),
            )
        )
    return replace(index, configured=tuple(views), _varies={}, _visible={})


def configured_table(model, cell: str, platform: Platform) -> DependencyTable:
    """The cell's dependency table on `platform`, once per graph content (base and head share it)."""
    everywhere = revision.graph_memo(model, cell, ("dependency-table",), DependencyTable.of)
    # Not stored: derived from the stored any-configuration table faster than read back.
    return revision.graph_memo(
        model, cell, ("dependency-table", platform), lambda graph: everywhere.on(graph, platform), persist=False
    )


_CALLEE = re.compile(r"\s*([A-Za-z_][\w.]*)\s*\(")
_KIND_ARGUMENT = re.compile(r"^\s*_kind\s*=\s*([A-Za-z_][\w.]*)")


def recorded_as_written(target: BuckTarget, text_of) -> bool:
    """Whether the rule call that made `target` is one whose deps the model sees in full.

    In the internal cells a macro the repository does not contain (a team's own wrapper) is a
    recording stub: whatever deps it would add are unknown. Known: `runtime.*` and `native.*`
    rules, and bare rule names no `load()` binds (buck2's globals).
    """
    frame = target.stack[-1] if target.stack else None
    path, line = (frame.path, frame.line) if frame is not None else (target.path, target.line)
    text = text_of(path) or ""
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return False
    match = _CALLEE.match(lines[line - 1])
    if match is None:
        return False
    callee = match.group(1)
    if callee in ("fbcode_target", "non_fbcode_target"):
        callee = next((m.group(1) for row in lines[line : line + 60] for m in [_KIND_ARGUMENT.match(row)] if m), "")
    if "." in callee:
        return callee.split(".", 1)[0] in ("runtime", "native")
    return (
        bool(callee)
        and re.search(rf"""\bload\([^)]*(["']{re.escape(callee)}["']|\b{re.escape(callee)}\s*=)""", text) is None
    )


def include_guard(facts: SourceFacts) -> str | None:
    """The macro of a classic `#ifndef X` / `#define X` include guard, if the file has one."""
    if not facts.conditional_blocks:
        return None
    first = facts.conditional_blocks[0]
    match = re.fullmatch(r"!defined\((\w+)\)", first.condition.replace(" ", ""))
    if match is None:
        return None
    name = match.group(1)
    if any(d.name == name and first.line < d.line <= first.line + 2 for d in facts.macros_defined):
        return name
    return None


def include_is_active(include: Include, facts: SourceFacts, defines: Mapping[str, str | None]) -> bool:
    """True only when every `#if` around the include provably holds under `defines`."""
    guard = include_guard(facts)
    conditions = [c for c in include.conditions if guard is None or c.replace(" ", "") != f"!defined({guard})"]
    known = dict(defines)
    known.setdefault("__cplusplus", "201703L")
    return conditions_hold(conditions, known) is True
