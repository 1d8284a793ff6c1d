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

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, CPP_FILES, Check, Example
from bot.cpp.conditions import conditions_hold
from bot.facts import pairing, revision
from bot.facts.xref import includes_of, source_paths
from bot.model import Evidence, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support import helper_reach
from checks.support.callsite import attribute_line, item_line

_ARCH_FLAG = re.compile(
    r"-gencode|^-arch\b|^--gpu-architecture|--cuda-gpu-arch|--offload-arch|\bsm_\d+|\bcompute_\d+|^-arch="
)
_ARCH_HELPER = r"(?:\w+_)?arch(?:s|_\w+)?"  # get_nvcc_arch_args(), cuda_arch_flags(), ...
_FLAG_ATTRIBUTES = ("nvcc_flags", "compiler_flags", "exported_compiler_flags")
_TRIVIAL_STATEMENT = re.compile(
    r"^(?:__trap\(\)|__builtin_trap\(\)|assert\(.*\)|CUDA_KERNEL_ASSERT\(.*\)|ET_CHECK\w*\(.*\)|printf\(.*\)|return|return \w+|\{|\}|)$"
)
_INCLUDE_DEPTH = 3
_ARCH_LADDER = (530, 600, 610, 700, 720, 750, 800, 860, 870, 890, 900, 1000, 1200)
_CUDA_VERSION = "12080"  # the device pass of a CUDA 12.8 toolkit, as ExecuTorch's CUDA builds use


@dataclass(frozen=True, slots=True)
class Options:
    """Cells compared against the reference cell; the architecture a toolchain defaults to."""

    reference_cell: str = "fbcode"
    cells: tuple[str, ...] = tuple(cell for cell in CELLS if cell != "fbcode")  # every other row of the cell table
    default_arch: int = 520  # CUDA 12's nvcc default (sm_52): gates up to it are always met


@dataclass(frozen=True, slots=True)
class Requirement:
    """Device code at path:line exists only for compute capability >= min_arch."""

    min_arch: int
    path: str
    line: int
    source: str  # the target's source that reaches it


def run(snap: Snapshot, options: Options) -> Iterator[Hit]:
    options = options or Options()
    reference = snap.head.cell(options.reference_cell)
    for cell in options.cells:
        for target in pairing.cell_primary_targets(snap.head, cell):
            cuda_sources = [p for p in source_paths(target) if p.endswith(".cu")]
            if not cuda_sources or _arch_flags(target):
                continue
            twin = reference.targets.get(target.label)
            if twin is None or not _reference_has_arch_flags(snap, cell, twin, target, options.reference_cell):
                continue
            requirement = _first_requirement(snap.head, cuda_sources, options.default_arch)
            if requirement is None:
                continue
            yield _hit(snap, cell, target, twin, requirement)


def _flags(target: BuckTarget) -> tuple[str, ...]:
    return tuple(str(v) for attribute in _FLAG_ATTRIBUTES for v in target.values(attribute) if isinstance(v, str))


def _arch_flags(target: BuckTarget) -> bool:
    return any(_ARCH_FLAG.search(flag) for flag in _flags(target))


def _reference_has_arch_flags(snap: Snapshot, cell: str, twin: BuckTarget, target: BuckTarget, reference: str) -> bool:
    """The reference cell's twin has literal arch flags, or an arch helper's result that this cell's target lacks.

    Internal helpers such as `get_nvcc_arch_args()` evaluate to nothing here, so where the
    flags come from one, the package is evaluated again with the helper's calls marked
    (checks/support/helper_reach.py) to see which cells its result reaches.
    """
    if _arch_flags(twin):
        return True
    reach = helper_reach.reached_attribute(snap.head, (reference, cell), target, "nvcc_flags", _ARCH_HELPER)
    return reach is not None and reach[reference] and not reach[cell]


def _first_requirement(model: BuildModel, sources: list[str], default_arch: int) -> Requirement | None:
    for source in sources:
        for path in _reached_files(model, source):
            for requirement in _requirements(model, path, default_arch):
                return Requirement(requirement[0], path, requirement[1], source)
    return None


def _reached_files(model: BuildModel, source: str) -> tuple[str, ...]:
    """The source and the `.cuh` files it includes (transitively), in inclusion order."""

    def compute() -> tuple[str, ...]:
        order, frontier = [source], [source]
        for _depth in range(_INCLUDE_DEPTH):
            following = []
            for path in frontier:
                for included, _line in includes_of(model.text(path) or ""):
                    header = _resolve_include(model, path, included) if included.endswith(".cuh") else None
                    if header is not None and header not in order:
                        order.append(header)
                        following.append(header)
            frontier = following
        return tuple(order)

    return revision.tree_memo(model, ("cell-arch-flags-missing:reached-files", source), compute)


def _resolve_include(model: BuildModel, including: str, text: str) -> str | None:
    """The repository file an `#include` names: `executorch/<path>`, relative to the includer, or from the root."""
    candidates = [text[len("executorch/") :]] if text.startswith("executorch/") else []
    candidates += [posixpath.normpath(posixpath.join(posixpath.dirname(including), text)), posixpath.normpath(text)]
    return next((c for c in candidates if not c.startswith("..") and model.tree.exists(c)), None)


def _requirements(model: BuildModel, path: str, default_arch: int) -> tuple[tuple[int, int], ...]:
    """(min arch, line) of `#if` branches compiled only above the default architecture, with no fallback.

    Each branch's `#if` stack is evaluated as nvcc's device pass would see it for a ladder of
    architectures (CUDA 12 headers, no ROCm): a branch that is off at the default and on at
    some higher architecture needs that architecture.
    """

    def compute() -> tuple[tuple[int, int], ...]:
        text = model.text(path) or ""
        if "__CUDA_ARCH__" not in text:
            return ()
        facts = model.source_facts(path)
        if facts is None:
            return ()
        found = []
        for block in facts.conditional_blocks:
            for index, line in enumerate(block.branch_lines):
                stack = facts.conditions_at(line + 1)
                if _compiled(stack, default_arch) is not False:
                    continue
                if not _has_code(block.branch_texts[index]):
                    continue  # only includes or defines: what they enable is reported where it is used
                needed = next((arch for arch in _ARCH_LADDER if arch > default_arch and _compiled(stack, arch)), None)
                if needed is not None and not _has_fallback(facts, block, index, default_arch):
                    found.append((needed, line))
        return tuple(sorted(found, key=lambda item: item[1]))

    return revision.tree_memo(model, ("cell-arch-flags-missing:requirements", path, default_arch), compute)


def _has_code(text: str) -> bool:
    """Whether a branch holds code, not only directives and comments."""
    stripped = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    return any(line.strip() and not line.lstrip().startswith("#") for line in stripped.splitlines())


def _compiled(stack: tuple[str, ...], arch: int) -> bool | None:
    """Whether code under `stack` is compiled in nvcc's device pass for `arch`."""
    defines = {
        "__CUDA_ARCH__": str(arch),
        "__CUDACC__": "1",
        "__NVCC__": "1",
        "CUDA_VERSION": _CUDA_VERSION,
        "__cplusplus": "201703L",
    }
    return conditions_hold(stack, defines, assume_undefined_false=True)


def _has_fallback(facts, block, gated: int, default_arch: int) -> bool:
    """Whether another branch of the `#if` group, compiled at the default architecture, holds real code."""
    for index, (line, text) in enumerate(zip(block.branch_lines, block.branch_texts, strict=True)):
        if index == gated or _compiled(facts.conditions_at(line + 1), default_arch) is False:
            continue
        statements = [
            s.strip() for s in re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S).replace("\n", " ").split(";")
        ]
        if any(not _TRIVIAL_STATEMENT.match(statement) for statement in statements):
            return True
    return False


def _hit(snap: Snapshot, cell: str, target: BuckTarget, twin: BuckTarget, requirement: Requirement) -> Hit:
    text = snap.head.text(target.path) or ""
    relative = requirement.source[len(target.package) + 1 :] if target.package else requirement.source
    line = item_line(text, target, relative) or target.line
    twin_text = snap.head.text(twin.path) or ""
    helper = helper_reach.helper_calls(_ARCH_HELPER).search(twin_text)
    flags_line = attribute_line(twin_text, twin, "nvcc_flags") or twin.line
    if not _arch_flags(twin) and helper is not None:
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
