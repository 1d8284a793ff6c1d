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
from collections.abc import Mapping
from dataclasses import dataclass

from bot.buck.targets import BuckTarget, CellGraph, Platform

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


def dependencies(target: BuckTarget, platform: Platform) -> tuple[str, ...]:
    """The target's dependency labels as configured on `platform`."""
    return tuple(label for attribute in DEPENDENCY_ATTRIBUTES for label in target.labels(attribute, platform))


def incompatible_targets(graph: CellGraph, platform: Platform) -> Mapping[str, Incompatibility]:
    """label -> why it is incompatible with `platform`, for every such target of the cell.

    Breadth-first from the targets that exclude the platform themselves, along reversed
    configured deps, so each chain is a shortest one and the result does not depend on dict order.
    """
    found: dict[str, Incompatibility] = {}
    dependents: dict[str, list[str]] = {}
    for label in sorted(graph.targets):
        target = graph.targets[label]
        attribute = own_incompatibility(target, platform)
        if attribute is not None:
            found[label] = Incompatibility((label,), attribute)
        for dep in dependencies(target, platform):
            if dep != label:
                dependents.setdefault(dep, []).append(label)
    queue = deque(sorted(found))
    while queue:
        label = queue.popleft()
        for dependent in dependents.get(label, ()):
            if dependent not in found:
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
