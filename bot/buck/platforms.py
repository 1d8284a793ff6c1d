"""Targets as configured on one platform: compatibility and its spread through deps.

buck2 configures every target for a target platform. `compatible_with` (any entry matches) and
`target_compatible_with` (every entry matches) make a target incompatible where they fail, and a
target with an incompatible dependency is incompatible too: wildcard builds skip both; building
one by name fails. Only a target that *says* it is compatible (a non-empty attribute the platform
satisfies) and still depends on an incompatible one is an error in every build. Everything here
is a pure function of a cell graph and a `Platform` (bot/buck/targets.py), which resolves select().
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from bot.buck.targets import BuckTarget, CellGraph, Platform, Select, setting_constraints

# The attributes whose labels are configured with the target (buck2 configures every
# dependency attribute; these are the ones that link or include).
DEPENDENCY_ATTRIBUTES = ("deps", "exported_deps")
COMPATIBILITY_ATTRIBUTES = ("compatible_with", "target_compatible_with")


@dataclass(frozen=True, slots=True)
class Incompatibility:
    """Why a target is incompatible with a platform.

    `chain` runs from the target to the one whose own `attribute` excludes the platform:
    length one when the target excludes itself, longer when a dependency makes it incompatible.
    """

    chain: tuple[str, ...]
    attribute: str

    @property
    def inherited(self) -> bool:
        return len(self.chain) > 1

    @property
    def root(self) -> str:
        return self.chain[-1]


def own_incompatibility(target: BuckTarget, platform: Platform) -> str | None:
    """The attribute by which the target itself excludes `platform`, or None."""
    any_of = [entry for entry in target.values("compatible_with", platform) if isinstance(entry, str)]
    if any_of and not any(platform.satisfies(entry) for entry in any_of):
        return "compatible_with"
    all_of = [entry for entry in target.values("target_compatible_with", platform) if isinstance(entry, str)]
    if all_of and not all(platform.satisfies(entry) for entry in all_of):
        return "target_compatible_with"
    return None


def explicitly_compatible(target: BuckTarget, platform: Platform) -> bool:
    """Whether the target names constraints and `platform` meets them (it asks to be built there)."""
    named = any(target.values(attribute, platform) for attribute in COMPATIBILITY_ATTRIBUTES)
    return named and own_incompatibility(target, platform) is None


def dependencies(target: BuckTarget, platform: Platform | None) -> tuple[str, ...]:
    """The target's dependency labels as configured on `platform` (None: in any configuration)."""
    return tuple(label for attribute in DEPENDENCY_ATTRIBUTES for label in target.labels(attribute, platform))


@dataclass(frozen=True, slots=True)
class ReversedDependencies:
    """A cell's dependency edges reversed, in any configuration (every select() branch taken):
    label -> its dependents in label order, and the targets whose dependency attributes hold a
    select(). Configured on a platform, an edge of a target without a select() is there as it is;
    one of a target with a select() is there when the chosen branch names it (a subset)."""

    dependents: Mapping[str, tuple[str, ...]]
    configurable: frozenset[str]

    @classmethod
    def of(cls, graph: CellGraph) -> ReversedDependencies:
        dependents: dict[str, list[str]] = {}
        configurable = set()
        for label in sorted(graph.targets):
            target = graph.targets[label]
            if any(_holds_select(target.attrs.get(attribute)) for attribute in DEPENDENCY_ATTRIBUTES):
                configurable.add(label)
            for dep in dict.fromkeys(dependencies(target, None)):
                if dep != label:
                    dependents.setdefault(dep, []).append(label)
        return cls({label: tuple(found) for label, found in dependents.items()}, frozenset(configurable))


def _holds_select(value: object) -> bool:
    return isinstance(value, Select) or (isinstance(value, list | tuple) and any(_holds_select(v) for v in value))


def incompatible_targets(
    graph: CellGraph, platform: Platform, reversed_deps: ReversedDependencies | None = None
) -> Mapping[str, Incompatibility]:
    """label -> why it is incompatible with `platform`, for every such target of the cell.

    Breadth-first from the targets that exclude the platform themselves, along reversed
    configured deps, so each chain is a shortest one and the result does not depend on dict order.
    `reversed_deps` (the graph's, in any configuration) is shared by the platforms a cell builds
    for; only the edges of targets that select their deps are configured again here.
    """
    found: dict[str, Incompatibility] = {}
    for label in sorted(graph.targets):
        attribute = own_incompatibility(graph.targets[label], platform)
        if attribute is not None:
            found[label] = Incompatibility((label,), attribute)
    if not found:
        return found  # nothing excludes the platform, so nothing inherits an exclusion
    if reversed_deps is None:
        reversed_deps = ReversedDependencies.of(graph)
    configured: dict[str, frozenset[str]] = {}  # a configurable dependent -> its deps on the platform
    queue = deque(sorted(found))
    while queue:
        label = queue.popleft()
        for dependent in reversed_deps.dependents.get(label, ()):
            if dependent in found:
                continue
            if dependent in reversed_deps.configurable:
                if dependent not in configured:
                    configured[dependent] = frozenset(dependencies(graph.targets[dependent], platform))
                if label not in configured[dependent]:
                    continue  # named only by a select() branch this platform does not take
            inner = found[label]
            found[dependent] = Incompatibility((dependent, *inner.chain), inner.attribute)
            queue.append(dependent)
    return found


def configuration_errors(graph: CellGraph, platform: Platform) -> Mapping[str, Incompatibility]:
    """label -> the incompatibility that breaks it: targets that say they are compatible with
    `platform` and depend on an incompatible one (buck2 fails these in every build)."""
    incompatible = incompatible_targets(graph, platform)
    return {
        label: reason
        for label, reason in incompatible.items()
        if reason.inherited and explicitly_compatible(graph.targets[label], platform)
    }


@dataclass(frozen=True, slots=True)
class SelectFailure:
    """A select() buck2 cannot resolve on a platform: no key matches and there is no `DEFAULT`
    ("None of N conditions matched configuration ... and no default was set"), or two keys match
    and neither is more specific ("Both select keys ... match the configuration, but neither is
    more specific"). buck2 fails to configure the target there, in a wildcard build too."""

    attribute: str
    keys: tuple[str, ...]  # the select's keys (no match), or the two that tie (ambiguous)
    ambiguous: bool = False


def select_failures(target: BuckTarget, platform: Platform) -> tuple[SelectFailure, ...]:
    """The select()s of the target's attributes that fail on `platform`. A target that excludes
    the platform itself is skipped: buck2 resolves its compatibility first and goes no further."""
    selects = target.derived("selects", lambda: _selects_of(target))
    if not selects or own_incompatibility(target, platform) is not None:
        return ()
    found: list[SelectFailure] = []
    for attribute, select in selects:
        failure = _failure(select, platform, attribute)
        if failure is not None and failure not in found:
            found.append(failure)
    return tuple(found)


def _selects_of(target: BuckTarget) -> tuple[tuple[str, Select], ...]:
    """(attribute, select) for every select() in the target's attributes, attributes by name: the
    same for every platform, so found once per target (most targets have none)."""
    return tuple(
        (attribute, select) for attribute in sorted(target.attrs) for select in _selects_in(target.attrs[attribute])
    )


def _selects_in(value: object) -> Iterator[Select]:
    if isinstance(value, Select):
        yield value
        for _key, branch in value.branches:
            yield from _selects_in(branch)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _selects_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _selects_in(item)


def _failure(select: Select, platform: Platform, attribute: str) -> SelectFailure | None:
    keys = tuple(key for key, _branch in select.branches)
    matching = [(key, branch) for key, branch in select.branches if key != "DEFAULT" and platform.satisfies(key)]
    if not matching:
        return None if "DEFAULT" in keys else SelectFailure(attribute, keys)
    # buck2's walk: keep the most specific key so far; a key that neither refines nor is refined
    # by it, with a different value, is the ambiguity error.
    best_key, best_branch = matching[0]
    for key, branch in matching[1:]:
        if setting_constraints(key) >= setting_constraints(best_key):
            best_key, best_branch = key, branch
        elif not setting_constraints(best_key) >= setting_constraints(key) and branch != best_branch:
            return SelectFailure(attribute, (best_key, key), ambiguous=True)
    return None
