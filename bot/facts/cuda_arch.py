"""Which CUDA architecture a source's code needs, and whether a target passes arch flags.

A source needs an architecture when an `#if __CUDA_ARCH__` branch of it, or of the `.cuh` files
it includes, is compiled only above the default architecture and has no fallback. A target passes
arch flags when its flags name one (`-gencode`, `-arch`, ...) or an internal helper's result that
reaches its cell does (bot/facts/helper_reach.py).

Each branch's `#if` stack is evaluated as nvcc's device pass would see it (CUDA 12 headers, no
ROCm) for a ladder of architectures; kept per tree for each source and each file.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from bot.buck.targets import BuckTarget
from bot.cpp.conditions import conditions_hold
from bot.facts import helper_reach, revision
from bot.facts.xref import includes_of
from bot.snapshot import BuildModel, Snapshot

_INCLUDE_DEPTH = 3


_ARCH_LADDER = (530, 600, 610, 700, 720, 750, 800, 860, 870, 890, 900, 1000, 1200)


_TRIVIAL_STATEMENT = re.compile(
    r"^(?:__trap\(\)|__builtin_trap\(\)|assert\(.*\)|CUDA_KERNEL_ASSERT\(.*\)|ET_CHECK\w*\(.*\)|printf\(.*\)|return|return \w+|\{|\}|)$"
)
_CUDA_VERSION = "12080"  # the device pass of a CUDA 12.8 toolkit, as ExecuTorch's CUDA builds use


@dataclass(frozen=True, slots=True)
class Requirement:
    """Device code at path:line exists only for compute capability >= min_arch."""

    min_arch: int
    path: str
    line: int
    source: str  # the target's source that reaches it


def first_requirement(model: BuildModel, sources: list[str], default_arch: int) -> Requirement | None:
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


_ARCH_FLAG = re.compile(
    r"-gencode|^-arch\b|^--gpu-architecture|--cuda-gpu-arch|--offload-arch|\bsm_\d+|\bcompute_\d+|^-arch="
)


ARCH_HELPER = r"(?:\w+_)?arch(?:s|_\w+)?"  # get_nvcc_arch_args(), cuda_arch_flags(), ...


_FLAG_ATTRIBUTES = ("nvcc_flags", "compiler_flags", "exported_compiler_flags")


def _flags(target: BuckTarget) -> tuple[str, ...]:
    return tuple(str(v) for attribute in _FLAG_ATTRIBUTES for v in target.values(attribute) if isinstance(v, str))


def arch_flags(target: BuckTarget) -> bool:
    return any(_ARCH_FLAG.search(flag) for flag in _flags(target))


def reference_has_arch_flags(snap: Snapshot, cell: str, twin: BuckTarget, target: BuckTarget, reference: str) -> bool:
    """The reference cell's twin has literal arch flags, or an arch helper's result that this cell's target lacks.

    Internal helpers such as `get_nvcc_arch_args()` evaluate to nothing here, so where the
    flags come from one, the package is evaluated again with the helper's calls marked
    (bot/facts/helper_reach.py) to see which cells its result reaches.
    """
    if arch_flags(twin):
        return True
    reach = helper_reach.reached_attribute(snap.head, (reference, cell), target, "nvcc_flags", ARCH_HELPER)
    return reach is not None and reach[reference] and not reach[cell]
