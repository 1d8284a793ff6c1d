"""CUDA kernels that need a compute capability are built outside fbcode without arch flags.

A kernel written only for `__CUDA_ARCH__ >= 800` (an `#if` with no fallback branch, in the `.cu`
source or a `.cuh` it includes) has no device code when nvcc compiles for an older
architecture: the launch fails at run time with "no kernel image is available", even on a GPU
that would run it, because the binary never contained it. fbcode passes explicit architecture
flags (`get_nvcc_arch_args()`, `-gencode`); a target made visible in `xplat` or the open-source
build without them gets whatever the toolchain defaults to, which is older than sm_80 in
current CUDA releases.

Reported when the same target carries arch flags in fbcode (literal flags, or an arch helper
call whose result fbcode gets and this cell does not) and none in the other cell; when neither
cell has them, the toolchain decides everywhere and there is nothing to compare.

Example (bad): `srcs = ["shims/int4mm.cu"]` (which gates its kernels on `__CUDA_ARCH__ >= 800`)
with `nvcc_flags = get_nvcc_arch_args() if is_fbcode else []`, in a package xplat builds.

Use instead: give the other cells arch flags too (`nvcc_flags = ["-gencode", "arch=compute_80,code=sm_80"]`,
or the cell's arch helper), or state which architecture the cell's CUDA toolchain targets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, CPP_FILES, Check, Example
from bot.facts import helper_reach, pairing
from bot.facts.cuda_arch import ARCH_HELPER, Requirement, arch_flags, first_requirement, reference_has_arch_flags
from bot.facts.xref import source_paths
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot
from checks.support.callsite import attribute_line, item_line


@dataclass(frozen=True, slots=True)
class Options:
    """Cells compared against the reference cell; the architecture a toolchain defaults to."""

    reference_cell: str = "fbcode"
    cells: tuple[str, ...] = tuple(cell for cell in CELLS if cell != "fbcode")  # every other row of the cell table
    default_arch: int = 520  # CUDA 12's nvcc default (sm_52): gates up to it are always met


def run(snap: Snapshot, options: Options) -> Iterator[Hit]:
    options = options or Options()
    reference = snap.head.cell(options.reference_cell)
    for cell in options.cells:
        for target in pairing.cell_primary_targets(snap.head, cell):
            cuda_sources = [p for p in source_paths(target) if p.endswith(".cu")]
            if not cuda_sources or arch_flags(target):
                continue
            twin = reference.targets.get(target.label)
            if twin is None or not reference_has_arch_flags(snap, cell, twin, target, options.reference_cell):
                continue
            requirement = first_requirement(snap.head, cuda_sources, options.default_arch)
            if requirement is None:
                continue
            yield _hit(snap, cell, target, twin, requirement)


def _hit(snap: Snapshot, cell: str, target: BuckTarget, twin: BuckTarget, requirement: Requirement) -> Hit:
    text = snap.head.text(target.path) or ""
    relative = requirement.source[len(target.package) + 1 :] if target.package else requirement.source
    line = item_line(text, target, relative) or target.line
    twin_text = snap.head.text(twin.path) or ""
    helper = helper_reach.helper_calls(ARCH_HELPER).search(twin_text)
    flags_line = attribute_line(twin_text, twin, "nvcc_flags") or twin.line
    if not arch_flags(twin) and helper is not None:
        flags_line = twin_text.count("\n", 0, helper.start()) + 1
    arch = f"sm_{requirement.min_arch // 10}"
    via = "" if requirement.path == requirement.source else f" through `{requirement.path}`"
    return Hit(
        path=target.path,
        line=line,
        message=(
            f"`{target.label}` compiles `{relative}`, whose device code{via} exists only for compute capability "
            f">= {requirement.min_arch // 100}.{requirement.min_arch % 100 // 10} ({arch}), and in `{cell}` it carries no "
            "architecture flags, while fbcode passes them: built for the toolchain's default architecture, the kernels "
            f"are missing and their launch fails with `no kernel image is available`. Pass arch flags for `{cell}` too "
            f"(e.g. `-gencode arch=compute_{requirement.min_arch // 10},code={arch}`)."
        ),
        key=f"{target.primary_label}|{cell}",
        target=target.label,
        cell=cell,
        offending_text=relative,
        evidence=(
            Evidence(
                requirement.path,
                requirement.line,
                f"code here is compiled only for `__CUDA_ARCH__ >= {requirement.min_arch}`",
            ),
            Evidence(twin.path, flags_line, f"fbcode gives `{twin.label}` architecture flags"),
        ),
    )


_BUCKCONFIG = "[repositories]\n  root = .\n"
_BUCK = (
    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target", "non_fbcode_target")\n'
    'load(":targets.bzl", "define_common_targets")\n'
    "fbcode_target(_kind = define_common_targets, is_fbcode = True)\n"
    "non_fbcode_target(_kind = define_common_targets)\n"
)
_KERNEL = "#if __CUDA_ARCH__ >= 800\n__global__ void int4mm() {}\n#endif\n"


def _targets(nvcc_flags: str, marker: str = "") -> str:
    return (
        'load("@fbcode//tools/build/buck:nvcc_flags.bzl", "get_nvcc_arch_args")\n'
        "\n"
        "def define_common_targets(is_fbcode = False):\n"
        "    native.cxx_library(\n"
        '        name = "runtime_shims",\n'
        f'        srcs = ["shims/int4mm.cu"],{marker}\n'
        f"        nvcc_flags = {nvcc_flags},\n"
        "    )\n"
    )


CHECK = Check(
    id="cell-arch-flags-missing",
    inputs=BUCK_FILES + CPP_FILES,
    severity=Severity.MINOR,
    title="Compute-capability-gated CUDA kernels built without arch flags outside fbcode",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "backends/cuda/runtime/BUCK": _BUCK,
                "backends/cuda/runtime/targets.bzl": _targets(
                    '(get_nvcc_arch_args() if is_fbcode else []) + (["-lineinfo"] if is_fbcode else [])',
                    "  # expect: cell-arch-flags-missing",
                ),
                "backends/cuda/runtime/shims/int4mm.cu": _KERNEL,
            }
        ),
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "backends/cuda/runtime/BUCK": _BUCK,
                "backends/cuda/runtime/targets.bzl": _targets(
                    '["-gencode", "arch=compute_80,code=sm_80"] if is_fbcode else []',
                    "  # expect: cell-arch-flags-missing",
                ),
                "backends/cuda/runtime/shims/int4mm.cu": '#include "int4mm.cuh"\n',
                "backends/cuda/runtime/shims/int4mm.cuh": _KERNEL,
            }
        ),
    ),
    good=(
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "backends/cuda/runtime/BUCK": _BUCK,
                "backends/cuda/runtime/targets.bzl": _targets('["-gencode", "arch=compute_80,code=sm_80"]'),
                "backends/cuda/runtime/shims/int4mm.cu": _KERNEL,
            }
        ),
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "backends/cuda/runtime/BUCK": _BUCK,
                "backends/cuda/runtime/targets.bzl": _targets(
                    '["-gencode", "arch=compute_80,code=sm_80"] if is_fbcode else []'
                ),
                "backends/cuda/runtime/shims/int4mm.cu": (
                    "#if __CUDA_ARCH__ >= 800\n__global__ void int4mm() { fast(); }\n#else\n__global__ void int4mm() { slow(); }\n#endif\n"
                ),
            }
        ),
    ),
    options=Options(),
)
