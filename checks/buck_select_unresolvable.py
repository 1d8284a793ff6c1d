"""A `select()` that buck2 cannot resolve on a platform the cell builds for.

buck2 configures every target for a target platform, and resolves each `select()` there: the
most specific key the platform satisfies wins, else `DEFAULT`. With no matching key and no
`DEFAULT`, it fails ("None of N conditions matched configuration ... and no default was set");
with two matching keys, neither more specific, and different values, it fails too ("Both select
keys ... match the configuration, but neither is more specific"). Unlike an incompatible target,
which a wildcard build skips, a target that fails to configure fails the build of every pattern
that names it, `//pkg/...` included. A target that excludes the platform itself
(`compatible_with`, `target_compatible_with`) is skipped: buck2 resolves those first. In the
open-source build, a target no CI command builds is reported at minor, saying so (on the Aug 2026
tree: XNNPACK's `ukernels_neondotfp16arith`, whose arm-only `compiler_flags` select has no
`DEFAULT`, reached on x86 only through an arm-only branch of its dependents).

The platforms are the cell's (the cell table, or `[buck.platforms]` in `.github/pr-check.toml`):
xplat builds for CPU-only Android, iOS and Linux and for Linux with CUDA.

Example (bad): `deps = select({"ovr_config//cuda:has_cuda": [":cuda_guard"]})` in a package xplat
builds: no key matches on the CPU-only platforms.

Use instead: add `"DEFAULT": []`, or make the target compatible only with what the keys cover.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.buck import platforms
from bot.buck.cells import CELLS, cell_named
from bot.check import BUCK_FILES, Check, Example, Share
from bot.facts import graph_indexes
from bot.facts.build_scope import scope_of
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot
from checks.support.callsite import attribute_line


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    for cell in CELLS:
        graph = snap.head.cell(cell)
        failing: dict[tuple[str, platforms.SelectFailure], list[str]] = {}
        for platform in snap.head.platforms(cell):
            found = graph_indexes.select_failures(snap.head, cell, platform)
            for label, failures in found:
                for failure in failures:
                    failing.setdefault((label, failure), []).append(platform.name)
        oss = cell_named(cell).is_oss
        by_name = {platform.name: platform for platform in snap.head.platforms(cell)}
        for (label, failure), names in sorted(failing.items(), key=lambda item: (item[0][0], item[0][1].attribute)):
            # Built where CI's targets reach it through deps as configured on that platform.
            unbuilt = oss and not any(scope_of(snap.head, cell, by_name[name]).builds(label) for name in names)
            yield _hit(snap, cell, graph.targets[label], failure, names, unbuilt)


def _hit(snap: Snapshot, cell: str, target, failure: platforms.SelectFailure, names: list[str], unbuilt: bool) -> Hit:
    text = snap.head.text(target.path) or ""
    line = attribute_line(text, target, failure.attribute) or target.line
    where = ", ".join(f"`{name}`" for name in names)
    keys = ", ".join(f'"{key}"' for key in failure.keys)
    if failure.ambiguous:
        problem = (
            f"both select keys {keys} of `{failure.attribute}` match on {where}, neither is more specific, and "
            "their values differ"
        )
        advice = "Make one key more specific than the other, or give them the same value."
    else:
        problem = (
            f"no key of the `select()` in `{failure.attribute}` ({keys}) matches on {where}, and it has no `DEFAULT`"
        )
        advice = 'Add a `"DEFAULT"` branch, or make the target compatible only with the platforms its keys cover.'
    return Hit(
        path=target.path,
        line=line,
        end_line=line,
        message=(
            f"`{target.label}`: {problem}. buck2 fails to configure it there, so every build of a pattern that "
            f"names it (`buck2 build //{target.package}/...` included) fails in `{cell}`. {advice}"
            + (
                " No CI command of this build builds it (a dependent may reach it only through another select "
                "branch), so CI stays green and this is reported at minor."
                if unbuilt
                else ""
            )
        ),
        key=f"{target.primary_label}|{cell}|{failure.attribute}|{'ambiguous' if failure.ambiguous else 'no-match'}",
        target=target.label,
        cell=cell,
        offending_text=failure.attribute,
        evidence=(Evidence(target.path, target.line, f"`{target.label}` is defined in `{cell}`"),),
        outside_build_scope=unbuilt,
    )


_BUCKCONFIG = "[repositories]\n  root = .\n"
_XPLAT_ONLY = 'load("@fbcode_macros//build_defs:build_file_migration.bzl", "non_fbcode_target")\n'


def _storage(deps: str, extra: str = "", marker: str = "") -> dict[str, str]:
    return {
        ".buckconfig": _BUCKCONFIG,
        "slim/BUCK": (
            _XPLAT_ONLY + "non_fbcode_target(\n"
            "    _kind = cxx_library,\n"
            '    name = "storage",\n'
            '    srcs = ["storage.cpp"],\n'
            f"    deps = {deps},{marker}\n"
            f"{extra}"
            ")\n"
            "non_fbcode_target(\n"
            "    _kind = cxx_library,\n"
            '    name = "cuda_guard",\n'
            '    srcs = ["guard.cu"],\n'
            '    compatible_with = ["ovr_config//cuda:has_cuda"],\n'
            ")\n"
        ),
    }


CHECK = Check(
    id="buck-select-unresolvable",
    share=Share.WORKER,
    inputs=BUCK_FILES,
    severity=Severity.MAJOR,
    title="Buck select() that cannot be resolved on a platform the cell builds for",
    doc=__doc__,
    run=run,
    bad=(
        # No DEFAULT: nothing matches on the CPU-only platforms.
        Example(
            head=_storage(
                'select({"ovr_config//cuda:has_cuda": [":cuda_guard"]})', marker="  # expect: buck-select-unresolvable"
            )
        ),
        # Linux and x86_64 both match on linux-x86_64, and neither refines the other.
        Example(
            head=_storage(
                'select({"ovr_config//os:linux": [], "ovr_config//cpu:x86_64": [":cuda_guard"], "DEFAULT": []})',
                marker="  # expect: buck-select-unresolvable",
            )
        ),
    ),
    good=(
        Example(head=_storage('select({"ovr_config//cuda:has_cuda": [":cuda_guard"], "DEFAULT": []})')),
        # Built only where a key matches: buck2 checks compatibility first.
        Example(
            head=_storage(
                'select({"ovr_config//cuda:has_cuda": [":cuda_guard"]})',
                extra='    compatible_with = ["ovr_config//cuda:has_cuda"],\n',
            )
        ),
        # The compound key refines both of its parts: it wins where all three match.
        Example(
            head=_storage('select({"ovr_config//os:linux": [], "ovr_config//os:linux-x86_64": [], "DEFAULT": []})')
        ),
    ),
)
