"""A change makes existing C++ targets build on a platform where no test builds them.

Each Buck cell builds for a set of target platforms (bot/buck/cells.py): xplat for Android,
Apple, CPU-only Linux and Linux with CUDA; fbcode for its CUDA Linux. A target that existed
before the change (in some cell) and now builds on one of them where it did not at base (its
package newly defined in the cell, a `compatible_with` that newly admits the platform, a guard
or an incompatible dep dropped) is a new configuration of that code. The internal cells build
and run what tests ask for: when no test target compatible with the platform depends on the
target, transitively and with select() resolved there, nothing compiles or links it in that
configuration, and a compile error, a missing `--export-dynamic` or an unbound shim there is
seen by the first user, not by the pull request (#24817: the CUDA backend and SlimTensor built in
xplat, every test of the packages still behind `if not is_fbcode: return`). In a cell whose
builds are CI commands (open source), what those commands build counts as tested. Only code that
a test builds in some other configuration counts: the change moves tested code to where no test
follows it; code that no test builds anywhere lacks a test, and not because of this change.

Minor: nothing breaks at merge, and the targets may well build; what is lost is the evidence
that they do, in exactly the configuration the change exists to add. A CUDA target that a
CPU-only platform now admits is no coverage gap but a build failure, `cuda-guard-missing`'s.

One finding per package holding a *root* of what is new and untested (a target that none of
the others depends on): a test of the root builds everything below it, so the targets it brings
along are listed on its finding, not reported again.

Example (bad): `backends/cuda/runtime`'s libraries defined outside fbcode with
`compatible_with = ["ovr_config//cuda:has_cuda"]`, its tests still defined in fbcode only.

Use instead: a test target for the new platform that depends on the root (for a guarded
package, under the same `compatible_with`), or say in the PR how that configuration was built.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from bot.buck.cells import CELLS, cell_named
from bot.buck.platforms import dependencies
from bot.buck.targets import BuckTarget, CellGraph, Platform
from bot.check import BUCK_FILES, Check, Example
from bot.facts import revision
from bot.facts.build_scope import scope_of
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot

_CXX_KINDS = re.compile(r"cxx_|cpp_|cuda|gpu_")
# What a test build follows: every attribute that makes a dependency, the wrapper's per-cell
# splits included (a wider closure can only call a target tested, never hide one).
_TEST_DEPENDENCY_ATTRIBUTES = (
    "deps",
    "exported_deps",
    "fbcode_deps",
    "xplat_deps",
    "fbcode_exported_deps",
    "xplat_exported_deps",
    "runtime_deps",
)
_LISTED = 8


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    if snap.base is snap.head:
        return
    settings = snap.config.buck
    for cell in CELLS:
        if snap.base.graph_key(cell) == snap.head.graph_key(cell):
            continue  # the same targets with the same attributes: nothing builds anywhere new
        roots: dict[str, _Package] = {}
        for platform in settings.platforms_of(cell):
            untested = _untested_new(snap, cell, platform, settings.cuda_constraint)
            if untested:
                for root, below in _by_root(snap.head.cell(cell), untested, platform).items():
                    package = snap.head.cell(cell).targets[root].package
                    roots.setdefault(package, _Package({})).add(platform, root, below)
        for package, found in sorted(roots.items()):
            yield _hit(snap, cell, package, found, settings.platforms_of(cell))


def _untested_new(snap: Snapshot, cell: str, platform: Platform, cuda_constraint: str) -> frozenset[str]:
    """C++ targets that build on `platform` at head and did not at base, that existed at base in
    some cell, and that no test compatible with `platform` reaches (nor, in a CI-driven cell, a
    CI command builds)."""
    head, base = snap.head.cell(cell), snap.base.cell(cell)
    head_incompatible = revision.incompatible(snap.head, cell, platform)
    base_incompatible = revision.incompatible(snap.base, cell, platform)
    candidates = [
        label
        for label, target in head.targets.items()
        if label not in head_incompatible
        and (label not in base.targets or label in base_incompatible)
        and _CXX_KINDS.search(target.kind)
        and not _is_test(target)
        and _folded(head, label) == label
        and _evaluated(base, target.package)
        and any(label in snap.base.cell(other).targets for other in CELLS)
    ]
    if candidates and not platform.satisfies(cuda_constraint):
        # A CUDA target a CPU-only platform admits fails to build there: cuda-guard-missing's.
        cuda = revision.cuda_reasons(snap.head, cell, platform)
        candidates = [label for label in candidates if label not in cuda]
    if not candidates:
        return frozenset()
    tested = _tested_on(snap, cell, platform)
    if cell_named(cell).is_oss:
        built = scope_of(snap.head, cell, platform).built_targets
        if built is None:
            return frozenset()  # no CI commands to read: every target counts as built
        tested = tested | built
    untested = [label for label in candidates if label not in tested]
    if not untested:
        return frozenset()
    # Only code some test builds in another configuration: there the change moves tested code
    # to where no test follows it; code no test builds anywhere lacks a test, not a configuration.
    elsewhere = frozenset().union(
        *(
            _tested_on(snap, other, other_platform)
            for other in CELLS
            for other_platform in snap.config.buck.platforms_of(other)
            if (other, other_platform) != (cell, platform)
        )
    )
    return frozenset(label for label in untested if label in elsewhere)


def _tested_on(snap: Snapshot, cell: str, platform: Platform) -> frozenset[str]:
    """What the tests compatible with `platform` build in the cell at head (kept per graph)."""
    incompatible = revision.incompatible(snap.head, cell, platform)
    return revision.graph_memo(
        snap.head, cell, ("tested", platform), lambda graph: _tested(graph, platform, incompatible)
    )


def _evaluated(graph: CellGraph, package: str) -> bool:
    """Whether the cell evaluated the package without error (or does not define it at all): a
    package that failed at base defined nothing there, so its targets are not new."""
    result = graph.packages.get(package)
    return result is None or result.error is None


def _tested(graph: CellGraph, platform: Platform, incompatible: Mapping[str, object]) -> frozenset[str]:
    """Every target some test compatible with `platform` builds there, as configured there; the
    wrapper's `_static` twins count for the target they copy."""
    seen: set[str] = set()
    stack = [label for label, target in graph.targets.items() if _is_test(target) and label not in incompatible]
    while stack:
        label = stack.pop()
        if label in seen:
            continue
        seen.add(label)
        target = graph.targets.get(label)
        if target is not None:
            stack.extend(dep for attribute in _TEST_DEPENDENCY_ATTRIBUTES for dep in target.labels(attribute, platform))
    return frozenset(seen | {_folded(graph, label) for label in seen if label in graph.targets})


@dataclass(frozen=True)
class _Package:
    """One package's roots of untested new targets: platform name -> (root, targets below it)."""

    on: dict[str, dict[str, tuple[str, ...]]]

    def add(self, platform: Platform, root: str, below: tuple[str, ...]) -> None:
        self.on.setdefault(platform.name, {})[root] = below


def _by_root(graph: CellGraph, untested: frozenset[str], platform: Platform) -> Mapping[str, tuple[str, ...]]:
    """root -> the untested targets it depends on there: a root is one no other untested target
    depends on; each other target goes to the first root (in label order) that reaches it."""
    below: dict[str, set[str]] = {}
    for label in sorted(untested):
        reached: set[str] = set()
        stack = list(dependencies(graph.targets[label], platform))
        while stack:
            dep = stack.pop()
            if dep in reached or dep not in graph.targets:
                continue
            reached.add(dep)
            stack.extend(dependencies(graph.targets[dep], platform))
        below[label] = {_folded(graph, dep) for dep in reached} & untested - {label}
    covered = set().union(*below.values())
    roots = sorted(label for label in untested if label not in covered)
    assigned: set[str] = set()
    result: dict[str, tuple[str, ...]] = {}
    for root in roots:
        mine = sorted(below[root] - assigned)
        assigned.update(mine)
        result[root] = tuple(mine)
    return result


def _hit(snap: Snapshot, cell: str, package: str, found: _Package, platforms: tuple[Platform, ...]) -> Hit:
    graph = snap.head.cell(cell)
    # Platforms with the same roots and the same targets below them are named together.
    groups: dict[tuple, list[str]] = {}
    for platform_name, roots in found.on.items():
        groups.setdefault(tuple(sorted(roots.items())), []).append(platform_name)
    parts = []
    all_roots: dict[str, None] = {}
    for roots, platform_names in groups.items():
        where = ", ".join(f"`{name}`" for name in platform_names)
        named = ", ".join(f"`{root}`" for root, _below in roots)
        brought = sorted(
            {label for _root, below in roots for label in below},
            key=lambda label: (label[2:].split(":", 1)[0] != package, label),
        )
        along = (
            f" (and {_listed(brought)}, which {'it brings' if len(roots) == 1 else 'they bring'} there)"
            if brought
            else ""
        )
        parts.append(f"on {where}: {named}{along}")
        all_roots.update(dict.fromkeys(root for root, _below in roots))
    first = min((graph.targets[root] for root in all_roots), key=lambda target: (target.path, target.line))
    subjects = {label for roots in found.on.values() for root, below in roots.items() for label in (root, *below)}
    elsewhere = _tests_elsewhere(snap, cell, package, subjects, [p for p in platforms if p.name in found.on])
    evidence = tuple(
        Evidence(target.path, target.line, f"`{target.label}` tests them, {why}") for why, target in elsewhere[:_LISTED]
    )
    tests_note = (
        f" The tests that depend on them ({', '.join(f'`{t.label}`' for _why, t in elsewhere[:3])}"
        f"{' and more' if len(elsewhere) > 3 else ''}) do not build there (see the related locations)."
        if elsewhere
        else ""
    )
    return Hit(
        path=first.path,
        line=first.line,
        end_line=first.end_line,
        message=(
            f"This change makes targets of `//{package}` build on platforms of the `{cell}` cell where they did not "
            "build at base, "
            f"and no test compatible with those platforms depends on them: {'; '.join(parts)}. Nothing builds or "
            "links them in this configuration, so a compile or link error there (or a symbol the loader cannot "
            f"bind) is found by the first user, not by this pull request.{tests_note} Add a test target for that "
            "platform that depends on the root (with the same `compatible_with` as the target), or say in the "
            "PR how this configuration was built."
        ),
        key=f"{cell}://{package}",
        target=first.label,
        cell=cell,
        offending_text=first.kind,
        evidence=evidence,
    )


def _tests_elsewhere(
    snap: Snapshot, cell: str, package: str, subjects: set[str], platforms: list[Platform]
) -> list[tuple[str, BuckTarget]]:
    """Tests that depend on the finding's targets but do not build on its platforms: (why, test),
    why being "built only in `<cell>`" or "not compatible with ...". The package's own tests
    (and those of packages below it) first."""
    here = snap.head.cell(cell).targets
    found: dict[str, tuple[str, BuckTarget]] = {}
    for other in (cell, *(c for c in CELLS if c != cell)):
        graph = snap.head.cell(other)
        dependents: Mapping[str, tuple[str, ...]] = revision.graph_memo(snap.head, other, ("dependents",), _dependents)
        stack = [label for subject in subjects for label in (subject, subject + "_static")]
        seen: set[str] = set()
        while stack:
            label = stack.pop()
            if label in seen:
                continue
            seen.add(label)
            stack.extend(dependents.get(label, ()))
            target = graph.targets.get(label)
            if target is None or not _is_test(target) or label in found:
                continue
            if other == cell:
                excluded = [p.name for p in platforms if label in revision.incompatible(snap.head, cell, p)]
                if excluded:
                    found[label] = (f"not compatible with {', '.join(f'`{name}`' for name in excluded)}", target)
            elif label not in here:
                found[label] = (f"built only in `{other}`", target)

    def order(label: str) -> tuple:
        target = found[label][1]
        below = target.package.startswith(package + "/")
        return (target.package != package, not below, target.path, target.line, label)

    return [found[label] for label in sorted(found, key=order)]


def _dependents(graph: CellGraph) -> dict[str, tuple[str, ...]]:
    """label -> the targets that depend on it, in any configuration."""
    found: dict[str, list[str]] = {}
    for label, target in graph.targets.items():
        for attribute in _TEST_DEPENDENCY_ATTRIBUTES:
            for dep in target.labels(attribute):
                found.setdefault(dep, []).append(label)
    return {label: tuple(dict.fromkeys(users)) for label, users in found.items()}


def _listed(labels: list[str]) -> str:
    shown = ", ".join(f"`{label}`" for label in labels[:_LISTED])
    return shown + (f" and {len(labels) - _LISTED} more" if len(labels) > _LISTED else "")


def _is_test(target: BuckTarget) -> bool:
    return "test" in target.kind


def _folded(graph: CellGraph, label: str) -> str:
    """The label that stands for `label`: the target a wrapper's `_static` twin copies, else itself."""
    target = graph.targets.get(label)
    primary = target.primary_label if target is not None else label
    return primary if primary in graph.targets else label


_BUCKCONFIG = "[repositories]\n  root = .\n"
_MIGRATION = 'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target", "non_fbcode_target")\n'
_FBCODE_ONLY = (
    _MIGRATION + 'fbcode_target(_kind = cxx_library, name = "kernels", srcs = ["kernels.cpp"])\n'
    'fbcode_target(_kind = cxx_test, name = "kernels_test", srcs = ["kernels_test.cpp"], deps = [":kernels"])\n'
)
# The library now builds in every cell; its test still only in fbcode.
_EVERY_CELL = (
    _MIGRATION + "cxx_library(  # expect: test-configuration-missing\n"
    '    name = "kernels",\n'
    '    srcs = ["kernels.cpp"],\n'
    ")\n"
    'fbcode_target(_kind = cxx_test, name = "kernels_test", srcs = ["kernels_test.cpp"], deps = [":kernels"])\n'
)


def _linux_ops(library: str, test: str) -> str:
    """An xplat library and its test, each compatible with the platforms given."""
    return (
        _MIGRATION + "non_fbcode_target(\n"
        "    _kind = cxx_library,\n"
        '    name = "ops",\n'
        '    srcs = ["ops.cpp"],\n'
        f"    compatible_with = [{library}],\n"
        ")\n"
        "non_fbcode_target(\n"
        "    _kind = cxx_test,\n"
        '    name = "ops_test",\n'
        '    srcs = ["ops_test.cpp"],\n'
        '    deps = [":ops"],\n'
        f"    compatible_with = [{test}],\n"
        ")\n"
    )


_LINUX = '"ovr_config//os:linux"'
_LINUX_AND_ANDROID = '"ovr_config//os:linux", "ovr_config//os:android"'

CHECK = Check(
    id="test-configuration-missing",
    inputs=BUCK_FILES,
    severity=Severity.MINOR,
    title="Targets newly built on a platform no test builds them for",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            base={".buckconfig": _BUCKCONFIG, "gpu/BUCK": _FBCODE_ONLY},
            head={".buckconfig": _BUCKCONFIG, "gpu/BUCK": _EVERY_CELL},
        ),
        # Newly compatible with Android; the test still runs on Linux only.
        Example(
            base={".buckconfig": _BUCKCONFIG, "ops/BUCK": _linux_ops(_LINUX, _LINUX)},
            head={
                ".buckconfig": _BUCKCONFIG,
                "ops/BUCK": _linux_ops(_LINUX_AND_ANDROID, _LINUX).replace(
                    "non_fbcode_target(\n    _kind = cxx_library,",
                    "non_fbcode_target(  # expect: test-configuration-missing\n    _kind = cxx_library,",
                ),
            },
        ),
    ),
    good=(
        # The test moves with the library.
        Example(
            base={".buckconfig": _BUCKCONFIG, "gpu/BUCK": _FBCODE_ONLY},
            head={
                ".buckconfig": _BUCKCONFIG,
                "gpu/BUCK": _EVERY_CELL.replace("  # expect: test-configuration-missing", "").replace(
                    "fbcode_target(_kind = cxx_test, ", "cxx_test("
                ),
            },
        ),
        Example(
            base={".buckconfig": _BUCKCONFIG, "ops/BUCK": _linux_ops(_LINUX, _LINUX)},
            head={".buckconfig": _BUCKCONFIG, "ops/BUCK": _linux_ops(_LINUX_AND_ANDROID, _LINUX_AND_ANDROID)},
        ),
        # No test builds the library anywhere: no test left behind in another configuration.
        Example(
            base={".buckconfig": _BUCKCONFIG, "gpu/BUCK": _FBCODE_ONLY.split("fbcode_target(_kind = cxx_test")[0]},
            head={
                ".buckconfig": _BUCKCONFIG,
                "gpu/BUCK": _EVERY_CELL.replace("  # expect: test-configuration-missing", "").split(
                    "fbcode_target(_kind = cxx_test"
                )[0],
            },
        ),
        # A brand-new library is no new configuration of existing code (test-missing's ground).
        Example(
            base={".buckconfig": _BUCKCONFIG, "gpu/BUCK": _MIGRATION},
            head={
                ".buckconfig": _BUCKCONFIG,
                "gpu/BUCK": _MIGRATION + 'cxx_library(name = "kernels", srcs = ["k.cpp"])\n',
            },
        ),
        # A CUDA library admitted on CPU-only platforms fails to build there: cuda-guard-missing's.
        Example(
            base={".buckconfig": _BUCKCONFIG, "gpu/BUCK": _FBCODE_ONLY.replace("kernels.cpp", "kernels.cu")},
            head={
                ".buckconfig": _BUCKCONFIG,
                "gpu/BUCK": _EVERY_CELL.replace("kernels.cpp", "kernels.cu").replace(
                    "  # expect: test-configuration-missing", ""
                )
                + 'cxx_library(name = "user", srcs = ["user.cpp"], compatible_with = ["ovr_config//cuda:has_cuda"], deps = [":kernels"])\n'
                + 'cxx_test(name = "user_test", srcs = ["t.cpp"], compatible_with = ["ovr_config//cuda:has_cuda"], deps = [":user"])\n',
            },
        ),
    ),
)
