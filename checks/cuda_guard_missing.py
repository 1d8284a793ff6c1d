"""A CUDA target is defined in a cell that builds for CPU-only platforms without the CUDA guard.

The `xplat` cell builds every target of a package for every platform it is asked for: Android,
Apple, CPU-only Linux, wildcard builds such as `xplat/executorch/...`. A target that compiles
`.cu` sources, passes `nvcc_flags`, depends on a CUDA external dep (`cuda-lazy`, `cudart`, ...)
or on another CUDA target cannot build there: `cuda_runtime.h` is not found. The constraint
`compatible_with = ["ovr_config//cuda:has_cuda"]` (with `platforms = [CXX]`) makes those builds
skip the target. A guard dict splatted (`**cuda_kwargs`) into some CUDA targets of a package
but not others leaves the rest unguarded.

Example (bad): `runtime.cxx_library(name = "caller_stream", srcs = ["caller_stream.cu"])` in a
`targets.bzl` that `non_fbcode_target(_kind = define_common_targets)` makes visible in xplat.

Use instead: add `compatible_with = ["ovr_config//cuda:has_cuda"]`, or the package's guard dict.
"""

from __future__ import annotations

import re
from typing import Iterator

from bot.facts import xref
from checks.support.callsite import attribute_line, call_lines, insert_after, item_line, outermost_frame
from bot.check import BUCK_FILES, Check, Example
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot

_CXX_KINDS = re.compile(r"cxx_|cpp_|cuda|gpu_")
_SPLAT = re.compile(r"\*\*([A-Za-z_][A-Za-z0-9_]*)")


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    settings = snap.config.buck
    for cell in settings.cpu_only_cells:
        graph = snap.head.cell(cell)
        reasons = snap.head.cuda_reasons(cell)
        guarded_splats = _guard_dicts(snap, graph, settings.cuda_constraint)
        for label, reason in sorted(reasons.items()):
            target = graph.targets[label]
            if not _CXX_KINDS.search(target.kind) or _is_guarded(target, settings.cuda_constraint):
                continue
            text = snap.head.text(target.path) or ""
            evidence = [_reason_evidence(snap, target, reason, text)]
            visible = outermost_frame(target)
            if visible is not None:
                evidence.append(
                    Evidence(visible.path, visible.line, f"this line defines the package's targets in `{cell}`")
                )
            splat = guarded_splats.get(target.path)
            if splat:
                insertion, advice = f"**{splat},", f"splat the package's guard dict (`**{splat}`) as its other CUDA targets do"
            else:
                insertion = f'compatible_with = ["{settings.cuda_constraint}"],'
                advice = f"add `{insertion.rstrip(',')}`"
            name_line = attribute_line(text, target, "name")
            fix = None if name_line is None else insert_after(text, target.path, name_line, insertion, advice)
            yield Hit(
                path=target.path,
                line=target.line,
                end_line=target.end_line,
                message=(
                    f"`{label}` is defined in the `{cell}` cell, which builds for CPU-only platforms, "
                    f"and it {reason.describe()}; without the `{settings.cuda_constraint}` constraint a CPU-only "
                    f"or wildcard build of this package fails to compile it. Fix: {advice}."
                ),
                key=target.primary_label,
                target=label,
                cell=cell,
                offending_text=target.kind,
                evidence=tuple(evidence),
                fix=fix,
            )


def _is_guarded(target, constraint: str) -> bool:
    return constraint in target.values("compatible_with") or constraint in target.values("target_compatible_with")


def _guard_dicts(snap: Snapshot, graph, constraint: str) -> dict[str, str]:
    """file -> name of a dict splatted into a guarded target defined in that file."""
    found: dict[str, str] = {}
    for target in graph.targets.values():
        if target.path in found or not _is_guarded(target, constraint):
            continue
        text = snap.head.text(target.path) or ""
        for _number, line in call_lines(text, target):
            match = _SPLAT.search(line)
            if match:
                found[target.path] = match.group(1)
                break
    return found


def _reason_evidence(snap: Snapshot, target, reason: xref.CudaReason, text: str) -> Evidence:
    if reason.kind == "source":
        relative = reason.detail[len(target.package) + 1 :] if target.package else reason.detail
        line = item_line(text, target, relative) or attribute_line(text, target, "srcs") or target.line
        return Evidence(target.path, line, f"`{relative}` is a CUDA source")
    if reason.kind == "external_dep":
        line = (
            item_line(text, target, reason.detail)
            or attribute_line(text, target, "external_deps")
            or attribute_line(text, target, "exported_external_deps")
            or target.line
        )
        return Evidence(target.path, line, f"`{reason.detail}` is a CUDA external dep")
    if reason.kind == "nvcc_flags":
        return Evidence(target.path, attribute_line(text, target, "nvcc_flags") or target.line, "`nvcc_flags` makes this a CUDA target")
    first_dep = reason.chain[1] if len(reason.chain) > 1 else reason.detail
    short = ":" + first_dep.split(":")[-1]
    line = item_line(text, target, short) or _label_line(text, target, first_dep) or target.line
    return Evidence(target.path, line, "depends on CUDA code: " + " -> ".join(reason.chain))


def _label_line(text: str, target, label: str) -> int | None:
    package_part = label[2:].split(":")[0]
    name = label.split(":")[-1]
    for number, line in call_lines(text, target):
        if package_part in line and name in line:
            return number
    return None


_BUCKCONFIG = "[repositories]\n  root = .\n"
_XPLAT_BUCK = (
    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target", "non_fbcode_target")\n'
    'load(":targets.bzl", "define_common_targets")\n'
    "fbcode_target(_kind = define_common_targets,)\n"
    "non_fbcode_target(_kind = define_common_targets,)\n"
)

CHECK = Check(
    id="cuda-guard-missing",
    inputs=BUCK_FILES,
    severity=Severity.BLOCKER,
    title="CUDA target visible to CPU-only builds without the CUDA guard",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "extension/cuda/BUCK": _XPLAT_BUCK,
                "extension/cuda/targets.bzl": (
                    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
                    "\n"
                    "def define_common_targets():\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "caller_stream",\n'
                    '        srcs = ["caller_stream.cu"],\n'
                    "    )\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "allocator",\n'
                    '        srcs = ["allocator.cpp"],\n'
                    '        external_deps = [("cuda", None, "cuda-lazy")],\n'
                    "    )\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "user",\n'
                    '        srcs = ["user.cpp"],\n'
                    '        deps = [":allocator"],\n'
                    "    )\n"
                ),
            }
        ),
    ),
    good=(
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "extension/cuda/BUCK": _XPLAT_BUCK,
                "extension/cuda/targets.bzl": (
                    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
                    "\n"
                    "def define_common_targets():\n"
                    '    cuda_kwargs = {"compatible_with": ["ovr_config//cuda:has_cuda"]}\n'
                    "    runtime.cxx_library(\n"
                    '        name = "caller_stream",\n'
                    '        srcs = ["caller_stream.cu"],\n'
                    "        **cuda_kwargs\n"
                    "    )\n"
                    "    runtime.cxx_library(\n"
                    '        name = "cpu_only",\n'
                    '        srcs = ["cpu_only.cpp"],\n'
                    "    )\n"
                ),
            }
        ),
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "extension/cuda/BUCK": (
                    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target")\n'
                    'load(":targets.bzl", "define_common_targets")\n'
                    "fbcode_target(_kind = define_common_targets,)\n"
                ),
                "extension/cuda/targets.bzl": (
                    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
                    "\n"
                    "def define_common_targets():\n"
                    "    runtime.cxx_library(\n"
                    '        name = "fbcode_only",\n'
                    '        srcs = ["fbcode_only.cu"],\n'
                    "    )\n"
                ),
            }
        ),
    ),
)
