"""A target depends on a label that nothing defines in its own cell.

ExecuTorch's packages are evaluated in several cells, and a package can define different
targets in each (`fbcode_target` vs `non_fbcode_target`, `if not is_fbcode: return`). A target
made visible in `xplat` that depends on a package defined only in fbcode fails there with
"unknown target", even though the same dependency is fine in fbcode.

Example (bad): `backends/cuda/runtime` defined in xplat depends on `//extension/cuda:runtime_api`,
while `extension/cuda/BUCK` uses only `fbcode_target(_kind = define_common_targets)`.

Use instead: define the dependency in the same cells (e.g. add `non_fbcode_target(...)`).

Scope: the internal cells (`fbcode`, `xplat`), where a package's cell bindings decide what
exists. The open-source build defines what fbcode does except ATen-mode variants, which it
never builds; its dangling references are a modelling blind spot, not a finding, and OSS
breakage is reported by `buck-eval-error` and `dep-unknown-external` instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bot.buck.cells import CELLS, INTERNAL_CELLS
from bot.buck.targets import flatten, normalize_label
from bot.check import BUCK_FILES, Check, Example
from bot.facts import change_scope
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot
from checks.support.callsite import item_line

_CXX = re.compile(r"cxx_|cpp_|cuda|gpu_")


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    # What the change can affect: its own targets, and those depending on a package whose
    # evaluation it changed in any cell (a dependency now defined, or no longer, far from them).
    scopes = {cell: change_scope.changed_targets(snap, cell) for cell in CELLS}
    moved = frozenset().union(*(scope.packages for scope in scopes.values()))
    for cell in INTERNAL_CELLS:
        graph = snap.head.cell(cell)
        reached: set[str] = set()
        if not scopes[cell].everything:
            dependents = change_scope.dependents_by_package(snap.head, cell)
            reached = {label for package in moved for label in dependents.get(package, ())}
        for label, target in sorted(graph.targets.items()):
            if not _CXX.search(target.kind):
                continue  # Python and genrule targets are outside what this reviewer models
            if not scopes[cell].holds(target) and label not in reached:
                continue
            for attribute in ("deps", "exported_deps"):
                for raw in flatten(target.attr(attribute)):
                    if not isinstance(raw, str) or not (raw.startswith((":", "//")) or "//executorch/" in raw):
                        continue
                    dep = normalize_label(raw, target.package)
                    package = dep[2:].split(":")[0]
                    result = graph.packages.get(package)
                    if result is None or result.error is not None or dep in graph.targets:
                        continue
                    elsewhere = [
                        other
                        for other_cell in CELLS
                        if other_cell != cell and dep in snap.head.cell(other_cell).targets
                        for other in (snap.head.cell(other_cell).targets[dep],)
                    ]
                    if not elsewhere or not _CXX.search(elsewhere[0].kind):
                        # Defined in no cell: more likely a target our model cannot see (generated,
                        # a macro's variant) than a broken build. Stay silent rather than cry wolf.
                        continue
                    text = snap.head.text(target.path) or ""
                    line = item_line(text, target, raw) or target.line
                    evidence = [
                        Evidence(result.build_file, 1, f"`//{package}` defines no `{dep.split(':')[1]}` in `{cell}`")
                    ]
                    evidence += [
                        Evidence(o.path, o.line, f"`{dep}` is defined only in `{o.cell}`") for o in elsewhere[:2]
                    ]
                    where = f"; it exists only in {', '.join(sorted({o.cell for o in elsewhere}))}"
                    yield Hit(
                        path=target.path,
                        line=line,
                        message=f"`{label}` is defined in the `{cell}` cell and depends on `{dep}`, which no package defines in `{cell}`{where}. The `{cell}` build fails with an unknown target.",
                        key=f"{target.primary_label}->{dep.removesuffix('_static')}",
                        target=label,
                        cell=cell,
                        offending_text=raw,
                        evidence=tuple(evidence),
                    )


_BUCKCONFIG = "[repositories]\n  root = .\n"
_BOTH = (
    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target", "non_fbcode_target")\n'
    'load(":targets.bzl", "define_common_targets")\n'
    "fbcode_target(_kind = define_common_targets,)\n"
    "non_fbcode_target(_kind = define_common_targets,)\n"
)
_FBCODE_ONLY = (
    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target")\n'
    'load(":targets.bzl", "define_common_targets")\n'
    "fbcode_target(_kind = define_common_targets,)\n"
)
_API = 'def define_common_targets():\n    native.cxx_library(name = "runtime_api", srcs = ["runtime_api.cpp"])\n'


def _user(marker: str) -> str:
    return (
        "def define_common_targets():\n"
        "    native.cxx_library(\n"
        '        name = "backend",\n'
        f'        deps = ["//executorch/extension/cuda:runtime_api"],{marker}\n'
        "    )\n"
    )


CHECK = Check(
    id="cell-dependency-missing",
    inputs=BUCK_FILES,
    severity=Severity.BLOCKER,
    title="Dependency not defined in the depending target's cell",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "extension/cuda/BUCK": _FBCODE_ONLY,
                "extension/cuda/targets.bzl": _API,
                "backends/cuda/BUCK": _BOTH,
                "backends/cuda/targets.bzl": _user("  # expect: cell-dependency-missing"),
            }
        ),
    ),
    good=(
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "extension/cuda/BUCK": _BOTH,
                "extension/cuda/targets.bzl": _API,
                "backends/cuda/BUCK": _BOTH,
                "backends/cuda/targets.bzl": _user(""),
            }
        ),
    ),
)
