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

from collections.abc import Iterator
from dataclasses import dataclass

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget, Platform
from bot.check import BUCK_FILES, Check, Example, Share
from bot.facts import revision
from bot.facts.untested_targets import by_root, dependents_of, is_test, untested_new
from bot.model import Evidence, Hit, ReviewMode, Severity
from bot.snapshot import Snapshot

_LISTED = 8


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    if snap.mode is ReviewMode.BASELINE:
        return
    settings = snap.config.buck
    for cell in CELLS:
        if snap.base.graph_key(cell) == snap.head.graph_key(cell):
            continue  # the same targets with the same attributes: nothing builds anywhere new
        roots: dict[str, _Package] = {}
        for platform in settings.platforms_of(cell):
            untested = untested_new(snap, cell, platform, settings.cuda_constraint)
            if untested:
                for root, below in by_root(snap.head.cell(cell), untested, platform).items():
                    package = snap.head.cell(cell).targets[root].package
                    roots.setdefault(package, _Package({})).add(platform, root, below)
        for package, found in sorted(roots.items()):
            yield _hit(snap, cell, package, found, settings.platforms_of(cell))


@dataclass(frozen=True)
class _Package:
    """One package's roots of untested new targets: platform name -> (root, targets below it)."""

    on: dict[str, dict[str, tuple[str, ...]]]

    def add(self, platform: Platform, root: str, below: tuple[str, ...]) -> None:
        self.on.setdefault(platform.name, {})[root] = below


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
        dependents = dependents_of(snap.head, other)
        stack = [label for subject in subjects for label in (subject, subject + "_static")]
        seen: set[str] = set()
        while stack:
            label = stack.pop()
            if label in seen:
                continue
            seen.add(label)
            stack.extend(dependents.get(label, ()))
            target = graph.targets.get(label)
            if target is None or not is_test(target) or label in found:
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


def _listed(labels: list[str]) -> str:
    shown = ", ".join(f"`{label}`" for label in labels[:_LISTED])
    return shown + (f" and {len(labels) - _LISTED} more" if len(labels) > _LISTED else "")


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
    share=Share.WORKER,
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
